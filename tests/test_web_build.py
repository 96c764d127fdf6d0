"""The dashboard's assets are reproducible: two builds of the same sources are byte-identical, and equal
to the `web/dist` that `make dashboard` built (docs/dashboard.md). No CDN, nothing fetched at run time."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

WEB = Path(__file__).resolve().parents[1] / "web"


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def build(out: Path) -> dict[str, str]:
    node = shutil.which("node")
    assert node, "Node.js is missing: `make dashboard` installs it (Debian's nodejs) and builds web/"
    assert (WEB / "node_modules").is_dir(), "web/node_modules is missing: run `make dashboard` (npm ci)"
    subprocess.run([node, "build.mjs"], cwd=WEB, env={**os.environ, "OUTDIR": str(out)}, check=True, timeout=120)
    return tree(out)


def test_two_builds_are_identical_and_equal_to_the_served_one(tmp_path: Path) -> None:
    first, second = build(tmp_path / "a"), build(tmp_path / "b")
    assert first == second
    assert {"index.html", "app.js", "style.css"} <= set(first)
    assert tree(WEB / "dist") == first, "web/dist is stale: run `make dashboard`"


def test_the_page_loads_nothing_from_elsewhere() -> None:
    index = (WEB / "dist" / "index.html").read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", index)
    css = (WEB / "dist" / "style.css").read_text()
    assert not re.search(r"url\((['\"]?)(https?:)?//", css)  # fonts and images are served by us
