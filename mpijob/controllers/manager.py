"""Runs the controllers inside the server: one watch over the store wakes them; restart recovery first.

Restart policy (docs/restarts.md): pods outlive the server under their supervisors (`kubelet/shim.py`).
A job whose pods had started is re-adopted from its run record (`JobRunner.resume`); without one (a
run of an older server) it fails `ControlPlaneRestarted`. Processes and job networks of runs that are
not re-adopted (their job was deleted meanwhile) are removed. Jobs that had not started simply start.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging

from mpijob.api import Obj, names
from mpijob.api.errors import ApiError
from mpijob.api.kueue import owners
from mpijob.api.quantity import parse_quantity
from mpijob.api.resources import MPIJOBS, TRAINJOBS
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.controllers import conditions as cond
from mpijob.controllers.claims import Claims
from mpijob.controllers.kubelet import capacity, gc, network, node, pods
from mpijob.controllers.kubelet.sandbox import check_mode, detect_mode
from mpijob.controllers.kueue.integrations import Integration, Integrations
from mpijob.controllers.kueue.queueing import Queueing
from mpijob.controllers.metrics import Metrics
from mpijob.controllers.metrics.gpus import Nvml
from mpijob.controllers.metrics.usage import RunningPod, Sampler, interval_from_env
from mpijob.controllers.mpioperator import status as mpijob_status
from mpijob.controllers.mpioperator.mpijob import MPIJobController, owner_uid
from mpijob.controllers.quota import QuotaStatus
from mpijob.controllers.trainer.stops import Outcome, Stop
from mpijob.controllers.trainer.trainjob import TrainJobController, job_pods
from mpijob.store.home import Home
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
# Changes to these can change what the scheduler admits.
QUEUE_KINDS = frozenset({"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass", "Cohort",
                         "Namespace"})


class Manager:
    def __init__(self, store: Store, logs: LogStore, home: Home, metrics: Metrics | None = None) -> None:
        self.store, self.logs, self.home = store, logs, home
        self.metrics = metrics or Metrics(store, logs)  # the server's registry (docs/metrics.md)
        self.sandbox_mode = detect_mode()
        check_mode(self.sandbox_mode, home.root)
        self.cluster_id = hashlib.sha256(str(home.root).encode()).hexdigest()[:16]
        self.capacity = capacity.detect()
        self.trainjobs = TrainJobController(
            store, logs, home, self.sandbox_mode, self.cluster_id,
            gpus=int(parse_quantity(self.capacity.get(capacity.GPU, "0"))), kick=lambda: self.queueing.kick(),  # noqa: PLW0108 — self.queueing comes later
            on_finish=self.metrics.jobs.finished,
        )
        self.mpijobs = MPIJobController(self.trainjobs)  # MPI Operator's MPIJobs, run as they are
        self.integrations = Integrations(  # the kinds of job Kueue manages, and how each is started and stopped
            Integration(owners.TRAINJOB, self._reconcile, self.trainjobs.evict, self.trainjobs.runners.__contains__),
            Integration(owners.MPIJOB, self._reconcile_mpijob, self.mpijobs.evict, self.mpijobs.runners.__contains__))
        self.queueing = Queueing(store, self.integrations.evict, self.metrics.kueue)
        self.node = node.node_name()  # the machine, as the Node its kubelet registers
        self.sampler = Sampler(self._running_pods, interval_from_env())  # what pods and the machine use
        self.metrics.observe_usage(self.sampler, self.node, self.capacity)
        self.quotas = QuotaStatus(store)  # ResourceQuota status: Used and Hard (docs/security.md)
        self.claims = Claims(store, home)  # PersistentVolumeClaims bound to directories (docs/volumes.md)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        node.register(self.store, self.node, self.capacity)
        self._recover()
        self.mpijobs.recover()
        runs = [r for controller in (self.trainjobs, self.mpijobs) for r, _ in controller.runners.values()]
        if runs:
            log.warning("re-adopted %d running job(s) of a previous server", len(runs))
        keep = {f"{r.plan.namespace}/{p.name}" for r in runs for p in r.plan.pods}
        if killed := gc.kill_leftovers(self.cluster_id, keep):
            log.warning("killed %d processes left by a previous server", killed)
        keep_networks = {network.namespace_name(self.cluster_id, r.plan.uid) for r in runs}
        if self.sandbox_mode == SandboxMode.NAMESPACE and (
                networks := network.remove_leftovers(self.cluster_id, keep_networks)):
            log.warning("removed %d job networks left by a previous server", networks)
        self.claims.recover()
        self.trainjobs.accounting.recover(self.store)
        gc.sweep_orphans(self.store, self.logs, self.home)
        self.sampler.nvml = Nvml.open()
        self.sampler.start()
        self.queueing.ensure_defaults(self.capacity)
        self.queueing.start()
        ready = asyncio.Event()
        self._task = asyncio.create_task(self._loop(ready))
        await ready.wait()
        for tj in self.store.list(TRAINJOBS)[0]:
            self._reconcile(tj)
            self.queueing.trainjob_changed(tj)  # the finished ones make the run-time history
        for job in self.store.list(MPIJOBS)[0]:
            self._reconcile_mpijob(job)

    async def stop(self, drain: bool = False) -> None:
        """Stop the controllers. Running jobs run on under their pods' supervisors, for the next server to
        re-adopt, unless `drain`: then each is stopped gracefully and runs again at the next start."""
        await self.queueing.stop()
        await self.sampler.stop()
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        controllers = (self.trainjobs, self.mpijobs)
        if drain:
            await asyncio.gather(*(c.stop(uid, Stop.drained()) for c in controllers for uid in list(c.runners)))
            return
        tasks = [task for c in controllers for _, task in c.runners.values()]
        for task in tasks:
            task.cancel()  # the runner lets go; its pods do not notice
        await asyncio.gather(*tasks, return_exceptions=True)

    def _recover(self) -> None:
        for tj in self.store.list(TRAINJOBS)[0]:
            if cond.finished(tj):
                continue
            meta = tj["metadata"]
            started = job_pods(self.store, meta["namespace"], meta["name"])
            if not any(p.get("status", {}).get("startTime") for p in started):
                continue  # never started: it starts normally
            if self.trainjobs.adopt(tj):
                continue  # its pods ran on under their supervisors
            message = ("the local cluster's control plane restarted while the job was running; "
                       "its processes were stopped and it is not re-adopted")
            for p in started:
                if p.get("status", {}).get("phase") in ("Pending", "Running"):
                    pods.set_terminated(self.store, meta["namespace"], p["metadata"]["name"],
                                        pods.Exit(137, 9), names.REASON_CONTROL_PLANE_RESTARTED, message)
            self.trainjobs.finish(self.store.get(TRAINJOBS, meta["namespace"], meta["name"]),
                                  Outcome(False, names.REASON_CONTROL_PLANE_RESTARTED, message))

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
        if obj.get("kind") == "TrainJob":
            if kind == "DELETED":
                uid = obj["metadata"]["uid"]
                await self.trainjobs.stop(uid, Stop.deleted())
                self.trainjobs.accounting.deleted(obj)  # its record stays in the history
                gc.cascade(self.store, self.logs, uid)
                gc.remove_tree(self.trainjobs.files(obj).root)
            else:
                if kind == "ADDED":
                    self.metrics.jobs.created(obj)
                self._reconcile(obj)
                self.queueing.trainjob_changed(obj)
        elif obj.get("kind") == MPIJOBS.kind and obj.get("apiVersion", MPIJOBS.api_version) == MPIJOBS.api_version:
            if kind == "DELETED":
                uid = obj["metadata"]["uid"]
                await self.mpijobs.stop(uid, Stop.deleted())
                self.mpijobs.accounting.deleted(obj)  # its record stays in the history
                gc.cascade(self.store, self.logs, uid)
                gc.remove_tree(self.mpijobs.files(obj).root)
            else:
                self._reconcile_mpijob(obj)
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
            elif owner_uid(obj):
                self.mpijobs.pod_changed(obj)
            else:
                self.trainjobs.pod_changed(obj)
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
        """A label, taint or cordon changed (or a claim): the admitted jobs whose pods wait for a Node look again."""
        for tj in self.store.list(TRAINJOBS)[0]:
            if not cond.finished(tj) and tj["metadata"]["uid"] not in self.trainjobs.runners:
                self._reconcile(tj)
        for job in self.store.list(MPIJOBS)[0]:
            if not mpijob_status.finished(job) and job["metadata"]["uid"] not in self.mpijobs.runners:
                self._reconcile_mpijob(job)

    def _reconcile(self, tj: Obj) -> None:
        try:
            self.trainjobs.reconcile(tj)
        except Exception as e:
            if isinstance(e, ApiError) and e.reason == "Conflict":  # it changed since this event (a progress
                return  # report, say): the event of its newer version reconciles it
            log.exception("reconcile of %s failed", tj["metadata"]["name"])
            current = self.store.try_get(TRAINJOBS, tj["metadata"]["namespace"], tj["metadata"]["name"])
            if current is not None and not cond.finished(current):
                self.trainjobs.finish(current, Outcome(False, names.REASON_FAILED_JOBS,
                                                    f"the local cluster could not start the job: {e}"))

    def _reconcile_mpijob(self, job: Obj) -> None:
        try:
            self.mpijobs.reconcile(job)
        except Exception as e:
            if isinstance(e, ApiError) and e.reason == "Conflict":
                return  # the event of its newer version reconciles it
            log.exception("reconcile of MPIJob %s failed", job["metadata"]["name"])
            current = self.store.try_get(MPIJOBS, job["metadata"]["namespace"], job["metadata"]["name"])
            if current is not None and not mpijob_status.finished(current):
                self.mpijobs.finish(current, Outcome(False, names.MPIJOB_FAILED,
                                                     f"the local cluster could not start the job: {e}"))

    def _running_pods(self) -> list[RunningPod]:
        """What the sampler reads: every pod of a running job (TrainJob or MPIJob) that has a cgroup, with its GPUs."""
        return [RunningPod(runner.plan.namespace, pod, cgroup, tuple(runner.gpus.get(pod, ())))
                for runners in (self.trainjobs.runners, self.mpijobs.runners)
                for runner, _ in list(runners.values())
                for pod, cgroup in list(runner.cgroups.items())]

    def _pod_deleted(self, pod: Obj) -> None:
        """A running pod deleted by hand dies like a node lost on a cluster: the job fails."""
        entry = self.trainjobs.runners.get(gc.owner_uid(pod) or "") or self.mpijobs.runners.get(owner_uid(pod) or "")
        if entry:
            entry[0].kill(pod["metadata"]["name"])
        self.logs.remove(pod["metadata"]["namespace"], pod["metadata"]["name"])
