"""The TrainJob controller: runtime → run plan → Secret, hostfile ConfigMap, pods → a JobRunner; and the
job's status (conditions, jobsStatus) mirrored from what its pods do."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlparse

from mpijob.api import Obj, bounds, names, render, tokens, volumes
from mpijob.api.errors import ApiError
from mpijob.api.kueue import owners
from mpijob.api.kueue.adapters import DEFAULT_CLUSTER_QUEUE, DEFAULT_LOCAL_QUEUE, workload_name
from mpijob.api.plan import PodPlan, RunPlan, generate_ssh_keypair, gpu_count, resolve
from mpijob.api.quantity import parse_quantity
from mpijob.api.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    CONFIGMAPS,
    LOCAL_QUEUES,
    PODS,
    SECRETS,
    SERVICE_ACCOUNTS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    WORKLOADS,
    Resource,
)
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.selectors import parse_labels
from mpijob.controllers import conditions as cond
from mpijob.controllers import events, scc
from mpijob.controllers.kubelet import trainer_status
from mpijob.controllers.kubelet import volumes as kubelet_volumes
from mpijob.controllers.kubelet.addresses import AddressPool, CorePool, DevicePool, crowding
from mpijob.controllers.kubelet.sandbox import (
    SSH_PORT,
    YIELD_WHEN_IDLE,
    JobFiles,
    ServiceAccountFiles,
    job_user,
)
from mpijob.controllers.kueue.workloads import render_workload
from mpijob.controllers.quota import limit_ranges, with_limit_ranges
from mpijob.controllers.trainer import binding, deadline
from mpijob.controllers.trainer.accounting import Accounting
from mpijob.controllers.trainer.runner import JobRunner, ready_default
from mpijob.controllers.trainer.stops import Outcome, Stop, Then
from mpijob.controllers.trainer.watchdog import Kind, Verdict
from mpijob.store import audit
from mpijob.store.home import Home
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store
from mpijob.store.users import identity

log = logging.getLogger(__name__)


def whole_cpus(resources: dict) -> int:
    """CPUs a pod asks for, when a whole number (requests, else limits); 0 otherwise."""
    value = (resources.get("requests") or {}).get("cpu") or (resources.get("limits") or {}).get("cpu")
    if value is None:
        return 0
    amount = parse_quantity(value)
    return int(amount) if amount == int(amount) else 0


def api_server(home: Home) -> tuple[str, int] | None:
    """The local server's address (host, port), from the kubeconfig it writes before its controllers
    start; None without one (no server, as in a controller's unit test)."""
    try:
        url = urlparse(json.loads(home.kubeconfig.read_text())["clusters"][0]["cluster"]["server"])
        return (url.hostname, url.port or 443) if url.hostname else None
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def job_pods(store: Store, namespace: str, job: str) -> list[Obj]:
    pods, _ = store.list(PODS, namespace, parse_labels(f"{names.LABEL_JOBSET_NAME}={job}"))
    return pods


class TrainJobController:
    resource: Resource = TRAINJOBS  # the kind of job it runs

    def __init__(
        self, store: Store, logs: LogStore, home: Home, mode: SandboxMode, cluster_id: str, gpus: int = 0,
        kick: Callable[[], None] = lambda: None, on_finish: Callable[[Obj], None] = lambda tj: None,
    ) -> None:
        self.store, self.logs, self.home, self.mode, self.cluster_id = store, logs, home, mode, cluster_id
        self.on_finish = on_finish  # told of every TrainJob that has just ended (its metrics)
        self.addresses = AddressPool(cluster_id, own_networks=mode == SandboxMode.NAMESPACE)
        self.devices = DevicePool(gpus)
        self.cores = CorePool()
        self.kick = kick  # asks the queueing controller for a scheduling cycle
        self.accounting = Accounting(home.history)  # the job history (`mpijob history`)
        self.runners: dict[str, tuple[JobRunner, asyncio.Task[None]]] = {}
        self._stop_tasks: set[asyncio.Task[None]] = set()  # held until done: the loop keeps only weak references
        self.deadlines: dict[str, asyncio.TimerHandle] = {}  # uid → the check at its activeDeadlineSeconds

    def files(self, tj: Obj) -> JobFiles:
        meta = tj["metadata"]
        return JobFiles(self.home.job_dir(meta["namespace"], meta["name"], meta["uid"]), self.mode)

    # -- reconcile -----------------------------------------------------------------------------

    def reconcile(self, tj: Obj) -> None:
        """Suspend/resume, then Kueue's gate: no pod exists before the job's Workload is admitted."""
        uid = tj["metadata"]["uid"]
        if cond.finished(tj):
            self._sync_workload(tj, finished=True)
            return
        if tj.get("spec", {}).get("suspend"):
            if cond.set_condition(tj, names.SUSPENDED, True, names.REASON_SUSPENDED, "TrainJob is suspended"):
                tj = self.store.update(TRAINJOBS, tj, status=True)
            try:  # created suspended, it still gets its (inactive) Workload, as under Kueue
                plan: RunPlan | None = self._plan(tj)
            except ApiError:
                plan = None  # its runtime is missing or unusable: it fails when it is resumed
            self.accounting.seen(tj, plan)
            self._sync_workload(tj, plan, render.owner_reference(tj) if plan else None)
            if uid in self.runners:
                self.stop_soon(uid, Stop.suspended())
            else:  # pods that waited for a Node go, as JobSet deletes a suspended job's pods
                binding.unbind(self.store, self._pods(tj))
            return
        if cond.is_true(tj, names.SUSPENDED):
            cond.set_condition(tj, names.SUSPENDED, False, names.REASON_RESUMED, "TrainJob is resumed")
            tj = self.store.update(TRAINJOBS, tj, status=True)
        if uid in self.runners:
            self._watch_deadline(tj)
            return
        current = self.store.try_get(TRAINJOBS, tj["metadata"]["namespace"], tj["metadata"]["name"])
        if current is None or current["metadata"]["uid"] != uid:
            return  # a late event of a TrainJob deleted since: nothing may be started for it
        try:
            plan = self._plan(tj)
        except ApiError as e:
            self.finish(tj, Outcome(False, names.REASON_RUNTIME_NOT_SUPPORTED, e.message))
            return
        self.accounting.seen(tj, plan)
        owner = render.owner_reference(tj)
        wl = self._sync_workload(tj, plan, owner)
        if wl is None or not cond.is_true(wl, names.ADMITTED):
            return
        self.launch(tj, plan, owner, wl)

    def launch(self, tj: Obj, plan: RunPlan, owner: Obj, wl: Obj) -> None:
        """Start an admitted job's run: its ServiceAccounts and SCC admission checked, its Secret, ConfigMaps
        and pods created, its files written and its runner started (also how `controllers/mpioperator` runs
        an MPIJob, through the hooks below)."""
        uid = tj["metadata"]["uid"]
        accounts = self._service_accounts(tj, plan)
        if accounts is None:
            return
        admitted = self._admit_pods(tj, plan)
        if admitted is None:
            return
        plan = admitted
        private_pem, public_line = self._ensure_secret(plan, owner)
        server = api_server(self.home)
        url = self._status_url(plan, server)
        for config_map in self._render_config_maps(plan, owner):
            self.store.ensure(CONFIGMAPS, config_map)
        placed = binding.place(self.store, wl, {pod.name: self._render_pod(plan, pod, owner, accounts[pod.name], url)
                                                for pod in plan.pods})
        if placed is None:
            return  # a pod fits no Node: it waits Pending, and a change of the Node wakes the job again
        stored = placed
        events.record(self.store, tj, "CreatedPods", f"Created {len(plan.pods)} pods for {plan.num_nodes} node(s): "
                      + ", ".join(p.name for p in plan.pods))
        files = self.files(tj)
        if not self._mount_volumes(tj, plan, files, stored):
            return
        ips = {p.hostname: self.addresses.take(SSH_PORT) for p in plan.pods}
        gpus = {p.name: self.devices.take(gpu_count(p.resources)) for p in plan.pods}
        cores = {p.name: self.cores.take(whole_cpus(p.resources)) for p in plan.pods}
        launcher = next(p for p in plan.pods if p.is_launcher)
        files.write(plan, private_pem, public_line, ips, job_user(plan, launcher, self.mode))
        self._write_service_accounts(files, plan, accounts, stored)
        crowded = self._crowded(tj, plan, cores)
        runner = JobRunner(self.store, self.logs, files, plan, ips, self.cluster_id, gpus, cores, crowded, server,
                           self._bounds(tj, plan))
        runner.env.status_url = url
        runner.report = self._watched(tj)
        runner.save()
        self.accounting.started(tj, wl, plan)
        self.runners[uid] = (runner, asyncio.create_task(self._run(tj, plan, runner, runner.run())))
        self._watch_deadline(tj, wl)

    def adopt(self, tj: Obj) -> bool:
        """Take over a run an earlier server of this cluster started, whose pods ran on under their
        supervisors (`kubelet/shim.py`); False when it left no record of one (`JobRunner.save`)."""
        runner = JobRunner.load(self.store, self.logs, self.files(tj), self.cluster_id)
        if runner is None:
            return False
        self.addresses.claim(list(runner.ips.values()))
        self.devices.claim([d for ds in runner.gpus.values() for d in ds])
        self.cores.claim([c for cs in runner.cores.values() for c in cs])
        runner.report = self._watched(tj)
        task = asyncio.create_task(self._run(tj, runner.plan, runner, runner.resume(self._stopping(tj))))
        self.runners[tj["metadata"]["uid"]] = (runner, task)
        self._watch_deadline(tj)
        events.record(self.store, tj, names.REASON_CONTROL_PLANE_RESTARTED,
                      "the local cluster's control plane restarted; the job's pods ran on and were re-adopted")
        return True

    # -- bounds and stalls (api/bounds.py, trainer/watchdog.py) --------------------------------------------

    def _bounds(self, tj: Obj, plan: RunPlan) -> bounds.Bounds:
        """The run's deadlines and stall watch: the job's annotations, else its runtime's, else the defaults."""
        try:
            runtime_annotations = (self._runtime(tj).get("metadata") or {}).get("annotations")
        except ApiError:
            runtime_annotations = None
        hosts = sum(1 for p in plan.pods if p.in_hostfile)
        return bounds.resolve(tj["metadata"].get("annotations"), runtime_annotations, hosts, ready_default())

    def _watched(self, tj: Obj) -> Callable[[Verdict, str], None]:
        """What the job shows of its watchdog's news: a stall (a Warning Event and the `Stalled` condition)
        and its end, and an mpirun that outlived its ranks and was stopped (a Warning Event)."""
        meta = tj["metadata"]

        def report(verdict: Verdict, message: str) -> None:
            job = self.store.try_get(self.resource, meta["namespace"], meta["name"])
            if job is None or job["metadata"]["uid"] != meta["uid"]:
                return
            if verdict.kind is Kind.STALLED:
                self._show_stalled(job, True, names.REASON_NO_PROGRESS, message)
                events.record(self.store, job, names.FAILURE_STALLED, message, warning=True)
            elif verdict.kind is Kind.RESUMED:
                self._show_stalled(job, False, names.REASON_PROGRESSING, message)
                events.record(self.store, job, names.REASON_PROGRESSING, message)
            elif verdict.kind is Kind.HUNG:
                events.record(self.store, job, names.REASON_LAUNCHER_HUNG, message, warning=True)

        return report

    def _show_stalled(self, job: Obj, stalled: bool, reason: str, message: str) -> None:
        """The job's `Stalled` condition (a TrainJob's; an MPIJob keeps MPI Operator's conditions)."""
        if (stalled or cond.get(job, names.FAILURE_STALLED)) and cond.set_condition(
                job, names.FAILURE_STALLED, stalled, reason, message):
            self.store.update(TRAINJOBS, job, status=True)

    # -- what a run's objects are called and hold (overridden for MPIJobs) ------------------------------

    def _status_url(self, plan: RunPlan, server: tuple[str, int] | None) -> str:
        """Where the job's pods report progress (Trainer's status endpoint); "" for none."""
        return trainer_status.status_url(trainer_status.api_address(self.mode, server), plan)

    def _secret_name(self, plan: RunPlan) -> str:
        return names.ssh_secret_name(plan.job)

    def _render_secret(self, plan: RunPlan, private_pem: str, public_line: str, owner: Obj) -> Obj:
        return render.render_secret(plan, private_pem, public_line, owner)

    def _render_config_maps(self, plan: RunPlan, owner: Obj) -> list[Obj]:
        """The hostfile ConfigMap, and the status server's CA for the pods' progress reports."""
        return [render.render_hostfile_configmap(plan, owner),
                render.render_tls_configmap(plan, owner, self.home.ca_pem())]

    def _render_pod(self, plan: RunPlan, pod: PodPlan, owner: Obj, account: Obj, url: str) -> Obj:
        return render.render_pod(plan, pod, owner, account, url)

    def _service_accounts(self, tj: Obj, plan: RunPlan) -> dict[str, Obj] | None:
        """pod name → its ServiceAccount; None, and the job failed, when one does not exist: kube's
        ServiceAccount admission refuses such a pod, so none of the job's pods could be created."""
        accounts = {}
        for pod in plan.pods:
            name = render.service_account_name(pod.pod_spec)
            account = self.store.try_get(SERVICE_ACCOUNTS, plan.namespace, name)
            if account is None:
                self.finish(tj, Outcome(False, names.REASON_FAILED_JOBS, (
                    f"pod {pod.name} cannot be created: error looking up service account "
                    f'{plan.namespace}/{name}: serviceaccount "{name}" not found')))
                return None
            accounts[pod.name] = account
        return accounts

    def _admit_pods(self, tj: Obj, plan: RunPlan) -> RunPlan | None:
        """The plan with the ids its pods run as, from OpenShift's SCC admission (`controllers/scc.py`),
        asked again for the job's creator since its runtime may have changed after the TrainJob was
        admitted; None, and the job failed with the refusal, when a pod may not run as it asks."""
        requester = (tj["metadata"].get("annotations") or {}).get(names.ANNOTATION_REQUESTER)
        try:
            return scc.admit(self.store, plan, identity(self.home.tokens, requester) if requester else None)
        except ApiError as e:
            self.finish(tj, Outcome(False, names.REASON_FAILED_JOBS, e.message))
            return None

    def _write_service_accounts(self, files: JobFiles, plan: RunPlan, accounts: dict[str, Obj],
                                stored: dict[str, Obj]) -> None:
        """As the kubelet fills each pod's projected volumes: its ServiceAccount's (a token bound to the stored
        pod, its namespace and the cluster CA; nothing for a pod that does not automount its token), and
        Trainer's status volume (the same account's token for the job's audience, and the CA)."""
        key, ca = self.home.service_account_key(), self.home.ca_pem().encode()
        audience = names.trainjob_status_audience(plan.namespace, plan.job)
        for pod in plan.pods:
            account, obj = accounts[pod.name], stored[pod.name]
            mounted = render.automounts(obj.get("spec") or {}, account)
            wanted = ServiceAccountFiles(tokens.for_pod(key, account, obj), plan.namespace, ca) if mounted else None
            user = job_user(plan, pod, self.mode)
            files.write_service_account(pod, user, wanted)
            status_token = tokens.for_pod(key, account, obj, audience=audience)  # Trainer's projected token
            files.write_trainer_status(pod, user, status_token, ca)

    def _mount_volumes(self, tj: Obj, plan: RunPlan, files: JobFiles, stored: dict[str, Obj]) -> bool:
        """Set up each pod's volumes as the kubelet would (`kubelet/volumes.py`) and give the sandbox their
        mounts; False, and the job failed in the kubelet's words, when one cannot be (docs/volumes.md)."""
        asking = [p for p in plan.pods if volumes.has_volumes(p.pod_spec)]
        if asking and self.mode != SandboxMode.NAMESPACE:
            self.finish(tj, Outcome(False, names.REASON_FAILED_JOBS, volumes.PROCESS_SANDBOX))
            return False
        for pod in asking:
            try:
                files.volume_mounts[pod.name] = kubelet_volumes.setup(
                    self.store, self.home, files, pod, stored[pod.name], job_user(plan, pod, self.mode))
            except kubelet_volumes.MountFailed as e:
                events.record(self.store, stored[pod.name], names.REASON_FAILED_MOUNT, str(e), warning=True,
                              component=kubelet_volumes.COMPONENT)
                self.finish(tj, Outcome(False, names.REASON_FAILED_JOBS, f"pod {pod.name} cannot start: {e}"))
                return False
        return True

    def _crowded(self, tj: Obj, plan: RunPlan, cores: dict[str, list[int]]) -> bool:
        """Whether the job's ranks outnumber their cores, so they must yield when idle (said in an Event;
        the user's own setting in trainer.env wins)."""
        found = crowding(plan.slots, [cores[p.name] for p in plan.pods if p.in_hostfile])
        if found is None:
            return False
        ranks, count = found
        own = next((e.get("value") for e in plan.user_env if e.get("name") == YIELD_WHEN_IDLE), None)
        choice = (f"trainer.env sets {YIELD_WHEN_IDLE}={own}, which wins" if own is not None else
                  f"ranks yield the CPU while they wait ({YIELD_WHEN_IDLE}=1; set it in trainer.env to choose)")
        events.record(self.store, tj, "Oversubscribed", f"{ranks} MPI ranks share {count} CPU core(s): {choice}")
        return own is None

    def _watch_deadline(self, tj: Obj, wl: Obj | None = None) -> None:
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
            self._watch_deadline(tj)

    def _pods(self, tj: Obj) -> list[Obj]:
        """The job's pods, by the labels its kind gives them."""
        return job_pods(self.store, tj["metadata"]["namespace"], tj["metadata"]["name"])

    def _sync_workload(self, tj: Obj, plan: RunPlan | None = None, owner: Obj | None = None,
                       finished: bool = False) -> Obj | None:
        """Create the job's Workload (a TrainJob's, or an MPIJob's: `api/kueue/owners.py` says what differs),
        and keep `active`/`Finished` in step with the job."""
        meta, kind = tj["metadata"], owners.of(tj)
        wl = self.store.try_get(WORKLOADS, meta["namespace"], workload_name(tj))
        if wl is None:
            if plan is None or owner is None or finished:
                return None
            if names.LABEL_QUEUE_NAME not in meta.get("labels", {}):  # its default LocalQueue is made on demand
                self.store.ensure(LOCAL_QUEUES, {
                    "metadata": {"name": DEFAULT_LOCAL_QUEUE, "namespace": meta["namespace"]},
                    "spec": {"clusterQueue": DEFAULT_CLUSTER_QUEUE}})
            wl = self.store.create(WORKLOADS, render_workload(self.store, tj, plan, owner))
            events.record(self.store, tj, names.KUEUE_CREATED_WORKLOAD,
                          f"Created Workload: {meta['namespace']}/{wl['metadata']['name']}")
            self.kick()
            return wl
        if finished:
            if not cond.is_true(wl, names.FINISHED):
                end = kind.end(tj) or {}
                failed = end.get("type") == names.FAILED
                reason = "Failed" if failed else "Succeeded"
                message = end.get("message", "")
                cond.set_condition(wl, names.FINISHED, True, reason, message or f"Job finished: {reason.lower()}")
                self.store.update(WORKLOADS, wl, status=True)
                self.kick()
            return wl
        active = not kind.suspended(tj)
        if wl.get("spec", {}).get("active", True) != active:
            wl["spec"]["active"] = active
            if not active:
                wl.setdefault("status", {}).pop("admission", None)
                for held in (names.QUOTA_RESERVED, names.ADMITTED):
                    cond.set_condition(wl, held, False, "Inactive",
                                       f"The workload is deactivated ({kind.kind} suspended)")
                self.store.update(WORKLOADS, wl, status=True)
                wl = self.store.get(WORKLOADS, meta["namespace"], wl["metadata"]["name"])
                wl["spec"]["active"] = False
            wl = self.store.update(WORKLOADS, wl)
            self.kick()
        return wl

    async def evict(self, tj: Obj, message: str) -> None:
        """Kueue evicted the job's Workload: stop the job as a whole and delete its pods; it runs again once
        re-admitted. Its pods say why in Kueue's words (`_evicted`)."""
        meta = tj["metadata"]
        if meta["uid"] not in self.runners:  # its pods waited for a Node: they go, as when it runs
            binding.unbind(self.store, self._pods(tj))
        await self.stop(meta["uid"], _evicted(self.store.try_get(WORKLOADS, meta["namespace"], workload_name(tj)),
                                              message))

    def _stopping(self, tj: Obj) -> Stop | None:
        """The stop a run was under when the last server died, read back from what it had stored: its job
        suspended, or its Workload no longer admitted (Kueue evicted it). Such a run is torn down and its
        job requeued, not re-adopted as running, nor failed for the pods its teardown had stopped."""
        if owners.of(tj).suspended(tj):
            return Stop.suspended()
        meta = tj["metadata"]
        wl = self.store.try_get(WORKLOADS, meta["namespace"], workload_name(tj))
        if wl is None or cond.is_true(wl, names.ADMITTED):
            return None
        return _evicted(wl, (cond.get(wl, names.EVICTED) or {}).get("message", "the job's Workload was evicted"))

    def _plan(self, tj: Obj) -> RunPlan:
        """What the job runs, its containers' resources defaulted by the namespace's LimitRanges."""
        return with_limit_ranges(resolve(tj, self._runtime(tj)), limit_ranges(self.store, tj["metadata"]["namespace"]))

    def _runtime(self, tj: Obj) -> Obj:
        ref = tj["spec"]["runtimeRef"]
        if ref.get("kind", "ClusterTrainingRuntime") == "TrainingRuntime":
            return self.store.get(TRAINING_RUNTIMES, tj["metadata"]["namespace"], ref["name"])
        return self.store.get(CLUSTER_TRAINING_RUNTIMES, "", ref["name"])

    def _ensure_secret(self, plan: RunPlan, owner: Obj) -> tuple[str, str]:
        """The job's SSH key pair: made once, kept in the immutable Secret, reused after a restart."""
        secret = self.store.try_get(SECRETS, plan.namespace, self._secret_name(plan))
        if secret is None:
            private_pem, public_line = generate_ssh_keypair()
            self.store.create(SECRETS, self._render_secret(plan, private_pem, public_line, owner))
            return private_pem, public_line
        data = secret["data"]
        return (base64.b64decode(data[names.SSH_PRIVATE_KEY]).decode(),
                base64.b64decode(data[names.SSH_PUBLIC_KEY]).decode())

    async def _run(self, tj: Obj, plan: RunPlan, runner: JobRunner, running: Awaitable[Outcome]) -> None:
        """Await the run (`runner.run()`, or `resume()` after a restart), free what it held, end the job."""
        uid = tj["metadata"]["uid"]
        try:
            outcome = await running
        except Exception as e:  # a bug must still end the job truthfully
            log.exception("job %s/%s crashed", plan.namespace, plan.job)
            await runner.teardown(Outcome(False, names.REASON_FAILED_JOBS, f"internal error: {e}"))
            outcome = Outcome(False, names.REASON_FAILED_JOBS, f"the local cluster failed to run the job: {e}")
        finally:
            self.addresses.release(list(runner.ips.values()))
            self.devices.release([d for ds in runner.gpus.values() for d in ds])
            self.cores.release([c for cs in runner.cores.values() for c in cs])
            self.runners.pop(uid, None)
        self.accounting.run_ended(uid, runner)
        then = runner.stopped.then if runner.stopped else Then.FAIL
        if then is Then.FORGET:  # deleted: its pods go with it (gc.cascade)
            return
        if then is Then.REQUEUE:  # as JobSet deletes a suspended job's pods; new ones come with the next run
            for pod in plan.pods:
                if self.store.try_get(PODS, plan.namespace, pod.name) is not None:
                    self.store.delete(PODS, plan.namespace, pod.name)
            return
        current = self.store.try_get(self.resource, plan.namespace, plan.job)
        if current is not None and current["metadata"]["uid"] == uid:
            self.finish(current, outcome)

    def finish(self, tj: Obj, outcome: Outcome) -> None:
        kind = names.COMPLETE if outcome.succeeded else names.FAILED
        cond.set_condition(tj, kind, True, outcome.reason, outcome.message)
        self._mirror(tj)
        tj = self.store.update(TRAINJOBS, tj, status=True)
        audit.open_log(self.home.audit_log).write(audit.trainjob_finished(tj, kind, outcome.reason))
        self._sync_workload(tj, finished=True)
        self.on_finish(tj)
        self.accounting.finished(tj, outcome)
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
        """Keep the owning TrainJob's jobsStatus in step with its pods."""
        job = pod["metadata"].get("labels", {}).get(names.LABEL_JOBSET_NAME)
        tj = self.store.try_get(TRAINJOBS, pod["metadata"]["namespace"], job) if job else None
        if tj is None or cond.finished(tj):
            return
        before = tj.get("status", {}).get("jobsStatus")
        self._mirror(tj)
        if tj["status"]["jobsStatus"] != before:
            self.store.update(TRAINJOBS, tj, status=True)

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
