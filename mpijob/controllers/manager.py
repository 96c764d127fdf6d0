"""Runs the controllers inside the server: one watch over the store wakes them; restart recovery first.

Restart policy (docs/restarts.md): pods outlive the server under their supervisors (`kubelet/shim.py`).
A job whose pods had started is re-adopted from its run record (`JobRunner.resume`); without one (a
run of an older server) it fails `ControlPlaneRestarted`. Processes and job networks of runs that are
not re-adopted (their job was deleted meanwhile) are removed. Jobs that had not started simply start. Bare
pods (no job owns them: `kubelet/bare_pods.py`) are taken over the same way, from their own records.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.quantity import parse_quantity
from mpijob.controllers import conditions as cond
from mpijob.controllers.claims import Claims
from mpijob.controllers.jobkinds import KINDS, JobControllerType, JobKinds
from mpijob.controllers.kubelet import capacity, cgroups, gc, network, node
from mpijob.controllers.kubelet.admission import PodAdmission
from mpijob.controllers.kubelet.bare_pods import BarePods
from mpijob.controllers.kubelet.entry import PodEntry
from mpijob.controllers.kubelet.sandbox import check_mode, detect_mode, guarantees
from mpijob.controllers.kueue.integrations import Integrations
from mpijob.controllers.kueue.queueing import Queueing
from mpijob.controllers.metrics import Metrics
from mpijob.controllers.metrics.gpus import Nvml
from mpijob.controllers.metrics.usage import RunningPod, Sampler, interval_from_env
from mpijob.controllers.quota import QuotaStatus
from mpijob.controllers.trainer.accounting import Accounting
from mpijob.controllers.trainer.launcher import JobContext
from mpijob.controllers.trainer.stops import Stop
from mpijob.store.home import Home
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
ENDING_GRACE = 10.0  # seconds a stopping server waits for the runs already ending to finish their teardown
# Changes to these can change what the scheduler admits.
QUEUE_KINDS = frozenset({"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass", "Cohort",
                         "Namespace"})


class Manager:
    def __init__(self, store: Store, logs: LogStore, home: Home, metrics: Metrics | None = None,
                 kinds: Sequence[JobControllerType] = KINDS) -> None:
        self.store, self.logs, self.home = store, logs, home
        self.metrics = metrics or Metrics(store, logs)  # the server's registry (docs/metrics.md)
        detected = detect_mode()
        self.sandbox_mode, self.sandbox_why = detected.mode, detected.why
        check_mode(self.sandbox_mode, home.root)
        if detected.why:
            log.warning("sandbox %s: %s", detected.mode, detected.why)
        self.cluster_id = hashlib.sha256(str(home.root).encode()).hexdigest()[:16]
        self.capacity = capacity.detect()
        self.queueing = Queueing(store, self._evict, self.metrics.kueue)
        self.accounting = Accounting(home.history)  # the job history (`mpijob history`)
        gpus = int(parse_quantity(self.capacity.get(capacity.GPU, "0")))
        admission = PodAdmission(store, home, self.sandbox_mode, self.cluster_id, gpus)
        self.kinds = JobKinds.build(JobContext(  # every kind of job, each with its controller (jobkinds.py)
            store, logs, home, self.sandbox_mode, self.cluster_id, admission, self.accounting,
            self.queueing.kick, self.metrics, self.queueing), kinds)
        # the pods no job owns (`kubectl run`), run as a node pod is (docs/bare-pods.md)
        self.bare_pods = BarePods(store, logs, home, self.sandbox_mode, self.cluster_id, admission)
        self.integrations = Integrations(self.kinds)  # how Kueue's verdicts reach each kind's controller
        self.node = node.node_name()  # the machine, as the Node its kubelet registers
        self.sampler = Sampler(self._running_pods, interval_from_env())  # what pods and the machine use
        self.metrics.observe_usage(self.sampler, self.node, self.capacity)
        self.quotas = QuotaStatus(store)  # ResourceQuota status: Used and Hard (docs/security.md)
        self.claims = Claims(store, home)  # PersistentVolumeClaims bound to directories (docs/volumes.md)
        self._task: asyncio.Task[None] | None = None

    def sandbox(self) -> dict[str, Any]:
        """What `mpijob server status` says of the sandbox: why this mode, and what holds in it."""
        return {"why": self.sandbox_why, "guarantees": guarantees(self.sandbox_mode)}

    async def start(self) -> None:
        node.register(self.store, self.node, self.capacity)
        for kind in self.kinds:
            kind.recover()
        runs = self.kinds.runs()
        if runs:
            log.warning("re-adopted %d running job(s) of a previous server", len(runs))
        self.bare_pods.recover()
        bare, bare_networks = self.bare_pods.kept()
        keep = {f"{r.plan.namespace}/{p.name}" for r in runs for p in r.plan.pods} | bare
        if killed := gc.kill_leftovers(self.cluster_id, keep):
            log.warning("killed %d processes left by a previous server", killed)
        kept_cgroups = {cgroups.job_pod(r.plan.uid, p.name) for r in runs for p in r.plan.pods}
        if swept := cgroups.sweep(self.cluster_id, kept_cgroups | {r.plan.uid for r in self.bare_pods}):
            log.warning("removed %d pod cgroups left by a previous server", swept)
        keep_networks = {network.namespace_name(self.cluster_id, r.plan.uid) for r in runs} | bare_networks
        if networks := network.remove_leftovers(self.sandbox_mode, self.cluster_id, keep_networks):
            log.warning("removed %d job networks left by a previous server", networks)
        self.claims.recover()
        self.accounting.recover(self.store)
        gc.sweep_orphans(self.store, self.logs, self.home)
        self.sampler.nvml = Nvml.open()
        self.sampler.start()
        self.queueing.ensure_defaults(self.capacity)
        self.queueing.start()
        ready = asyncio.Event()
        self._task = asyncio.create_task(self._loop(ready))
        await ready.wait()
        for kind in self.kinds:
            for job in self.store.list(kind.kind.resource)[0]:
                self.kinds.reconcile(job, kind)
                kind.observe(job, added=False)  # the finished TrainJobs make the run-time history
        self.bare_pods.resync()

    async def stop(self, drain: bool = False) -> None:
        """Stop the controllers. Running jobs run on under their pods' supervisors, for the next server to
        re-adopt, unless `drain`: then each is stopped gracefully and runs again at the next start."""
        await self.queueing.stop()
        await self.sampler.stop()
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if drain:
            await asyncio.gather(*(c.stop(uid, Stop.drained()) for c in self.kinds for uid in list(c.runners)),
                                 self.bare_pods.stop(drain))
            cgroups.remove_cluster(self.cluster_id)
            return
        await self.bare_pods.stop(drain)
        # a run already ending (its job deleted, stopped) finishes first, within a bound: cut short, it would
        # leave its network behind for a next server that may never come (a home removed after its server)
        ending = [task for c in self.kinds for runner, task in c.runners.values() if runner.stopped]
        if ending:
            await asyncio.wait(ending, timeout=ENDING_GRACE)
        tasks = [task for c in self.kinds for _, task in c.runners.values()]
        for task in tasks:
            task.cancel()  # the runner lets go; its pods do not notice
        await asyncio.gather(*tasks, return_exceptions=True)
        cgroups.remove_cluster(self.cluster_id)  # kept while a pod of a run left to the next server holds one

    async def _evict(self, job: Obj, message: str) -> None:
        """Kueue evicted the job's Workload (the queueing controller is made before the kinds it evicts)."""
        await self.integrations.evict(job, message)

    async def _loop(self, ready: asyncio.Event) -> None:
        stream = self.store.watch(None)
        ready.set()
        async for kind, obj in stream:
            try:
                await self._dispatch(kind, obj)
            except Exception:
                log.exception("controller error on %s %s", kind, obj.get("metadata", {}).get("name"))

    async def _dispatch(self, kind: str, obj: Obj) -> None:
        self.quotas.observe(kind, obj)
        if (controller := self.kinds.of(obj)) is not None:
            if kind == "DELETED":
                await controller.deleted(obj)
            else:
                self.kinds.reconcile(obj, controller)
                controller.observe(obj, added=kind == "ADDED")
        elif obj.get("kind") == names.PVC_KIND:
            if kind == "DELETED":
                self.claims.deleted(obj)
            else:
                self.claims.reconcile(obj)
            self._node_changed()  # the jobs waiting for a claim look again
        elif obj.get("kind") == "Pod":
            self.claims.pod_changed(obj)  # a claim deleted while in use may go once its pods are done
            if kind == "DELETED":
                self._pod_deleted(obj)
            else:
                self.bare_pods.changed(obj)  # a pod no job owns runs as the kubelet runs a pod
                for c in self.kinds:
                    c.pod_changed(obj)  # each kind takes the pods that are its jobs'
        elif obj.get("kind") == "Workload":
            self.queueing.kick()
            if kind != "DELETED":
                self.queueing.workload_changed(obj)
            if kind != "DELETED" and cond.is_true(obj, names.ADMITTED):
                self.integrations.admitted(self.store, obj)  # its job, of whichever kind, starts
        elif obj.get("kind") in QUEUE_KINDS:
            self.queueing.kick()
        elif obj.get("kind") == "Node" and kind != "DELETED":
            self._node_changed()

    def _node_changed(self) -> None:
        """A label, taint or cordon changed (or a claim): the admitted jobs whose pods wait for a Node look again,
        and the bare pods that wait."""
        self.bare_pods.node_changed()
        for c in self.kinds:
            for job in self.store.list(c.kind.resource)[0]:
                if not self.kinds.finished(c, job) and job["metadata"]["uid"] not in c.runners:
                    self.kinds.reconcile(job, c)

    def _running_pods(self) -> list[RunningPod]:
        """What the sampler reads: every pod of a running job (of any kind) that has a cgroup, with its GPUs, and
        every running bare pod that has one."""
        return [RunningPod(runner.plan.namespace, pod, cgroup, tuple(runner.gpus.get(pod, ())))
                for runner in self.kinds.runs()
                for pod, cgroup in list(runner.cgroups.items())] + [
            RunningPod(run.namespace, run.name, run.cgroup) for run in self.bare_pods if run.cgroup is not None]

    def pod_entry(self, pod: Obj) -> PodEntry | None:
        """How to get inside `pod` while it runs (`kubectl exec`, `port-forward`); None when it does not."""
        found = self.kinds.owner(pod)
        if found is None:
            return self.bare_pods.entry(pod)
        entry = found[0].runners.get(found[1])
        return entry[0].entry(pod["metadata"]["name"]) if entry else None

    def _pod_deleted(self, pod: Obj) -> None:
        """A running pod deleted by hand dies like a node lost on a cluster: the job fails. A bare pod's run
        stops, if it still ran (a pod deleted at once: forced, or with its namespace)."""
        self.bare_pods.deleted(pod)
        found = self.kinds.owner(pod)
        entry = found[0].runners.get(found[1]) if found else None
        if entry:
            entry[0].kill(pod["metadata"]["name"])
        self.logs.remove(pod["metadata"]["namespace"], pod["metadata"]["name"])
