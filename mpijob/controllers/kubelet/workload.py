"""Which processes of a pod are its workload, for a graceful stop.

A kubelet sends SIGTERM to a container's PID 1. In an MPI job that reaches nobody who can checkpoint:
a node's PID 1 is sshd, whose exit takes the ranks down with SIGKILL, and the launcher's `mpirun`
aborts the job with the same (docs/checkpointing.md). So a pod stopped from outside gets SIGTERM at
its workload instead: walking down its process tree from the sandbox, past sshd, ssh and every MPI
implementation's launchers and daemons (`mpi_impl.LAUNCH_PROCESSES`) and the local cluster's rank agent
(`rank_agent.py`), the first processes that are none
of those (the ranks, a launcher's own program) and the shells above them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mpijob.api.trainer import mpi_impl
from mpijob.controllers.kubelet import rank_agent

DEFAULT_GRACE_SECONDS = 30  # a pod's terminationGracePeriodSeconds when its spec sets none, as in Kubernetes
POLL = 0.05  # seconds between looks at whether the signalled processes are gone
COMM_LEN = 15  # the kernel keeps this many characters of a process's name
TRANSPORT = frozenset({"sshd", "ssh"})  # how MPI reaches other pods: left to the teardown that follows
SHELLS = frozenset({"sh", "bash", "dash"})  # signalled (`sh -c "a; b"` must not go on to b) and looked through
PROC = Path("/proc")


@dataclass(frozen=True)
class Process:
    """A process as `/proc/<pid>/stat` shows it; `start` (clock ticks after boot) tells a reused pid apart."""

    pid: int
    ppid: int
    name: str
    start: int
    zombie: bool


def _stat(pid: int) -> Process | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    head, _, rest = raw.rpartition(")")  # the name sits in parentheses and may hold both
    fields = rest.split()
    return Process(pid, int(fields[1]), head.partition("(")[2], int(fields[19]), fields[0] in ("Z", "X"))


def table() -> dict[int, Process]:
    """Every process of the machine, by pid."""
    procs = (_stat(int(e.name)) for e in os.scandir(PROC) if e.name.isdigit())
    return {p.pid: p for p in procs if p}


# the local cluster's rank agent passes signals on too, but the rank itself is signalled
_PASSED = frozenset(n[:COMM_LEN] for n in (*mpi_impl.LAUNCH_PROCESSES, *TRANSPORT, rank_agent.PROCESS_NAME))


def find(roots: Iterable[int], sandbox_depth: int, procs: dict[int, Process] | None = None) -> list[Process]:
    """The workload below `roots` (a pod's top processes): the first `sandbox_depth` levels are the
    sandbox's own (namespace mode: `unshare` and the namespace's init shell) and are looked through."""
    procs = table() if procs is None else procs
    children: dict[int, list[Process]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p)
    found: list[Process] = []
    level = [procs[r] for r in roots if r in procs]
    for depth in range(64):  # deeper than any real tree; a bound, not a hope
        below: list[Process] = []
        for p in level:
            if p.zombie:
                continue
            if depth >= sandbox_depth and p.name not in _PASSED:
                found.append(p)
                if p.name not in SHELLS:
                    continue
            below += children.get(p.pid, [])
        if not below:
            break
        level = below
    return found


def alive(procs: Iterable[Process]) -> list[Process]:
    """Those of `procs` still running as the process that was found (its pid not reused since)."""
    return [p for p in procs if (now := _stat(p.pid)) and now.start == p.start and not now.zombie]


def signal_all(procs: Iterable[Process], sig: int) -> None:
    for p in alive(procs):
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, sig)


async def stop(procs: list[Process], grace: float) -> None:
    """SIGTERM, then SIGKILL to whatever of them is left after `grace` seconds."""
    signal_all(procs, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while (left := alive(procs)) and loop.time() < deadline:
        await asyncio.sleep(POLL)
    signal_all(left, signal.SIGKILL)
