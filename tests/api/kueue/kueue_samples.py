"""Upstream-valid Kueue objects (v1beta2 and v1beta1) and a checker against the upstream CRD schemas.

The CRDs are loaded from ../shared/upstream/kueue at test time (never copied into the package). Every
object of `valid_samples` must pass both that schema and the local cluster's admission; every object of
`refused_samples` passes the schema and is refused by the local cluster (`mpijob.api.trainer.support`), which
does not do what Kueue would do with the field it names.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import jsonschema
import yaml

from support import UPSTREAM

KUEUE = "kueue.x-k8s.io"
V2, V1 = f"{KUEUE}/v1beta2", f"{KUEUE}/v1beta1"
PLURALS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues",
           "WorkloadPriorityClass": "workloadpriorityclasses", "Workload": "workloads", "Cohort": "cohorts"}


@cache
def crd_schema(kind: str, version: str) -> dict:
    crd = yaml.safe_load((UPSTREAM / "kueue" / f"kueue.x-k8s.io_{PLURALS[kind]}.yaml").read_text())
    (found,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return _structural(found["schema"]["openAPIV3Schema"])


def _structural(node: Any) -> Any:
    """A CRD schema as JSON Schema: int-or-string as a type union, unknown fields refused (as Strict does)."""
    if isinstance(node, list):
        return [_structural(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _structural(v) for k, v in node.items()
           if not (k == "description" and isinstance(v, str)) and k != "x-kubernetes-validations"}
    if out.pop("x-kubernetes-int-or-string", False):
        out.pop("anyOf", None)
        out["type"] = ["integer", "string"]
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out \
            and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def crd_errors(obj: dict, version: str = "v1beta2") -> list[str]:
    """Why the upstream CRD schema at `version` refuses `obj` ([] when it accepts it)."""
    body = json.loads(json.dumps(obj))
    schema = crd_schema(obj["kind"], version)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in jsonschema.Draft7Validator(schema).iter_errors(body)]


def flavor(name: str = "default-flavor", **spec: Any) -> dict:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(name: str = "team-a", **spec: Any) -> dict:
    base = {
        "namespaceSelector": {},
        "resourceGroups": [{
            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{"name": "default-flavor", "resources": [
                {"name": "cpu", "nominalQuota": 16}, {"name": "memory", "nominalQuota": "64Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
        }],
    }
    base.update(spec)
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": base}


FULL_CLUSTER_QUEUE_SPEC: dict = {
    "cohortName": "research",
    "queueingStrategy": "StrictFIFO",
    "stopPolicy": "Hold",
    "namespaceSelector": {"matchLabels": {"team": "a"},
                          "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]}]},
    "resourceGroups": [
        {"coveredResources": ["cpu", "memory"],
         "flavors": [{"name": "default-flavor", "resources": [
             {"name": "cpu", "nominalQuota": "16", "borrowingLimit": "8", "lendingLimit": 4},
             {"name": "memory", "nominalQuota": "64Gi", "lendingLimit": "32Gi"}]}]},
        {"coveredResources": ["nvidia.com/gpu"],
         "flavors": [{"name": "a100",
                      "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 0}]},
                     {"name": "t4", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}]}]},
    ],
    "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                   "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100}},
    "fairSharing": {"weight": "2"},
    "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},  # what it does
    "admissionScope": {"admissionMode": "NoAdmissionFairSharing"},
    "admissionChecksStrategy": {"admissionChecks": [{"name": "prov", "onFlavors": ["a100"]}]},
}


def local_queue(name: str = "user-queue", namespace: str = "default", cq: str = "team-a", **spec: Any) -> dict:
    return {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq, **spec}}


def priority_class(name: str = "high", value: int = 1000) -> dict:
    return {"apiVersion": V2, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value,
            "description": "jobs that page someone"}


def workload(name: str = "trainjob-pi-1a2b3", namespace: str = "default", nodes: int = 2) -> dict:
    """A Workload shaped as the queueing controller writes it for a TrainJob (k-common.md)."""
    def pod_set(ps: str, count: int) -> dict:
        return {"name": ps, "count": count, "template": {"spec": {"containers": [{
            "name": "node", "image": "mpioperator/base",
            "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": 1}}}]}}}

    return {
        "apiVersion": V2, "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/job-uid": "0b7c5b1e"},
                     "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                          "name": "pi", "uid": "0b7c5b1e", "controller": True}]},
        "spec": {"queueName": "user-queue", "priority": 1000, "active": True,
                 "priorityClassRef": {"group": KUEUE, "kind": "WorkloadPriorityClass", "name": "high"},
                 "podSets": [pod_set("launcher", 1), pod_set("node", nodes)]},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                            "message": "Quota reserved in ClusterQueue team-a",
                            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1},
                           {"type": "Admitted", "status": "True", "reason": "Admitted",
                            "message": "The workload is admitted", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "admission": {"clusterQueue": "team-a", "podSetAssignments": [
                {"name": "launcher", "flavors": {"cpu": "default-flavor"}, "resourceUsage": {"cpu": "2"}, "count": 1},
                {"name": "node", "flavors": {"cpu": "default-flavor", "nvidia.com/gpu": "default-flavor"},
                 "resourceUsage": {"cpu": "4", "nvidia.com/gpu": "2"}, "count": nodes}]},
        },
    }


def cohort(name: str = "research", **spec: Any) -> dict:
    return {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def valid_samples() -> list[dict]:
    """One of each kind, plus the richest shapes PARITY §4 lists."""
    return [
        flavor(),
        flavor("a100", nodeLabels={"gpu": "a100"},
               nodeTaints=[{"key": "gpu", "value": "a100", "effect": "PreferNoSchedule"}],
               tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]),
        cluster_queue(),
        cluster_queue("team-b", **copy.deepcopy(FULL_CLUSTER_QUEUE_SPEC)),
        local_queue(),
        local_queue("team-b-queue", cq="team-b", stopPolicy="HoldAndDrain", fairSharing={"weight": 3}),
        priority_class(),
        workload(),
        cohort(),
        cohort("research-east", fairSharing={"weight": "500m"}),
    ]


def _pod_set_with(**template_spec: Any) -> dict:
    wl = workload()
    wl["spec"]["podSets"][1]["template"]["spec"].update(template_spec)
    return wl


def _with_spec(obj: dict, **spec: Any) -> dict:
    out = copy.deepcopy(obj)
    out["spec"].update(spec)
    return out


def refused_samples() -> list[tuple[str, dict, str]]:
    """(id, a CRD-valid object, the field the local cluster refuses in it)."""
    wl = workload()
    two_containers = copy.deepcopy(wl["spec"]["podSets"][1]["template"]["spec"]["containers"][0])
    two_containers["name"] = "sidecar"
    return [
        ("rf-noschedule-taint", flavor("a100", nodeTaints=[{"key": "gpu", "effect": "NoSchedule"}]),
         "spec.nodeTaints[0].effect"),
        ("cq-try-next-flavor-before-borrowing",
         cluster_queue(flavorFungibility={"whenCanBorrow": "TryNextFlavor"}), "spec.flavorFungibility.whenCanBorrow"),
        ("cq-stop-at-preemption", cluster_queue(flavorFungibility={"whenCanPreempt": "MayStopSearch"}),
         "spec.flavorFungibility.whenCanPreempt"),
        ("cq-fungibility-preference", cluster_queue(flavorFungibility={
            "whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
            "preference": "PreemptionOverBorrowing"}), "spec.flavorFungibility.preference"),
        ("cq-admission-fair-sharing", cluster_queue(admissionScope={"admissionMode": "UsageBasedAdmissionFairSharing"}),
         "spec.admissionScope.admissionMode"),
        ("cq-concurrent-admission", cluster_queue(concurrentAdmissionPolicy={"migration": {
            "mode": "TryPreferredFlavors", "constraints": {"lastAcceptableFlavorName": "default-flavor"}}}),
         "spec.concurrentAdmissionPolicy"),
        ("cohort-parent", cohort("research-east", parentName="research"), "spec.parentName"),
        ("cohort-quota", cohort(resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]),
         "spec.resourceGroups"),
        ("wl-min-count", _with_spec(wl, podSets=[wl["spec"]["podSets"][0],
                                                 {**wl["spec"]["podSets"][1], "minCount": 1}]),
         "spec.podSets[1].minCount"),
        ("wl-topology-request", _with_spec(wl, podSets=[wl["spec"]["podSets"][0], {
            **wl["spec"]["podSets"][1], "topologyRequest": {"required": "cloud.provider.com/rack"}}]),
         "spec.podSets[1].topologyRequest"),
        ("wl-max-execution-time", _with_spec(wl, maximumExecutionTimeSeconds=600), "spec.maximumExecutionTimeSeconds"),
        ("wl-preemption-gates", _with_spec(wl, preemptionGates=[{"name": "example.com/wait"}]), "spec.preemptionGates"),
        ("wl-init-containers", _pod_set_with(initContainers=[{"name": "fetch",
                                                              "resources": {"requests": {"cpu": "8"}}}]),
         "spec.podSets[1].template.spec.initContainers"),
        ("wl-overhead", _pod_set_with(overhead={"cpu": "250m"}), "spec.podSets[1].template.spec.overhead"),
        ("wl-node-selector", _pod_set_with(nodeSelector={"gpu": "a100"}), "spec.podSets[1].template.spec.nodeSelector"),
        ("wl-node-affinity", _pod_set_with(affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}]}}}),
         "spec.podSets[1].template.spec.affinity.nodeAffinity"),
        ("wl-resource-claims", _pod_set_with(resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}]),
         "spec.podSets[1].template.spec.resourceClaims"),
        ("wl-second-container", _pod_set_with(containers=[
            wl["spec"]["podSets"][1]["template"]["spec"]["containers"][0], two_containers]),
         "spec.podSets[1].template.spec.containers[1]"),
    ]
