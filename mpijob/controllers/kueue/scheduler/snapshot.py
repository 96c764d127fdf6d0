"""The scheduler's input: an immutable picture of queues, quotas and workloads, built from the store.

Everything here is plain data, so a scheduling cycle is a pure function of it — testable without a
server, and cheap to rebuild on every event. Quantities are integers in base units: millicores for
`cpu`, bytes for `memory`, whole devices for anything else (PARITY §4 names the Kueue fields).
"""

from __future__ import annotations

from dataclasses import dataclass, field

Resources = dict[str, int]  # resource name → amount in base units


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
    strategy: str = "BestEffortFIFO"  # | "StrictFIFO"
    within_cluster_queue: str = "Never"  # | "LowerPriority" | "LowerOrNewerEqualPriority"
    reclaim_within_cohort: str = "Never"  # | "LowerPriority" | "Any"
    borrow_within_cohort: str = "Never"  # | "LowerPriority"
    borrow_max_priority: int | None = None  # borrowWithinCohort.maxPriorityThreshold
    fair_weight: float = 1.0  # fairSharing.weight
    stop_policy: str = "None"  # | "Hold" | "HoldAndDrain"
    namespace_selector: dict | None = None  # LabelSelector; None selects nothing, {} everything
    creation: str = ""
    admission_checks: tuple[str, ...] = ()  # AdmissionChecks it requires (spec.admissionChecksStrategy)


@dataclass(frozen=True)
class PodSet:
    name: str  # "launcher" | "node"
    count: int
    requests: Resources  # per pod


@dataclass(frozen=True)
class Assignment:
    """Where an admitted workload's pod sets landed: flavor per resource, and total usage."""

    flavors: dict[str, dict[str, str]]  # pod set → resource → flavor
    usage: dict[tuple[str, str], int]  # (flavor, resource) → total amount for the whole workload
    borrows: bool = False  # admission needed quota borrowed from the cohort


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
    # (namespace, LocalQueue) → its stopPolicy, for stopped LocalQueues only ("Hold" | "HoldAndDrain")
    local_queue_stops: dict[tuple[str, str], str] = field(default_factory=dict)
