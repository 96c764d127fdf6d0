"""The runs of one kind of job: what the Trainer controller and the MPI Operator controller share.

Each kind's controller holds a `Launcher` and gives it its `Form` (what its runs are called and hold, how its
jobs end); the launcher takes a job from its Workload to a run (ServiceAccount and SCC admission, its Secret,
ConfigMaps and pods, the kubelet's admission of them on this machine, a `JobRunner`), re-adopts runs after a
restart, and stops them. Every kind's launcher shares one `JobContext`: the store, the machine's pools
(`kubelet/admission.py`), the job history and the Kueue controller's kick.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlparse

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CONFIGMAPS, LOCAL_QUEUES, PODS, SECRETS, SERVICE_ACCOUNTS, WORKLOADS
from mpijob.api.kueue import owners
from mpijob.api.kueue.adapters import DEFAULT_CLUSTER_QUEUE, DEFAULT_LOCAL_QUEUE, workload_name
from mpijob.api.kueue.owners import JobKind
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer import bounds, render
from mpijob.api.trainer.plan import PodPlan, RunPlan, generate_ssh_keypair
from mpijob.controllers import conditions as cond
from mpijob.controllers import events, scc
from mpijob.controllers.kubelet import gc
from mpijob.controllers.kubelet import pods as kubelet_pods
from mpijob.controllers.kubelet.admission import PodAdmission
from mpijob.controllers.kubelet.sandbox import JobFiles, job_user
from mpijob.controllers.kueue.workloads import render_workload
from mpijob.controllers.trainer import binding
from mpijob.controllers.trainer.accounting import Accounting
from mpijob.controllers.trainer.runner import JobRunner
from mpijob.controllers.trainer.stops import Outcome, Stop, Then
from mpijob.controllers.trainer.watchdog import Kind, Verdict
from mpijob.store.home import Home
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store
from mpijob.store.users import identity

if TYPE_CHECKING:
    from mpijob.controllers.kueue.queueing import Queueing
    from mpijob.controllers.metrics import Metrics

log = logging.getLogger(__name__)
RESTARTED = ("the local cluster's control plane restarted while the job was running; "
             "its processes were stopped and it is not re-adopted")


@dataclass(frozen=True)
class JobContext:
    """What every kind's controller is given: one cluster's store, machine and Kueue controller."""

    store: Store
    logs: LogStore
    home: Home
    mode: SandboxMode
    cluster_id: str
    admission: PodAdmission  # the kubelet's pools and pod set-up, shared by every kind
    accounting: Accounting  # the job history (`mpijob history`), every kind's runs
    kick: Callable[[], None]  # asks the queueing controller for a scheduling cycle
    metrics: Metrics  # the server's registry (docs/metrics.md)
    queueing: Queueing  # Kueue's controller (run-time history, progress reports)


class Form(Protocol):
    """What one kind's controller tells its launcher: how its runs are called and hold, and how its jobs end."""

    kind: JobKind

    def plan(self, job: Obj) -> RunPlan: ...
    def pods(self, job: Obj) -> list[Obj]: ...
    def finish(self, job: Obj, outcome: Outcome) -> None: ...
    def bounds(self, job: Obj, plan: RunPlan) -> bounds.Bounds: ...
    def show_stalled(self, job: Obj, stalled: bool, reason: str, message: str) -> None: ...
    def watch_deadline(self, job: Obj, wl: Obj | None = None) -> None: ...
    def status_url(self, plan: RunPlan, server: tuple[str, int] | None) -> str: ...
    def secret_name(self, plan: RunPlan) -> str: ...
    def render_secret(self, plan: RunPlan, private_pem: str, public_line: str, owner: Obj) -> Obj: ...
    def render_config_maps(self, plan: RunPlan, owner: Obj) -> list[Obj]: ...
    def render_pod(self, plan: RunPlan, pod: PodPlan, owner: Obj, account: Obj, url: str) -> Obj: ...


def api_server(home: Home) -> tuple[str, int] | None:
    """The local server's address (host, port), from the kubeconfig it writes before its controllers
    start; None without one (no server, as in a controller's unit test)."""
    try:
        url = urlparse(json.loads(home.kubeconfig.read_text())["clusters"][0]["cluster"]["server"])
        return (url.hostname, url.port or 443) if url.hostname else None
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


@dataclass(frozen=True)
class Prepared:
    """A job ready to run once its Workload is admitted."""

    plan: RunPlan
    owner: Obj  # the ownerReference its objects carry
    workload: Obj | None

    def admitted(self) -> Obj | None:
        """Its Workload once Kueue admitted it; None while it waits."""
        return self.workload if self.workload is not None and cond.is_true(self.workload, names.ADMITTED) else None


class Launcher:
    def __init__(self, ctx: JobContext, form: Form) -> None:
        self.ctx, self.form = ctx, form
        self.store = ctx.store
        self.runners: dict[str, tuple[JobRunner, asyncio.Task[None]]] = {}  # uid → its run under way
        self._stop_tasks: set[asyncio.Task[None]] = set()  # held until done: the loop keeps only weak references

    def files(self, job: Obj) -> JobFiles:
        meta = job["metadata"]
        return JobFiles(self.ctx.home.job_dir(meta["namespace"], meta["name"], meta["uid"]), self.ctx.mode)

    # -- the steps every kind's reconcile takes --------------------------------------------------------

    def prepare(self, job: Obj, failed: str) -> Prepared | None:
        """A job that is not running: its run plan and its Workload (made if it has none). None when the job
        is gone since this event, or its plan cannot be made (then it failed, with reason `failed`)."""
        meta = job["metadata"]
        current = self.store.try_get(self.form.kind.resource, meta["namespace"], meta["name"])
        if current is None or current["metadata"]["uid"] != meta["uid"]:
            return None  # a late event of a job deleted since: nothing may be started for it
        try:
            plan = self.form.plan(job)
        except ApiError as e:
            self.form.finish(job, Outcome(False, failed, e.message))
            return None
        self.ctx.accounting.seen(job, plan)
        owner = render.owner_reference(job)
        return Prepared(plan, owner, self.sync_workload(job, plan, owner))

    def hold_suspended(self, job: Obj) -> None:
        """Its user suspended it: its Workload inactive (made now if it has none, as Kueue makes one for a job
        created suspended), a run under way stopped, and pods that waited for a Node deleted, as JobSet and
        MPI Operator delete a suspended job's pods."""
        try:
            plan: RunPlan | None = self.form.plan(job)
        except ApiError:
            plan = None  # its runtime is missing or unusable: it fails when it is resumed
        self.ctx.accounting.seen(job, plan)
        self.sync_workload(job, plan, render.owner_reference(job) if plan else None)
        uid = job["metadata"]["uid"]
        if uid in self.runners:
            self.stop_soon(uid, Stop.suspended())
        else:
            binding.unbind(self.store, self.form.pods(job))

    def launch(self, job: Obj, plan: RunPlan, owner: Obj, wl: Obj) -> None:
        """Start an admitted job's run: its ServiceAccounts and SCC admission checked, its Secret, ConfigMaps
        and pods created, the pods admitted on this machine and its runner started."""
        ctx, form, uid = self.ctx, self.form, job["metadata"]["uid"]
        accounts = self._service_accounts(job, plan)
        if accounts is None:
            return
        admitted = self._admit_pods(job, plan)
        if admitted is None:
            return
        plan = admitted
        private_pem, public_line = self._ensure_secret(plan, owner)
        server = api_server(ctx.home)
        url = form.status_url(plan, server)
        for config_map in form.render_config_maps(plan, owner):
            self.store.ensure(CONFIGMAPS, config_map)
        placed = binding.place(self.store, wl, {pod.name: form.render_pod(plan, pod, owner, accounts[pod.name], url)
                                                for pod in plan.pods})
        if placed is None:
            return  # a pod fits no Node: it waits Pending, and a change of the Node wakes the job again
        stored = placed
        events.record(self.store, job, "CreatedPods", f"Created {len(plan.pods)} pods for {plan.num_nodes} node(s): "
                      + ", ".join(p.name for p in plan.pods))
        files = self.files(job)
        failure = ctx.admission.mount_volumes(plan, files, stored)
        if failure is not None:
            form.finish(job, Outcome(False, names.REASON_FAILED_JOBS, failure))
            return
        ips, gpus, cores = ctx.admission.take(plan)
        launcher = next(p for p in plan.pods if p.is_launcher)
        files.write(plan, private_pem, public_line, ips, job_user(plan, launcher, ctx.mode))
        ctx.admission.write_service_accounts(files, plan, accounts, stored)
        crowded = ctx.admission.crowded(job, plan, cores)
        runner = JobRunner(self.store, ctx.logs, files, plan, ips, ctx.cluster_id, gpus, cores, crowded, server,
                           form.bounds(job, plan))
        runner.env.status_url = url
        runner.report = self._watched(job)
        runner.save()
        ctx.accounting.started(job, wl, plan)
        self.runners[uid] = (runner, asyncio.create_task(self._run(job, plan, runner, runner.run())))
        form.watch_deadline(job, wl)

    def adopt(self, job: Obj) -> bool:
        """Take over a run an earlier server of this cluster started, whose pods ran on under their
        supervisors (`kubelet/shim.py`); False when it left no record of one (`JobRunner.save`)."""
        runner = JobRunner.load(self.store, self.ctx.logs, self.files(job), self.ctx.cluster_id)
        if runner is None:
            return False
        self.ctx.admission.claim(runner.ips, runner.gpus, runner.cores)
        runner.report = self._watched(job)
        task = asyncio.create_task(self._run(job, runner.plan, runner, runner.resume(self._stopping(job))))
        self.runners[job["metadata"]["uid"]] = (runner, task)
        self.form.watch_deadline(job)
        events.record(self.store, job, names.REASON_CONTROL_PLANE_RESTARTED,
                      "the local cluster's control plane restarted; the job's pods ran on and were re-adopted")
        return True

    def recover(self) -> None:
        """After a restart: a job whose pods had started is re-adopted from its run record; without one it
        fails `ControlPlaneRestarted`, its pods still Pending or Running terminated (docs/restarts.md)."""
        kind = self.form.kind
        for job in self.store.list(kind.resource)[0]:
            if kind.end(job) is not None:
                continue
            meta = job["metadata"]
            started = self.form.pods(job)
            if not any((p.get("status") or {}).get("startTime") for p in started):
                continue  # never started: it starts normally
            if self.adopt(job):
                continue  # its pods ran on under their supervisors
            for p in started:
                if (p.get("status") or {}).get("phase") in ("Pending", "Running"):
                    kubelet_pods.set_terminated(self.store, meta["namespace"], p["metadata"]["name"],
                                                kubelet_pods.Exit(137, 9), names.REASON_CONTROL_PLANE_RESTARTED,
                                                RESTARTED)
            self.form.finish(self.store.get(kind.resource, meta["namespace"], meta["name"]),
                             Outcome(False, names.REASON_CONTROL_PLANE_RESTARTED, RESTARTED))

    # -- the run's objects -------------------------------------------------------------------------------

    def _service_accounts(self, job: Obj, plan: RunPlan) -> dict[str, Obj] | None:
        """pod name → its ServiceAccount; None, and the job failed, when one does not exist: kube's
        ServiceAccount admission refuses such a pod, so none of the job's pods could be created."""
        accounts = {}
        for pod in plan.pods:
            name = render.service_account_name(pod.pod_spec)
            account = self.store.try_get(SERVICE_ACCOUNTS, plan.namespace, name)
            if account is None:
                self.form.finish(job, Outcome(False, names.REASON_FAILED_JOBS, (
                    f"pod {pod.name} cannot be created: error looking up service account "
                    f'{plan.namespace}/{name}: serviceaccount "{name}" not found')))
                return None
            accounts[pod.name] = account
        return accounts

    def _admit_pods(self, job: Obj, plan: RunPlan) -> RunPlan | None:
        """The plan with the ids its pods run as, from OpenShift's SCC admission (`controllers/scc.py`),
        asked again for the job's creator since its runtime may have changed after the job was admitted;
        None, and the job failed with the refusal, when a pod may not run as it asks."""
        requester = (job["metadata"].get("annotations") or {}).get(names.ANNOTATION_REQUESTER)
        try:
            return scc.admit(self.store, plan, identity(self.ctx.home.tokens, requester) if requester else None)
        except ApiError as e:
            self.form.finish(job, Outcome(False, names.REASON_FAILED_JOBS, e.message))
            return None

    def _ensure_secret(self, plan: RunPlan, owner: Obj) -> tuple[str, str]:
        """The job's SSH key pair: made once, kept in the immutable Secret, reused after a restart."""
        secret = self.store.try_get(SECRETS, plan.namespace, self.form.secret_name(plan))
        if secret is None:
            private_pem, public_line = generate_ssh_keypair()
            self.store.create(SECRETS, self.form.render_secret(plan, private_pem, public_line, owner))
            return private_pem, public_line
        data = secret["data"]
        return (base64.b64decode(data[names.SSH_PRIVATE_KEY]).decode(),
                base64.b64decode(data[names.SSH_PUBLIC_KEY]).decode())

    def _watched(self, job: Obj) -> Callable[[Verdict, str], None]:
        """What the job shows of its watchdog's news: a stall (a Warning Event and the kind's way of showing
        it) and its end, and an mpirun that outlived its ranks and was stopped (a Warning Event)."""
        meta = job["metadata"]

        def report(verdict: Verdict, message: str) -> None:
            current = self.store.try_get(self.form.kind.resource, meta["namespace"], meta["name"])
            if current is None or current["metadata"]["uid"] != meta["uid"]:
                return
            if verdict.kind is Kind.STALLED:
                self.form.show_stalled(current, True, names.REASON_NO_PROGRESS, message)
                events.record(self.store, current, names.FAILURE_STALLED, message, warning=True)
            elif verdict.kind is Kind.RESUMED:
                self.form.show_stalled(current, False, names.REASON_PROGRESSING, message)
                events.record(self.store, current, names.REASON_PROGRESSING, message)
            elif verdict.kind is Kind.HUNG:
                events.record(self.store, current, names.REASON_LAUNCHER_HUNG, message, warning=True)

        return report

    # -- Kueue's Workload (api/kueue/owners.py says what differs between kinds) ------------------------------

    def sync_workload(self, job: Obj, plan: RunPlan | None = None, owner: Obj | None = None,
                      finished: bool = False) -> Obj | None:
        """Create the job's Workload, and keep `active`/`Finished` in step with the job."""
        store, meta, kind = self.store, job["metadata"], owners.of(job)
        wl = store.try_get(WORKLOADS, meta["namespace"], workload_name(job))
        if wl is None:
            if plan is None or owner is None or finished:
                return None
            if names.LABEL_QUEUE_NAME not in meta.get("labels", {}):  # its default LocalQueue is made on demand
                store.ensure(LOCAL_QUEUES, {
                    "metadata": {"name": DEFAULT_LOCAL_QUEUE, "namespace": meta["namespace"]},
                    "spec": {"clusterQueue": DEFAULT_CLUSTER_QUEUE}})
            wl = store.create(WORKLOADS, render_workload(store, job, plan, owner))
            events.record(store, job, names.KUEUE_CREATED_WORKLOAD,
                          f"Created Workload: {meta['namespace']}/{wl['metadata']['name']}")
            self.ctx.kick()
            return wl
        if finished:
            if not cond.is_true(wl, names.FINISHED):
                end = kind.end(job) or {}
                failed = end.get("type") == names.FAILED
                reason = "Failed" if failed else "Succeeded"
                message = end.get("message", "")
                cond.set_condition(wl, names.FINISHED, True, reason, message or f"Job finished: {reason.lower()}")
                store.update(WORKLOADS, wl, status=True)
                self.ctx.kick()
            return wl
        active = not kind.suspended(job)
        if wl.get("spec", {}).get("active", True) != active:
            wl["spec"]["active"] = active
            if not active:
                wl.setdefault("status", {}).pop("admission", None)
                for held in (names.QUOTA_RESERVED, names.ADMITTED):
                    cond.set_condition(wl, held, False, "Inactive",
                                       f"The workload is deactivated ({kind.kind} suspended)")
                store.update(WORKLOADS, wl, status=True)
                wl = store.get(WORKLOADS, meta["namespace"], wl["metadata"]["name"])
                wl["spec"]["active"] = False
            wl = store.update(WORKLOADS, wl)
            self.ctx.kick()
        return wl

    # -- stopping and ending a run ---------------------------------------------------------------------

    async def evict(self, job: Obj, message: str) -> None:
        """Kueue evicted the job's Workload: stop the job as a whole and delete its pods; it runs again once
        re-admitted. Its pods say why in Kueue's words (`_evicted`)."""
        meta = job["metadata"]
        if meta["uid"] not in self.runners:  # its pods waited for a Node: they go, as when it runs
            binding.unbind(self.store, self.form.pods(job))
        await self.stop(meta["uid"], _evicted(self.store.try_get(WORKLOADS, meta["namespace"], workload_name(job)),
                                              message))

    async def deleted(self, job: Obj) -> None:
        """The job was deleted: its run stopped, its objects and files gone; its record stays in the history."""
        uid = job["metadata"]["uid"]
        await self.stop(uid, Stop.deleted())
        self.ctx.accounting.deleted(job)
        gc.cascade(self.store, self.ctx.logs, uid)
        gc.remove_tree(self.files(job).root)

    def _stopping(self, job: Obj) -> Stop | None:
        """The stop a run was under when the last server died, read back from what it had stored: its job
        suspended, or its Workload no longer admitted (Kueue evicted it). Such a run is torn down and its
        job requeued, not re-adopted as running, nor failed for the pods its teardown had stopped."""
        if owners.of(job).suspended(job):
            return Stop.suspended()
        meta = job["metadata"]
        wl = self.store.try_get(WORKLOADS, meta["namespace"], workload_name(job))
        if wl is None or cond.is_true(wl, names.ADMITTED):
            return None
        return _evicted(wl, (cond.get(wl, names.EVICTED) or {}).get("message", "the job's Workload was evicted"))

    async def _run(self, job: Obj, plan: RunPlan, runner: JobRunner, running: Awaitable[Outcome]) -> None:
        """Await the run (`runner.run()`, or `resume()` after a restart), free what it held, end the job."""
        uid = job["metadata"]["uid"]
        try:
            outcome = await running
        except Exception as e:  # a bug must still end the job truthfully
            log.exception("job %s/%s crashed", plan.namespace, plan.job)
            await runner.teardown(Outcome(False, names.REASON_FAILED_JOBS, f"internal error: {e}"))
            outcome = Outcome(False, names.REASON_FAILED_JOBS, f"the local cluster failed to run the job: {e}")
        finally:
            self.ctx.admission.release(runner.ips, runner.gpus, runner.cores)
            self.runners.pop(uid, None)
        self.ctx.accounting.run_ended(uid, runner)
        then = runner.stopped.then if runner.stopped else Then.FAIL
        if then is Then.FORGET:  # deleted: its pods go with it (gc.cascade)
            return
        if then is Then.REQUEUE:  # as JobSet deletes a suspended job's pods; new ones come with the next run
            for pod in plan.pods:
                if self.store.try_get(PODS, plan.namespace, pod.name) is not None:
                    self.store.delete(PODS, plan.namespace, pod.name)
            return
        current = self.store.try_get(self.form.kind.resource, plan.namespace, plan.job)
        if current is not None and current["metadata"]["uid"] == uid:
            self.form.finish(current, outcome)

    def stop_soon(self, uid: str, why: Stop) -> None:
        """`stop` without waiting for it (a reconcile must not wait for a job's pods to go)."""
        task = asyncio.create_task(self.stop(uid, why))
        self._stop_tasks.add(task)
        task.add_done_callback(self._stop_tasks.discard)

    async def stop(self, uid: str, why: Stop) -> None:
        """Stop a running job for `why` (deleted, suspended, evicted, the server stopping) and wait until its
        run is torn down."""
        entry = self.runners.get(uid)
        if entry:
            runner, task = entry
            runner.stop(why)
            await asyncio.gather(task, return_exceptions=True)


def _evicted(wl: Obj | None, message: str) -> Stop:
    """The stop of a job whose Workload Kueue evicted, in the words of its `Evicted` condition's reason
    (Preempted, ClusterQueueStopped, ...), which Kueue's job reconciler also reads to stop a job."""
    evicted = cond.get(wl, names.EVICTED) if wl else None
    return Stop.evicted((evicted.get("reason") if evicted and evicted.get("status") == "True" else None)
                        or names.EVICTED, message)
