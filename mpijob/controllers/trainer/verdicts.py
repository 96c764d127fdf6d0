"""What ends a run besides a pod's exit, as the run's outcome: under Hydra a rank's non-zero exit, which
Hydra itself would wait out (`rank_exits.py`), and the watchdog's verdicts (`watchdog.py`: wire-up past its
bound, a stall, mpirun outliving its ranks). A part of `JobRunner` (runner.py), kept apart so that the
runner reads as its pods' lifecycle."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

from mpijob.api import names
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer import bound_failures, failures
from mpijob.api.trainer.bounds import Bounds
from mpijob.api.trainer.mpi_impl import Implementation
from mpijob.api.trainer.plan import RunPlan
from mpijob.controllers.kubelet import pods
from mpijob.controllers.kubelet.cgroups import PodCgroup
from mpijob.controllers.trainer import rank_exits, watchdog
from mpijob.controllers.trainer.pod_env import PodEnv
from mpijob.controllers.trainer.procs import Proc
from mpijob.controllers.trainer.stops import Outcome, Stop
from mpijob.store.logs import LogStore

log = logging.getLogger(__name__)
LAUNCHER_END_WAIT = 10.0  # seconds for a killed mpiexec's end to be recorded by its supervisor
# A failed Hydra rank's last output reaches the launcher's log through its proxy, ssh and mpiexec, behind its
# exit, which the kernel tells at once: mpiexec is stopped once the log has held a line of that rank and
# been still for RANK_OUTPUT_QUIET, or after RANK_OUTPUT_WAIT (a rank that printed nothing)
RANK_OUTPUT_WAIT, RANK_OUTPUT_QUIET, RANK_OUTPUT_POLL = 3.0, 0.3, 0.05


class Verdicts:
    """`JobRunner`'s outcomes of what no pod's exit shows."""

    plan: RunPlan
    impl: Implementation
    env: PodEnv
    logs: LogStore
    bounds: Bounds
    mode: SandboxMode
    procs: dict[Proc, pods.PodProcess]
    cgroups: dict[str, PodCgroup]
    stopped: Stop | None
    report: Callable[[watchdog.Verdict, str], None]

    def _facts(self, culprit: str, **more: object) -> failures.Facts:
        raise NotImplementedError

    def _launcher_proc(self) -> tuple[str, pods.PodProcess]:
        raise NotImplementedError

    async def _rank_failed(self, waits: list[asyncio.Future]) -> Outcome | None:
        """Under Hydra, until a pod ends or the watchdog's verdict (`waits`): the outcome of a rank's non-zero
        exit, which Hydra would wait out (rank_exits.py); None once one of `waits` is done, and at once for
        other MPIs or where the kernel cannot tell."""
        if not (self.impl.hydra and rank_exits.supported()):
            return None
        watched = {pod.name: (pod.host, tuple(p.pid for k, p in self.procs.items() if k.pod == pod.name))
                   for pod in self.plan.pods}
        hosts = sum(1 for p in self.plan.pods if p.in_hostfile)
        ranks = asyncio.ensure_future(rank_exits.Watch(watched, hosts).first_failure())
        await asyncio.wait([*waits, ranks], return_when=asyncio.FIRST_COMPLETED)
        if not ranks.done() or any(w.done() for w in waits) or self.stopped:  # a stopping job's exits are its own
            ranks.cancel()
            return None
        if ranks.exception() is not None:  # a bug of the watch's must not end the run: Hydra's own end decides
            log.error("the rank watch of job %s/%s failed", self.plan.namespace, self.plan.job,
                      exc_info=ranks.exception())
            return None
        for w in waits:
            w.cancel()
        launcher, mpiexec = self._launcher_proc()
        ended = ranks.result()
        await self._rank_output(launcher, ended.rank)
        # mpiexec first, and without a word: stopped after its proxies, it prints their lost connections
        mpiexec.kill(signal.SIGKILL)
        try:  # its end, recorded by its supervisor
            code: int | None = (await asyncio.wait_for(mpiexec.wait(), LAUNCHER_END_WAIT)).code
        except TimeoutError:
            code = None
        last = next((ln.text for ln in reversed(self._facts(launcher).launcher_log)
                     if ln.rank == ended.rank and ln.text.strip()), "")
        found = rank_exits.failure(self.plan.job, ended, launcher, last, code)
        return Outcome(False, names.REASON_FAILED_JOBS, found.message, found.reason)

    async def _rank_output(self, launcher: str, rank: int) -> None:
        """Until the launcher's log holds a line of `rank` and has been still a moment (bounded): so that
        what the failed rank printed last is in the log, and in the failure's message, before mpiexec goes."""
        path = self.logs.path(self.plan.namespace, launcher, names.CONTAINER)
        loop = asyncio.get_running_loop()
        deadline, size, since = loop.time() + RANK_OUTPUT_WAIT, -1, loop.time()
        while loop.time() < deadline:
            now = path.stat().st_size if path.exists() else 0
            if now != size:
                size, since = now, loop.time()
            elif loop.time() - since >= RANK_OUTPUT_QUIET and any(
                    ln.rank == rank for ln in self._facts(launcher).launcher_log):
                return
            await asyncio.sleep(RANK_OUTPUT_POLL)

    # -- the watchdog: bounds no exit shows (watchdog.py) ------------------------------------------------

    def watched_pods(self) -> list[watchdog.Pod]:
        """The run's pods as /proc shows them: their top processes, cgroups and markers (the watchdog's, and
        `stacks.py`'s way to the ranks)."""
        return [watchdog.Pod(pod.name, tuple(p.pid for k, p in self.procs.items() if k.pod == pod.name),
                             self.cgroups.get(pod.name), pod.is_launcher, tuple(self.env.marker(pod).items()))
                for pod in self.plan.pods]

    def _watchdog(self) -> watchdog.Watchdog:
        launcher = next(p for p in self.plan.pods if p.is_launcher)
        log = self.logs.path(self.plan.namespace, launcher.name, names.CONTAINER)
        tracker = watchdog.Tracker(self.bounds, asyncio.get_running_loop().time())
        orphans = not self.mode.private  # no PID namespace: ranks may outlive their pod's group
        return watchdog.Watchdog(self.watched_pods(), self.impl.rank_variables, log, tracker, orphans=orphans)

    def _verdict_facts(self, verdict: watchdog.Verdict) -> failures.Facts:
        launcher = next(p for p in self.plan.pods if p.is_launcher)
        return self._facts(launcher.name, bound=verdict.bound, world_size=verdict.world_size,
                           ranks_seen=verdict.ranks_seen, reporting=verdict.reporting, daemons=verdict.daemons,
                           idle=verdict.idle, idle_ranks=verdict.idle_ranks, namespace=self.plan.namespace)

    def _report(self, verdict: watchdog.Verdict) -> None:
        """A stall begun (its message, with the idle pods and ranks) or ended, for the controller to show."""
        if verdict.kind is watchdog.Kind.STALLED:
            self.report(verdict, bound_failures.stalled(self._verdict_facts(verdict)).message)
        else:
            self.report(verdict, "output or CPU use resumed")

    def _bound_passed(self, verdict: watchdog.Verdict) -> Outcome:
        """The outcome of a run the watchdog ends: wire-up timed out, a stall (when the job fails for one), or
        mpirun outliving its ranks, which ends the job as its ranks ended (`failures.launcher_hung`)."""
        facts = self._verdict_facts(verdict)
        if verdict.kind is watchdog.Kind.WIREUP:
            found = bound_failures.wireup_timeout(facts)
        elif verdict.kind is watchdog.Kind.STALLED:
            found = bound_failures.stalled(facts)
        else:
            failed = bound_failures.launcher_hung(facts, verdict.exits)
            launcher = next(p for p in self.plan.pods if p.is_launcher)
            codes = ", ".join(f"rank {r}: {c}" for r, c in verdict.exits[:16]) or "none read"
            self.report(verdict, f"mpirun in launcher pod {launcher.name} had not exited {verdict.bound:g}s after "
                                 "every rank ended and the log went quiet: it was stopped, and the job ends as its "
                                 f"ranks did ({'failed: ' + failed.summary if failed else 'no rank failed'}; exit "
                                 f"codes read: {codes})")
            if failed is None:
                return Outcome(True, names.REASON_COMPLETED, "jobset completed successfully")
            found = failed
        return Outcome(False, names.REASON_FAILED_JOBS, found.message, found.reason)
