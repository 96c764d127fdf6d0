"""Files generated from the code and committed: write them, or check that the committed ones are current.

Every generator in tools/ ends the same way (`tests/docs` and `tests/server` run their `--check`), so the
rule lives here once: no argument writes, `--check` lists the stale files; exit 0 current or written,
1 stale, 2 usage.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def stale(outputs: Mapping[Path, str]) -> list[Path]:
    """The files whose committed text differs from what the code renders now (or that do not exist)."""
    return [p for p, text in outputs.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]


def shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def write_or_check(outputs: Mapping[Path, str], argv: list[str], command: str) -> int:
    if argv not in ([], ["--check"]):
        print(f"usage: {command} [--check]", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        old = stale(outputs)
        for path in old:
            print(f"{shown(path)} is stale: run {command}", file=sys.stderr)
        return 1 if old else 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {shown(path)} ({len(text.encode())} bytes)")
    return 0
