"""A rank that exits non-zero ends its Hydra job at once, as under Open MPI (docs/mpi-implementations.md).

Hydra (MPICH's and Intel MPI's mpiexec) ends a job early only when a rank dies on a signal, or, on that
rank's own host, when it closes its PMI connection without MPI_Finalize (`-disable-auto-cleanup` turns
both off; nothing turns more on). A rank that exits non-zero otherwise (a shell's `exit 3`, mpi4py's
`sys.exit(3)`, which finalizes first) leaves mpiexec waiting for every other rank, which can be days. Open
MPI's daemons end the job within a second.

So for Hydra jobs the runner watches the ranks itself: every `POLL` seconds it looks for processes whose
parent is a `hydra_pmi_proxy` in the job's pods (a rank that ends sooner than that after its start is not
seen, and its job ends as Hydra ends it), holds a pidfd on each, and when one ends reads its exit
status from the pidfd (`PIDFD_GET_INFO` with `PIDFD_INFO_EXIT`, Linux 6.15: any process's status, for
whoever holds its pidfd, not only its parent). The first non-zero exit is the job's failure: the runner
stops the rest and the job fails with that rank's code, naming it. On an older kernel the status cannot be
read by anyone but Hydra's proxy, and the job waits for its ranks as Hydra does.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import os
import struct
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mpijob.api import names
from mpijob.api.trainer.failures import Failure

POLL = 0.05  # seconds between looks for new ranks: a rank must live about this long to be watched
WALK = 1.0  # seconds between walks of the pods' process trees for proxies, once every host has one
PROXY = "hydra_pmi_proxy"  # Hydra's per-host daemon, the parent of every rank
RANK_VARIABLES = (b"PMI_RANK=", b"PMI_ID=")  # Hydra's, the second under `-pmi-port`
PROC = Path("/proc")
# <linux/pidfd.h>: struct pidfd_info is 64 bytes (mask, cgroupid, then pid, tgid, ppid, ruid, rgid, euid, egid,
# suid, sgid, fsuid, fsgid, exit_code as 32-bit values); _IOWR(0xFF, 11, struct pidfd_info)
PIDFD_GET_INFO = (3 << 30) | (64 << 16) | (0xFF << 8) | 11
PIDFD_INFO_EXIT = 1 << 3
_INFO = struct.Struct("=QQ11Ii")  # PIDFD_INFO_SIZE_VER0: what 6.15 has; later fields are not asked for
READ_TRIES = 50  # an ended rank's status appears once its proxy has reaped it: tried every READ_WAIT
READ_WAIT = 0.02


@dataclass(frozen=True)
class RankExit:
    """A rank's non-zero exit, as its pidfd told it."""

    rank: int
    code: int
    pod: str
    host: str


def exit_status(pidfd: int) -> int | None:
    """The wait status of the process `pidfd` holds, once it has ended and been reaped; None before, and
    on kernels without `PIDFD_INFO_EXIT` (before 6.15)."""
    info = bytearray(_INFO.pack(PIDFD_INFO_EXIT, 0, *([0] * 11), 0))
    try:
        fcntl.ioctl(pidfd, PIDFD_GET_INFO, info)
    except OSError:
        return None
    mask, *_, code = _INFO.unpack(info)
    return code if mask & PIDFD_INFO_EXIT else None


@functools.cache
def supported() -> bool:
    """Whether this kernel tells a pidfd's holder the exit status (`PIDFD_INFO_EXIT`): asked once, of a
    process that has ended (6.13 and 6.14 know PIDFD_GET_INFO, but not the exit status)."""
    try:
        probe = subprocess.Popen(["true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        fd = os.pidfd_open(probe.pid)
    except OSError:
        return False
    try:
        probe.wait(timeout=10)
        return exit_status(fd) == 0
    except subprocess.TimeoutExpired:
        probe.kill()
        return False
    finally:
        os.close(fd)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in (PROC / str(pid) / "task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _name(pid: int) -> str:
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def _rank(pid: int) -> int | None:
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        for name in RANK_VARIABLES:
            if entry.startswith(name) and entry[len(name):].isdigit():
                return int(entry[len(name):])
    return None


def proxies_below(roots: Iterable[int]) -> list[int]:
    """The pids of the Hydra proxies among `roots` and their descendants."""
    found, todo, seen = [], list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        if _name(pid) == PROXY:
            found.append(pid)
        else:
            todo += _children(pid)
    return found


class Watch:
    """The ranks of one job's pods (`pods`: pod name → (host, root pids)), until the first non-zero exit.

    The pods' process trees are walked for Hydra's proxies every look until there is one per host (`hosts`),
    then every `WALK`; each look reads only the proxies' children, the ranks."""

    def __init__(self, pods: dict[str, tuple[str, tuple[int, ...]]], hosts: int) -> None:
        self.pods, self.hosts = pods, hosts
        self.proxies: dict[int, str] = {}  # proxy pid → its pod
        self.watched: dict[int, tuple[int, str, str, int | None]] = {}  # rank pid → pidfd, pod, host, rank
        self.failed: asyncio.Future[RankExit] = asyncio.get_running_loop().create_future()
        self._walked = float("-inf")

    async def first_failure(self) -> RankExit:
        """Look for new ranks until one exits non-zero; that exit."""
        try:
            while not self.failed.done():
                self._look()
                await asyncio.wait([self.failed], timeout=POLL)
            return self.failed.result()
        finally:
            self.close()

    def close(self) -> None:
        loop = asyncio.get_running_loop()
        for fd, *_ in self.watched.values():
            loop.remove_reader(fd)
            os.close(fd)
        self.watched.clear()

    def _look(self) -> None:
        loop = asyncio.get_running_loop()
        if len(self.proxies) < self.hosts or loop.time() - self._walked >= WALK:
            self._walked = loop.time()
            self.proxies = {pid: pod for pod, (_, roots) in self.pods.items() for pid in proxies_below(roots)}
        for pid, (fd, pod, host, rank) in self.watched.items():
            if rank is None:  # seen between its proxy's fork and its exec, its environment the proxy's
                self.watched[pid] = (fd, pod, host, _rank(pid))
        for proxy, pod in self.proxies.items():
            for pid in _children(proxy):
                if pid in self.watched:
                    continue
                try:
                    fd = os.pidfd_open(pid)
                except OSError:  # already gone: too short-lived to watch
                    continue
                self.watched[pid] = (fd, pod, self.pods[pod][0], _rank(pid))
                loop.add_reader(fd, self._ended, pid)

    def _ended(self, pid: int, tries: int = READ_TRIES) -> None:
        fd, pod, host, rank = self.watched[pid]
        loop = asyncio.get_running_loop()
        loop.remove_reader(fd)
        status = exit_status(fd)
        if status is None:  # ended, not yet reaped by its proxy
            if tries > 0 and pid in self.watched:
                loop.call_later(READ_WAIT, self._ended, pid, tries - 1)
            return
        # Only a rank seen after its exec (its environment its own): a child of the proxy that failed to exec
        # its program is Hydra's to report (`execvp error`, mpiexec's exit 255), as CommandNotFound.
        if rank is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) and not self.failed.done():
            self.failed.set_result(RankExit(rank, os.WEXITSTATUS(status), pod, host))


def failure(job: str, ended: RankExit, launcher: str, last: str, launcher_exit: int | None) -> Failure:
    """The job's failure: the rank's exit and last line (`last`), in the words `api/trainer/failures.py` gives a
    rank's exit, and what became of mpiexec (its pod's exit code, `launcher_exit`; None: not yet known)."""
    where = "launcher" if ended.pod == launcher else "node"
    said = f": rank {ended.rank}: {last.strip()[:300]}" if last.strip() else ""
    summary = (f"rank {ended.rank} on {where} pod {ended.pod} (host {ended.host}) exited with code {ended.code}"
               f"{said}; Hydra's mpiexec would have waited for every other rank, so the local cluster stopped it "
               f"(launcher pod {launcher}{'' if launcher_exit is None else f' exited with code {launcher_exit}'}) "
               "and them")
    return Failure(names.FAILURE_PROGRAM, summary, f"Read what it printed: mpijob logs {job} --rank {ended.rank}.",
                   ended.pod, ended.rank, ended.host)
