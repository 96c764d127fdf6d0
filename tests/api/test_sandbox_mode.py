"""The sandbox mode is one typed value whose members are the strings `$MPIJOB_SANDBOX` takes and the
server's state file records, so modes written before it read back equal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mpijob.api import sandbox_mode
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.controllers.kubelet import rootless, sandbox


def test_the_modes_are_their_strings() -> None:
    assert [m.value for m in SandboxMode] == ["namespace", "rootless", "process"]
    assert [m.private for m in SandboxMode] == [True, True, False]
    assert SandboxMode.PROCESS == "process" and f"{SandboxMode.NAMESPACE}" == "namespace"
    assert json.dumps({"sandbox_mode": SandboxMode.PROCESS}) == '{"sandbox_mode": "process"}'
    assert json.loads('{"m": "namespace"}')["m"] == SandboxMode.NAMESPACE
    assert sandbox_mode.ENV == "MPIJOB_SANDBOX" and sandbox_mode.NONE == "none"


@pytest.mark.parametrize(("value", "mode"), [
    ("namespace", SandboxMode.NAMESPACE), ("rootless", SandboxMode.ROOTLESS), ("process", SandboxMode.PROCESS),
    (None, None), ("", None), ("Process", None), ("none", None),
])
def test_parse_takes_only_a_mode(value: str | None, mode: SandboxMode | None) -> None:
    assert SandboxMode.parse(value) is mode


@pytest.mark.parametrize("forced", list(SandboxMode))
def test_the_environment_forces_the_mode(monkeypatch: pytest.MonkeyPatch, forced: SandboxMode) -> None:
    monkeypatch.setenv(sandbox_mode.ENV, forced.value)
    detected = sandbox.detect_mode()
    assert detected.mode is forced and sandbox_mode.ENV in detected.why


def test_where_user_namespaces_are_off_the_fallback_names_the_setting(tmp_path: Path) -> None:
    """What `server status` says of a process sandbox it fell back to: the sysctl, its value, the command."""
    def sysctl(name: str, value: str) -> None:
        path = tmp_path / name.replace(".", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")

    sysctl("kernel.unprivileged_userns_clone", "0")
    why = rootless._userns_off("unshare: Operation not permitted", tmp_path)
    assert "(kernel.unprivileged_userns_clone = 0)" in why and "`sysctl -w kernel.unprivileged_userns_clone=1`" in why
    sysctl("kernel.unprivileged_userns_clone", "1")
    sysctl("user.max_user_namespaces", "0")
    assert "`sysctl -w user.max_user_namespaces=15000`" in rootless._userns_off("", tmp_path)
    sysctl("user.max_user_namespaces", "63000")
    sysctl("kernel.apparmor_restrict_unprivileged_userns", "1")  # Ubuntu 24.04's
    assert "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`" in rootless._userns_off("", tmp_path)
    sysctl("kernel.apparmor_restrict_unprivileged_userns", "0")
    assert rootless._userns_off("unshare: boom", tmp_path) == "unprivileged user namespaces do not work here: unshare: boom"
    assert "in a chroot" in rootless._userns_off("unshare: unshare failed: Operation not permitted", tmp_path)


def test_what_holds_in_each_mode() -> None:
    held = {mode: sandbox.guarantees(mode) for mode in SandboxMode}
    assert not any(held[SandboxMode.PROCESS].values())
    assert held[SandboxMode.NAMESPACE]["tenant_uids"] and not held[SandboxMode.ROOTLESS]["tenant_uids"]
    assert held[SandboxMode.ROOTLESS]["host_names"] and held[SandboxMode.ROOTLESS]["volumes"]


def test_the_docs_table_is_the_list_of_guarantees() -> None:
    """docs/sandbox.md's "Three modes" table says what `GUARANTEES` says, row by row."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "sandbox.md").read_text()
    for what, modes in sandbox_mode.GUARANTEES.values():
        row = next((line for line in text.splitlines() if line.startswith(f"| {what} |")), None)
        assert row is not None, f"docs/sandbox.md has no row for {what!r}"
        cells = [c.strip() for c in row.strip("|").split("|")][1:]
        assert [c != "no" for c in cells] == [m in modes for m in SandboxMode], row
