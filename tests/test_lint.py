"""The linters pass: ruff (rules in pyproject's [tool.ruff]) and mypy ([tool.mypy]), both from the venv.

Both read their settings from pyproject.toml; a new lint or type error fails here with the tool's own report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# What ruff checks (tests/ by its own tests/ruff.toml); mypy's files are [tool.mypy] `files`
RUFF_PATHS = ("mpijob", "bench", "tools", "examples", "tests")


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = BIN / tool
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run make setup (it installs the test extra of pyproject.toml)")
    return subprocess.run([str(exe), *args], cwd=REPO, capture_output=True, text=True, timeout=280, check=False)


def test_ruff() -> None:
    done = _run("ruff", "check", "--no-fix", "--output-format", "concise", *RUFF_PATHS)
    assert done.returncode == 0, f"ruff check found problems:\n{done.stdout}{done.stderr}"


def test_mypy() -> None:
    done = _run("mypy")
    assert done.returncode == 0, f"mypy found problems:\n{done.stdout}{done.stderr}"
