"""The TrainJob controller: runtime → run plan → Secret, hostfile ConfigMap, pods → a run (`launcher.py`); and
the job's status (conditions, jobsStatus) mirrored from what its pods do."""

from __future__ import annotations

import asyncio
import time

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CLUSTER_TRAINING_RUNTIMES, PODS, TRAINING_RUNTIMES, TRAINJOBS, WORKLOADS
from mpijob.api.core.selectors import parse_labels
from mpijob.api.kueue import owners
from mpijob.api.kueue.adapters import workload_name
from mpijob.api.trainer import bounds, render
from mpijob.api.trainer.plan import PodPlan, RunPlan, resolve
from mpijob.controllers import conditions as cond
from mpijob.controllers import events
from mpijob.controllers.kubelet import trainer_status
from mpijob.controllers.quota import limit_ranges, with_limit_ranges
from mpijob.controllers.trainer import deadline
from mpijob.controllers.trainer.launcher import JobContext, Launcher
from mpijob.controllers.trainer.runner import JobRunner, ready_default
from mpijob.controllers.trainer.stops import Outcome, Stop
from mpijob.store import audit
from mpijob.store.objects import Store

__all__ = ["TrainJobController", "job_pods"]


def job_pods(store: Store, namespace: str, job: str) -> list[Obj]:
    pods, _ = store.list(PODS, namespace, parse_labels(f"{names.LABEL_JOBSET_NAME}={job}"))
    return pods


class TrainJobController:
    kind = owners.TRAINJOB

    def __init__(self, ctx: JobContext) -> None:
        self.ctx, self.store = ctx, ctx.store
        self.launcher = Launcher(ctx, self)  # the runs: shared with MPIJobs' controller, one machine's pools
        self.deadlines: dict[str, asyncio.TimerHandle] = {}  # uid → the check at its activeDeadlineSeconds
        self.changed: set[tuple[str, str]] = set()  # (namespace, name) of the jobs whose pods changed (`pod_changed`)

    @property
    def runners(self) -> dict[str, tuple[JobRunner, asyncio.Task[None]]]:
        return self.launcher.runners

    # -- reconcile -----------------------------------------------------------------------------

    def reconcile(self, tj: Obj) -> None:
        """Suspend/resume, then Kueue's gate: no pod exists before the job's Workload is admitted."""
        uid = tj["metadata"]["uid"]
        if cond.finished(tj):
            self.launcher.sync_workload(tj, finished=True)
            return
        if tj.get("spec", {}).get("suspend"):
            if cond.set_condition(tj, names.SUSPENDED, True, names.REASON_SUSPENDED, "TrainJob is suspended"):
                tj = self.store.update(TRAINJOBS, tj, status=True)
            self.launcher.hold_suspended(tj)  # created suspended, it still gets its (inactive) Workload
            return
        if cond.is_true(tj, names.SUSPENDED):
            cond.set_condition(tj, names.SUSPENDED, False, names.REASON_RESUMED, "TrainJob is resumed")
            tj = self.store.update(TRAINJOBS, tj, status=True)
        if uid in self.runners:
            self.watch_deadline(tj)
            return
        ready = self.launcher.prepare(tj, names.REASON_RUNTIME_NOT_SUPPORTED)
        if ready is None or (wl := ready.admitted()) is None:
            return
        self.launcher.launch(tj, ready.plan, ready.owner, wl)

    def observe(self, tj: Obj, added: bool) -> None:
        """After each reconcile: a new job is counted, and the queueing controller hears of its progress and end."""
        if added:
            self.ctx.metrics.jobs.created(tj)
        self.ctx.queueing.trainjob_changed(tj)

    def fail(self, tj: Obj, message: str) -> None:
        self.finish(tj, Outcome(False, names.REASON_FAILED_JOBS, message))

    def recover(self) -> None:
        self.launcher.recover()

    async def evict(self, tj: Obj, message: str) -> None:
        await self.launcher.evict(tj, message)

    async def stop(self, uid: str, why: Stop) -> None:
        await self.launcher.stop(uid, why)

    async def deleted(self, tj: Obj) -> None:
        await self.launcher.deleted(tj)

    # -- what the launcher asks of a TrainJob (launcher.Form) ------------------------------------------------

    def plan(self, tj: Obj) -> RunPlan:
        """What the job runs, its containers' resources defaulted by the namespace's LimitRanges."""
        return with_limit_ranges(resolve(tj, self._runtime(tj)), limit_ranges(self.store, tj["metadata"]["namespace"]))

    def _runtime(self, tj: Obj) -> Obj:
        ref = tj["spec"]["runtimeRef"]
        if ref.get("kind", "ClusterTrainingRuntime") == "TrainingRuntime":
            return self.store.get(TRAINING_RUNTIMES, tj["metadata"]["namespace"], ref["name"])
        return self.store.get(CLUSTER_TRAINING_RUNTIMES, "", ref["name"])

    def pods(self, tj: Obj) -> list[Obj]:
        """The job's pods, by the labels its kind gives them."""
        return job_pods(self.store, tj["metadata"]["namespace"], tj["metadata"]["name"])

    def bounds(self, tj: Obj, plan: RunPlan) -> bounds.Bounds:
        """The run's deadlines and stall watch: the job's annotations, else its runtime's, else the defaults."""
        try:
            runtime_annotations = (self._runtime(tj).get("metadata") or {}).get("annotations")
        except ApiError:
            runtime_annotations = None
        hosts = sum(1 for p in plan.pods if p.in_hostfile)
        return bounds.resolve(tj["metadata"].get("annotations"), runtime_annotations, hosts, ready_default())

    def show_stalled(self, job: Obj, stalled: bool, reason: str, message: str) -> None:
        """The job's `Stalled` condition."""
        if (stalled or cond.get(job, names.FAILURE_STALLED)) and cond.set_condition(
                job, names.FAILURE_STALLED, stalled, reason, message):
            self.store.update(TRAINJOBS, job, status=True)

    def status_url(self, plan: RunPlan, server: tuple[str, int] | None) -> str:
        """Where the job's pods report progress (Trainer's status endpoint)."""
        return trainer_status.status_url(trainer_status.api_address(self.ctx.mode, server), plan)

    def secret_name(self, plan: RunPlan) -> str:
        return names.ssh_secret_name(plan.job)

    def render_secret(self, plan: RunPlan, private_pem: str, public_line: str, owner: Obj) -> Obj:
        return render.render_secret(plan, private_pem, public_line, owner)

    def render_config_maps(self, plan: RunPlan, owner: Obj) -> list[Obj]:
        """The hostfile ConfigMap, and the status server's CA for the pods' progress reports."""
        return [render.render_hostfile_configmap(plan, owner),
                render.render_tls_configmap(plan, owner, self.ctx.home.ca_pem())]

    def render_pod(self, plan: RunPlan, pod: PodPlan, owner: Obj, account: Obj, url: str) -> Obj:
        return render.render_pod(plan, pod, owner, account, url)

    def watch_deadline(self, tj: Obj, wl: Obj | None = None) -> None:
        """Fail a running job whose activeDeadlineSeconds has passed, or look again when it will."""
        meta = tj["metadata"]
        if wl is None:
            wl = self.store.try_get(WORKLOADS, meta["namespace"], workload_name(tj))
        handle = self.deadlines.pop(meta["uid"], None)
        if handle:
            handle.cancel()
        at = deadline.due(tj, wl)
        if at is None:
            return
        left = at - time.time()
        if left > 0:
            self.deadlines[meta["uid"]] = asyncio.get_running_loop().call_later(
                left, self._deadline_check, meta["namespace"], meta["name"], meta["uid"])
            return
        entry = self.runners.get(meta["uid"])
        if entry:  # the runner ends the job with this reason once its pods are stopped
            entry[0].stop(Stop.deadline_exceeded())
        else:
            self.finish(tj, Stop.deadline_exceeded().outcome)

    def _deadline_check(self, namespace: str, name: str, uid: str) -> None:
        self.deadlines.pop(uid, None)
        tj = self.store.try_get(TRAINJOBS, namespace, name)
        if tj is not None and tj["metadata"]["uid"] == uid:
            self.watch_deadline(tj)

    def finish(self, tj: Obj, outcome: Outcome) -> None:
        kind = names.COMPLETE if outcome.succeeded else names.FAILED
        cond.set_condition(tj, kind, True, outcome.reason, outcome.message)
        self._mirror(tj)
        tj = self.store.update(TRAINJOBS, tj, status=True)
        audit.open_log(self.ctx.home.audit_log).write(audit.trainjob_finished(tj, kind, outcome.reason))
        self.launcher.sync_workload(tj, finished=True)
        self.ctx.metrics.jobs.finished(tj)
        self.ctx.accounting.finished(tj, outcome)
        # the failure's class, when it has one, is the Event's reason: the condition keeps upstream's
        events.record(self.store, tj, outcome.failure or outcome.reason, outcome.message,
                      warning=not outcome.succeeded)

    # -- status --------------------------------------------------------------------------------

    def _mirror(self, tj: Obj) -> None:
        meta = tj["metadata"]
        pods = job_pods(self.store, meta["namespace"], meta["name"])
        rjobs = sorted({p["metadata"]["labels"].get(names.LABEL_RJOB_NAME, "") for p in pods},
                       key=lambda r: r != names.NODE)
        expected = {r: sum(1 for p in pods if p["metadata"]["labels"].get(names.LABEL_RJOB_NAME) == r) for r in rjobs}
        tj.setdefault("status", {})["jobsStatus"] = cond.jobs_status(pods, rjobs, expected)

    def pod_changed(self, pod: Obj) -> None:
        """Keep the owning TrainJob's jobsStatus in step with its pods: once for all the changes that come
        together (a 64-node job's start changes each pod two or three times, and each look lists them all)."""
        if job := pod["metadata"].get("labels", {}).get(names.LABEL_JOBSET_NAME):
            if not self.changed:
                asyncio.get_running_loop().call_soon(self._mirror_changed)
            self.changed.add((pod["metadata"]["namespace"], job))

    def _mirror_changed(self) -> None:
        changed, self.changed = self.changed, set()
        for namespace, job in changed:
            tj = self.store.try_get(TRAINJOBS, namespace, job)
            if tj is None or cond.finished(tj):
                continue
            before = tj.get("status", {}).get("jobsStatus")
            self._mirror(tj)
            if tj["status"]["jobsStatus"] != before:
                self.store.update(TRAINJOBS, tj, status=True)

