"""Kueue through the Kubernetes API: queue objects at the newest version the cluster serves, the
visibility API's pending workloads, and why a TrainJob's Workload still waits.

Only the API, never the local cluster's internals, so the same calls work against a real cluster
with Kueue — and a cluster without Kueue simply has no queues and no waiting messages.
"""

from __future__ import annotations

import builtins

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.trainer.waiting import Waiting
from mpijob.client.core import Call, Op, items

PREFERRED_VERSIONS = (names.KUEUE_VERSION, names.KUEUE_V1BETA1)  # newest first
NOT_INSTALLED = "does not serve"  # in the 404 a cluster without Kueue answers


class Kueue:
    """Kueue's objects; the first call asks the cluster which Kueue version it serves (once)."""

    def __init__(self) -> None:
        self._version: str | None = None

    def version(self) -> Op[str]:
        """The newest Kueue API version the cluster serves; a 404 naming the fact when it serves none."""
        if self._version is None:
            try:
                group = (yield from Call("GET", f"/apis/{names.KUEUE_GROUP}")) or {}
            except ApiError as exc:
                if exc.code != 404:
                    raise
                raise ApiError(404, "NotFound", f"this cluster {NOT_INSTALLED} the {names.KUEUE_GROUP} API (Kueue "
                               "is not installed): there are no queues to show") from None
            served = [v.get("version") for v in group.get("versions") or []]
            self._version = next((v for v in PREFERRED_VERSIONS if v in served),
                                 (group.get("preferredVersion") or {}).get("version") or PREFERRED_VERSIONS[0])
        return self._version

    def path(self, plural: str, namespace: str | None = None, name: str | None = None) -> Op[str]:
        base = f"/apis/{names.KUEUE_GROUP}/{(yield from self.version())}"
        path = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
        return f"{path}/{name}" if name else path

    def get(self, plural: str, name: str, namespace: str | None = None) -> Op[Obj]:
        return (yield from Call("GET", (yield from self.path(plural, namespace, name))))

    def list(self, plural: str, namespace: str | None = None) -> Op[list[Obj]]:
        """Every object of a kind (in one namespace, or all), by namespace and name."""
        found = items((yield from Call("GET", (yield from self.path(plural, namespace)))))
        return sorted(found, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def list_visible(self, plural: str, fallback_namespace: str) -> Op[builtins.list[Obj]]:
        """All namespaces' objects, or only `fallback_namespace`'s when listing across is forbidden."""
        try:
            return (yield from self.list(plural))
        except ApiError as exc:
            if exc.code != 403:
                raise
            return (yield from self.list(plural, fallback_namespace))


def pending(cluster_queue: str | None = None, namespace: str = "", local_queue: str = "") -> Op[list[Obj]]:
    """The visibility API's pending workloads of a ClusterQueue or a LocalQueue, first in line first."""
    path = (f"{names.KUEUE_VISIBILITY_PATH}/clusterqueues/{cluster_queue}/pendingworkloads" if cluster_queue
            else f"{names.KUEUE_VISIBILITY_PATH}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads")
    return items((yield from Call("GET", path)))


def queue_position(trainjob: Obj, namespace: str) -> Op[int | None]:
    """The job's position in its LocalQueue (0 = next); None when it is not pending there, not queued
    through Kueue, or the cluster cannot tell."""
    meta = trainjob.get("metadata") or {}
    lq = (meta.get("labels") or {}).get(names.LABEL_QUEUE_NAME)
    if not lq:
        return None
    try:
        found = yield from pending(namespace=meta.get("namespace") or namespace, local_queue=lq)
    except ApiError:
        return None
    for item in found:
        owners = (item.get("metadata") or {}).get("ownerReferences") or []
        if any(o.get("uid") == meta.get("uid") or (o.get("kind") == "TrainJob" and o.get("name") == meta.get("name"))
               for o in owners):
            pos = item.get("positionInLocalQueue")
            return int(pos) if pos is not None else None
    return None


def waits(namespace: str, all_namespaces: bool = False, kueue: Kueue | None = None) -> Op[dict[str, Waiting]]:
    """TrainJob uid → why its Workload waits for admission and when it should start (the annotations the
    local cluster's scheduler writes, `mpijob.api.trainer.waiting`); empty where none waits, and on a
    cluster without Kueue."""
    try:
        workloads = yield from (kueue or Kueue()).list("workloads", None if all_namespaces else namespace)
    except ApiError:
        return {}
    out = {}
    for wl in workloads:
        uid = (wl["metadata"].get("labels") or {}).get(names.LABEL_JOB_UID)
        if uid and (why := Waiting.of(wl)) is not None:
            out[uid] = why
    return out


def waiting_messages(namespace: str, all_namespaces: bool = False, kueue: Kueue | None = None) -> Op[dict[str, str]]:
    """TrainJob uid → the one sentence saying why it waits, its estimate counted from now."""
    return {uid: why.sentence() for uid, why in (yield from waits(namespace, all_namespaces, kueue)).items()}
