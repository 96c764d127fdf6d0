"""The scheduler's input types. They are Kueue's objects in typed form, so they live with the Kueue API
(`mpijob.api.kueue.snapshot`); this module names them for the scheduler and its callers."""

from mpijob.api.kueue.snapshot import (
    Assignment,
    ClusterQueue,
    FlavorQuotas,
    PodSet,
    PodSetAssignment,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceGroup,
    ResourceQuota,
    Resources,
    Snapshot,
    StopPolicy,
    Workload,
)

__all__ = ["Assignment", "ClusterQueue", "FlavorQuotas", "PodSet", "PodSetAssignment", "PreemptionPolicy",
           "QueueingStrategy", "ResourceGroup", "ResourceQuota", "Resources", "Snapshot", "StopPolicy", "Workload"]
