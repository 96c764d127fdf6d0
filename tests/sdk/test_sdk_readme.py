"""The README's "Python SDK" examples run as written against a real local cluster."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from mpijob import Client
from mpijob.store.server_process import ServerInfo

README = Path(__file__).resolve().parents[2] / "README.md"


def sdk_snippets() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Python SDK\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def test_readme_examples_run(server: ServerInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(server.kubeconfig))  # `Client()` finds the cluster as the CLI does
    sync, aio = sdk_snippets()
    assert len(sync.strip().splitlines()) <= 10 and "num_nodes=4" in sync
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(sync, "README sync example", "exec"), {})  # noqa: S102 — the README's own example is what is tested
            exec(compile(aio, "README async example", "exec"), {"__name__": "readme"})  # noqa: S102 — likewise
        ranks = sorted(re.findall(r"^rank (\d): hi$", out.getvalue(), re.MULTILINE))
        assert ranks == ["0", "1", "2", "3"], out.getvalue()
        with Client() as c:
            for n in ("sweep-0", "sweep-1", "sweep-2"):
                assert any(x["type"] == "Complete" for x in c.get(n)["status"]["conditions"])
    finally:
        with Client() as c:
            for n in ("hello-sdk", "sweep-0", "sweep-1", "sweep-2"):
                with contextlib.suppress(Exception):
                    c.delete(n)
