"""The TrainJob controller: runtime → run plan → Secret, hostfile ConfigMap, pods → a JobRunner; and the
job's status (conditions, jobsStatus) mirrored from what its pods do."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

from mpijob.api import render
from mpijob.api.errors import ApiError
from mpijob.api.plan import RunPlan, generate_ssh_keypair, resolve
from mpijob.api.resources import CLUSTER_TRAINING_RUNTIMES, CONFIGMAPS, PODS, SECRETS, TRAINING_RUNTIMES, TRAINJOBS
from mpijob.api.selectors import parse_labels
from mpijob.controllers import conditions as cond
from mpijob.controllers import events
from mpijob.controllers.addresses import AddressPool
from mpijob.controllers.runner import JobRunner, Outcome
from mpijob.controllers.sandbox import SSH_PORT, JobFiles, job_user
from mpijob.store.home import Home
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
Obj = dict[str, Any]


def job_pods(store: Store, namespace: str, job: str) -> list[Obj]:
    pods, _ = store.list(PODS, namespace, parse_labels(f"{cond.JOB_SET_LABEL}={job}"))
    return pods


class TrainJobController:
    def __init__(self, store: Store, logs: LogStore, home: Home, mode: str, cluster_id: str) -> None:
        self.store, self.logs, self.home, self.mode, self.cluster_id = store, logs, home, mode, cluster_id
        self.addresses = AddressPool(cluster_id)
        self.runners: dict[str, tuple[JobRunner, asyncio.Task[None]]] = {}

    def files(self, tj: Obj) -> JobFiles:
        meta = tj["metadata"]
        return JobFiles(self.home.jobs / f"{meta['namespace']}_{meta['name']}_{meta['uid'][:8]}", self.mode)

    # -- reconcile -----------------------------------------------------------------------------

    def reconcile(self, tj: Obj) -> None:
        uid = tj["metadata"]["uid"]
        if uid in self.runners or cond.finished(tj):
            return
        if tj.get("spec", {}).get("suspend"):
            if cond.set_condition(tj, cond.SUSPENDED, True, "Suspended", "TrainJob is suspended"):
                self.store.update(TRAINJOBS, tj, status=True)
            return
        if cond.is_true(tj, cond.SUSPENDED):
            cond.set_condition(tj, cond.SUSPENDED, False, "Resumed", "TrainJob is resumed")
            tj = self.store.update(TRAINJOBS, tj, status=True)
        try:
            plan = resolve(tj, self._runtime(tj))
        except ApiError as e:
            self.finish(tj, Outcome(False, "TrainingRuntimeNotSupported", e.message))
            return
        private_pem, public_line = self._ensure_secret(tj, plan)
        owner = render.owner_reference(tj)
        if self.store.try_get(CONFIGMAPS, plan.namespace, f"{plan.job}-mpi-hostfile") is None:
            self.store.create(CONFIGMAPS, render.render_hostfile_configmap(plan, owner))
        for pod in plan.pods:
            if self.store.try_get(PODS, plan.namespace, pod.name) is None:
                self.store.create(PODS, render.render_pod(plan, pod, owner))
        events.record(self.store, tj, "CreatedPods", f"Created {len(plan.pods)} pods for {plan.num_nodes} node(s): "
                      + ", ".join(p.name for p in plan.pods))
        files = self.files(tj)
        ips = {p.hostname: self.addresses.take(SSH_PORT) for p in plan.pods}
        launcher = next(p for p in plan.pods if p.is_launcher)
        files.write(plan, private_pem, public_line, ips, job_user(plan, launcher, self.mode))
        runner = JobRunner(self.store, self.logs, files, plan, ips, self.cluster_id)
        self.runners[uid] = (runner, asyncio.create_task(self._run(tj, plan, runner)))

    def _runtime(self, tj: Obj) -> Obj:
        ref = tj["spec"]["runtimeRef"]
        if ref.get("kind", "ClusterTrainingRuntime") == "TrainingRuntime":
            return self.store.get(TRAINING_RUNTIMES, tj["metadata"]["namespace"], ref["name"])
        return self.store.get(CLUSTER_TRAINING_RUNTIMES, "", ref["name"])

    def _ensure_secret(self, tj: Obj, plan: RunPlan) -> tuple[str, str]:
        """The job's SSH key pair: made once, kept in the immutable Secret, reused after a restart."""
        name = f"{plan.job}-mpi-ssh-auth"
        secret = self.store.try_get(SECRETS, plan.namespace, name)
        if secret is None:
            private_pem, public_line = generate_ssh_keypair()
            self.store.create(SECRETS, render.render_secret(plan, private_pem, public_line, render.owner_reference(tj)))
            return private_pem, public_line
        data = secret["data"]
        return base64.b64decode(data["ssh-privatekey"]).decode(), base64.b64decode(data["ssh-publickey"]).decode()

    async def _run(self, tj: Obj, plan: RunPlan, runner: JobRunner) -> None:
        uid = tj["metadata"]["uid"]
        try:
            outcome = await runner.run()
        except Exception as e:  # a bug must still end the job truthfully
            log.exception("job %s/%s crashed", plan.namespace, plan.job)
            await runner.teardown(Outcome(False, "FailedJobs", f"internal error: {e}"))
            outcome = Outcome(False, "FailedJobs", f"the local cluster failed to run the job: {e}")
        finally:
            self.addresses.release(list(runner.ips.values()))
            self.runners.pop(uid, None)
        current = self.store.try_get(TRAINJOBS, plan.namespace, plan.job)
        if current is not None and current["metadata"]["uid"] == uid:
            self.finish(current, outcome)

    def finish(self, tj: Obj, outcome: Outcome) -> None:
        kind = cond.COMPLETE if outcome.succeeded else cond.FAILED
        cond.set_condition(tj, kind, True, outcome.reason, outcome.message)
        self._mirror(tj)
        self.store.update(TRAINJOBS, tj, status=True)
        events.record(self.store, tj, outcome.reason, outcome.message, warning=not outcome.succeeded)

    # -- status --------------------------------------------------------------------------------

    def _mirror(self, tj: Obj) -> None:
        meta = tj["metadata"]
        pods = job_pods(self.store, meta["namespace"], meta["name"])
        rjobs = sorted({p["metadata"]["labels"].get(cond.RJOB_LABEL, "") for p in pods}, key=lambda r: r != "node")
        expected = {r: sum(1 for p in pods if p["metadata"]["labels"].get(cond.RJOB_LABEL) == r) for r in rjobs}
        tj.setdefault("status", {})["jobsStatus"] = cond.jobs_status(pods, rjobs, expected)

    def pod_changed(self, pod: Obj) -> None:
        """Keep the owning TrainJob's jobsStatus in step with its pods."""
        job = pod["metadata"].get("labels", {}).get(cond.JOB_SET_LABEL)
        tj = self.store.try_get(TRAINJOBS, pod["metadata"]["namespace"], job) if job else None
        if tj is None or cond.finished(tj):
            return
        before = tj.get("status", {}).get("jobsStatus")
        self._mirror(tj)
        if tj["status"]["jobsStatus"] != before:
            self.store.update(TRAINJOBS, tj, status=True)

    async def stop(self, uid: str, message: str) -> None:
        """Abort a running job (its TrainJob was deleted, or the server is stopping) and wait for it."""
        entry = self.runners.get(uid)
        if entry:
            runner, task = entry
            runner.stop(message)
            await asyncio.gather(task, return_exceptions=True)
