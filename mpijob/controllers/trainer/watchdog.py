"""Watches a running job for what no exit shows: an mpirun whose ranks never all start (wire-up), an mpirun
that outlives its ranks, and a job that looks stalled (nothing printed, no CPU used).

Once a second it looks at the job's pods (`look`: their process trees in /proc, their CPU time, the
launcher's log) and hands what it saw to a `Tracker`, which is pure: it keeps the clocks of the bounds
(`api/trainer/bounds.py`) and says when one has passed. What counts:

* wire-up runs from the launcher's MPI launcher (mpirun, mpiexec, prterun) appearing to every rank of its
  world seen: a rank is a process whose environment holds its rank (`Implementation.rank_variables`),
  seen running below an MPI daemon or the launcher, or a line it printed; or, where no rank tells the
  world's size (or one cleared its environment), as many processes started by MPI's daemons as the world
  has ranks, on every daemon's pod. A launcher that works before it calls mpirun is not in wire-up until
  it does.
* an mpirun outlives its ranks when, after wire-up, no rank runs any more and the log has not grown for
  the exit grace; the ranks' own exit statuses come from the pidfds held on them (`rank_exits`).
* the process sandbox has no PID namespace: a pod's daemonized MPI daemons and orphans are found by its
  marker (`procfs.marked`).
* a job looks stalled when the launcher's log has not grown and no pod's processes used CPU (less than
  `IDLE_CPU` of a core) for the stall bound; a rank computing in silence is not stalled.
"""

from __future__ import annotations

import asyncio
import enum
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mpijob.api.trainer.bounds import Bounds
from mpijob.api.trainer.mpi_output import parse_rank_field
from mpijob.controllers.kubelet.cgroups import PodCgroup
from mpijob.controllers.trainer import procfs, rank_exits

POLL = 1.0  # seconds between a watchdog's looks while the running jobs have up to POLL_PODS pods in all
# A look reads every process of every pod of its job (~2 ms a pod here, on a thread that holds the GIL): past
# POLL_PODS pods in all, each watchdog looks less often, so together they keep to ~3% of a core. Every second,
# a 64-node job's took 6% of its start, and 50 running jobs' as much of the server as all its requests
# (bench/load.py: a GET's p99 2-3 times the idle server's)
POLL_PODS = 32
_WATCHED: dict[int, int] = {}  # id(watchdog) → its job's pod count, for each watch running in this server
ENDED_TRIES = 5  # looks an ended rank's status is asked for before it is given up (its daemon reaps it first)
ORPHAN_SCAN = 5.0  # seconds between looks through /proc for a process sandbox's orphans once wired up (costly)
IDLE_CPU = 0.02  # a pod using less than this share of one core is idle
MIN_CPU = 0.05  # CPU seconds a pod must use since its last busy mark to count as busy (clock-tick noise)
LOG_READ = 1 << 22  # bytes of new log read per look while wiring up (only the rank field of each line matters)
LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun", "prterun", "prte", "mpiexec.hydra"})
DAEMONS = frozenset({"orted", "prted", "hydra_pmi_proxy", "hydra_bstrap_proxy"})
NOT_RANKS = LAUNCHERS | DAEMONS | {"ssh", "sshd"}
COMM_LEN = 15  # the kernel keeps this many characters of a process's name


# -- what one look saw, and what it means ---------------------------------------------------------------


@dataclass(frozen=True)
class Look:
    """The job at one moment."""

    at: float  # the event loop's clock
    mpirun: int | None = None  # the pid of the launcher's MPI launcher, while one runs
    ranks: dict[int, str] = field(default_factory=dict)  # rank → the pod it runs in, of those running now
    world_size: int = 0  # as a rank's environment says (0: no rank seen)
    daemons: frozenset[str] = frozenset()  # pods an MPI daemon runs in
    cpu: dict[str, float] = field(default_factory=dict)  # pod → CPU seconds its processes have used
    output: int = 0  # bytes in the launcher's log
    logged: frozenset[int] = frozenset()  # ranks that printed a line since the last look
    ended: dict[int, int] = field(default_factory=dict)  # rank → its exit code, of those seen to end since the last
    # pod → its processes started by an MPI daemon (ranks, whether or not their environment says so)
    started: dict[str, int] = field(default_factory=dict)


class Kind(enum.Enum):
    WIREUP = "wire-up timed out"
    HUNG = "mpirun outlived its ranks"
    STALLED = "stalled"
    RESUMED = "progressing again"


@dataclass(frozen=True)
class Verdict:
    kind: Kind
    bound: float  # the bound that passed, in seconds
    world_size: int = 0
    ranks_seen: tuple[int, ...] = ()
    reporting: tuple[str, ...] = ()  # pods a rank ran in
    daemons: tuple[str, ...] = ()
    idle: tuple[str, ...] = ()  # pods that used no CPU for the bound
    idle_ranks: tuple[int, ...] = ()
    exits: tuple[tuple[int, int], ...] = ()  # (rank, exit code; -N: signal N) of the ranks seen to end


class Tracker:
    """The clocks of a run's bounds, fed one `Look` at a time (pure)."""

    def __init__(self, bounds: Bounds, start: float) -> None:
        self.bounds = bounds
        self.output, self.output_at = -1, start
        self.marks: dict[str, tuple[float, float]] = {}  # pod → (CPU seconds, when) at its last busy moment
        self.mpirun: int | None = None
        self.mpirun_at = start
        self._new_world()
        self.stalled = False

    def _new_world(self) -> None:
        self.seen: set[int] = set()
        self.world_size = 0
        self.reporting: set[str] = set()
        self.daemons: set[str] = set()
        self.started = 0  # the most processes MPI's daemons were seen to run at once
        self.hosting: set[str] = set()  # the pods where they ran
        self.wired = False
        self.ended_at: float | None = None  # since when no rank of a wired-up world runs
        self.exits: dict[int, int] = {}

    def see(self, look: Look) -> Verdict | None:
        """What passing time says of the run, if anything: a bound passed, a stall begun or ended."""
        grew = look.output != self.output
        if grew:
            self.output, self.output_at = look.output, look.at
        busy = self._cpu(look)
        if look.mpirun != self.mpirun:  # a new mpirun (or none any more): its own wire-up
            self.mpirun, self.mpirun_at = look.mpirun, look.at
            self._new_world()
        verdict = self._wireup(look) if self.mpirun is not None else None
        return verdict or self._stall(look, grew or busy)

    def _cpu(self, look: Look) -> bool:
        """Move the busy mark of every pod that used CPU since its last one; whether any did."""
        busy = False
        for pod, used in look.cpu.items():
            mark = self.marks.get(pod)
            if mark is None or abs(used - mark[0]) > MIN_CPU + IDLE_CPU * (look.at - mark[1]):
                self.marks[pod] = (used, look.at)
                busy |= mark is not None
        return busy

    def _wireup(self, look: Look) -> Verdict | None:
        self.exits.update(look.ended)
        if not self.wired:
            self.seen |= set(look.ranks) | look.logged
            self.world_size = max(self.world_size, look.world_size)
            self.reporting |= set(look.ranks.values())
            self.daemons |= look.daemons
            self.started = max(self.started, sum(look.started.values()))
            self.hosting |= set(look.started)
            if self.world_size and self.seen >= set(range(self.world_size)):
                self.wired = True
            elif self.started and self.daemons and self.daemons <= self.hosting and self.started >= self.world_size:
                # as many processes started as the world has ranks, on every daemon's pod (a rank that cleared
                # its environment is one), or, where no rank says the world's size, ranks on every daemon's pod
                self.wired = True
            elif look.at - self.mpirun_at > self.bounds.wireup:
                return self._verdict(Kind.WIREUP, self.bounds.wireup)
            return None
        if look.ranks:
            self.ended_at = None
            return None
        self.ended_at = self.ended_at if self.ended_at is not None else look.at
        if look.at - max(self.ended_at, self.output_at) > self.bounds.exit_grace:
            return self._verdict(Kind.HUNG, self.bounds.exit_grace)
        return None

    def _stall(self, look: Look, active: bool) -> Verdict | None:
        if self.stalled:
            if active:
                self.stalled = False
                return self._verdict(Kind.RESUMED, self.bounds.stall)
            return None
        idle = sorted(p for p, (_, at) in self.marks.items() if look.at - at >= self.bounds.stall)
        if look.at - self.output_at < self.bounds.stall or not idle or len(idle) < len(self.marks):
            return None
        self.stalled = True
        ranks = tuple(sorted(r for r, pod in look.ranks.items() if pod in idle))
        return self._verdict(Kind.STALLED, self.bounds.stall, idle=tuple(idle), idle_ranks=ranks)

    def _verdict(self, kind: Kind, bound: float, **more: tuple) -> Verdict:
        return Verdict(kind, bound, self.world_size, tuple(sorted(self.seen)), tuple(sorted(self.reporting)),
                       tuple(sorted(self.daemons)), exits=tuple(sorted(self.exits.items())), **more)


# -- looking at the job (I/O) ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pod:
    """A pod of the running job as the watchdog sees it."""

    name: str
    roots: tuple[int, ...]  # its top processes (the supervised ones)
    cgroup: PodCgroup | None  # its CPU account (namespace mode); else its processes' own times are summed
    launcher: bool = False
    marker: tuple[tuple[str, str], ...] = ()  # the variables every process of the pod carries (pod_env.marker)


class Watchdog:
    """Looks at a running job once a second; the runner acts on its verdicts."""

    def __init__(self, pods: Iterable[Pod], rank_variables: tuple[str, str], log: Path, tracker: Tracker,
                 orphans: bool = False) -> None:
        self.pods, self.rank_variables, self.log, self.tracker = list(pods), rank_variables, log, tracker
        self.log_offset = 0  # how far the launcher's log has been read for ranks (while wiring up)
        # The process sandbox has no PID namespace to hold a pod's orphans: Open MPI's daemons daemonize, and a
        # rank's leftover child, to the machine's init. They are found by their pod's marker instead.
        self.orphans = orphans
        self.adopted: dict[str, list[int]] = {}
        self.known: dict[tuple[int, int], tuple[int, int] | None] = {}  # (pid, start) → its (rank, world size)
        # (pid, start) → (rank, a pidfd on it, looks left to read its end): a rank's exit status, read by whoever
        # holds its pidfd once its daemon has reaped it (Linux 6.15, rank_exits.exit_status)
        self.held: dict[tuple[int, int], tuple[int, int, int]] = {}
        self.scanned = -ORPHAN_SCAN  # when the orphans were last looked for

    def look(self, at: float) -> Look:
        """The job now: its mpirun, ranks, daemons, CPU time and output."""
        mpirun, world, daemons = None, 0, set()
        ranks: dict[int, str] = {}
        cpu: dict[str, float] = {}
        started: dict[str, int] = {}
        names = {n[:COMM_LEN] for n in LAUNCHERS}
        daemon_names, skip = {n[:COMM_LEN] for n in DAEMONS}, {n[:COMM_LEN] for n in NOT_RANKS}
        if self.orphans and (not self.tracker.wired or at - self.scanned >= ORPHAN_SCAN):  # each look in wire-up
            self.adopted = procfs.marked({pod.marker: pod.name for pod in self.pods if pod.marker}, orphans=True)
            self.scanned = at
        adopted = self.adopted
        # a rank's environment is read below an MPI daemon; elsewhere (a rank's leftover child) only while the
        # world's size is still unknown
        anywhere = not self.tracker.wired and not self.tracker.world_size
        for pod in self.pods:
            used = 0.0
            level = [(pid, "") for pid in (*pod.roots, *adopted.get(pod.name, ()))]  # (pid, the MPI process above)
            for _ in range(64):  # deeper than any real tree; a bound, not a hope
                below = []
                for pid, parent in level:
                    under_mpi = bool(parent)
                    stat = procfs.read_stat(pid)
                    if stat is None:
                        continue
                    name = stat.name
                    used += stat.cpu
                    if pod.launcher and name in names and mpirun is None:
                        mpirun = pid
                    if name in daemon_names:
                        daemons.add(pod.name)
                    if parent in daemon_names and name not in skip:  # not mpirun's: an ssh agent may be anything
                        started[pod.name] = started.get(pod.name, 0) + 1
                    if name not in skip and (under_mpi or anywhere) and (found := self._rank(pid, stat.start)):
                        world = max(world, found[1])  # a rank's leftover child (`cmd &`) knows the world's size too
                        if under_mpi:
                            ranks.setdefault(found[0], pod.name)
                            self._hold(pid, stat.start, found[0])
                    launches = name if name in names or name in daemon_names else ""
                    below += [(c, launches) for c in procfs.children(pid, stat.threads)]
                if not below:
                    break
                level = below
            usage = pod.cgroup.usage() if pod.cgroup else None
            cpu[pod.name] = usage.cpu_seconds if usage and usage.cpu_seconds is not None else used
        try:
            output = self.log.stat().st_size
        except OSError:
            output = 0
        logged = self._logged(output) if mpirun is not None and not self.tracker.wired else frozenset()
        return Look(at, mpirun, ranks, world, frozenset(daemons), cpu, output, logged, self._ended(), started)

    def _hold(self, pid: int, start: int, rank: int) -> None:
        if (pid, start) in self.held or not rank_exits.supported():
            return
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return
        if (now := procfs.read_stat(pid)) is None or now.start != start:  # the pid was reused before it could be held
            os.close(fd)
            return
        self.held[(pid, start)] = (rank, fd, ENDED_TRIES)

    def _ended(self) -> dict[int, int]:
        """rank → exit code (-N: killed by signal N) of the held ranks that have ended and been reaped."""
        out = {}
        for key, (rank, fd, tries) in list(self.held.items()):
            if (now := procfs.read_stat(key[0])) is not None and now.start == key[1]:
                continue  # still running (or not reaped yet)
            status = rank_exits.exit_status(fd)
            if status is None and tries > 1:
                self.held[key] = (rank, fd, tries - 1)
                continue
            if status is not None:
                out[rank] = os.waitstatus_to_exitcode(status)
            os.close(fd)
            del self.held[key]
        return out

    def close(self) -> None:
        for _, fd, _ in self.held.values():
            os.close(fd)
        self.held.clear()

    def _rank(self, pid: int, start: int) -> tuple[int, int] | None:
        """(rank, world size) of a process, its environment read once (a rank's variables stay as they were)."""
        key = (pid, start)
        if key not in self.known:
            if len(self.known) > 100_000:  # a bound on a long job's memory of processes long gone
                self.known.clear()
            self.known[key] = procfs.rank_of(pid, self.rank_variables)
        return self.known[key]

    def _logged(self, size: int) -> frozenset[int]:
        """The ranks of the lines the launcher's log got since the last look (stored `<stamp> <rank> <text>`)."""
        if size <= self.log_offset:
            return frozenset()
        try:
            with self.log.open("rb") as f:
                f.seek(max(self.log_offset, size - LOG_READ))
                chunk = f.read(size - f.tell())
        except OSError:
            return frozenset()
        whole = chunk.rpartition(b"\n")[0]
        self.log_offset = size - len(chunk) + len(whole) + 1 if whole else self.log_offset
        ranks = (parse_rank_field(line.split(b" ", 2)[1].decode()) for line in whole.split(b"\n")
                 if line.count(b" ") >= 2)
        return frozenset(r for r in ranks if r is not None)

    async def watch(self, report: Callable[[Verdict], None]) -> Verdict:
        """Look until a verdict ends the run (wire-up timed out, mpirun outlived its ranks, a stall when the
        job fails for one), telling `report` of the others (a stall begun, or ended)."""
        loop = asyncio.get_running_loop()
        looking: asyncio.Future[Look] | None = None
        _WATCHED[id(self)] = len(self.pods)
        try:
            while True:
                await asyncio.sleep(POLL * max(1.0, sum(_WATCHED.values()) / POLL_PODS))
                looking = asyncio.ensure_future(asyncio.to_thread(self.look, loop.time()))
                look = await asyncio.shield(looking)  # a cancelled watch lets a look in its thread finish
                verdict = self.tracker.see(look)
                if verdict is None:
                    continue
                if verdict.kind in (Kind.WIREUP, Kind.HUNG) or (
                        verdict.kind is Kind.STALLED and self.tracker.bounds.stall_fail):
                    return verdict
                report(verdict)
        finally:  # the pidfds go once no look can be using them
            _WATCHED.pop(id(self), None)
            if looking is not None and not looking.done():
                looking.add_done_callback(lambda _: self.close())
            else:
                self.close()
