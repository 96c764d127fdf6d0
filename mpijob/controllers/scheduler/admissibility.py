"""Whether a ClusterQueue may admit anything at all, and whether it accepts a workload's namespace.

Checked before quota, in Kueue's order: LocalQueue, ClusterQueue existence, stop policy, inactive
(a referenced ResourceFlavor is missing), namespaceSelector.
"""

from __future__ import annotations

from mpijob.controllers.scheduler import messages as msg
from mpijob.controllers.scheduler.snapshot import ClusterQueue, Snapshot, Workload


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


def missing_flavors(snap: Snapshot, cq: ClusterQueue) -> list[str]:
    return sorted({f.name for g in cq.groups for f in g.flavors if f.name not in snap.flavors})


def blocker(snap: Snapshot, wl: Workload) -> tuple[str, str, str] | None:
    """(Kueue reason, Kueue message, human message) when `wl` cannot be considered for quota now."""
    if not wl.cluster_queue:
        human = (f"LocalQueue {wl.local_queue} not found in namespace {wl.namespace}; create it or set the "
                 f"kueue.x-k8s.io/queue-name label to an existing LocalQueue")
        return ("Misconfigured", msg.local_queue_missing(wl.local_queue), human)
    cq = snap.cluster_queues.get(wl.cluster_queue)
    if cq is None:
        return ("Misconfigured", msg.cluster_queue_missing(wl.cluster_queue),
                f"ClusterQueue {wl.cluster_queue} (of LocalQueue {wl.namespace}/{wl.local_queue}) not found")
    if cq.stop_policy not in ("", "None"):
        return ("Suspended", msg.cluster_queue_stopped(cq.name),
                f"ClusterQueue {cq.name} is stopped (stopPolicy {cq.stop_policy})")
    missing = missing_flavors(snap, cq)
    if missing:
        return ("Suspended", msg.cluster_queue_inactive(cq.name),
                f"ClusterQueue {cq.name} is inactive: ResourceFlavor {', '.join(missing)} not found")
    if not selects(cq.namespace_selector, snap.namespace_labels.get(wl.namespace, {})):
        human = (f"ClusterQueue {cq.name} does not admit workloads from namespace {wl.namespace} "
                 f"(its namespaceSelector does not match)")
        return ("Misconfigured", msg.NAMESPACE_MISMATCH, human)
    return None
