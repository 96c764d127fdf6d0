"""The sandbox mode is one typed value whose members are the strings `$MPIJOB_SANDBOX` takes and the
server's state file records, so modes written before it read back equal."""

from __future__ import annotations

import json

import pytest
from mpijob.api import sandbox_mode
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.controllers.kubelet import sandbox


def test_the_modes_are_their_strings() -> None:
    assert [m.value for m in SandboxMode] == ["namespace", "process"]
    assert SandboxMode.PROCESS == "process" and f"{SandboxMode.NAMESPACE}" == "namespace"
    assert json.dumps({"sandbox_mode": SandboxMode.PROCESS}) == '{"sandbox_mode": "process"}'
    assert json.loads('{"m": "namespace"}')["m"] == SandboxMode.NAMESPACE
    assert sandbox_mode.ENV == "MPIJOB_SANDBOX" and sandbox_mode.NONE == "none"


@pytest.mark.parametrize(("value", "mode"), [
    ("namespace", SandboxMode.NAMESPACE), ("process", SandboxMode.PROCESS),
    (None, None), ("", None), ("Process", None), ("none", None),
])
def test_parse_takes_only_a_mode(value: str | None, mode: SandboxMode | None) -> None:
    assert SandboxMode.parse(value) is mode


@pytest.mark.parametrize("forced", list(SandboxMode))
def test_the_environment_forces_the_mode(monkeypatch: pytest.MonkeyPatch, forced: SandboxMode) -> None:
    monkeypatch.setenv(sandbox_mode.ENV, forced.value)
    assert sandbox.detect_mode() is forced
