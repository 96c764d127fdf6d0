"""What /proc says of a pod's processes, for the runner's watchdog and its readiness probe: a process's name,
CPU time and threads, its children (from every thread), its MPI rank from its environment, the processes that
carry a pod's marker (a process sandbox's orphans), and the TCP ports a pod listens on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mpijob.api.trainer.bound_failures import ELSEWHERE

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK")
HYDRA_RANK, HYDRA_PMI_ID = "PMI_RANK", "PMI_ID"  # Hydra's rank, and its name under `-pmi-port` (no size then)


@dataclass(frozen=True)
class Stat:
    name: str
    cpu: float  # seconds, user + system
    threads: int
    start: int  # clock ticks after boot: tells a reused pid apart


def read_stat(pid: int) -> Stat | None:
    """What /proc/<pid>/stat says of a process."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    head, _, rest = raw.rpartition(")")
    fields = rest.split()
    return Stat(head.partition("(")[2], (int(fields[11]) + int(fields[12])) / TICKS, int(fields[17]), int(fields[19]))


def children(pid: int, threads: int = 0) -> list[int]:
    """A process's children, from every one of its threads (PRRTE's daemons fork on threads)."""
    if threads == 1:  # one thread: its own list is all (no look through the task folder)
        try:
            return [int(c) for c in (PROC / str(pid) / "task" / str(pid) / "children").read_text().split()]
        except OSError:
            return []
    out: list[int] = []
    try:
        for task in os.scandir(PROC / str(pid) / "task"):
            try:
                out += [int(c) for c in (Path(task.path) / "children").read_text().split()]
            except OSError:
                continue
    except OSError:
        pass
    return out


def rank_of(pid: int, variables: tuple[str, str]) -> tuple[int, int] | None:
    """(rank, world size) from a process's environment, when it is a rank."""
    try:
        environ = (PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return None
    found = dict(e.decode(errors="replace").partition("=")[::2] for e in environ if b"=" in e)
    rank = found.get(variables[0], "")
    if not rank and variables[0] == HYDRA_RANK:
        rank = found.get(HYDRA_PMI_ID, "")
    size = found.get(variables[1], "")
    return (int(rank), int(size) if size.isdigit() else 0) if rank.isdigit() else None


def marked(markers: dict[tuple[tuple[str, str], ...], str], orphans: bool = False) -> dict[str, list[int]]:
    """pod → the machine's processes that carry its marker (`orphans`: only children of init), by /proc."""
    found: dict[str, list[int]] = {}
    me = os.getpid()
    for entry in os.scandir(PROC):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if orphans and (Path(entry.path) / "stat").read_text().rpartition(")")[2].split()[1] != "1":
                continue
            environ = set((Path(entry.path) / "environ").read_bytes().split(b"\0"))
        except (OSError, IndexError):
            continue
        for marker, pod in markers.items():
            if all(f"{k}={v}".encode() in environ for k, v in marker):
                found.setdefault(pod, []).append(int(entry.name))
    return found


# -- why a node is not ready: what its processes listen on --------------------------------------------------


def tree(roots: Iterable[int]) -> list[int]:
    """Every process below `roots`, the roots included."""
    out, level = [], list(roots)
    for _ in range(64):
        out += level
        level = [c for pid in level for c in children(pid)]
        if not level:
            break
    return out


def listening(roots: Iterable[int]) -> list[tuple[int, str]]:
    """(port, program) of every TCP socket a pod's processes listen on, read from their own network's /proc."""
    pids = tree(roots)
    owner: dict[str, str] = {}  # socket inode → the program holding it
    for pid in pids:
        stat = read_stat(pid)
        try:
            fds = os.listdir(PROC / str(pid) / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(PROC / str(pid) / "fd" / fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                owner.setdefault(target[8:-1], stat.name if stat else "?")
    found: set[tuple[int, str]] = set()
    for pid in pids[:1]:
        for table in ("tcp", "tcp6"):
            try:
                lines = (PROC / str(pid) / "net" / table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if len(fields) > 9 and fields[3] == "0A" and fields[9] in owner:  # 0A: LISTEN
                    found.add((int(fields[1].rpartition(":")[2], 16), owner[fields[9]]))
    return sorted(found)


def not_listening(roots: Iterable[int], port: int) -> str:
    """Why nothing of a pod answers SSH on `port`, where /proc can tell ("" where it cannot)."""
    sockets = listening(roots)
    if not sockets:
        programs = sorted({s.name for pid in tree(roots) if (s := read_stat(pid))})
        return (f"none of its processes listens on a TCP port (they are: {', '.join(programs)})" if programs
                else "")
    if any(p == port for p, _ in sockets):
        return ""  # listening where it should: what it answered, or refused, says why
    said = ", ".join(f"{program} on port {p}" for p, program in sockets)
    return f"{ELSEWHERE} the probe's port {port}: {said}"
