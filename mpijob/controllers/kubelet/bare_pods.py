"""kube-scheduler's and the kubelet's part for bare pods (`api/core/bare_pods.py`): a pod no job owns is bound to
the Node (or left Pending, Unschedulable, saying why: `trainer/binding.place_pod`), given an address, its volumes
and its ServiceAccount's files, and run (`bare_run.py`); a pod marked for deletion is stopped within its grace
period, then deleted; at start, the runs a previous server left are taken over (docs/bare-pods.md).

Bare pods are not Kueue's: its pod integration manages only pods with its queue-name label, which admission
refuses (`bare_pods.refusals`). So a bare pod takes no quota of a ClusterQueue, and no GPU (also refused): it
shares the machine's CPUs and memory with the jobs, as a pod Kueue does not manage shares a cluster's nodes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core import bare_pods, tokens
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import PODS, SERVICE_ACCOUNTS
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer import render
from mpijob.controllers.kubelet import gc, pods
from mpijob.controllers.kubelet.admission import PodAdmission
from mpijob.controllers.kubelet.bare_run import BareRun
from mpijob.controllers.kubelet.entry import PodEntry
from mpijob.controllers.kubelet.network import namespace_name
from mpijob.controllers.kubelet.sandbox import SSH_PORT, JobFiles, ServiceAccountFiles
from mpijob.controllers.trainer import binding
from mpijob.controllers.trainer.launcher import RESTARTED, api_server
from mpijob.controllers.trainer.runner import STOP_GRACE
from mpijob.store.home import Home
from mpijob.store.logs import LogStore
from mpijob.store.objects import Store

log = logging.getLogger(__name__)


class BarePods:
    """Every bare pod's run, by pod uid."""

    def __init__(self, store: Store, logs: LogStore, home: Home, mode: SandboxMode, cluster_id: str,
                 admission: PodAdmission) -> None:
        self.store, self.logs, self.home, self.mode, self.cluster_id = store, logs, home, mode, cluster_id
        self.admission = admission  # the machine's pool of pod addresses, and volumes, shared with the jobs
        self.runs: dict[str, tuple[BareRun, asyncio.Task[None]]] = {}

    def files(self, pod: Obj) -> JobFiles:
        meta = pod["metadata"]
        return JobFiles(self.home.pod_dir(meta["namespace"], meta["name"], meta["uid"]), self.mode)

    def __iter__(self) -> Iterator[BareRun]:
        return iter([run for run, _ in list(self.runs.values())])

    # -- at start -----------------------------------------------------------------------------------------

    def recover(self) -> None:
        """Take over the runs a previous server left; a started pod whose run left no record ends
        `ContainerStatusUnknown`; the directories of pods that are gone are removed."""
        stored = [p for p in self.store.list(PODS, None)[0] if bare_pods.is_bare(p)]
        for pod in stored:
            if bare_pods.finished(pod) or not (pod.get("status") or {}).get("startTime"):
                continue
            run = BareRun.load(self.store, self.logs, self.files(pod), self.cluster_id)
            if run is None:
                meta = pod["metadata"]
                pods.set_terminated(self.store, meta["namespace"], meta["name"], pods.LOST,
                                    names.REASON_CONTAINER_STATUS_UNKNOWN, RESTARTED)
                continue
            self.admission.addresses.claim([run.ip])
            self._track(pod, run, run.resume())
        kept = {self.files(p).root for p in stored}
        if self.home.pods.is_dir():
            for d in self.home.pods.iterdir():
                if d not in kept:
                    gc.remove_tree(d)

    def kept(self) -> tuple[set[str], set[str]]:
        """What the runs taken over hold: their pods (`<namespace>/<name>`) and their networks."""
        runs = list(self)
        return ({f"{r.namespace}/{r.name}" for r in runs},
                {namespace_name(self.cluster_id, r.plan.uid) for r in runs})

    def resync(self) -> None:
        """Every bare pod looked at once (at start: those that waited start now)."""
        for pod in self.store.list(PODS, None)[0]:
            self.changed(pod)

    # -- its events -------------------------------------------------------------------------------------

    def changed(self, pod: Obj) -> None:
        """A pod was created or changed: a bare pod not yet running is bound and started; one marked for deletion
        is stopped, then deleted."""
        if not bare_pods.is_bare(pod):
            return
        meta = pod["metadata"]
        current = self.store.try_get(PODS, meta["namespace"], meta["name"])
        if current is None or current["metadata"]["uid"] != meta["uid"]:
            return  # a late event of a pod deleted since
        if current["metadata"].get("deletionTimestamp"):
            self._delete(current)
        elif meta["uid"] not in self.runs and not bare_pods.finished(current) \
                and not (current.get("status") or {}).get("startTime"):
            try:
                bound = binding.place_pod(self.store, current)
            except ApiError as e:
                if e.reason == "Conflict":
                    return  # changed since this event: the event of its newer version places it
                raise
            if bound is None:
                return
            try:
                self._start(bound)
            except Exception as e:  # it must not wait Pending without a word
                log.exception("bare pod %s/%s could not start", meta["namespace"], meta["name"])
                pods.set_terminated(self.store, meta["namespace"], meta["name"], pods.LOST,
                                    names.REASON_CONTAINER_STATUS_UNKNOWN, f"the local cluster could not start it: {e}")

    def deleted(self, pod: Obj) -> None:
        """A pod is gone from the store (forced, or with its namespace): what still runs of it is stopped."""
        found = self.runs.get(pod["metadata"]["uid"])
        if found is not None:
            found[0].stop(min(STOP_GRACE, _grace(pod)))
        elif bare_pods.is_bare(pod):
            gc.remove_tree(self.files(pod).root)

    def node_changed(self) -> None:
        """The Node changed (a label, a taint, a cordon) or a claim did: the pods that wait for it look again."""
        for pod in self.store.list(PODS, None)[0]:
            if not (pod.get("status") or {}).get("startTime"):
                self.changed(pod)

    def entry(self, pod: Obj) -> PodEntry | None:
        found = self.runs.get(pod["metadata"].get("uid", ""))
        return found[0].entry() if found else None

    # -- a run ----------------------------------------------------------------------------------------------

    def _start(self, pod: Obj) -> None:
        """Admit the bound pod on this machine (an address, its volumes, its ServiceAccount's files) and run it."""
        meta = pod["metadata"]
        plan = bare_pods.plan(pod)
        files = self.files(pod)
        failure = self.admission.mount_volumes(plan, files, {meta["name"]: pod})
        if failure is not None:  # said in a FailedMount Event; it fails rather than wait without a retry
            pods.set_terminated(self.store, meta["namespace"], meta["name"], pods.Exit(1),
                                names.REASON_FAILED_MOUNT, failure)
            return
        ip = self.admission.addresses.take(SSH_PORT)
        run = BareRun(self.store, self.logs, files, plan, ip, self.cluster_id, api_server(self.home))
        self._track(pod, run, run.run(self._account(pod)))

    def _account(self, pod: Obj) -> ServiceAccountFiles | None:
        """The pod's projected ServiceAccount files, as a job's pods get them; None when it does not automount
        them (or its ServiceAccount is gone since it was admitted)."""
        spec, ns = pod.get("spec") or {}, pod["metadata"]["namespace"]
        account = self.store.try_get(SERVICE_ACCOUNTS, ns, render.service_account_name(spec))
        if account is None or not render.automounts(spec, account):
            return None
        key, ca = self.home.service_account_key(), self.home.ca_pem().encode()
        return ServiceAccountFiles(tokens.for_pod(key, account, pod), ns, ca)

    def _track(self, pod: Obj, run: BareRun, running: Coroutine[Any, Any, None]) -> None:
        uid = pod["metadata"]["uid"]
        self.runs[uid] = (run, asyncio.create_task(self._run(uid, run, running)))

    async def _run(self, uid: str, run: BareRun, running: Coroutine[Any, Any, None]) -> None:
        """Await the run, free its address; a pod stopped for its deletion is deleted now, as its kubelet does."""
        try:
            await running
        except Exception as e:  # a bug, or a sandbox that could not be made, must still end the pod truthfully
            log.exception("bare pod %s/%s crashed", run.namespace, run.name)
            if run.proc is not None and run.proc.running:
                run.stop(STOP_GRACE)
            await run.close()
            pods.set_terminated(self.store, run.namespace, run.name, pods.LOST, names.REASON_CONTAINER_STATUS_UNKNOWN,
                                f"the local cluster could not run it: {e}")
        finally:
            self.runs.pop(uid, None)
            self.admission.addresses.release([run.ip])
        current = self.store.try_get(PODS, run.namespace, run.name)
        if current is not None and current["metadata"]["uid"] == uid and current["metadata"].get("deletionTimestamp"):
            self.store.delete(PODS, run.namespace, run.name)
        elif current is None or current["metadata"]["uid"] != uid:
            gc.remove_tree(run.files.root)

    def _delete(self, pod: Obj) -> None:
        """A pod marked for deletion: its run stopped within the grace period, then the pod deleted (`_run`)."""
        found = self.runs.get(pod["metadata"]["uid"])
        if found is not None:
            found[0].stop(float(pod["metadata"].get("deletionGracePeriodSeconds") or 0))
        else:
            self.store.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])

    async def stop(self, drain: bool) -> None:
        """The server stops: its bare pods run on under their supervisors, for the next server to take over, unless
        `drain`: then each is stopped within its grace period (and seen to have ended at the next start)."""
        if drain:
            for run, _ in list(self.runs.values()):
                run.stop(float(run.pod.pod_spec.get("terminationGracePeriodSeconds", bare_pods.DEFAULT_GRACE)))
            await asyncio.gather(*(task for _, task in list(self.runs.values())), return_exceptions=True)
            return
        tasks = [task for _, task in self.runs.values()]
        for task in tasks:
            task.cancel()  # the run lets go; its container does not notice
        await asyncio.gather(*tasks, return_exceptions=True)


def _grace(pod: Obj) -> float:
    return float((pod.get("spec") or {}).get("terminationGracePeriodSeconds", bare_pods.DEFAULT_GRACE))
