"""What `get queues` and `describe queue` show, as plain rows and lines (no I/O, easy to test).

Inputs are Kueue objects as the API returns them (v1beta2, or v1beta1 where a field was renamed) and
visibility `PendingWorkloadsSummary` items. Quota is read from `spec.resourceGroups`, use from
`status.flavorsReservation` (quota is held from reservation on, so that is what counts against it),
else `status.flavorsUsage`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.durations import age
from mpijob.api.core.quantity import shortest
from mpijob.cli.output import indented_table, kv

CQ_COLUMNS = ["NAME", "COHORT", "STRATEGY", "PENDING", "ADMITTED", "USAGE"]
CQ_WIDE = ["RESERVING", "PREEMPTION", "WEIGHT", "AGE"]
LQ_COLUMNS = ["NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED"]
LQ_WIDE = ["RESERVING", "USAGE", "AGE"]


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _count(obj: Obj, key: str) -> str:
    return str(int(_status(obj).get(key) or 0))


def quantity(value: Any, resource: str = "memory") -> str:
    """A quantity for people (`mpijob.api.core.quantity.shortest`): `8589934592` bytes → `8Gi`."""
    return shortest(value, resource)


def cohort(cq: Obj) -> str:
    """`spec.cohortName` (v1beta2) or `spec.cohort` (v1beta1)."""
    return str(_spec(cq).get("cohortName") or _spec(cq).get("cohort") or "")


def quotas(cq: Obj) -> list[tuple[str, str, Obj]]:
    """(flavor, resource, quota entry) in spec order: resource groups, their flavors, their resources."""
    out = []
    for group in _spec(cq).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                out.append((str(flavor.get("name", "")), str(res.get("name", "")), res))
    return out


def used(queue: Obj) -> dict[tuple[str, str], Obj]:
    """(flavor, resource) → `{total, borrowed}` from the status (reservation first, else usage)."""
    status = _status(queue)
    entries = status.get("flavorsReservation") or status.get("flavorsUsage") or []
    return {(str(f.get("name", "")), str(r.get("name", ""))): r
            for f in entries for r in f.get("resources") or []}


def usage_summary(cq: Obj) -> str:
    """`default-flavor: nvidia.com/gpu 6/8, cpu 4/16; spot: cpu 0/4` — use against nominal quota."""
    by_flavor: dict[str, list[str]] = {}
    usage = used(cq)
    for flavor, resource, quota in quotas(cq):
        total = (usage.get((flavor, resource)) or {}).get("total", 0)
        by_flavor.setdefault(flavor, []).append(
            f"{resource} {quantity(total, resource)}/{quantity(quota.get('nominalQuota', 0), resource)}")
    return "; ".join(f"{flavor}: {', '.join(parts)}" for flavor, parts in by_flavor.items()) or "-"


def lq_usage_summary(lq: Obj) -> str:
    """A LocalQueue has no quota of its own: `default-flavor: cpu 4, nvidia.com/gpu 2`."""
    by_flavor: dict[str, list[str]] = {}
    for (flavor, resource), entry in used(lq).items():
        by_flavor.setdefault(flavor, []).append(f"{resource} {quantity(entry.get('total', 0), resource)}")
    return "; ".join(f"{flavor}: {', '.join(parts)}" for flavor, parts in by_flavor.items()) or "-"


def preemption(cq: Obj) -> str:
    p = _spec(cq).get("preemption") or {}
    within = p.get("withinClusterQueue") or "Never"
    reclaim = p.get("reclaimWithinCohort") or "Never"
    return f"within={within},reclaim={reclaim}"


def weight(cq: Obj) -> str:
    return str((_spec(cq).get("fairSharing") or {}).get("weight", 1))


def cluster_queue_row(cq: Obj, wide: bool, now: datetime | None = None) -> list[str]:
    spec = _spec(cq)
    row = [str(_meta(cq).get("name", "")), cohort(cq) or "-", str(spec.get("queueingStrategy") or "BestEffortFIFO"),
           _count(cq, "pendingWorkloads"), _count(cq, "admittedWorkloads"), usage_summary(cq)]
    if wide:
        row += [_count(cq, "reservingWorkloads"), preemption(cq), weight(cq),
                age(_meta(cq).get("creationTimestamp"), now)]
    return row


def local_queue_row(lq: Obj, wide: bool, namespace: bool = True, now: datetime | None = None) -> list[str]:
    meta = _meta(lq)
    row = ([str(meta.get("namespace", ""))] if namespace else []) + [
        str(meta.get("name", "")), str(_spec(lq).get("clusterQueue", "")),
        _count(lq, "pendingWorkloads"), _count(lq, "admittedWorkloads")]
    if wide:
        row += [_count(lq, "reservingWorkloads"), lq_usage_summary(lq), age(meta.get("creationTimestamp"), now)]
    return row


# -- describe -------------------------------------------------------------------------------------


def status_condition(obj: Obj, kind: str) -> Obj | None:
    """The condition of this type whatever its status (a queue's `Active=False` says why), else None."""
    return next((c for c in _status(obj).get("conditions") or [] if c.get("type") == kind), None)


def active(queue: Obj) -> str:
    """A queue's `Active` condition in one line: `True`, `False (Reason: message)`, or `-` when unset."""
    c = status_condition(queue, names.ACTIVE)
    if not c:
        return "-"
    if c.get("status") == "True":
        return "True"
    return f"{c.get('status', '')} ({c.get('reason', '')}: {c.get('message', '')})"


def inactive_notes(queues: list[Obj]) -> list[str]:
    """For `get`: one line per queue whose `Active` condition is False, saying why (Kueue's words)."""
    notes = []
    for q in queues:
        c = status_condition(q, names.ACTIVE)
        if c and c.get("status") == "False":
            meta = _meta(q)
            name = f"{meta['namespace']}/{meta.get('name', '')}" if meta.get("namespace") else meta.get("name", "")
            notes.append(f"{q.get('kind', 'queue')} {name} is inactive ({c.get('reason', '')}): {c.get('message', '')}")
    return notes


def pending_message(workload: Obj | None) -> str:
    """Why a Workload waits: its `QuotaReserved` False message (Kueue's words), else `-`."""
    if not workload:
        return "-"
    c = status_condition(workload, names.QUOTA_RESERVED)
    if c and c.get("status") == "False" and c.get("message"):
        return " ".join(str(c["message"]).split())
    return "-"


def owner_name(meta: Obj) -> str:
    """The TrainJob (or other job) a Workload belongs to."""
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") or len(meta.get("ownerReferences") or []) == 1:
            return f"{ref.get('kind', '')}/{ref.get('name', '')}"
    return "-"


def pending_rows(
    items: list[Obj], workloads: dict[tuple[str, str], Obj], now: datetime | None = None
) -> list[list[str]]:
    """One row per visibility item, with the Workload's pending message when we have the Workload."""
    rows = []
    for item in items:
        meta = item.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        pos_cq, pos_lq = item.get("positionInClusterQueue"), item.get("positionInLocalQueue")
        rows.append([
            "-" if pos_cq is None else str(pos_cq), "-" if pos_lq is None else str(pos_lq),
            f"{key[0]}/{key[1]}", owner_name(meta), f"{key[0]}/{item.get('localQueueName', '')}",
            str(item.get("priority", 0)), age(meta.get("creationTimestamp"), now), pending_message(workloads.get(key)),
        ])
    return rows


PENDING_COLUMNS = ["POSITION", "IN LOCALQUEUE", "WORKLOAD", "JOB", "LOCALQUEUE", "PRIORITY", "AGE", "WHY PENDING"]


def _quota_table(cq: Obj, usage_of: Obj | None = None) -> list[str]:
    usage = used(usage_of if usage_of is not None else cq)
    rows = []
    for flavor, resource, q in quotas(cq):
        entry = usage.get((flavor, resource)) or {}
        rows.append([flavor, resource, quantity(q.get("nominalQuota", 0), resource),
                     quantity(q["borrowingLimit"], resource) if "borrowingLimit" in q else "-",
                     quantity(q["lendingLimit"], resource) if "lendingLimit" in q else "-",
                     quantity(entry.get("total", 0), resource), quantity(entry.get("borrowed", 0), resource)])
    return indented_table(["FLAVOR", "RESOURCE", "NOMINAL", "BORROWING LIMIT", "LENDING LIMIT", "IN USE",
                            "BORROWED"], rows)


def _conditions(obj: Obj) -> list[str]:
    return indented_table(
        ["TYPE", "STATUS", "REASON", "MESSAGE"],
        [[str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason", "")), str(c.get("message", ""))]
         for c in _status(obj).get("conditions") or []],
    )


def _pending_section(out: list[str], pending: list[Obj] | None, workloads: dict[tuple[str, str], Obj],
                     note: str, now: datetime | None) -> None:
    out.append("Pending Workloads:" + (f"  ({note})" if note else ""))
    out += indented_table(PENDING_COLUMNS, pending_rows(pending or [], workloads, now))


def _selector(sel: Any) -> str:
    if sel is None:
        return "<none> (no namespace may use it)"
    if not sel:
        return "{} (all namespaces)"
    labels = ", ".join(f"{k}={v}" for k, v in (sel.get("matchLabels") or {}).items())
    exprs = ", ".join(f"{e.get('key')} {e.get('operator')} {e.get('values', [])}"
                      for e in sel.get("matchExpressions") or [])
    return ", ".join(p for p in (labels, exprs) if p)


def describe_cluster_queue(
    cq: Obj, local_queues: list[Obj], pending: list[Obj] | None, workloads: dict[tuple[str, str], Obj],
    note: str = "", now: datetime | None = None,
) -> str:
    """A ClusterQueue: policy, quota and use per flavor, its LocalQueues, and who waits in which order."""
    meta, spec = _meta(cq), _spec(cq)
    p = spec.get("preemption") or {}
    borrow = p.get("borrowWithinCohort") or {}
    out: list[str] = []
    kv(out, "Name", meta.get("name"))
    kv(out, "Kind", "ClusterQueue")
    kv(out, "Created", f"{meta.get('creationTimestamp')} ({age(meta.get('creationTimestamp'), now)} ago)")
    kv(out, "Cohort", cohort(cq) or "<none>")
    kv(out, "Strategy", spec.get("queueingStrategy") or "BestEffortFIFO")
    kv(out, "Namespaces", _selector(spec.get("namespaceSelector")))
    kv(out, "Stop Policy", spec.get("stopPolicy") or "None")
    kv(out, "Active", active(cq))
    kv(out, "Fair Sharing", f"weight {weight(cq)}, weighted share "
        f"{(_status(cq).get('fairSharing') or {}).get('weightedShare', 0)}")
    out.append("Preemption:")
    kv(out, "Within ClusterQueue", p.get("withinClusterQueue") or "Never", 2)
    kv(out, "Reclaim Within Cohort", p.get("reclaimWithinCohort") or "Never", 2)
    threshold = f" (max priority {borrow['maxPriorityThreshold']})" if "maxPriorityThreshold" in borrow else ""
    kv(out, "Borrow Within Cohort", f"{borrow.get('policy') or 'Never'}{threshold}", 2)
    out.append("Workloads:")
    kv(out, "Pending", _count(cq, "pendingWorkloads"), 2)
    kv(out, "Reserving", _count(cq, "reservingWorkloads"), 2)
    kv(out, "Admitted", _count(cq, "admittedWorkloads"), 2)
    out.append("Quota:")
    out += _quota_table(cq)
    out.append("Local Queues:")
    out += indented_table(LQ_COLUMNS, [local_queue_row(lq, False, now=now) for lq in local_queues])
    _pending_section(out, pending, workloads, note, now)
    out.append("Conditions:")
    out += _conditions(cq)
    return "\n".join(out) + "\n"


def describe_local_queue(
    lq: Obj, cq: Obj | None, pending: list[Obj] | None, workloads: dict[tuple[str, str], Obj],
    note: str = "", now: datetime | None = None,
) -> str:
    """A LocalQueue: its ClusterQueue's quota (shared), this queue's use, and who waits in which order."""
    meta, spec = _meta(lq), _spec(lq)
    out: list[str] = []
    kv(out, "Name", meta.get("name"))
    kv(out, "Namespace", meta.get("namespace"))
    kv(out, "Kind", "LocalQueue")
    kv(out, "Created", f"{meta.get('creationTimestamp')} ({age(meta.get('creationTimestamp'), now)} ago)")
    cq_active = status_condition(cq, names.ACTIVE) if cq is not None else None
    why = ("  (not found)" if cq is None else
           f"  (inactive: {cq_active.get('message', '')})" if cq_active and cq_active.get("status") == "False" else "")
    kv(out, "ClusterQueue", f"{spec.get('clusterQueue', '')}{why}")
    kv(out, "Stop Policy", spec.get("stopPolicy") or "None")
    kv(out, "Active", active(lq))
    if cq is not None:
        kv(out, "Cohort", cohort(cq) or "<none>")
        kv(out, "Strategy", _spec(cq).get("queueingStrategy") or "BestEffortFIFO")
    out.append("Workloads:")
    kv(out, "Pending", _count(lq, "pendingWorkloads"), 2)
    kv(out, "Reserving", _count(lq, "reservingWorkloads"), 2)
    kv(out, "Admitted", _count(lq, "admittedWorkloads"), 2)
    out.append("Usage (this queue):")
    out += indented_table(["FLAVOR", "RESOURCE", "IN USE"],
                           [[f, r, quantity(e.get("total", 0), r)] for (f, r), e in used(lq).items()])
    if cq is not None:
        out.append(f"Quota (ClusterQueue {_meta(cq).get('name', '')}, shared):")
        out += _quota_table(cq)
    _pending_section(out, pending, workloads, note, now)
    out.append("Conditions:")
    out += _conditions(lq)
    return "\n".join(out) + "\n"


def fallback_pending(workloads: list[Obj], local_queues: set[tuple[str, str]]) -> list[Obj]:
    """Visibility-shaped items without positions, for clusters that do not serve the visibility API:
    the Workloads of these LocalQueues that hold no quota, in Kueue's order (priority, then age)."""
    waiting = []
    for wl in workloads:
        meta, spec = _meta(wl), _spec(wl)
        if (str(meta.get("namespace", "")), str(spec.get("queueName", ""))) not in local_queues:
            continue
        if any(c.get("type") in (names.QUOTA_RESERVED, names.FINISHED) and c.get("status") == "True"
               for c in _status(wl).get("conditions") or []):
            continue
        waiting.append({"metadata": {k: meta[k] for k in ("name", "namespace", "creationTimestamp", "ownerReferences")
                                     if k in meta},
                        "priority": int(spec.get("priority") or 0), "localQueueName": spec.get("queueName", "")})
    waiting.sort(key=lambda i: (-i["priority"], str(i["metadata"].get("creationTimestamp", ""))))
    return waiting
