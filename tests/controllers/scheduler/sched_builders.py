"""Small builders for scheduler snapshots, so each test states only what it is about."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mpijob.api.kueue.scheduler.cycle import Admit, Pending, Preempt
from mpijob.api.kueue.snapshot import (
    Assignment,
    ClusterQueue,
    FlavorQuotas,
    PodSet,
    ResourceGroup,
    ResourceQuota,
    Snapshot,
    Workload,
)

GPU = "nvidia.com/gpu"
FLAVOR = "default-flavor"
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def queue(name: str, quota: dict | None = None, *, cohort: str | None = None, borrowing: dict | None = None,
          lending: dict | None = None, **kw) -> ClusterQueue:
    """`quota`: {resource: nominal} for one flavor, or {flavor: {resource: nominal}} for several (in
    order). `borrowing`/`lending`: {resource: limit}, applied in every flavor."""
    quota = quota if quota is not None else {GPU: 8}
    per_flavor = quota if all(isinstance(v, dict) for v in quota.values()) else {FLAVOR: quota}
    covered = sorted({r for res in per_flavor.values() for r in res})
    flavors = tuple(
        FlavorQuotas(f, tuple(ResourceQuota(r, n, (borrowing or {}).get(r), (lending or {}).get(r))
                              for r, n in res.items()))
        for f, res in per_flavor.items()
    )
    kw.setdefault("namespace_selector", {})
    return ClusterQueue(name, (ResourceGroup(tuple(covered), flavors),), cohort=cohort, **kw)


def job(name: str, q: str = "q", *, gpus: int = 1, nodes: int = 1, prio: int = 0, t: float = 0,
        ns: str = "default", cpu: int = 0, admitted: str | None = None, admitted_at: float | None = None,
        extra: dict | None = None, uid: str | None = None) -> Workload:
    """A TrainJob's workload: a launcher (no requests unless `cpu`, in millicores) and `nodes` nodes with
    `gpus` each. `admitted`: the flavor it holds quota in."""
    node_req = {GPU: gpus} if gpus else {}
    node_req.update(extra or {})
    launcher_req = {"cpu": cpu} if cpu else {}
    pod_sets = (PodSet("launcher", 1, launcher_req), PodSet("node", nodes, node_req))
    admission = None
    if admitted is not None:
        usage: dict[tuple[str, str], int] = {}
        flavors: dict[str, dict[str, str]] = {}
        for ps in pod_sets:
            flavors[ps.name] = dict.fromkeys(ps.requests, admitted)
            for r, v in ps.requests.items():
                usage[(admitted, r)] = usage.get((admitted, r), 0) + v * ps.count
        admission = Assignment(flavors, usage)
    return Workload(
        key=f"{ns}/{name}", namespace=ns, cluster_queue=q, local_queue=f"lq-{q}" if q else "missing-lq",
        priority=prio, created=ts(t), pod_sets=pod_sets, admission=admission,
        admitted_at=ts(admitted_at if admitted_at is not None else t + 1) if admitted is not None else "",
        uid=uid or f"uid-{name}",
    )


def snap(queues: list[ClusterQueue], workloads: list[Workload], *, flavors: set[str] | None = None,
         ns_labels: dict | None = None) -> Snapshot:
    if flavors is None:
        flavors = {f.name for q in queues for g in q.groups for f in g.flavors}
    return Snapshot({q.name: q for q in queues}, frozenset(flavors), tuple(workloads), ns_labels or {})


def admitted(decisions) -> list[str]:
    return [d.workload for d in decisions if isinstance(d, Admit)]


def preempted(decisions) -> list[str]:
    return [d.workload for d in decisions if isinstance(d, Preempt)]


def pending(decisions) -> dict[str, Pending]:
    return {d.workload: d for d in decisions if isinstance(d, Pending)}


def key(name: str, ns: str = "default") -> str:
    return f"{ns}/{name}"
