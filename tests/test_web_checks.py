"""The dashboard's own checks: ESLint over web/src (warnings fail too: the sources lint clean) and its
unit tests under Node's runner (web/test), each as `npm run` runs them in web/."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parents[1] / "web"


def npm_run(*args: str) -> subprocess.CompletedProcess[str]:
    npm = shutil.which("npm")
    assert npm, "npm is missing: run make setup (it installs Debian's nodejs and npm)"
    assert (WEB / "node_modules").is_dir(), "web/node_modules is missing: run make setup (npm ci in web/)"
    return subprocess.run([npm, "run", "--silent", *args], cwd=WEB, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args", [("lint", "--", "--max-warnings", "0"), ("test",)], ids=["lint", "test"])
def test_web_check_passes(args: tuple[str, ...]) -> None:
    done = npm_run(*args)
    assert done.returncode == 0, f"npm run {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
