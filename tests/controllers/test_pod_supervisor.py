"""A pod's supervisor (controllers/kubelet/shim.py) on its own: it writes the pod's output to the
container log, records the exit, and lets a later server re-adopt the pod (`pods.adopt`) as if it had
started it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

from mpijob.controllers.kubelet import pods, shim
from mpijob.store.logs import LogStore

ENV = {"PATH": os.environ["PATH"], "MPIJOB_CLUSTER": "test-supervisor"}


def _lines(logs: LogStore, name: str) -> list[str]:
    return logs.read("ns", name, "node").decode().splitlines()


def test_the_supervisor_writes_the_log_and_records_the_exit(tmp_path: Path) -> None:
    logs = LogStore(tmp_path / "logs")

    async def main() -> pods.Exit:
        pod = await pods.spawn(logs, "ns", "p", ["sh", "-c", "echo out; echo err >&2; exit 7"], ENV, tmp_path / "s")
        return await pod.wait()

    assert asyncio.run(main()) == pods.Exit(7)
    assert sorted(_lines(logs, "p")) == ["err", "out"]
    assert json.loads((tmp_path / "s" / shim.EXIT).read_text())["returncode"] == 7
    stamped = logs.read("ns", "p", "node", timestamps=True).decode()
    assert (stamped.startswith("20") and "Z out" in stamped) or "Z err" in stamped


def test_a_later_server_re_adopts_a_running_pod_and_misses_no_line(tmp_path: Path) -> None:
    logs = LogStore(tmp_path / "logs")
    script = "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.2; done; kill -TERM $$"

    async def first() -> int:
        pod = await pods.spawn(logs, "ns", "p", ["bash", "-c", script], ENV, tmp_path / "s")
        return pod.pid  # this "server" goes away; its supervisor does not notice

    pid = asyncio.run(first())

    async def second() -> tuple[bool, pods.Exit, str]:
        pod = pods.adopt("ns", "p", tmp_path / "s")
        assert pod is not None and pod.pid == pid
        running = pod.running
        return running, await pod.wait(), pod.lost()

    running, exit, lost = asyncio.run(second())
    assert running and exit == pods.Exit(143, signal.SIGTERM) and lost == ""
    assert _lines(logs, "p") == [f"tick {i}" for i in range(1, 7)]


def test_a_pod_whose_supervisor_was_killed_is_lost_and_says_why(tmp_path: Path) -> None:
    logs = LogStore(tmp_path / "logs")

    async def first() -> None:
        await pods.spawn(logs, "ns", "p", ["sleep", "30"], ENV, tmp_path / "s")

    asyncio.run(first())
    state = json.loads((tmp_path / "s" / shim.STATE).read_text())
    os.kill(state["shim"], signal.SIGKILL)
    os.kill(state["pid"], signal.SIGKILL)  # what the sandbox's --pdeathsig does to a real pod

    async def second() -> tuple[pods.Exit, str]:
        pod = pods.adopt("ns", "p", tmp_path / "s")
        assert pod is not None
        return await pod.wait(), pod.lost()

    exit, lost = asyncio.run(second())
    assert exit == pods.LOST and "supervisor was killed" in lost
    (tmp_path / "s" / shim.STATE).write_text(json.dumps({**state, "boot_id": "another-boot"}))

    async def after_reboot() -> str:
        pod = pods.adopt("ns", "p", tmp_path / "s")
        assert pod is not None and not pod.running
        return pod.lost()

    assert "the machine restarted" in asyncio.run(after_reboot())


def test_a_pod_that_cannot_start_says_why(tmp_path: Path) -> None:
    async def main() -> None:
        await pods.spawn(LogStore(tmp_path / "logs"), "ns", "p", ["/no/such/program"], ENV, tmp_path / "s")

    try:
        asyncio.run(main())
    except OSError as e:
        assert "could not start" in str(e) and "/no/such/program" in str(e), e
    else:
        raise AssertionError("a pod whose program does not exist started")


def test_a_supervisor_that_fails_once_its_pod_runs_says_why_in_its_errors_file(tmp_path: Path) -> None:
    logs = LogStore(tmp_path / "logs")
    logs.path("ns", "p", "node").mkdir(parents=True)  # the container log cannot be opened: a directory is there

    async def main() -> tuple[pods.Exit, str]:
        pod = await pods.spawn(logs, "ns", "p", ["sleep", "30"], ENV, tmp_path / "s")
        ended = await pod.wait()
        os.killpg(pod.pid, signal.SIGKILL)  # what the sandbox's --pdeathsig does to a real pod
        return ended, pod.lost()

    ended, lost = asyncio.run(main())
    assert ended == pods.LOST and lost.startswith("its supervisor failed: IsADirectoryError"), lost
    assert (tmp_path / "s" / shim.ERRORS).stat().st_mode & 0o777 == 0o600
