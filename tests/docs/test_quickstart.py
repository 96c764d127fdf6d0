"""The README's quickstart runs as written, each snippet in a fresh Python as a user would: the 4-node
pi job from the mpijob SDK and from the upstream Kubeflow SDK (`make run`, the first way, is what
tests/cli/test_cli_run.py's pi test runs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mpijob import Client
from mpijob.store.server_process import ServerInfo

REPO = Path(__file__).resolve().parents[2]
PI = re.compile(r"pi ~= (3\.\d+)")


def quickstart_snippets() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def test_quickstart_runs_pi_from_both_sdks(server: ServerInfo, tmp_path: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}  # what `export KUBECONFIG=…` does
    ours, upstream = quickstart_snippets()
    with Client(kubeconfig=str(server.kubeconfig)) as c:
        before = {j["metadata"]["name"] for j in c.list()}
    try:
        outputs = []
        for i, snippet in enumerate((ours, upstream)):
            script = tmp_path / f"quickstart_{i}.py"
            script.write_text(snippet)
            r = subprocess.run([sys.executable, str(script)], cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=300)
            assert r.returncode == 0, r.stderr
            found = PI.findall(r.stdout)
            assert found and float(found[-1]) == pytest.approx(3.141592653589793, abs=1e-9), r.stdout
            outputs.append(r.stdout)
        assert re.search(r"^pi ~= 3\.\d+ on 4 ranks$", outputs[1], re.M), outputs[1]  # as printed: no rank tag
    finally:
        with Client(kubeconfig=str(server.kubeconfig)) as c:
            for job in c.list():
                if job["metadata"]["name"] not in before:
                    c.delete(job["metadata"]["name"])
