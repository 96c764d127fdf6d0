"""Whether a ClusterQueue may admit anything at all, and whether it accepts a workload's namespace.

`inactive` is the one place that decides whether a ClusterQueue is active, as Kueue's cache does
(`pkg/cache/scheduler/clusterqueue.go`, `inactiveReason`): a queue is inactive while it is stopped or
references a ResourceFlavor, AdmissionCheck or Topology (through a flavor's `topologyName`) that does
not exist. The local cluster serves no AdmissionCheck or Topology, so such a reference holds the queue
until it is removed. The scheduler holds the queue's workloads (`blocker`), the queueing controller
writes the queue's `Active` condition from it, and each LocalQueue mirrors it (`local_queue_active`).

Checked before quota, in Kueue's order: LocalQueue existence, LocalQueue stopped (its `stopPolicy`:
Kueue takes the LocalQueue's workloads out of the queue and marks them Inadmissible), ClusterQueue
existence, inactive (stopped first), namespaceSelector.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpijob.api.kueue import messages as msg
from mpijob.api.kueue.snapshot import ClusterQueue, Snapshot, StopPolicy, Workload
from mpijob.api.names import (
    LABEL_QUEUE_NAME,
    REASON_ADMISSION_CHECK_NOT_FOUND,
    REASON_CLUSTER_QUEUE_INACTIVE,
    REASON_CLUSTER_QUEUE_MISSING,
    REASON_FLAVOR_NOT_FOUND,
    REASON_INADMISSIBLE,
    REASON_MISCONFIGURED,
    REASON_READY,
    REASON_STOPPED,
    REASON_TOPOLOGY_NOT_FOUND,
    SUSPENDED,
)


@dataclass(frozen=True)
class Inactive:
    """Why a ClusterQueue admits nothing new: Kueue's `Active=False` reason and message, and plain words."""

    reason: str  # the first cause's, as Kueue reports it
    message: str  # "Can't admit new workloads: …."
    human: str  # "ClusterQueue X is inactive: …; <what to do>"
    stopped: bool  # stopPolicy is set: workloads say "is stopped" rather than "is inactive"


def selects(selector: dict | None, labels: dict[str, str]) -> bool:
    """A LabelSelector over namespace labels; None selects nothing, {} everything."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def inactive(snap: Snapshot, cq: ClusterQueue) -> Inactive | None:
    """None when `cq` can admit; else every cause in Kueue's order (stopped, missing flavors in spec
    order, missing admission checks sorted, TAS flavors without their Topology), reason of the first."""
    causes: list[tuple[str, str, str]] = []  # (reason, Kueue's words, plain words with the fix)
    stopped = cq.stop_policy is not StopPolicy.NONE
    if stopped:
        causes.append((REASON_STOPPED, msg.STOPPED, ""))
    flavors = [f.name for g in cq.groups for f in g.flavors]
    missing = [f for f in flavors if f not in snap.flavors]
    if missing:
        causes.append((REASON_FLAVOR_NOT_FOUND, msg.missing_flavors(missing),
                       f"ResourceFlavor {', '.join(missing)} not found; create it or remove it from the ClusterQueue"))
    checks = sorted(set(cq.admission_checks) - snap.admission_checks)
    if checks:
        causes.append((REASON_ADMISSION_CHECK_NOT_FOUND, msg.missing_admission_checks(checks),
                       (f"AdmissionCheck {', '.join(checks)} not found (this cluster runs no admission check "
                        f"controllers, so the check could never pass); remove it from the ClusterQueue's "
                        f"admission checks")))
    for flavor in sorted(f for f in flavors if f in snap.flavors and f in snap.flavor_topologies):
        topology = snap.flavor_topologies[flavor]
        if topology not in snap.topologies:
            causes.append((REASON_TOPOLOGY_NOT_FOUND, msg.missing_topology(topology, flavor),
                           (f"ResourceFlavor {flavor} names Topology {topology}, which does not exist (this cluster "
                            f"does no topology-aware scheduling); list a flavor without spec.topologyName in the "
                            f"ClusterQueue instead")))
    if not causes:
        return None
    head = f"ClusterQueue {cq.name} is " + (f"stopped (stopPolicy {cq.stop_policy})" if stopped else "inactive")
    plain = [p for _, _, p in causes if p]
    human = head + (f": {'; '.join(plain)}" if plain else "")
    return Inactive(causes[0][0], msg.cannot_admit([k for _, k, _ in causes]), human, stopped)


def local_queue_active(snap: Snapshot, cluster_queue: str,
                       stop_policy: StopPolicy = StopPolicy.NONE) -> tuple[bool, str, str]:
    """A LocalQueue's `Active` condition (status, reason, message): Kueue's LocalQueue controller says
    a stopped LocalQueue is stopped, else mirrors the state of the ClusterQueue it points at."""
    if stop_policy != StopPolicy.NONE:
        return False, REASON_STOPPED, msg.LQ_IS_STOPPED
    cq = snap.cluster_queues.get(cluster_queue)
    if cq is None:
        return False, REASON_CLUSTER_QUEUE_MISSING, msg.CANNOT_SUBMIT
    if inactive(snap, cq) is not None:
        return False, REASON_CLUSTER_QUEUE_INACTIVE, msg.CANNOT_SUBMIT
    return True, REASON_READY, msg.CAN_SUBMIT


class Blockers:
    """`blocker` for the many workloads of one snapshot: each ClusterQueue's state and each
    (ClusterQueue, namespace) selection is worked out once, not once per workload."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self._inactive: dict[str, Inactive | None] = {}
        self._selects: dict[tuple[str, str], bool] = {}

    def inactive(self, cq: ClusterQueue) -> Inactive | None:
        if cq.name not in self._inactive:
            self._inactive[cq.name] = inactive(self.snap, cq)
        return self._inactive[cq.name]

    def __call__(self, wl: Workload) -> tuple[str, str, str] | None:
        """(Kueue reason, Kueue message, human message) when `wl` cannot be considered for quota now."""
        snap = self.snap
        if not wl.cluster_queue:
            human = (f"LocalQueue {wl.local_queue} not found in namespace {wl.namespace}; create it or set the "
                     f"{LABEL_QUEUE_NAME} label to an existing LocalQueue")
            return (REASON_MISCONFIGURED, msg.local_queue_missing(wl.local_queue), human)
        if stop := snap.local_queue_stops.get((wl.namespace, wl.local_queue)):
            return (REASON_INADMISSIBLE, msg.local_queue_stopped(wl.local_queue),
                    (f"LocalQueue {wl.local_queue} is stopped (stopPolicy {stop}); set its spec.stopPolicy to None "
                     f"to admit its workloads again"))
        cq = snap.cluster_queues.get(wl.cluster_queue)
        if cq is None:
            return (REASON_MISCONFIGURED, msg.cluster_queue_missing(wl.cluster_queue),
                    f"ClusterQueue {wl.cluster_queue} (of LocalQueue {wl.namespace}/{wl.local_queue}) not found")
        state = self.inactive(cq)
        if state is not None:
            message = msg.cluster_queue_stopped(cq.name) if state.stopped else msg.cluster_queue_inactive(cq.name)
            return (SUSPENDED, message, state.human)
        selected = self._selects.get((cq.name, wl.namespace))
        if selected is None:
            selected = selects(cq.namespace_selector, snap.namespace_labels.get(wl.namespace, {}))
            self._selects[(cq.name, wl.namespace)] = selected
        if not selected:
            human = (f"ClusterQueue {cq.name} does not admit workloads from namespace {wl.namespace} "
                     f"(its namespaceSelector does not match)")
            return (REASON_MISCONFIGURED, msg.NAMESPACE_MISMATCH, human)
        return None


def blocker(snap: Snapshot, wl: Workload) -> tuple[str, str, str] | None:
    """(Kueue reason, Kueue message, human message) when `wl` cannot be considered for quota now."""
    return Blockers(snap)(wl)
