"""kube-scheduler's part in starting a job: each admitted pod is bound to the Node it fits, or kept
`Pending` with `PodScheduled=False`, reason `Unschedulable`, the scheduler's message and a
`FailedScheduling` Event, as kube-scheduler leaves a pod it cannot place (`api/core/placement.py` decides).

The job starts only when all its pods are bound; until then its Workload, admitted and holding its
quota as Kueue leaves it, says why it waits (`mpijob.io/waiting`), and a change of the Node (a label
added, a taint removed, `kubectl uncordon`) binds them without resubmission: the manager reconciles
the waiting jobs again.
"""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core import placement, volumes
from mpijob.api.core.resources import NODES, PERSISTENT_VOLUME_CLAIMS, PODS, WORKLOADS
from mpijob.controllers import events
from mpijob.store.objects import Store, now


def _scheduled(ts: str, why: str = "") -> list[dict]:
    if not why:
        return [{"type": names.POD_SCHEDULED, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}]
    return [{"type": names.POD_SCHEDULED, "status": "False", "lastProbeTime": None, "lastTransitionTime": ts,
             "reason": names.REASON_UNSCHEDULABLE, "message": why}]


def _said(pod: Obj | None) -> str:
    """The Unschedulable message a stored pod carries ("" when it has none)."""
    for c in ((pod or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == names.POD_SCHEDULED and c.get("status") == "False":
            return c.get("message") or ""
    return ""


def _bind(store: Store, pod: Obj, node: str) -> Obj:
    """What the scheduler's Binding does to a pod that waited: `spec.nodeName`, then `PodScheduled`."""
    pod["spec"]["nodeName"] = node
    pod = store.update(PODS, pod)
    pod.setdefault("status", {})["conditions"] = _scheduled(now())
    return store.update(PODS, pod, status=True)


def _schedule(store: Store, pod: Obj, nodes: list[Obj]) -> tuple[str | None, str]:
    """kube-scheduler's cycle for one pod: the VolumeBinding plugin's PreFilter (every claim the pod names
    exists and is bound: docs/volumes.md), then the node filters."""
    wanted = volumes.claim_names(pod["spec"])
    if wanted:
        ns = pod["metadata"]["namespace"]
        claims = {name: c for name in wanted if (c := store.try_get(PERSISTENT_VOLUME_CLAIMS, ns, name)) is not None}
        if why := volumes.claim_problem(pod["spec"], claims):
            return None, volumes.unschedulable_message(why, len(nodes))
    return placement.schedule(pod["spec"], nodes)


def place(store: Store, workload: Obj | None, rendered: dict[str, Obj]) -> dict[str, Obj] | None:
    """The stored pods, each bound to a Node, when every pod of the job fits one; None when one does not
    (they are all stored, those that fit bound, the others Pending Unschedulable), and the job waits."""
    nodes = store.list(NODES, None)[0]
    stored: dict[str, Obj] = {}
    stuck: list[tuple[str, str]] = []
    for name, pod in rendered.items():
        ns = pod["metadata"]["namespace"]
        current = store.try_get(PODS, ns, name)
        if current is not None and current["spec"].get("nodeName"):
            stored[name] = current  # bound already: the scheduler does not look at it again
            continue
        node, why = _schedule(store, pod, nodes)
        if node is not None:
            if current is None:
                pod["spec"]["nodeName"] = node
                pod.setdefault("status", {})["conditions"] = _scheduled(now())
                stored[name] = store.create(PODS, pod)
            else:
                stored[name] = _bind(store, current, node)
            continue
        stuck.append((name, why))
        if current is None:
            pod.setdefault("status", {})["conditions"] = _scheduled(now(), why)
            current = store.create(PODS, pod)
            events.record(store, current, names.REASON_FAILED_SCHEDULING, why, warning=True, component=names.SCHEDULER)
        elif _said(current) != why:
            current["status"]["conditions"] = _scheduled(now(), why)
            current = store.update(PODS, current, status=True)
            events.record(store, current, names.REASON_FAILED_SCHEDULING, why, warning=True, component=names.SCHEDULER)
        stored[name] = current
    _say(store, workload, stuck)
    return None if stuck else stored


def place_pod(store: Store, pod: Obj) -> Obj | None:
    """One stored pod no job owns (a bare pod), bound to the Node it fits with kube-scheduler's `Scheduled`
    Event; None while it fits none (it waits `Pending`, `Unschedulable`, with one Event per new reason)."""
    nodes = store.list(NODES, None)[0]
    node, why = _schedule(store, pod, nodes)
    if node is not None:
        if pod["spec"].get("nodeName") == node and not _said(pod) and (pod.get("status") or {}).get("conditions"):
            return pod  # bound already
        pod = _bind(store, pod, node)
        meta = pod["metadata"]
        events.record(store, pod, names.REASON_SCHEDULED, f"Successfully assigned {meta['namespace']}/"
                      f"{meta['name']} to {node}", component=names.SCHEDULER)
        return pod
    if _said(pod) != why:
        pod.setdefault("status", {})["conditions"] = _scheduled(now(), why)
        pod = store.update(PODS, pod, status=True)
        events.record(store, pod, names.REASON_FAILED_SCHEDULING, why, warning=True, component=names.SCHEDULER)
    return None


def _say(store: Store, workload: Obj | None, stuck: list[tuple[str, str]]) -> None:
    """Why the admitted job waits, on its Workload where every client reads it; removed once it starts."""
    if workload is None:
        return
    wl = store.try_get(WORKLOADS, workload["metadata"]["namespace"], workload["metadata"]["name"])
    if wl is None:
        return
    annotations = wl["metadata"].setdefault("annotations", {})
    if stuck:
        first, why = stuck[0]
        more = f" and {len(stuck) - 1} more" if len(stuck) > 1 else ""
        claims = volumes.CLAIM_WORD.lower() in why.lower()
        fix = ("create the PersistentVolumeClaim its volumes name (kubectl get pvc)" if claims else
               "change the pods' nodeSelector, affinity or tolerations, or the Node (kubectl label/taint node)")
        wanted = f"admitted, but pod {first}{more} fits no node: {why.split('. preemption:')[0]}; {fix}"
    else:
        wanted = None
    if annotations.get(names.ANNOTATION_WAITING) == wanted:
        return
    if wanted is None:
        annotations.pop(names.ANNOTATION_WAITING, None)
    else:
        annotations[names.ANNOTATION_WAITING] = wanted
    store.update(WORKLOADS, wl)


def unbind(store: Store, pods: list[Obj]) -> None:
    """A job that waited for a Node and is suspended or evicted loses its pods, as JobSet deletes them."""
    for pod in pods:
        if not (pod.get("status") or {}).get("startTime"):
            store.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
