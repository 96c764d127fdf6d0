"""One bare pod's run (`api/core/bare_pods.py`), as the kubelet runs a pod: its network, its container started in
its sandbox and, as its restartPolicy says, started again after the crash-loop back-off (`api/core/restarts.py`);
its status and Events in the kubelet's words; a graceful stop (SIGTERM to its workload, SIGKILL after its grace
period); and a record from which a restarted server takes it over while its container runs on under its
supervisor (`shim.py`), as a job's run is taken over (docs/restarts.md).

What the status says is the truth a restarted server resumes from: a container `waiting` was between two runs
(its back-off resumes where it was), a `running` one is re-adopted, and one that ended while no server ran is seen
to have ended then, its restart policy deciding what follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import time
from pathlib import Path

from mpijob.api import names
from mpijob.api.core import restarts
from mpijob.api.core.resources import PODS
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer.plan import RunPlan, plan_from_dict
from mpijob.controllers import events
from mpijob.controllers.kubelet import entry, pods, shim, trainer_status, workload
from mpijob.controllers.kubelet import network as job_network
from mpijob.controllers.kubelet.cgroups import PodCgroup
from mpijob.controllers.kubelet.entry import PodEntry
from mpijob.controllers.kubelet.mpi_env import process_tmpdir
from mpijob.controllers.kubelet.network import JobNetwork, namespace_name
from mpijob.controllers.kubelet.sandbox import JobFiles, ServiceAccountFiles, User, job_user, kubernetes_env, pod_path
from mpijob.controllers.kubelet.volumes import COMPONENT
from mpijob.controllers.trainer import procfs
from mpijob.controllers.trainer.pod_env import marker, values
from mpijob.controllers.trainer.procs import SUPERVISOR_DIR, Role
from mpijob.controllers.trainer.runner import RUN_RECORD, STOP_GRACE
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store, now


class BareRun:
    """A bare pod's run: `run()` (or `resume()`) until it has finished, or `stop()` ends it."""

    def __init__(self, store: Store, logs: LogStore, files: JobFiles, plan: RunPlan, ip: str, cluster_id: str,
                 api_server: tuple[str, int] | None) -> None:
        self.store, self.logs, self.files, self.plan, self.ip = store, logs, files, plan, ip
        self.cluster_id, self.api_server = cluster_id, api_server
        self.pod = plan.pods[0]
        self.namespace, self.name = plan.namespace, self.pod.name
        container = (self.pod.pod_spec.get("containers") or [{}])[0]
        self.container: str = container.get("name") or self.name
        self.reads_stdin = bool(container.get("stdin"))
        self.policy: str = self.pod.pod_spec.get("restartPolicy") or names.RESTART_ALWAYS
        self.mode: SandboxMode = files.mode
        self.network: JobNetwork | None = None
        self.cgroup: PodCgroup | None = None
        self.proc: pods.PodProcess | None = None
        self.restarts = pods.NO_RESTARTS  # how often its container was restarted, and how it last ended
        self.armed = 0.0  # the back-off the next exit waits (restarts.back_off)
        self.started = ""  # when its container last started (RFC 3339), and since when, by the clock
        self.since = 0.0
        self.waiting = 0.0  # while it backs off: for how long, and until when (epoch seconds)
        self.waiting_until = 0.0
        self.oom_kills = 0  # its cgroup's OOM kills before its container's current run
        self.stopping: float | None = None  # the grace period of a stop asked for (deletion, drain)
        self._wake = asyncio.Event()  # set by stop(): a back-off ends at once
        self._killing: asyncio.Task[None] | None = None

    @property
    def supervisor_dir(self) -> Path:
        return self.files.pod_dir(self.pod) / SUPERVISOR_DIR[Role.CONTAINER]

    # -- a run outlives its server ---------------------------------------------------------------------

    def save(self) -> None:
        shim.write_atomically(self.files.root / RUN_RECORD, {
            "plan": dataclasses.asdict(self.plan), "ip": self.ip, "api_server": self.api_server,
            "restarts": dataclasses.asdict(self.restarts), "armed": self.armed, "started": self.started,
            "since": self.since, "waiting": self.waiting, "waiting_until": self.waiting_until,
            "oom_kills": self.oom_kills})

    @classmethod
    def load(cls, store: Store, logs: LogStore, files: JobFiles, cluster_id: str) -> BareRun | None:
        """The run an earlier server started in `files`, from its record; None without one."""
        try:
            record = json.loads((files.root / RUN_RECORD).read_text())
            server = record.get("api_server")
            run = cls(store, logs, files, plan_from_dict(record["plan"]), record["ip"], cluster_id,
                      (server[0], int(server[1])) if server else None)
            run.restarts = pods.Restarts(**record["restarts"])
            run.armed, run.started, run.since = float(record["armed"]), record["started"], float(record["since"])
            run.waiting, run.waiting_until = float(record["waiting"]), float(record["waiting_until"])
            run.oom_kills = int(record["oom_kills"])
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
        return run

    # -- its life ---------------------------------------------------------------------------------------

    async def run(self, account: ServiceAccountFiles | None) -> None:
        """From a bound pod to its end: its sandbox's files (`account`: its projected ServiceAccount's) and its
        network, then its container."""
        self._prepare(account)
        self.network = await job_network.create(self.mode, namespace_name(self.cluster_id, self.plan.uid))
        if self.network and self.api_server:
            await self.network.serve_api(self.api_server)
        await self._supervise(None)

    async def resume(self) -> None:
        """Take over the run an earlier server left (see the module's docstring)."""
        self.network = job_network.existing(self.mode, namespace_name(self.cluster_id, self.plan.uid))
        if self.network and self.api_server:
            await self.network.serve_api(self.api_server)
        if self.mode.private:
            self.cgroup = PodCgroup.create(self.cluster_id, self.plan.uid, self.pod.resources)
        adopted = None if self.waiting_until else pods.adopt(self.namespace, self.name, self.supervisor_dir)
        await self._supervise(adopted)

    async def _supervise(self, proc: pods.PodProcess | None) -> None:
        """Start the container (unless `proc` runs it already), and again after each exit its policy restarts."""
        self.proc = proc
        while True:
            if proc is None:
                if self.waiting_until and not await self._back_off():
                    break
                if self.stopping is not None:
                    break
                proc = await self._start()
            exit = await proc.wait()
            oom = bool(self.cgroup and self.cgroup.oom_kills() > self.oom_kills)
            reason = names.REASON_OOM_KILLED if oom else None
            ended = pods.terminated_state(exit, self.started, reason)
            if self.stopping is not None:
                break  # stopped from outside: its status is the stop's (`BarePods`), not this exit's
            if not restarts.restarts(self.policy, exit.code):
                pods.set_terminated(self.store, self.namespace, self.name, exit, reason, restarts=self.restarts,
                                    started=self.started)
                break
            after = restarts.back_off(self.armed, time.time() - self.since)
            self.armed = after.armed
            self.restarts = dataclasses.replace(self.restarts, last=ended)
            self.waiting, self.waiting_until = after.wait, (time.time() + after.wait if after.wait else 0.0)
            self.save()
            proc = None
        await self.close()

    async def _back_off(self) -> bool:
        """Wait out the back-off, waiting `CrashLoopBackOff` with the kubelet's Event; False when stopped meanwhile."""
        wait = max(self.waiting_until - time.time(), 0.0)
        pod_ref = restarts.pod_ref(self.namespace, self.name, self.plan.uid)
        stored = pods.set_waiting(self.store, self.namespace, self.name, names.REASON_CRASH_LOOP_BACK_OFF,
                                  restarts.waiting_message(self.waiting, self.container, pod_ref), self.restarts)
        if stored is not None:
            events.record(self.store, stored, names.REASON_BACK_OFF,
                          restarts.back_off_event(self.container, pod_ref), warning=True, component=COMPONENT)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), wait)
        self.waiting = self.waiting_until = 0.0
        return self.stopping is None

    def _prepare(self, account: ServiceAccountFiles | None) -> None:
        """The pod's directory, its sandbox's files and its ServiceAccount's (`account`: None when it has none)."""
        self.files.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.files.root, 0o700)
        user = self._user()
        self.files.write_pod(self.plan, self.pod, {self.pod.hostname: self.ip}, user, {})
        self.files.write_service_account(self.pod, user, account)
        if self.mode.private:
            self.cgroup = PodCgroup.create(self.cluster_id, self.plan.uid, self.pod.resources)

    def _user(self) -> User:
        return job_user(self.plan, self.pod, self.mode)

    def _home(self, user: User) -> str:
        return user.home if self.mode.private else str(self.files.pod_dir(self.pod) / "home")

    def env(self, user: User) -> dict[str, str]:
        """What the container starts with: who and where it is, the API server's Service variables, no GPUs (a
        pod asking for none sees none, as with NVIDIA's device plugin), then its own env, which wins."""
        address = trainer_status.api_address(self.mode, self.api_server)
        env = {"PATH": pod_path(), "HOME": self._home(user), "HOSTNAME": self.pod.hostname,
               **(kubernetes_env(*address) if address else {}), **marker(self.cluster_id, self.namespace, self.name),
               "CUDA_VISIBLE_DEVICES": ""}
        if self.mode == SandboxMode.PROCESS:
            env |= process_tmpdir(self.files.pod_dir(self.pod))
        return env | values(self.pod.env)

    async def _start(self) -> pods.PodProcess:
        """Start the container (again), Running with its restart count, and the kubelet's Events."""
        user = self._user()
        argv = self.files.argv(self.plan, self.pod, user, [*self.pod.command, *self.pod.args], self.env(user),
                               self.cgroup.procs if self.cgroup else ())
        if self.network:
            argv = self.network.enter(argv)
        if self.cgroup:
            self.oom_kills = self.cgroup.oom_kills()
        if self.started:  # it ran before: this is a restart
            self.restarts = dataclasses.replace(self.restarts, count=self.restarts.count + 1)
        self.started = ""
        self.save()  # before the spawn: a server that dies meanwhile finds the last run's exit, not an orphan
        self.proc = await pods.spawn(
            self.logs, self.namespace, self.name, argv, {"PATH": pod_path(), **marker(self.cluster_id, self.namespace,
                                                                                      self.name)},
            self.supervisor_dir, None if self.mode.private else self._home(user), cgroup=self.cgroup,
            stdin=self.reads_stdin, container=self.container)
        self.started, self.since = now(), time.time()
        self.save()
        stored = pods.set_running(self.store, self.namespace, self.name, self.ip, ready=True, restarts=self.restarts)
        if stored is not None:
            for reason, said in ((names.REASON_CREATED, f"Created container: {self.container}"),
                                 (names.REASON_STARTED, f"Started container {self.container}")):
                events.record(self.store, stored, reason, said, component=COMPONENT)
        if self.stopping is not None:  # stopped while it was being started: it must not outlive the stop
            self._kill_soon()
        return self.proc

    # -- its end ------------------------------------------------------------------------------------------

    def stop(self, grace: float) -> None:
        """End the run (the pod deleted, the server drained): SIGTERM to its workload, SIGKILL after `grace`."""
        if self.stopping is None:
            self.stopping = grace
        self._wake.set()
        self._kill_soon()

    def _kill_soon(self) -> None:
        if self._killing is None and self.proc is not None and self.proc.running:
            self._killing = asyncio.ensure_future(self._kill(self.stopping or 0.0))

    async def _kill(self, grace: float) -> None:
        proc = self.proc
        assert proc is not None
        stored = self.store.try_get(PODS, self.namespace, self.name)
        if stored is not None:
            events.record(self.store, stored, names.REASON_KILLING, f"Stopping container {self.container}",
                          component=COMPONENT)
        found = workload.find([proc.pid], 2 if self.mode.private else 0)
        if found and grace:
            await workload.stop(found, grace)
        proc.kill(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(proc.ended), STOP_GRACE)
        proc.kill(signal.SIGKILL)
        if not self.mode.private:  # no PID namespace: what left the pod's group goes by its marker
            tag = tuple(marker(self.cluster_id, self.namespace, self.name).items())
            for pid in procfs.marked({tag: self.name}).get(self.name, []):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        await proc.wait()

    async def close(self) -> None:
        """What the run held once its container has ended for good: its network and its cgroup."""
        if self._killing is not None:
            await self._killing
        if self.network:
            await self.network.close()
            self.network = None
        if self.cgroup:
            self.cgroup.remove()
            self.cgroup = None

    # -- getting inside ---------------------------------------------------------------------------------------

    def entry(self) -> PodEntry | None:
        """How to get inside the pod while its container runs (`kubectl exec`, `port-forward`); None otherwise."""
        proc = self.proc
        if proc is None or not proc.running or self.stopping is not None:
            return None
        user = self._user()
        home = self._home(user)
        try:
            prefix = entry.exec_prefix(self.files, user, self.env(user), proc.pid,
                                       self.cgroup.procs if self.cgroup else ())
        except ProcessLookupError:
            return None
        stdin = self.supervisor_dir / shim.STDIN if self.reads_stdin else None
        return PodEntry(self.name, self.mode, prefix, self.pod.working_dir or home,
                        entry.connector(self.network, self.ip), stdin)
