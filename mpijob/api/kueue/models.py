"""Typed models of the Kueue kinds (`kueue.x-k8s.io/v1beta2`, the storage version), written from the CRDs.

They are the structural half of admission: unknown fields are rejected, enums, bounds, name patterns
and quantities checked, as kube-apiserver checks a custom resource against its schema. What the local
cluster refuses whatever its shape (`mpijob.api.trainer.support`: concurrent admission, a pod set's topology
request) and a Workload's pod template (its requests are checked in `rules`) are typed as plain
mappings. `status` is written by controllers and is not checked.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

from mpijob.api import Obj, names
from mpijob.api.core.quantity import parse_quantity
from mpijob.api.names import KUEUE_GROUP, SCHEDULING_GROUP

DNS1123_SUBDOMAIN = names.DNS1123_SUBDOMAIN.pattern
DNS1123_LABEL = names.DNS1123_LABEL.pattern
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _quantity(value: Any) -> Any:
    """int-or-string holding a Kubernetes quantity, as `x-kubernetes-int-or-string` + the quantity pattern."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        # ValueError, not TypeError: pydantic turns only ValueError into a validation error
        raise ValueError('must be a quantity: an integer or a string such as "8", "500m" or "64Gi"')
    try:
        parse_quantity(value)
    except ValueError:
        raise ValueError('must be a quantity such as 8, "500m" or "64Gi"') from None
    return value


Quantity = Annotated[Any, AfterValidator(_quantity)]
Name = Annotated[str, StringConstraints(max_length=253, pattern=DNS1123_SUBDOMAIN)]
Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
StopPolicy = Literal["None", "Hold", "HoldAndDrain"]


class KueueModel(BaseModel):
    """camelCase fields as in the CRDs; strict types (no "5" for 5), unknown fields rejected."""

    model_config = ConfigDict(extra="forbid", strict=True, alias_generator=to_camel, populate_by_name=True)


class Object(KueueModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: Obj | None = None


# --- shared by ClusterQueue and Cohort ---------------------------------------------------------

class ResourceQuota(KueueModel):
    name: str
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(KueueModel):
    name: Name
    resources: Annotated[list[ResourceQuota], Field(min_length=1, max_length=64)]


class ResourceGroup(KueueModel):
    covered_resources: Annotated[list[str], Field(min_length=1, max_length=64)]
    flavors: Annotated[list[FlavorQuotas], Field(min_length=1, max_length=64)]


class FairSharing(KueueModel):
    weight: Quantity | None = None


# --- ClusterQueue --------------------------------------------------------------------------------

class BorrowWithinCohort(KueueModel):
    policy: Literal["Never", "LowerPriority"] | None = None
    max_priority_threshold: Int32 | None = None


class Preemption(KueueModel):
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] | None = None
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] | None = None
    borrow_within_cohort: BorrowWithinCohort | None = None


class SelectorRequirement(KueueModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(KueueModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[SelectorRequirement] | None = None


class AdmissionCheckStrategyRule(KueueModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=316)]
    on_flavors: Annotated[list[Name], Field(max_length=64)] | None = None


class AdmissionChecksStrategy(KueueModel):
    admission_checks: Annotated[list[AdmissionCheckStrategyRule], Field(min_length=1, max_length=64)]


class FlavorFungibility(KueueModel):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None


class AdmissionScope(KueueModel):
    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]


class ClusterQueueSpec(KueueModel):
    resource_groups: Annotated[list[ResourceGroup], Field(max_length=16)] | None = None
    cohort_name: Name | None = None
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] | None = None
    namespace_selector: LabelSelector | None = None
    preemption: Preemption | None = None
    fair_sharing: FairSharing | None = None
    stop_policy: StopPolicy | None = None
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    flavor_fungibility: FlavorFungibility | None = None
    admission_scope: AdmissionScope | None = None
    concurrent_admission_policy: Obj | None = None  # refused (mpijob.api.trainer.support)


class ClusterQueue(Object):
    spec: ClusterQueueSpec | None = None
    status: Obj | None = None


# --- Cohort ------------------------------------------------------------------------------------

class CohortSpec(KueueModel):
    parent_name: Name | None = None
    resource_groups: Annotated[list[ResourceGroup], Field(max_length=16)] | None = None
    fair_sharing: FairSharing | None = None


class Cohort(Object):
    spec: CohortSpec | None = None
    status: Obj | None = None


# --- LocalQueue --------------------------------------------------------------------------------

class LocalQueueSpec(KueueModel):
    cluster_queue: Name | None = None
    stop_policy: StopPolicy | None = None
    fair_sharing: FairSharing | None = None


class LocalQueue(Object):
    spec: LocalQueueSpec | None = None
    status: Obj | None = None


# --- ResourceFlavor ----------------------------------------------------------------------------

class Taint(KueueModel):
    key: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    value: str | None = None
    time_added: str | None = None


class Toleration(KueueModel):
    key: str | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class ResourceFlavorSpec(KueueModel):
    node_labels: Annotated[dict[str, str], Field(max_length=8)] | None = None
    node_taints: Annotated[list[Taint], Field(max_length=8)] | None = None
    tolerations: Annotated[list[Toleration], Field(max_length=8)] | None = None
    topology_name: Name | None = None


class ResourceFlavor(Object):
    spec: ResourceFlavorSpec | None = None


# --- WorkloadPriorityClass ---------------------------------------------------------------------

class WorkloadPriorityClass(Object):
    value: Int32
    description: Annotated[str, StringConstraints(max_length=2048)] | None = None


# --- Workload ----------------------------------------------------------------------------------

class PodSet(KueueModel):
    name: Annotated[str, StringConstraints(max_length=63, pattern=DNS1123_LABEL)] | None = None
    count: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    min_count: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None
    template: Obj  # a PodTemplateSpec; requests are checked in `rules`
    topology_request: Obj | None = None  # refused (mpijob.api.trainer.support)


class PriorityClassRef(KueueModel):
    group: Literal[KUEUE_GROUP, SCHEDULING_GROUP]  # type: ignore[valid-type]  # the words of api/names.py
    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    name: Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN)]


class PreemptionGate(KueueModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=63)]


class WorkloadSpec(KueueModel):
    pod_sets: Annotated[list[PodSet], Field(min_length=1, max_length=18)] | None = None
    queue_name: Name | None = None
    priority: Int32 | None = None
    priority_class_ref: PriorityClassRef | None = None
    active: bool | None = None
    maximum_execution_time_seconds: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None
    preemption_gates: Annotated[list[PreemptionGate], Field(max_length=8)] | None = None


class Workload(Object):
    spec: WorkloadSpec | None = None
    status: Obj | None = None


MODELS: dict[str, type[Object]] = {
    "ResourceFlavor": ResourceFlavor,
    "ClusterQueue": ClusterQueue,
    "LocalQueue": LocalQueue,
    "WorkloadPriorityClass": WorkloadPriorityClass,
    "Workload": Workload,
    "Cohort": Cohort,
}
