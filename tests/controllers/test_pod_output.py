"""A launcher's supervisor takes all its pod writes, however fast, even after something in the pod made
its stdout non-blocking (ssh does, on mpirun's stdout: docs/logs.md)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from mpijob.controllers.kubelet import pods
from mpijob.store.logs import LogStore

ENV = {"PATH": os.environ["PATH"], "MPIJOB_CLUSTER": "test-pod-output"}
CHUNKS = 1024  # of 8 KiB: 8 MiB, eight times the pipe
# What Open MPI 4.1's mpirun does at exit with what it still holds, once ssh has set O_NONBLOCK on the
# stdout it shares with mpirun: one write per chunk, and what the pipe refuses is dropped
PROGRAM = f"""
import fcntl, os, sys, time
fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_NONBLOCK)  # as ssh does at wire-up
time.sleep(0.5)  # wire-up done; the ranks run
line = b"x" * 8191 + b"\\n"
dropped = 0
for _ in range({CHUNKS}):
    try:
        dropped += os.write(1, line) < len(line)
    except BlockingIOError:
        dropped += 1
os.write(2, b"dropped %d\\n" % dropped)
"""


def test_a_launcher_whose_stdout_was_made_non_blocking_loses_no_write(tmp_path: Path) -> None:
    logs = LogStore(tmp_path / "logs")

    async def main() -> pods.Exit:
        pod = await pods.spawn(logs, "ns", "launcher", ["python3", "-c", PROGRAM], ENV, tmp_path / "s",
                               mpi={"keep_tags": False, "hydra": False})
        return await asyncio.wait_for(pod.wait(), 60)

    assert asyncio.run(main()) == pods.Exit(0)
    lines = logs.read("ns", "launcher", "node").split(b"\n")[:-1]
    assert b"dropped 0" in lines, [ln for ln in lines if ln.startswith(b"dropped")]
    assert lines.count(b"x" * 8191) == CHUNKS


def test_a_node_pod_keeps_its_own_stdout_as_it_set_it(tmp_path: Path) -> None:
    """Only a launcher's pipes are held blocking: a node pod's programs keep the flags they set."""
    logs = LogStore(tmp_path / "logs")
    script = ("import fcntl, os, time\nfcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_NONBLOCK)\n"
              "time.sleep(0.3)\nprint(bool(fcntl.fcntl(1, fcntl.F_GETFL) & os.O_NONBLOCK), flush=True)\n")

    async def main() -> pods.Exit:
        pod = await pods.spawn(logs, "ns", "node", ["python3", "-c", script], ENV, tmp_path / "s")
        return await asyncio.wait_for(pod.wait(), 60)

    assert asyncio.run(main()) == pods.Exit(0)
    assert logs.read("ns", "node", "node") == b"True\n"
