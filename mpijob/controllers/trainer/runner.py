"""Runs one admitted TrainJob: nodes up, every node accepting the job key, then the launcher; the first
failure anywhere ends the whole job and every process of it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpijob.api import names
from mpijob.api.core.quantity import quantity_value
from mpijob.api.core.resources import PODS
from mpijob.api.trainer import bound_failures, failures, mpi_impl
from mpijob.api.trainer.bounds import Bounds
from mpijob.api.trainer.mpi_output import asks_for_tags, parse_rank_field
from mpijob.api.trainer.plan import PodPlan, RunPlan, plan_from_dict
from mpijob.controllers.kubelet import entry, mpi_installs, pods, shim, trainer_status, workload
from mpijob.controllers.kubelet import network as job_network
from mpijob.controllers.kubelet.cgroups import PodCgroup, Usage, job_pod
from mpijob.controllers.kubelet.entry import PodEntry
from mpijob.controllers.kubelet.mpi_env import YIELD_WHEN_IDLE, rank_agent_env
from mpijob.controllers.kubelet.network import JobNetwork, namespace_name
from mpijob.controllers.kubelet.sandbox import (
    JobFiles,
    User,
    job_user,
    kubernetes_env,
    pod_path,
)
from mpijob.controllers.trainer import procfs, watchdog
from mpijob.controllers.trainer.pod_env import PodEnv, local_mca, values
from mpijob.controllers.trainer.procs import SUPERVISOR_DIR, Proc, Role
from mpijob.controllers.trainer.readiness import NodeFailed, Readiness
from mpijob.controllers.trainer.stops import Outcome, Stop, Then
from mpijob.controllers.trainer.verdicts import Verdicts
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
READY_TIMEOUT_ENV = "MPIJOB_READY_TIMEOUT"  # the server's default for `Bounds.ready` (docs/troubleshooting.md)
LOG_TAIL = 200  # lines of the launcher's log the failure classifier reads
STOP_GRACE = 2.0  # seconds between SIGTERM and SIGKILL when tearing a job down
CAUSE_WINDOW = 0.5  # seconds a failed launcher waits for a node that may have failed with it (`_supervise`)
RUN_RECORD = "run.json"  # in the job's directory: what a restarted server needs to take the run over


def ready_default() -> float | None:
    """The server's own bound on nodes becoming ready (MPIJOB_READY_TIMEOUT, seconds); None: the default's."""
    value = os.environ.get(READY_TIMEOUT_ENV)
    return float(value) if value else None


class JobRunner(Readiness, Verdicts):
    def __init__(
        self, store: Store, logs: LogStore, files: JobFiles, plan: RunPlan, ips: dict[str, str], cluster_id: str,
        gpus: dict[str, list[int]] | None = None, cores: dict[str, list[int]] | None = None,
        yield_when_idle: bool = False, api_server: tuple[str, int] | None = None, bounds: Bounds | None = None,
    ) -> None:
        self.store, self.logs, self.files, self.plan, self.ips = store, logs, files, plan, ips
        self.cluster_id = cluster_id
        self.gpus = gpus or {}  # pod name → its GPU indices (disjoint across running pods)
        self.cores = cores or {}  # pod name → its CPU cores, when it asked for whole CPUs and they fit
        self.mode = files.mode
        self.api_server = api_server
        # the runtime's MPI (api/trainer/mpi_impl.py) and this machine's install of it: first on PATH,
        # its libraries found
        self.impl = mpi_impl.IMPLEMENTATIONS[plan.mpi_implementation]
        self.network: JobNetwork | None = None  # the job's own network (namespace, rootless), made by run()
        # where pods find the API server (the Service address in their own network), and their job's status endpoint
        address = trainer_status.api_address(self.mode, api_server)
        self.env = PodEnv(plan, files, cluster_id, self.impl, local_mca(self.mode, yield_when_idle),
                          kubernetes_env(*address) if address else {}, self.gpus,
                          trainer_status.status_url(address, plan))
        # The launcher's output is tagged (LOCAL_MCA); its log keeps the ranks and, unless the user asked for
        # tags, drops them: `kubectl logs` shows what the program printed. Unless the user asked for tags or
        # Hydra starts the ranks, each rank's output is read where it runs instead (`rank_agent.py`)
        launcher = next(p for p in plan.pods if p.is_launcher)
        self.keep_tags = asks_for_tags([*launcher.command, *launcher.args], values(launcher.env))
        if not self.keep_tags and not self.impl.hydra:
            self.env.rank_agent = rank_agent_env(*files.rank_agent_paths())
        self.procs: dict[Proc, pods.PodProcess] = {}
        self.exits: dict[Proc, pods.Exit] = {}
        self.cgroups: dict[str, PodCgroup] = {}  # pod name → its cgroup (namespace mode)
        self.usage: dict[str, Usage] = {}  # pod name → what it used, read at teardown (job accounting)
        self.stopped: Stop | None = None  # set by stop(): why the run was ended from outside
        self.draining: asyncio.Task[None] | None = None  # a graceful stop's SIGTERM to the workload (stop())
        self.bounds = bounds or Bounds(ready=ready_default() or Bounds.ready)  # api/trainer/bounds.py
        self.ready_timeout = self.bounds.ready
        # told of what the watchdog sees that does not end the run (a stall, its end; mpirun outliving its
        # ranks), with the message to show: the controller sets the job's condition and records the Event
        self.report: Callable[[watchdog.Verdict, str], None] = lambda verdict, message: None
        self.lost: dict[str, str] = {}  # pod name → why it left no exit status (`resume`)

    # -- a run outlives its server ---------------------------------------------------------------

    def save(self) -> None:
        """Record what a restarted server needs to take this run over (`load`, `resume`)."""
        shim.write_atomically(self.files.root / RUN_RECORD, {
            "plan": dataclasses.asdict(self.plan), "ips": self.ips, "gpus": self.gpus, "cores": self.cores,
            "yield_when_idle": YIELD_WHEN_IDLE in self.env.local_mca, "api_server": self.api_server,
            "status_url": self.env.status_url, "bounds": dataclasses.asdict(self.bounds)})

    @classmethod
    def load(cls, store: Store, logs: LogStore, files: JobFiles, cluster_id: str) -> JobRunner | None:
        """The runner of a run an earlier server started, from its record; None without one (or of
        another version's plan)."""
        try:
            record = json.loads((files.root / RUN_RECORD).read_text())
            plan = plan_from_dict(record["plan"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        server = record.get("api_server")
        runner = cls(store, logs, files, plan, record["ips"], cluster_id, record["gpus"], record["cores"],
                     record["yield_when_idle"], tuple(server) if server else None,
                     Bounds(**record["bounds"]) if "bounds" in record else None)
        runner.env.status_url = record["status_url"]
        return runner

    async def resume(self, stopping: Stop | None = None) -> Outcome:
        """Take over a run an earlier server started: every pod its supervisor still holds is re-adopted, one
        that ended while no server ran is seen to have ended then (`pods.adopt`); then supervise as `run`
        does. A run caught while it was still starting (its launcher never started) starts again; one that
        was `stopping` (suspended, evicted) when that server died is stopped, as it would have been."""
        plan = self.plan
        for pod in plan.pods:
            for role in Role:
                name = pod.name + ("-sshd" if role is Role.SSHD else "")
                if adopted := pods.adopt(plan.namespace, name, self.files.pod_dir(pod) / SUPERVISOR_DIR[role]):
                    self.procs[Proc(pod.name, role)] = adopted
            if self.mode.private and (cgroup := PodCgroup.create(self.cluster_id, job_pod(plan.uid, pod.name),
                                                                 pod.resources)):
                self.cgroups[pod.name] = cgroup
        self.network = job_network.existing(self.mode, namespace_name(self.cluster_id, plan.uid))
        if self.network and self.api_server:
            await self.network.serve_api(self.api_server)
        launcher = next(p for p in plan.pods if p.is_launcher)
        self.lost = {k.pod: why for k, p in self.procs.items() if (why := p.lost())}
        if stopping:
            self.stop(stopping)
        if self.stopped:  # what it was stopped for, not how its stopped pods exited, is the outcome
            outcome = self.stopped.outcome
        elif self.lost:
            lost, why = next(iter(self.lost.items()))
            outcome = Outcome(False, names.REASON_FAILED_JOBS, f"pod {lost} ended without an exit status: {why}")
        elif Proc(launcher.name) in self.procs:
            outcome = await self._supervise()
        else:  # caught while starting: no program ran yet, so it starts again from the beginning
            await self._start_over()
            return await self.run()
        if self.stopped:
            outcome = self.stopped.outcome
        await self.teardown(outcome)
        return outcome

    async def _start_over(self) -> None:
        """Stop what a run caught while starting had started (its nodes, their sshd) and forget it."""
        for p in self.procs.values():
            p.kill(signal.SIGKILL)
        await asyncio.gather(*(p.wait() for p in self.procs.values()))
        if self.network:
            await self.network.close()
            self.network = None
        self.procs.clear()
        self.exits.clear()

    def _launcher_exit(self) -> Path:
        """Where the launcher's supervisor records its exit, which node pods watch (`pods.spawn`)."""
        launcher = next(p for p in self.plan.pods if p.is_launcher)
        return self.files.pod_dir(launcher) / SUPERVISOR_DIR[Role.CONTAINER] / shim.EXIT

    # -- lifecycle -----------------------------------------------------------------------------

    async def _start(self, pod: PodPlan, user: User, sshd_only: bool = False) -> None:
        """Start a pod; `sshd_only` starts just the sshd of a process-mode launcher host."""
        session_env = self.env.session(pod, user)
        pod_dir = self.files.write_pod(self.plan, pod, self.ips, user, session_env)
        home = user.home if self.mode.private else str(pod_dir / "home")
        base_env = {"PATH": pod_path(), **self.env.marker(pod)}
        if sshd_only:
            self.procs[Proc(pod.name, Role.SSHD)] = await pods.spawn(
                self.logs, self.plan.namespace, pod.name + "-sshd", self.files.sshd_argv(pod), base_env,
                self.files.pod_dir(pod) / SUPERVISOR_DIR[Role.SSHD])
            return
        env = self.env.container(pod, user, home)
        cgroup = (PodCgroup.create(self.cluster_id, job_pod(self.plan.uid, pod.name), pod.resources)
                  if self.mode.private else None)
        if cgroup:
            self.cgroups[pod.name] = cgroup
        argv = self.files.argv(self.plan, pod, user, [*pod.command, *pod.args], env, cgroup.procs if cgroup else ())
        if self.network:
            argv = self.network.enter(argv)
        if cores := self.cores.get(pod.name):  # the whole pod, sshd sessions included, on its own cores
            argv = ["taskset", "-c", ",".join(map(str, cores)), *argv]
        cwd = None if self.mode.private else home
        mpi = {"keep_tags": self.keep_tags, "hydra": self.impl.hydra} if pod.is_launcher else None
        captured = pod.is_launcher and bool(self.env.rank_agent)
        proc = self.procs[Proc(pod.name)] = await pods.spawn(
            self.logs, self.plan.namespace, pod.name, argv, base_env,
            self.files.pod_dir(pod) / SUPERVISOR_DIR[Role.CONTAINER], cwd, mpi, cgroup,
            None if pod.is_launcher else self._launcher_exit(), self.files.rank_output if captured else None,
            _reads_stdin(pod))
        if self.stopped:  # stopped while this pod was being spawned: it must not outlive the job
            proc.kill(signal.SIGTERM)
        # Ready as a kubelet sees it: a node once its sshd accepts the job key (the runtime's readiness
        # probe on port 2222, see _ready), the launcher (no probe) as soon as it runs
        pods.set_running(self.store, self.plan.namespace, pod.name, self.ips[pod.hostname], ready=pod.is_launcher)

    def _last_line(self, log_name: str) -> str:
        """What a pod said last (sshd's reason for refusing to start, say), for the failure message."""
        tail = self.logs.read(self.plan.namespace, log_name, names.CONTAINER, tail_lines=1)
        return tail.decode(errors="replace").strip()

    async def run(self) -> Outcome:
        """Nodes first, the launcher once every node answers SSH; then supervise."""
        plan = self.plan
        nodes = [p for p in plan.pods if not p.is_launcher]
        launcher = next(p for p in plan.pods if p.is_launcher)
        users = {p.name: job_user(plan, p, self.mode) for p in plan.pods}
        if why := mpi_installs.missing(self.impl):  # removed since the job was admitted: fail now, not at mpirun
            outcome = Outcome(False, names.REASON_FAILED_JOBS, f"{names.FAILURE_MPI_NOT_INSTALLED}: {why}",
                              names.FAILURE_MPI_NOT_INSTALLED)
            await self.teardown(outcome)
            return outcome
        for pod in plan.pods:  # an earlier run's (suspended, resumed): not this one's, should a restart come
            for role in Role:  # before its pod starts (its launcher's exit, which the nodes watch, above all)
                pods.forget(self.files.pod_dir(pod) / SUPERVISOR_DIR[role])
        self.files.write_rank_output(bool(self.env.rank_agent))
        try:
            self.network = await job_network.create(self.mode, namespace_name(self.cluster_id, plan.uid))
            if self.network and self.api_server:
                await self.network.serve_api(self.api_server)
            await asyncio.gather(*(self._start(p, users[p.name]) for p in nodes))
            self._check_stop()
            # A node whose command is not the managed sshd is probed too when the launcher waits for nodes
            # Ready (MPI Operator's WaitForWorkersReady) and it declares a readiness probe, as a kubelet would
            # probe it: it fails within the bound, saying why, not at mpirun. Without a probe it is Ready running.
            waits = [self._ready(p, Proc(p.name)) for p in nodes
                     if self.files.runs_sshd(plan, p) or (launcher.depends_on_nodes_ready and p.in_hostfile
                                                          and _probed(p))]
            if self.files.runs_sshd(plan, launcher):
                await self._start(launcher, users[launcher.name], sshd_only=True)
                waits.append(self._ready(launcher, Proc(launcher.name, Role.SSHD)))
            readying = [asyncio.ensure_future(w) for w in waits]
            try:
                await asyncio.gather(*readying)
            finally:  # the first node that fails ends the wait for the others (no probe, no Event after the end)
                for task in readying:
                    task.cancel()
            self._check_stop()
            await self._start(launcher, users[launcher.name])
            outcome = await self._supervise()
        except NodeFailed as failure:
            outcome = self._failed(failure.pod.name, failure)
        except Stopped:
            pass  # raised only once stop() has been called: its Stop is the outcome, below
        if self.stopped:  # what ended the run from outside, not how its killed pods exited, is the outcome
            outcome = self.stopped.outcome
        await self.teardown(outcome)
        return outcome

    async def _supervise(self) -> Outcome:
        waits = {asyncio.ensure_future(self.procs[name].wait()): name for name in self.procs}
        watch = asyncio.ensure_future(self._watchdog().watch(self._report))
        if failed := await self._rank_failed([*waits, watch]):  # Hydra's rank exits (rank_exits.py)
            watch.cancel()
            return failed
        done: set[asyncio.Task[Any]]  # the pods' waits (Exit) and the watchdog's
        done, _ = await asyncio.wait([*waits, watch], return_when=asyncio.FIRST_COMPLETED)
        if not watch.done():
            watch.cancel()
        elif watch.exception() is not None:  # a bug of the watchdog's must not end the run: it runs unwatched
            log.error("the watchdog of job %s/%s failed", self.plan.namespace, self.plan.job,
                      exc_info=watch.exception())
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        elif not (done := done - {watch}):  # a bound passed while every pod still ran
            for w in waits:
                w.cancel()
            return self._bound_passed(watch.result())
        # When several ended at once (as a re-adopted run's may have), the launcher's end is the job's.
        launcher = Proc(next(p.name for p in self.plan.pods if p.is_launcher))
        first = next((w for w in done if waits[w] == launcher), next(iter(done)))
        key = waits[first]
        result = first.result()
        pod = next(p for p in self.plan.pods if p.name == key.pod)
        mpirun = pod.is_launcher and key.role is Role.CONTAINER
        if mpirun and not result.ok:
            # mpirun fails within milliseconds of a node's death: a node ending with it is the cause.
            # (Everything may have ended already: a re-adopted run whose nodes stopped while no server ran.)
            if rest := [w for w in waits if w not in done]:
                done |= (await asyncio.wait(rest, timeout=CAUSE_WINDOW))[0]
            key = next((waits[w] for w in done if not w.result().ok and waits[w].pod != pod.name), key)
        for w in done:
            self.exits[waits[w]] = w.result()
        for w in waits:
            if not w.done():
                w.cancel()
        if mpirun and result.ok:
            return Outcome(True, names.REASON_COMPLETED, "jobset completed successfully")
        return self._failed(key.pod)

    def _failed(self, culprit: str, not_ready: NodeFailed | None = None) -> Outcome:
        """A failed run's outcome in the classifier's words (`api/trainer/failures.py`), from what the runner saw:
        every pod's exit, OOM kills, peak memory and limit, the launcher's last lines with their ranks."""
        facts = self._facts(culprit, starting=not_ready is not None,
                            why=((culprit, not_ready.why),) if not_ready and not_ready.why else ())
        found = bound_failures.not_ready_why(failures.classify(facts), facts)
        return Outcome(False, names.REASON_FAILED_JOBS, found.message, found.reason)

    def _facts(self, culprit: str, **more: object) -> failures.Facts:
        """What the runner saw of the run, for `api/trainer/failures.py`."""
        launcher = next(p for p in self.plan.pods if p.is_launcher)
        tail = self.logs.read(self.plan.namespace, launcher.name, names.CONTAINER, tail_lines=LOG_TAIL, ranks=True)
        hosts = sum(1 for p in self.plan.pods if p.in_hostfile)
        return failures.Facts(
            job=self.plan.job, culprit=culprit, pods=tuple(self._pod_facts(p) for p in self.plan.pods),
            launcher_log=tuple(_ranked(line) for line in tail.decode(errors="replace").splitlines()),
            slots=hosts * self.plan.slots, hosts=hosts, key_dir=self.plan.ssh_auth_mount_path,
            ready_timeout=self.ready_timeout, implementation=self.plan.mpi_implementation,
            **more)  # type: ignore[arg-type]  # `more`: Facts fields of several types

    def _launcher_proc(self) -> tuple[str, pods.PodProcess]:
        """The launcher pod's name and its container's process."""
        launcher = next(p.name for p in self.plan.pods if p.is_launcher)
        return launcher, self.procs[Proc(launcher)]

    def _pod_facts(self, pod: PodPlan) -> failures.PodFacts:
        key = next((k for k in (Proc(pod.name), Proc(pod.name, Role.SSHD)) if k in self.exits), None)
        exit = self.exits[key] if key else None
        cgroup = self.cgroups.get(pod.name)
        used = cgroup.usage() if cgroup else None
        limit = (pod.resources.get("limits") or {}).get("memory")
        return failures.PodFacts(
            pod.name, pod.host, pod.is_launcher, exit.code if exit else None, exit.signal if exit else None,
            cgroup.oom_kills() if cgroup else 0, used.memory_peak_bytes if used else None,
            quantity_value(limit) if limit is not None else None,
            self._last_line(pod.name + ("-sshd" if key and key.role is Role.SSHD else "")) if key else "")

    async def teardown(self, outcome: Outcome) -> None:
        """Stop what still runs, SIGTERM then SIGKILL, and write every pod's final status."""
        if self.draining:  # a graceful stop's workload first: its checkpoints are being written
            await self.draining
        live = {n: p for n, p in self.procs.items() if p.running}
        for p in live.values():
            p.kill(signal.SIGTERM)
        if live:
            await asyncio.wait([p.ended for p in live.values()], timeout=STOP_GRACE)
            for p in live.values():
                if p.running:
                    p.kill(signal.SIGKILL)
            if not self.mode.private:  # no PID namespace: what left its pod's group goes by its marker
                self._kill_escaped()
            await asyncio.gather(*(p.wait() for p in live.values()))
        ns = self.plan.namespace
        for key, proc in self.procs.items():
            if key.role is not Role.CONTAINER:
                continue  # a launcher host's sshd: its pod's status is its container's
            name, exit = key.pod, self.exits.get(key) or await proc.wait()
            cgroup = self.cgroups.get(name)
            if name in self.lost:
                pods.set_terminated(self.store, ns, name, exit, names.REASON_CONTAINER_STATUS_UNKNOWN, self.lost[name])
            elif cgroup and cgroup.oom_kills() and not outcome.succeeded:
                pods.set_terminated(self.store, ns, name, pods.Exit(137, 9), names.REASON_OOM_KILLED,
                                    "a process of this pod exceeded its memory limit "
                                    f"({cgroup.oom_kills()} OOM kill(s))")
            elif key in live and outcome.succeeded:
                # Nodes are shut down once the launcher is done, as JobSet does.
                pods.set_terminated(self.store, ns, name, pods.Exit(0), "Completed",
                                    "stopped after the TrainJob completed")
            elif self.stopped:  # stopped from outside, whether or not it had ended by now
                pods.set_terminated(self.store, ns, name, exit, self.stopped.reason, self.stopped.pod_message)
            elif key in live:  # the job failed elsewhere (a rank, a node): this pod was stopped with it
                pods.set_terminated(self.store, ns, name, exit, None,
                                    f"stopped because the TrainJob failed: {outcome.message}")
            else:
                pods.set_terminated(self.store, ns, name, exit)
        if not outcome.succeeded and not self.stopped:  # what never started (a launcher whose nodes were never
            started = {k.pod for k in self.procs}       # ready) is not left Pending as if it still might
            for pod in self.plan.pods:
                if pod.name not in started:
                    self._not_started(pod.name, f"not started: the job failed first: {outcome.message}")
        for name, cgroup in self.cgroups.items():
            if used := cgroup.usage():  # what the pod used, for the job's history, before its cgroup goes
                self.usage[name] = used
            cgroup.remove()
        if self.network:
            await self.network.close()
            self.network = None

    def _kill_escaped(self) -> None:
        """SIGKILL the processes of this run's pods that a process sandbox's group kill misses: Open MPI's
        daemons and its ssh agents start sessions and groups of their own, and a rank's leftover child holds
        its pod's output open, so its supervisor would wait for it for ever."""
        markers = {tuple(self.env.marker(pod).items()): pod.name for pod in self.plan.pods}
        for pids in procfs.marked(markers).values():
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def _not_started(self, name: str, message: str) -> None:
        """A pod of a failed run that never started ends `Failed` without a start, as a pod its Job gave up on."""
        pod = self.store.try_get(PODS, self.plan.namespace, name)
        if pod is None or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
            return
        pod.setdefault("status", {}).update(phase="Failed", message=message)
        self.store.update(PODS, pod, status=True)

    def _check_stop(self) -> None:
        if self.stopped:
            raise Stopped(self.stopped.message)

    def stop(self, why: Stop) -> None:
        """Abort (deletion, suspension, eviction, deadline, server shutdown), in any phase: a job still
        starting starts no further pod, a running one's supervise loop returns; teardown follows, every pod
        it stops ends with `why.reason`, and `why.then` says what becomes of the TrainJob. A job that will run
        again or is deleted is stopped gracefully (`_drain`); one that fails at once."""
        self.stopped = why
        if why.then is Then.FAIL:
            self._terminate()
        elif not self.draining:
            self.draining = asyncio.ensure_future(self._drain())

    def _terminate(self) -> None:
        for p in self.procs.values():
            p.kill(signal.SIGTERM)

    async def _drain(self) -> None:
        """Every pod's workload (its ranks, the launcher's own program: `workload.py`) gets SIGTERM and its
        pod's terminationGracePeriodSeconds to checkpoint and exit, then SIGKILL; the launcher, which then
        passes the ranks' last lines on, a moment to end by itself; then the pods go (docs/checkpointing.md)."""
        depth = 2 if self.mode.private else 0  # unshare and the namespace's init shell
        stopping = []
        for pod in self.plan.pods:
            roots = [p.pid for k, p in self.procs.items() if k.pod == pod.name and p.running]
            if found := workload.find(roots, depth):
                grace = pod.pod_spec.get("terminationGracePeriodSeconds", workload.DEFAULT_GRACE_SECONDS)
                stopping.append(workload.stop(found, float(grace)))
        await asyncio.gather(*stopping)
        launcher = self.procs.get(Proc(next(p.name for p in self.plan.pods if p.is_launcher)))
        if stopping and launcher and launcher.running:
            await asyncio.wait([launcher.ended], timeout=STOP_GRACE)
        self._terminate()

    def entry(self, pod_name: str) -> PodEntry | None:
        """How to get inside a pod of this run while its container runs (`kubectl exec`, `port-forward`);
        None when it does not run."""
        proc = self.procs.get(Proc(pod_name))
        pod = next((p for p in self.plan.pods if p.name == pod_name), None)
        if pod is None or proc is None or not proc.running:
            return None
        user = job_user(self.plan, pod, self.mode)
        home = user.home if self.mode.private else str(self.files.pod_dir(pod) / "home")
        cgroup = self.cgroups.get(pod_name)
        prefix = entry.exec_prefix(self.files, user, self.env.container(pod, user, home), proc.pid,
                                   cgroup.procs if cgroup else ())
        stdin = self.files.pod_dir(pod) / SUPERVISOR_DIR[Role.CONTAINER] / shim.STDIN
        return PodEntry(pod_name, self.mode, prefix, pod.working_dir or home,
                        entry.connector(self.network, self.ips[pod.hostname]), stdin if _reads_stdin(pod) else None)

    def kill(self, pod: str) -> None:
        """A pod deleted by hand: its container dies as a lost node would, and the job fails with it."""
        proc = self.procs.get(Proc(pod))
        if proc:
            proc.kill()


class Stopped(Exception):
    """`stop()` came while the job was still starting."""


def _reads_stdin(pod: PodPlan) -> bool:
    """Whether the pod's container asks for a stdin (`stdin: true`), which `kubectl attach -i` writes to."""
    return any(c.get("stdin") for c in (pod.pod_spec.get("containers") or [])[:1])


def _probed(pod: PodPlan) -> bool:
    """Whether the pod's container declares a readiness probe (which the local cluster runs as its own)."""
    return any(c.get("readinessProbe") for c in (pod.pod_spec.get("containers") or [])[:1])


def _ranked(line: str) -> failures.Line:
    """A launcher log line as `pods/log` gives it with ranks (`<rank> <text>`)."""
    rank, _, text = line.partition(" ")
    return failures.Line(parse_rank_field(rank), text)
