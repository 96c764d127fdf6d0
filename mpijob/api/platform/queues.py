"""The bundle's Kueue objects: flavors, one ClusterQueue per team in one cohort, their LocalQueues, and
three priorities.

Teams share one cohort, so a team's unused quota is lent to the others and reclaimed when its own jobs
come back (`reclaimWithinCohort: Any`); inside a queue a higher-priority job preempts lower ones. With
fair sharing (the default, Kueue's `fairSharing.enable`), borrowed capacity goes to the team with the
lowest weighted share; Kueue forbids `borrowWithinCohort` there, so it is set only in classic mode, where
a borrowing job may preempt another team's low-priority jobs.
"""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    Resource,
)
from mpijob.api.platform.options import CPU, FAIR, GPU, MEMORY, Options, Team
from mpijob.api.platform.runtimes import PART_OF

DEFAULT_FLAVOR = "default-flavor"  # the flavor of CPU, memory and every non-GPU resource (Kueue's usual name)
# Kueue's own default for a namespace's unlabelled jobs (LocalQueueDefaulting), so jobs need no queue label
LOCAL_QUEUE = names.KUEUE_DEFAULT_LOCAL_QUEUE
PRIORITIES = (("mpi-low", 100, "Preemptible work: the first to give way, also to other teams' borrowing jobs"),
              ("mpi-normal", 1000, "The default for training jobs"),
              ("mpi-high", 10000, "Deadlines: preempts lower-priority jobs of its own queue"))
LOW_PRIORITY = PRIORITIES[0][1]
GPU_FLAVOR_PREFIX = "gpu-"


def _labels() -> dict[str, str]:
    return {names.LABEL_PART_OF: PART_OF}


def gpu_flavor(gpu_type: str) -> str:
    return f"{GPU_FLAVOR_PREFIX}{gpu_type}"


def flavors(opts: Options) -> list[Obj]:
    """The CPU flavor, then one per GPU type on the nodes labelled with that GPU product."""
    out = [_object(RESOURCE_FLAVORS, DEFAULT_FLAVOR, {})]
    for gpu_type in opts.gpu_types:
        out.append(_object(RESOURCE_FLAVORS, gpu_flavor(gpu_type),
                           {"nodeLabels": {names.LABEL_GPU_PRODUCT: gpu_product(gpu_type)}}))
    return out


def gpu_product(gpu_type: str) -> str:
    """The `nvidia.com/gpu.product` value GPU feature discovery writes, as far as the type says it:
    `a100` → `NVIDIA-A100` (real nodes say more, e.g. `NVIDIA-A100-SXM4-80GB`: edit nodeLabels to match)."""
    return f"NVIDIA-{gpu_type.upper()}"


def cluster_queue(team: Team, opts: Options) -> Obj:
    quota = opts.quota(team)
    plain = [r for r in sorted(quota, key=_resource_order) if r != GPU]
    groups: list[Obj] = [{"coveredResources": plain, "flavors": [
        {"name": DEFAULT_FLAVOR, "resources": [{"name": r, "nominalQuota": quota[r]} for r in plain]}]}]
    if opts.gpu_types and GPU in quota:
        groups.append({"coveredResources": [GPU], "flavors": [
            {"name": gpu_flavor(t), "resources": [{"name": GPU, "nominalQuota": quota[GPU]}]}
            for t in opts.gpu_types]})
    preemption: Obj = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    spec: Obj = {
        "namespaceSelector": {"matchLabels": {names.LABEL_NAMESPACE_NAME: team.namespace}},
        "cohortName": opts.cohort,
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": groups,
        "preemption": preemption,
    }
    if opts.preemption == FAIR:
        spec["fairSharing"] = {"weight": opts.weight(team)}
    else:
        preemption["borrowWithinCohort"] = {"policy": "LowerPriority", "maxPriorityThreshold": LOW_PRIORITY}
    return _object(CLUSTER_QUEUES, team.name, spec)


def _resource_order(resource: str) -> tuple[int, str]:
    return ({CPU: 0, MEMORY: 1}.get(resource, 2), resource)


def local_queue(team: Team) -> Obj:
    obj = _object(LOCAL_QUEUES, LOCAL_QUEUE, {"clusterQueue": team.name})
    obj["metadata"]["namespace"] = team.namespace
    return obj


def priority_classes() -> list[Obj]:
    return [{"apiVersion": WORKLOAD_PRIORITY_CLASSES.api_version, "kind": WORKLOAD_PRIORITY_CLASSES.kind,
             "metadata": {"name": name, "labels": _labels()}, "value": value, "description": why}
            for name, value, why in PRIORITIES]


def render(opts: Options) -> list[Obj]:
    """Flavors, priorities, then each team's ClusterQueue and LocalQueue."""
    out = [*flavors(opts), *priority_classes()]
    out += [cluster_queue(t, opts) for t in opts.teams]
    out += [local_queue(t) for t in opts.teams]
    return out


def _object(res: Resource, name: str, spec: Obj) -> Obj:
    return {"apiVersion": res.api_version, "kind": res.kind,
            "metadata": {"name": name, "labels": _labels()}, "spec": spec}
