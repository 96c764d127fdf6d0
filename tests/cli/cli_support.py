"""Helpers for CLI tests (imported by name: tests have no packages, so this name is unique).

The CLI is pointed at the server the way a user's shell would be: `MPIJOB_HOME` set, no `KUBECONFIG`,
so the local-cluster path of `mpijob.client.config` is what runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijob.cli.main import app
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
MPIJOB_BIN = Path(sys.executable).parent / "mpijob"


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


Invoke = Callable[..., Result]


def cli_env(home: Path | str) -> dict[str, Any]:
    return {"MPIJOB_HOME": str(home), "KUBECONFIG": None}


@pytest.fixture
def mpijob(server: Any) -> Invoke:
    """`mpijob(*args)` in-process through typer's CliRunner, against the `server` fixture."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        r = runner.invoke(app, list(args), env=cli_env(server.home), input=input)
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception
        return Result(r.exit_code, r.stdout, r.stderr)

    return invoke


@pytest.fixture
def mpijob_proc(server: Any) -> Invoke:
    """`mpijob(*args)` as a real subprocess of `.venv/bin/mpijob` (bounded by a timeout)."""

    def invoke(*args: str, timeout: float = 240) -> Result:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env["MPIJOB_HOME"] = str(server.home)
        p = subprocess.run([str(MPIJOB_BIN), *args], env=env, capture_output=True, text=True, timeout=timeout)
        return Result(p.returncode, p.stdout, p.stderr)

    return invoke


def example(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / name).read_text())


def write_job(tmp_path: Path, obj: dict[str, Any], name: str) -> Path:
    """Write a TrainJob (renamed, so tests sharing one server never collide) and return its path."""
    obj = json.loads(json.dumps(obj))
    obj["metadata"]["name"] = name
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return path


def trainjob_names(invoke: Invoke) -> list[str]:
    r = invoke("get", "trainjobs", "-o", "json")
    assert r.exit_code == 0, r.stderr
    return [item["metadata"]["name"] for item in json.loads(r.stdout)["items"]]
