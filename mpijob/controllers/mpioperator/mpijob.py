"""The MPIJob controller: an MPI Operator `kubeflow.org/v2beta1` MPIJob runs as it is, through its TrainJob form.

The job is converted (`mpijob.api.mpioperator.convert`), resolved into a run plan as a TrainJob would
be (`api/trainer/plan.py`), renamed as MPI Operator names things (`api/mpioperator/naming.py`) and run by the
Trainer controller's machinery (a `trainer/launcher.py` Launcher of its own, the runner, the kubelet), so both
kinds share one machine's addresses, cores and GPUs. No TrainJob object is made: the MPIJob owns its pods,
Secret and ConfigMap, and its status is MPI Operator's (`status.py`).

Kueue queues an MPIJob as its MPIJob integration does (`api/kueue/owners.py`): a Workload
`mpijob-<name>-<hash>` with pod sets `launcher` and `worker`, in the LocalQueue of its
`kueue.x-k8s.io/queue-name` label (else the namespace's default one, as for TrainJobs), at the priority of
its `kueue.x-k8s.io/priority-class`. Until the Workload is admitted the job is held, shown as MPI Operator
shows a job Kueue keeps suspended (`Suspended` True, `MPIJobSuspended`); admitted, it is resumed (a new
`startTime`) and run; evicted or preempted, its pods are stopped and deleted and it is held again until it
is re-admitted. Its user's `spec.runPolicy.suspend: true` holds it as well, its Workload inactive. Its runs
go to the job history beside the TrainJobs'.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
import time

from mpijob.api import Obj, names
from mpijob.api.core.durations import parse_time
from mpijob.api.core.resources import MPIJOBS, PODS
from mpijob.api.core.selectors import parse_labels
from mpijob.api.kueue import owners
from mpijob.api.mpioperator import naming
from mpijob.api.mpioperator.convert import convert
from mpijob.api.trainer import bounds, render
from mpijob.api.trainer.plan import PodPlan, RunPlan, resolve
from mpijob.controllers import events
from mpijob.controllers.mpioperator import status
from mpijob.controllers.quota import limit_ranges, with_limit_ranges
from mpijob.controllers.trainer.launcher import JobContext, Launcher
from mpijob.controllers.trainer.runner import JobRunner, ready_default
from mpijob.controllers.trainer.stops import Outcome, Stop, Then
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
# The Job controller's words for a launcher Job past its activeDeadlineSeconds, which MPI Operator copies
DEADLINE_MESSAGE = "Job was active longer than specified deadline"
DEADLINE = Stop(names.REASON_DEADLINE_EXCEEDED, DEADLINE_MESSAGE, Then.FAIL)


def job_pods(store: Store, namespace: str, job: str) -> list[Obj]:
    """The pods MPI Operator's labels say are the job's."""
    selector = f"{names.LABEL_MPI_OPERATOR_NAME}={names.MPI_OPERATOR_NAME},{names.LABEL_MPI_JOB_NAME}={job}"
    return store.list(PODS, namespace, parse_labels(selector))[0]


def owner_uid(obj: Obj) -> str | None:
    """The uid of the MPIJob that owns `obj`, if one does."""
    return next((r.get("uid") for r in obj["metadata"].get("ownerReferences") or []
                 if r.get("kind") == names.MPIJOB_KIND), None)


class MPIJobController:
    kind = owners.MPIJOB

    def __init__(self, ctx: JobContext) -> None:
        """Its runs share the machine's pools, the Kueue controller's kick and the job history with TrainJobs'."""
        self.ctx, self.store = ctx, ctx.store
        self.launcher = Launcher(ctx, self)
        self.deadlines: dict[str, asyncio.TimerHandle] = {}

    @property
    def runners(self) -> dict[str, tuple[JobRunner, asyncio.Task[None]]]:
        return self.launcher.runners

    # -- reconcile ---------------------------------------------------------------------------------

    def reconcile(self, job: Obj) -> None:
        """`Created` and `startTime` at first sight; then held while its user suspends it or its Workload
        waits for Kueue, and run, resumed, once the Workload is admitted."""
        meta = job["metadata"]
        if status.finished(job):
            self.launcher.sync_workload(job, finished=True)
            return
        if status.created(job):
            events.record(self.store, job, names.MPIJOB_CREATED, status.condition(job, status.CREATED)["message"])  # type: ignore[index]  # created() just set it
            job = self.store.update(MPIJOBS, job, status=True)
        if owners.MPIJOB.suspended(job):
            self.launcher.hold_suspended(self._hold(job))
            return
        if meta["uid"] in self.runners:
            return
        ready = self.launcher.prepare(job, names.MPIJOB_FAILED)
        if ready is None:
            return
        wl = ready.admitted()
        if wl is None:
            self._hold(job)
            return
        if status.resumed(job):
            job = self.store.update(MPIJOBS, job, status=True)
            events.record(self.store, job, names.MPIJOB_RESUMED, names.MPIJOB_RESUMED_MESSAGE)
        self.launcher.launch(job, ready.plan, ready.owner, wl)

    def _hold(self, job: Obj) -> Obj:
        """Keep the job from running, shown as MPI Operator shows a suspended one; the stored job."""
        meta = job["metadata"]
        before = copy.deepcopy(job.get("status"))
        now_held = status.suspended(job, job_pods(self.store, meta["namespace"], meta["name"]))
        if job["status"] != before:
            job = self.store.update(MPIJOBS, job, status=True)
        if now_held:
            events.record(self.store, job, names.MPIJOB_SUSPENDED, names.MPIJOB_SUSPENDED_MESSAGE)
        return job

    def observe(self, job: Obj, added: bool) -> None:
        """MPI Operator's metrics and Kueue's run-time estimates are TrainJobs' only."""

    def fail(self, job: Obj, message: str) -> None:
        self.finish(job, Outcome(False, names.MPIJOB_FAILED, message))

    def recover(self) -> None:
        self.launcher.recover()

    async def stop(self, uid: str, why: Stop) -> None:
        await self.launcher.stop(uid, why)

    async def deleted(self, job: Obj) -> None:
        await self.launcher.deleted(job)

    async def evict(self, job: Obj, message: str) -> None:
        """Kueue evicted its Workload: stopped whole, its pods deleted, then held until it is admitted again."""
        await self.launcher.evict(job, message)
        current = self.store.try_get(MPIJOBS, job["metadata"]["namespace"], job["metadata"]["name"])
        same = current is not None and current["metadata"]["uid"] == job["metadata"]["uid"]
        if current is not None and same and not status.finished(current):
            self._hold(current)

    # -- what the launcher asks of an MPIJob (launcher.Form) -----------------------------------------------

    def pods(self, job: Obj) -> list[Obj]:
        return job_pods(self.store, job["metadata"]["namespace"], job["metadata"]["name"])

    def plan(self, job: Obj) -> RunPlan:
        """The job's TrainJob form resolved on its runtime, defaulted by LimitRanges, in MPI Operator's names."""
        meta = job["metadata"]
        form = convert(job, always_runtime=True)
        trainjob = {**form.trainjob, "metadata": {**form.trainjob["metadata"], "name": meta["name"],
                                                  "namespace": meta["namespace"], "uid": meta["uid"]}}
        plan = resolve(trainjob, form.runtime or {})
        return naming.rename(with_limit_ranges(plan, limit_ranges(self.store, meta["namespace"])))

    def watch_deadline(self, job: Obj, wl: Obj | None = None) -> None:
        """`runPolicy.activeDeadlineSeconds`, counted from `startTime` as the launcher Job's is (called by
        `launch` once the run is started)."""
        meta = job["metadata"]
        seconds = ((job.get("spec") or {}).get("runPolicy") or {}).get("activeDeadlineSeconds")
        started = parse_time((job.get("status") or {}).get("startTime"))
        if not seconds or started is None or meta["uid"] not in self.runners:
            return
        left = started.timestamp() + int(seconds) - time.time()
        runner = self.runners[meta["uid"]][0]
        self.deadlines[meta["uid"]] = asyncio.get_running_loop().call_later(max(left, 0), runner.stop, DEADLINE)

    def bounds(self, job: Obj, plan: RunPlan) -> bounds.Bounds:
        """The run's deadlines and stall watch: the MPIJob's own annotations (it has no runtime of its own)."""
        hosts = sum(1 for p in plan.pods if p.in_hostfile)
        return bounds.resolve(job["metadata"].get("annotations"), None, hosts, ready_default())

    def show_stalled(self, job: Obj, stalled: bool, reason: str, message: str) -> None:
        """MPI Operator's status has no such condition: its Events say it."""

    # -- MPI Operator's objects --------------------------------------------------------------------------

    def status_url(self, plan: RunPlan, server: tuple[str, int] | None) -> str:
        return ""  # Trainer's progress endpoint is a TrainJob's; MPI Operator gives its pods none

    def secret_name(self, plan: RunPlan) -> str:
        return names.mpijob_ssh_secret_name(plan.job)

    def render_secret(self, plan: RunPlan, private_pem: str, public_line: str, owner: Obj) -> Obj:
        return naming.secret(render.render_secret(plan, private_pem, public_line, owner), plan.job)

    def render_config_maps(self, plan: RunPlan, owner: Obj) -> list[Obj]:
        return [naming.config_map(render.render_hostfile_configmap(plan, owner), plan.job)]

    def render_pod(self, plan: RunPlan, pod: PodPlan, owner: Obj, account: Obj, url: str) -> Obj:
        return naming.pod(render.render_pod(plan, pod, owner, account, url), plan.job, plan.namespace)

    # -- status ----------------------------------------------------------------------------------------

    def finish(self, job: Obj, outcome: Outcome) -> None:
        """`Succeeded` or `Failed` (MPIJobFailed; DeadlineExceeded as the launcher Job says it), and an Event."""
        meta = job["metadata"]
        handle = self.deadlines.pop(meta["uid"], None)
        if handle:
            handle.cancel()
        reason = outcome.reason if outcome.reason == names.REASON_DEADLINE_EXCEEDED else names.MPIJOB_FAILED
        status.ended(job, job_pods(self.store, meta["namespace"], meta["name"]), outcome.succeeded, reason,
                     outcome.message)
        job = self.store.update(MPIJOBS, job, status=True)
        self.launcher.sync_workload(job, finished=True)  # its quota goes back to the queue
        ended = status.condition(job, status.SUCCEEDED if outcome.succeeded else status.FAILED) or {}
        self.ctx.accounting.finished(job, dataclasses.replace(outcome, reason=ended.get("reason", reason)))  # its words
        events.record(self.store, job, outcome.failure or ended.get("reason", reason), ended.get("message", ""),
                      warning=not outcome.succeeded)

    def pod_changed(self, pod: Obj) -> None:
        """Keep the owning MPIJob's replica counts and `Running` in step with its pods."""
        job_name = (pod["metadata"].get("labels") or {}).get(names.LABEL_MPI_JOB_NAME)
        if not job_name:
            return
        job = self.store.try_get(MPIJOBS, pod["metadata"]["namespace"], job_name)
        if job is None or status.finished(job) or owner_uid(pod) != job["metadata"]["uid"]:
            return
        if status.observe(job, job_pods(self.store, job["metadata"]["namespace"], job_name)):
            self.store.update(MPIJOBS, job, status=True)
