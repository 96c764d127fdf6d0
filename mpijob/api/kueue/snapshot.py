"""The scheduler's input: an immutable picture of Kueue's queues, quotas and workloads.

Plain typed data, so a scheduling cycle (`mpijob.api.kueue.scheduler`) is a pure function of it
and testable without a server. It lives with the Kueue API because it is Kueue's objects in typed form
(`mpijob.api.kueue.adapters` reads them from their wire format); docs/parity.md says which Kueue fields
and behaviours are matched. Quantities are integers in base units: millicores for `cpu`, bytes for
`memory`, whole devices for anything else (`mpijob.api.core.quantity.to_base_units`).

The policies are `StrEnum`s of exactly the values Kueue's API accepts, so they compare equal to the
strings stored in the objects and print as them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

from mpijob.api import Obj
from mpijob.api.core.quantity import from_base_units

Resources = dict[str, int]  # resource name → amount in base units


class QueueingStrategy(StrEnum):
    """`spec.queueingStrategy` of a ClusterQueue: what a head that cannot be admitted does."""

    BEST_EFFORT_FIFO = "BestEffortFIFO"  # steps aside: the workloads behind it are still tried
    STRICT_FIFO = "StrictFIFO"  # blocks its queue: nothing behind it is tried this cycle


class PreemptionPolicy(StrEnum):
    """Whom a ClusterQueue's pending workloads may preempt (`spec.preemption`)."""

    NEVER = "Never"  # nobody (the default of all three fields)
    LOWER_PRIORITY = "LowerPriority"  # workloads of strictly lower priority
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"  # also newer equal ones (withinClusterQueue only)
    ANY = "Any"  # any workload borrowing in the cohort (reclaimWithinCohort only)


class StopPolicy(StrEnum):
    """`spec.stopPolicy` of a ClusterQueue or LocalQueue. An absent or empty field reads as NONE."""

    NONE = "None"  # admits as usual
    HOLD = "Hold"  # admits nothing new; what is admitted keeps running
    HOLD_AND_DRAIN = "HoldAndDrain"  # admits nothing new and evicts what it has admitted


@dataclass(frozen=True)
class ResourceQuota:
    name: str  # e.g. "nvidia.com/gpu"
    nominal: int
    borrowing_limit: int | None = None  # None: may borrow everything the cohort lends
    lending_limit: int | None = None  # None: lends all unused nominal quota


@dataclass(frozen=True)
class FlavorQuotas:
    name: str  # ResourceFlavor name
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True)
class ResourceGroup:
    covered: tuple[str, ...]  # coveredResources
    flavors: tuple[FlavorQuotas, ...]  # in the order to try them


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    groups: tuple[ResourceGroup, ...]
    cohort: str | None = None
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER  # Never | LowerPriority
    borrow_max_priority: int | None = None  # borrowWithinCohort.maxPriorityThreshold
    fair_weight: float = 1.0  # fairSharing.weight
    stop_policy: StopPolicy = StopPolicy.NONE
    namespace_selector: dict | None = None  # LabelSelector; None selects nothing, {} everything
    creation: str = ""
    admission_checks: tuple[str, ...] = ()  # AdmissionChecks it requires (spec.admissionChecksStrategy)

    def __post_init__(self) -> None:
        """Accept the policies as the strings Kueue's objects spell them (tests and callers do)."""
        for name, kind in (("strategy", QueueingStrategy), ("within_cluster_queue", PreemptionPolicy),
                           ("reclaim_within_cohort", PreemptionPolicy), ("borrow_within_cohort", PreemptionPolicy),
                           ("stop_policy", StopPolicy)):
            object.__setattr__(self, name, kind(getattr(self, name)))


@dataclass(frozen=True)
class PodSet:
    name: str  # "launcher" | "node"
    count: int
    requests: Resources  # per pod


@dataclass(frozen=True)
class PodSetAssignment:
    """Where one pod set landed: a flavor per resource, and what the whole pod set uses."""

    name: str
    count: int
    flavors: dict[str, str]  # resource → flavor
    usage: Resources  # resource → per-pod request × count, every requested resource (zeros too)

    def to_api(self) -> Obj:
        """The `status.admission.podSetAssignments[]` entry Kueue writes."""
        return {"name": self.name, "flavors": dict(self.flavors),
                "resourceUsage": {res: from_base_units(res, amount) for res, amount in self.usage.items()},
                "count": self.count}


@dataclass(frozen=True)
class Assignment:
    """Where an admitted workload's pod sets landed: flavor per resource, and total usage (Kueue's
    `flavorassigner.Assignment`, which renders itself with `to_api` as Kueue's `ToAPI` does)."""

    flavors: dict[str, dict[str, str]]  # pod set → resource → flavor
    usage: dict[tuple[str, str], int]  # (flavor, resource) → total amount for the whole workload
    borrows: bool = False  # admission needed quota borrowed from the cohort
    pod_sets: tuple[PodSetAssignment, ...] = ()  # per pod set, in the Workload's order

    def to_api(self, cluster_queue: str) -> Obj:
        """The Workload's `status.admission`."""
        return {"clusterQueue": cluster_queue, "podSetAssignments": [ps.to_api() for ps in self.pod_sets]}


@dataclass(frozen=True)
class Workload:
    key: str  # "<namespace>/<name>"
    namespace: str
    cluster_queue: str  # resolved from the LocalQueue; "" when the LocalQueue is missing
    local_queue: str
    priority: int
    created: str  # RFC 3339, the FIFO tie-breaker
    pod_sets: tuple[PodSet, ...]
    admission: Assignment | None = None  # set when admitted (holds quota)
    admitted_at: str = ""  # QuotaReserved transition time (preemption: newest first)
    uid: str = ""
    job_uid: str = ""  # the owning TrainJob's uid (label kueue.x-k8s.io/job-uid), for messages

    @cached_property
    def shape(self) -> tuple:
        """What it asks for, pod set by pod set: workloads of one shape fit, or do not, alike. Cached on
        the (immutable) workload, which a snapshot cache keeps from one cycle to the next."""
        return tuple((ps.name, ps.count, tuple(sorted(ps.requests.items()))) for ps in self.pod_sets)

    @cached_property
    def totals(self) -> tuple[tuple[str, dict[str, int]], ...]:
        """What each pod set uses in all (per-pod requests × count), resources in name order."""
        return tuple((name, {res: q * count for res, q in requests}) for name, count, requests in self.shape)

    def total(self, resource: str) -> int:
        """What the whole workload asks of `resource`: every pod of every pod set."""
        return sum(per.get(resource, 0) for _, per in self.totals)


@dataclass(frozen=True)
class Snapshot:
    cluster_queues: dict[str, ClusterQueue]
    flavors: frozenset[str]  # existing ResourceFlavors
    workloads: tuple[Workload, ...]  # pending and admitted, every ClusterQueue
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # for namespaceSelector
    flavor_topologies: dict[str, str] = field(default_factory=dict)  # ResourceFlavor → its spec.topologyName
    # AdmissionChecks and Topologies that exist: none on the local cluster, which does not serve those
    # kinds, so a ClusterQueue referencing one stays inactive (admissibility.inactive)
    admission_checks: frozenset[str] = frozenset()
    topologies: frozenset[str] = frozenset()
    # (namespace, LocalQueue) → its stopPolicy, for stopped LocalQueues only (never StopPolicy.NONE)
    local_queue_stops: dict[tuple[str, str], StopPolicy] = field(default_factory=dict)
