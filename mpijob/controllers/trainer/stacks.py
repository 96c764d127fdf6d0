"""Reads the current stack of every rank of a running job, for `mpijob debug stacks` (docs/debugging.md).

The ranks are found as the watchdog finds them (`watchdog.py`): below each pod's top processes (and, in the
process sandbox, which has no PID namespace, its daemonized MPI daemons, by the pod's marker), a process whose
environment holds its MPI rank; of the processes that carry one rank (the rank agent above it, a shell, the
workers it forks), the first below MPI's own that is not a shell. Each is read by the server itself, which
may trace the ranks (it is root, or in the rootless sandbox the owner of the job's user namespace), with
`py-spy dump` (a Python rank's Python frames, with the native calls below them from `eu-stack`) or Debian's
`eu-stack` (any other rank, else `gdb`). Every tool pauses its rank for a moment only. All ranks are read at
once, each within `PER_RANK` seconds and the whole within `WHOLE`: a rank that cannot be read is reported with
why, never waited for. The merge is pure (`api/trainer/stacks.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mpijob.api.trainer.stacks import (
    EU_STACK,
    GDB,
    PY_SPY,
    Frame,
    RankStack,
    from_eu_stack,
    from_gdb,
    from_py_spy,
    simplify,
    with_native,
)
from mpijob.controllers.kubelet import rank_agent, workload
from mpijob.controllers.trainer import children, procfs, watchdog
from mpijob.controllers.trainer.runner import JobRunner

PER_RANK = 10.0  # seconds one rank's tools may take in all; then it is reported unreadable
WHOLE = 25.0  # seconds for every rank: under a client's 30 s request timeout (client/core.py REQUEST_TIMEOUT)
# tools running at once: a bound on what is started, not a speed-up (on a busy machine they share its cores)
PARALLEL = max(8, 2 * (os.cpu_count() or 1))
OUTPUT_LIMIT = 1 << 22  # bytes of a tool's output read (a deep stack is a few KiB)
NOT_RANKS = frozenset(n[:watchdog.COMM_LEN] for n in (*watchdog.NOT_RANKS, rank_agent.PROCESS_NAME))
YAMA = Path("/proc/sys/kernel/yama/ptrace_scope")
REFUSED = ("permission denied", "operation not permitted")  # the kernel's EPERM/EACCES, in each tool's words
GONE = ("no such process", "process not found")


@dataclass(frozen=True)
class RankProcess:
    rank: int
    pod: str
    pid: int


# -- finding the ranks (what the watchdog looks through) --------------------------------------------------


def find_ranks(pods: Sequence[watchdog.Pod], variables: tuple[str, str], orphans: bool) -> list[RankProcess]:
    """Each rank's process, by rank (see the module's docstring); `orphans`: the process sandbox's."""
    adopted = procfs.marked({p.marker: p.name for p in pods if p.marker}, orphans=True) if orphans else {}
    best: dict[int, tuple[tuple[bool, int], RankProcess]] = {}  # rank → ((a shell, depth), its process)
    for pod in pods:
        level, seen = [*pod.roots, *adopted.get(pod.name, ())], set()
        for depth in range(64):  # deeper than any real tree; a bound, not a hope
            below = []
            for pid in level:
                stat = procfs.read_stat(pid) if pid not in seen else None
                seen.add(pid)
                if stat is None:
                    continue
                if stat.name not in NOT_RANKS and (found := procfs.rank_of(pid, variables)):
                    key = (stat.name in workload.SHELLS, depth)
                    if found[0] not in best or key < best[found[0]][0]:
                        best[found[0]] = (key, RankProcess(found[0], pod.name, pid))
                below += procfs.children(pid, stat.threads)
            if not below:
                break
            level = below
    return [best[r][1] for r in sorted(best)]


# -- reading one rank ------------------------------------------------------------------------------------


def tool(name: str) -> str | None:
    """Where a tool is: py-spy beside the server's Python (its wheel), the others on PATH."""
    places = [sysconfig.get_path("scripts"), os.environ.get("PATH", ""), "/usr/bin", "/usr/sbin", "/bin"]
    return shutil.which(name, path=os.pathsep.join(p for p in places if p))


def _is_python(pid: int) -> bool:
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name.startswith("python")
    except OSError:
        return False


def _argv(name: str, path: str, pid: int, lines: bool) -> list[str]:
    """A tool's command line; `lines`: with source lines (eu-stack reads DWARF's line tables for them, about 7
    times as long: worth it for a native program's own frames, not for the libraries below a Python frame)."""
    if name == PY_SPY:
        return [path, "dump", "--pid", str(pid), "--json"]
    if name == EU_STACK:
        return [path, "-1", "-m", *(["-s"] if lines else []), "-p", str(pid)]  # the main thread, its modules
    return [path, "-nx", "-batch", "-p", str(pid), "-ex", "bt"]


def _ns_pids(pid: int) -> list[int]:
    """The process's ids, outermost first: the machine's and, in PID namespaces, its own (`NSpid`)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return [pid]
    line = next((ln for ln in status.splitlines() if ln.startswith("NSpid:")), "")
    return [int(f) for f in line.split()[1:] if f.isdigit()] or [pid]


def _ids(pid: int) -> set[int]:
    """The ids py-spy may report a process by (it names threads by the innermost)."""
    return {pid, *_ns_pids(pid)}


def _inside(argv: list[str], pid: int) -> list[str]:
    """A native tool's `argv`, run in the rank's own mount and PID namespaces where the files it runs are not
    where its /proc/PID/maps names them from here. Those names are relative to this process's root; a pod's
    root that lies outside it (a server in a chroot) gets them as paths from the machine's root, which
    eu-stack and gdb cannot open, and without the files' unwind tables they read no frame. Inside, the paths
    are the pod's own. (py-spy reads through /proc/PID/root and needs none of this.)"""
    try:
        visible = Path(os.readlink(f"/proc/{pid}/exe")).exists()
        same_user_ns = os.readlink(f"/proc/{pid}/ns/user") == os.readlink("/proc/self/ns/user")
    except OSError:
        return argv
    if visible:
        return argv
    own = str(_ns_pids(pid)[-1])
    owner = [] if same_user_ns else ["--user", "--preserve-credentials"]  # rootless: as the namespace's owner
    return ["nsenter", f"--target={pid}", *owner, "--mount", "--pid", "--root", "--",
            *(own if arg == str(pid) else arg for arg in argv)]


def _frames(name: str, out: bytes, pid: int) -> tuple[Frame, ...]:
    text = out.decode(errors="replace")
    if name == PY_SPY:
        try:
            return from_py_spy(json.loads(text), _ids(pid))
        except ValueError:
            return ()
    return from_eu_stack(text) if name == EU_STACK else from_gdb(text)


async def _run(argv: list[str], pid: int, timeout: float) -> tuple[int, bytes, bytes] | None:
    """A tool's exit code and output; None when it took longer than `timeout`. A tool that is not done (timed out,
    or the request cancelled) is killed and reaped, and its rank sent SIGCONT: a tool killed while it held the rank
    stopped must not leave it stopped."""
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL, limit=OUTPUT_LIMIT,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), max(timeout, 0.0))
    except TimeoutError:
        return None
    finally:
        if proc.returncode is None:
            children.kill(proc)
            await proc.wait()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    return proc.returncode or 0, out, err


def _refused(name: str, said: str) -> str:
    """Why the kernel would not let the server trace a rank, and what to do."""
    yama = ""
    with contextlib.suppress(OSError, ValueError):
        scope = int(YAMA.read_text())
        yama = f"; kernel.yama.ptrace_scope is {scope} here" + (" (3: no process may be traced at all)"
                                                               if scope == 3 else "")
    return (f"the kernel refused to let the server trace it ({name}: {said}): the server must run as root "
            "(CAP_SYS_PTRACE), or, in the rootless sandbox, as the user who owns the job's user namespace, and "
            f"nothing (a seccomp profile, a container runtime without SYS_PTRACE) may forbid ptrace{yama}")


class Unreadable(Exception):
    """A rank no other tool would read either (it ended, the kernel refused, time ran out): why."""


async def _read(name: str, path: str, rank: RankProcess, deadline: float, timeout: float,
                lines: bool = True) -> tuple[Frame, ...]:
    """One tool's frames of a rank (outermost first, as read); LookupError when it read none but another tool
    may, `Unreadable` when none would."""
    argv = _argv(name, path, rank.pid, lines)
    ran = await _run(argv if name == PY_SPY else _inside(argv, rank.pid), rank.pid,
                     deadline - asyncio.get_running_loop().time())
    if ran is None:
        ended = "" if procfs.read_stat(rank.pid) else "; the rank has ended since"
        raise Unreadable(f"{name} read nothing within {timeout:g}s and was stopped{ended}")
    code, out, err = ran
    frames = _frames(name, out, rank.pid) if code == 0 else ()
    if frames:
        return frames
    said = (err.decode(errors="replace").strip().splitlines() or [f"exit code {code}, no stack"])[-1]
    if procfs.read_stat(rank.pid) is None or any(g in said.lower() for g in GONE):
        raise Unreadable("the rank ended while its stack was read")
    if any(r in said.lower() for r in REFUSED):
        raise Unreadable(_refused(name, said))
    raise LookupError(f"{name}: {said}")


async def read_rank(rank: RankProcess, timeout: float = PER_RANK) -> RankStack:
    """One rank's stack: a Python rank's Python frames by py-spy with the native calls below them by eu-stack
    (`with_native`); any other rank's by eu-stack, else gdb. One tool at a time: each traces the rank."""
    deadline = asyncio.get_running_loop().time() + timeout
    spy = tool(PY_SPY) if _is_python(rank.pid) else None
    natives = [(n, p) for n in (EU_STACK, GDB) if (p := tool(n))]
    if not spy and not natives:
        return RankStack(rank.rank, rank.pod, rank.pid, error="no tool to read it is installed: eu-stack or gdb "
                         "(`make setup` installs py-spy and Debian's elfutils, which has eu-stack)")
    first = PY_SPY if spy else natives[0][0]  # the tool named when none read anything
    used, why = [], []
    python: tuple[Frame, ...] = ()
    native: tuple[Frame, ...] = ()
    try:
        if spy:
            try:
                python = await _read(PY_SPY, spy, rank, deadline, timeout)
                used.append(PY_SPY)
            except LookupError as e:  # not a Python py-spy knows: its native stack says more than nothing
                why.append(str(e))
        for name, path in natives:
            try:
                native = await _read(name, path, rank, deadline, timeout, lines=not python)
                used.append(name)
                break
            except LookupError as e:
                why.append(str(e))
    except Unreadable as e:
        if not python:
            return RankStack(rank.rank, rank.pod, rank.pid, "+".join(used) or first, error=str(e))
    frames = simplify(with_native(python, native) if python else native)
    if not frames:
        return RankStack(rank.rank, rank.pod, rank.pid, "+".join(used) or first,
                         error=f"no tool read its stack: {'; '.join(why)}")
    return RankStack(rank.rank, rank.pod, rank.pid, "+".join(used), frames)


async def read_all(ranks: Iterable[RankProcess], per_rank: float = PER_RANK, whole: float = WHOLE) -> list[RankStack]:
    """Every rank's stack, `PARALLEL` tools at a time, each rank within `per_rank` and all within `whole`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + whole
    gate = asyncio.Semaphore(PARALLEL)

    async def one(rank: RankProcess) -> RankStack:
        async with gate:
            left = deadline - loop.time()
            if left <= 0:
                return RankStack(rank.rank, rank.pod, rank.pid, error=f"not read: every rank had {whole:g}s in all")
            return await read_rank(rank, min(per_rank, left))

    return list(await asyncio.gather(*(one(r) for r in ranks)))


async def of_run(runs: Iterable[JobRunner], uid: str) -> list[RankStack] | None:
    """The stacks of the ranks of the job `uid`'s run ([] when none runs now); None when it has no run."""
    runner = next((r for r in runs if r.plan.uid == uid), None)
    if runner is None:
        return None
    ranks = await asyncio.to_thread(find_ranks, runner.watched_pods(), runner.impl.rank_variables,
                                    not runner.mode.private)
    return await read_all(ranks)
