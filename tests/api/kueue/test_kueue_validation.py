"""Admission of Kueue objects: upstream-valid samples pass (and stay CRD-valid after defaulting), bad ones
get 422 with a cause on the right field that says what to do."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kueue_samples import (
    FULL_CLUSTER_QUEUE_SPEC,
    cluster_queue,
    cohort,
    crd_errors,
    flavor,
    local_queue,
    priority_class,
    refused_samples,
    valid_samples,
    workload,
)
from mpijob.api.core import resources as r
from mpijob.api.core.errors import ApiError
from mpijob.api.core.validation import admit


def _admit(obj: dict, old: dict | None = None) -> dict:
    res = r.for_kind(obj["apiVersion"], obj["kind"])
    assert res is not None and res.version == "v1beta2"
    return admit(res, obj, old)


def _causes(obj: dict, old: dict | None = None) -> dict[str, str]:
    with pytest.raises(ApiError) as info:
        _admit(obj, old)
    err = info.value
    assert err.code == 422 and err.reason == "Invalid" and err.group == "kueue.x-k8s.io"
    assert err.to_status()["details"]["causes"], "kubectl prints nothing useful without causes"
    return {c.field: c.message for c in err.causes}


@pytest.mark.parametrize("sample", valid_samples(), ids=lambda s: f"{s['kind']}-{s['metadata']['name']}")
def test_upstream_valid_samples_pass_the_crd_schema_and_admission(sample: dict) -> None:
    assert crd_errors(sample) == []
    admitted = _admit(copy.deepcopy(sample))
    assert crd_errors(admitted) == []  # the defaults we add are values the CRD accepts


def test_cluster_queue_defaults_follow_the_crd() -> None:
    spec = _admit(cluster_queue())["spec"]
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["stopPolicy"] == "None"
    assert spec["preemption"] == {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never",
                                  "borrowWithinCohort": {"policy": "Never"}}
    assert spec["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    assert "fairSharing" not in spec  # a weight is defaulted only inside an existing fairSharing
    assert _admit(cluster_queue(fairSharing={}))["spec"]["fairSharing"] == {"weight": 1}


def test_namespace_selector_absent_stays_absent() -> None:
    """nil selects no namespace and {} selects all: defaulting must not turn one into the other."""
    cq = cluster_queue()
    del cq["spec"]["namespaceSelector"]
    assert "namespaceSelector" not in _admit(cq)["spec"]
    assert _admit(cluster_queue())["spec"]["namespaceSelector"] == {}


def test_given_values_are_not_overwritten_by_defaults() -> None:
    spec = _admit(cluster_queue("team-b", **copy.deepcopy(FULL_CLUSTER_QUEUE_SPEC)))["spec"]
    assert spec["queueingStrategy"] == "StrictFIFO" and spec["stopPolicy"] == "Hold"
    assert spec["preemption"]["reclaimWithinCohort"] == "Any"
    assert spec["fairSharing"] == {"weight": "2"}


def test_local_queue_and_workload_defaults() -> None:
    assert _admit(local_queue())["spec"]["stopPolicy"] == "None"
    wl = workload()
    del wl["spec"]["active"]
    for ps in wl["spec"]["podSets"]:
        del ps["count"]
    wl["spec"]["podSets"] = wl["spec"]["podSets"][:1]
    del wl["spec"]["podSets"][0]["name"]
    wl["status"] = {}
    spec = _admit(wl)["spec"]
    assert spec["active"] is True
    assert spec["podSets"][0]["name"] == "main" and spec["podSets"][0]["count"] == 1


def test_workload_status_written_by_the_controller_is_accepted() -> None:
    wl = workload()
    wl["status"]["conditions"].append({"type": "Evicted", "status": "True", "reason": "Preempted",
                                       "message": "Preempted to accommodate a workload (UID: x) due to "
                                                  "prioritization in the ClusterQueue",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"})
    wl["status"]["requeueState"] = {"count": 1}
    assert _admit(wl)["status"]["requeueState"] == {"count": 1}


def _with(obj: dict, path: str, value: Any) -> dict:
    """A copy of obj with the dotted path (list indexes as numbers) set to value."""
    out = copy.deepcopy(obj)
    node: Any = out
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value
    return out


RG = "spec.resourceGroups.0"
Q0 = f"{RG}.flavors.0.resources.0"

BAD: list[tuple[str, dict, str, str]] = [
    # (id, object, field in the cause, words the message must contain)
    ("unknown-spec-field", _with(cluster_queue(), "spec.cohrt", "x"), "spec.cohrt", "unknown field"),
    ("unknown-field-suggests", _with(cluster_queue(), f"{Q0}.nominalQuotas", 1),
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuotas", 'did you mean "nominalQuota"'),
    ("v1beta1-name-in-v1beta2", _with(cluster_queue(), "spec.cohort", "research"), "spec.cohort", "cohortName"),
    ("strategy-enum", _with(cluster_queue(), "spec.queueingStrategy", "FIFO"), "spec.queueingStrategy",
     'supported values: "StrictFIFO", "BestEffortFIFO"'),
    ("within-cq-enum", _with(cluster_queue(), "spec.preemption", {"withinClusterQueue": "Always"}),
     "spec.preemption.withinClusterQueue", "LowerOrNewerEqualPriority"),
    ("reclaim-enum", _with(cluster_queue(), "spec.preemption", {"reclaimWithinCohort": "Lower"}),
     "spec.preemption.reclaimWithinCohort", '"Never", "LowerPriority", "Any"'),
    ("stop-policy-enum", _with(cluster_queue(), "spec.stopPolicy", "Drain"), "spec.stopPolicy", "HoldAndDrain"),
    ("quota-not-quantity", _with(cluster_queue(), f"{Q0}.nominalQuota", "lots"),
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "quantity"),
    ("quota-float", _with(cluster_queue(), f"{Q0}.nominalQuota", 1.5),
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "quantity"),
    ("quota-missing", _with(cluster_queue(), f"{Q0}", {"name": "cpu"}),
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "Required value"),
    ("quota-negative", _with(cluster_queue(), f"{Q0}.nominalQuota", "-1"),
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "greater than or equal to 0"),
    ("resource-order", _with(cluster_queue(), f"{Q0}.name", "memory"),
     "spec.resourceGroups[0].flavors[0].resources[0].name", "must match the name in coveredResources"),
    ("resource-count", _with(cluster_queue(), f"{RG}.coveredResources", ["cpu", "memory"]),
     "spec.resourceGroups[0].flavors[0].resources", "same number of resources as the coveredResources"),
    ("flavor-name", _with(cluster_queue(), f"{RG}.flavors.0.name", "Default_Flavor"),
     "spec.resourceGroups[0].flavors[0].name", "RFC 1123"),
    ("borrowing-without-cohort", _with(cluster_queue(), f"{Q0}.borrowingLimit", 2),
     "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit", "must be nil when cohort is empty"),
    ("lending-above-nominal", _with(cluster_queue(cohortName="c"), f"{Q0}.lendingLimit", 17),
     "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", "less than or equal to the nominalQuota"),
    ("too-many-groups", _with(cluster_queue(), "spec.resourceGroups",
                              [{"coveredResources": [f"r{i}"], "flavors": [
                                  {"name": f"f{i}", "resources": [{"name": f"r{i}", "nominalQuota": 1}]}]}
                               for i in range(17)]), "spec.resourceGroups", "at most 16"),
    ("too-many-flavors", _with(cluster_queue(), f"{RG}.flavors",
                               [{"name": f"f{i}", "resources": [{"name": "cpu", "nominalQuota": 1}]}
                                for i in range(65)]), "spec.resourceGroups[0].flavors", "at most 64"),
    ("duplicate-covered-resource", _with(cluster_queue(), "spec.resourceGroups",
                                         [{"coveredResources": ["cpu"], "flavors": [
                                             {"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]}]},
                                          {"coveredResources": ["cpu"], "flavors": [
                                              {"name": "b", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}]),
     "spec.resourceGroups[1].coveredResources[0]", "Duplicate value"),
    ("duplicate-flavor", _with(cluster_queue(), f"{RG}.flavors", [
        {"name": "a", "resources": [{"name": r, "nominalQuota": 1} for r in ("cpu", "memory", "nvidia.com/gpu")]}] * 2),
     "spec.resourceGroups[0].flavors[1].name", "Duplicate value"),
    ("bad-resource-name", _with(cluster_queue(), f"{RG}.coveredResources.0", "cpu cores"),
     "spec.resourceGroups[0].coveredResources[0]", "qualified name"),
    ("borrow-policy-without-reclaim", _with(cluster_queue(), "spec.preemption",
                                            {"borrowWithinCohort": {"policy": "LowerPriority"}}),
     "spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
    ("selector-operator", _with(cluster_queue(), "spec.namespaceSelector",
                                {"matchExpressions": [{"key": "team", "operator": "Equals", "values": ["a"]}]}),
     "spec.namespaceSelector.matchExpressions[0].operator", "DoesNotExist"),
    ("selector-in-without-values", _with(cluster_queue(), "spec.namespaceSelector",
                                         {"matchExpressions": [{"key": "team", "operator": "In"}]}),
     "spec.namespaceSelector.matchExpressions[0].values", "must be specified"),
    ("weight-negative", _with(cluster_queue(), "spec.fairSharing", {"weight": "-1"}),
     "spec.fairSharing.weight", "greater than or equal to 0"),
    ("cohort-name-pattern", _with(cluster_queue(), "spec.cohortName", "Team A"), "spec.cohortName", "RFC 1123"),
    ("lq-cluster-queue-type", _with(local_queue(), "spec.clusterQueue", 7), "spec.clusterQueue", "must be a string"),
    ("lq-unknown", _with(local_queue(), "spec.queue", "x"), "spec.queue", "unknown field"),
    ("wpc-value-missing", {k: v for k, v in priority_class().items() if k != "value"}, "value", "Required value"),
    ("wpc-value-string", _with(priority_class(), "value", "1000"), "value", "must be an integer"),
    ("wpc-value-int32", _with(priority_class(), "value", 2**31), "value", "less than or equal to 2147483647"),
    ("rf-taint-effect", _with(flavor(), "spec.nodeTaints", [{"key": "gpu", "effect": "Never"}]),
     "spec.nodeTaints[0].effect", "NoExecute"),
    ("rf-too-many-labels", _with(flavor(), "spec.nodeLabels", {f"k{i}": "v" for i in range(9)}),
     "spec.nodeLabels", "at most 8"),
    ("rf-topology-without-labels", _with(flavor(), "spec.topologyName", "default"), "spec",
     "at least one nodeLabel"),
    ("wl-podset-count", _with(workload(), "spec.podSets.1.count", -1), "spec.podSets[1].count",
     "greater than or equal to 0"),
    ("wl-podset-duplicate", _with(workload(), "spec.podSets.1.name", "launcher"), "spec.podSets[1].name",
     "Duplicate value"),
    ("wl-podset-template-missing", _with(workload(), "spec.podSets.1", {"name": "node", "count": 1}),
     "spec.podSets[1].template", "Required value"),
    ("wl-request-quantity", _with(workload(), "spec.podSets.1.template.spec.containers.0.resources.requests.cpu",
                                  "two"), "spec.podSets[1].template.spec.containers[0].resources.requests[cpu]",
     "quantity"),
    ("wl-priority-class-kind", _with(workload(), "spec.priorityClassRef.kind", "PriorityClass"),
     "spec.priorityClassRef.kind", "only the WorkloadPriorityClass kind"),
    ("wl-priority-missing", _with(workload(), "spec.priority", None), "spec.priority", "should not be nil"),
    ("wl-active-type", _with(workload(), "spec.active", "yes"), "spec.active", "boolean"),
    ("wl-too-many-podsets", _with(workload(), "spec.podSets",
                                  [{"name": f"p{i}", "template": {}} for i in range(19)]),
     "spec.podSets", "at most 18"),
    ("cohort-own-parent", cohort("a", parentName="a"), "spec.parentName", "own parent"),
    ("cohort-borrowing-without-parent", cohort("a", resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
        {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1, "borrowingLimit": 1}]}]}]),
     "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit", "must be nil when parent is empty"),
]


@pytest.mark.parametrize(("obj", "field", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_objects_get_422_naming_the_field(obj: dict, field: str, words: str) -> None:
    causes = _causes(obj)
    assert field in causes, causes
    assert words in causes[field]
    assert "Invalid value" in causes[field] or "Required" in causes[field] or "unknown field" in causes[field] \
        or "Unsupported" in causes[field] or "Duplicate" in causes[field] or "Too long" in causes[field]


SCHEMA_REFUSED = ("unknown-spec-field", "unknown-field-suggests", "v1beta1-name-in-v1beta2", "strategy-enum",
                  "within-cq-enum", "reclaim-enum", "stop-policy-enum", "quota-not-quantity", "quota-float",
                  "quota-missing", "flavor-name", "too-many-groups", "too-many-flavors", "cohort-name-pattern",
                  "lq-cluster-queue-type", "lq-unknown", "wpc-value-missing", "wpc-value-string",
                  "rf-too-many-labels", "wl-podset-count", "wl-podset-template-missing", "wl-active-type",
                  "wl-too-many-podsets")


@pytest.mark.parametrize("case", [b for b in BAD if b[0] in SCHEMA_REFUSED], ids=lambda b: b[0])
def test_what_the_schema_part_refuses_the_upstream_crd_schema_refuses_too(case: tuple) -> None:
    """The rest of BAD are Kueue webhook or CEL rules, which a JSON-schema check of the CRD cannot see."""
    assert crd_errors(case[1]) != []


def test_local_queue_cluster_queue_is_immutable() -> None:
    old = _admit(local_queue())
    moved = _with(old, "spec.clusterQueue", "team-b")
    assert "field is immutable" in _causes(moved, old)["spec.clusterQueue"]
    assert _admit(copy.deepcopy(old), old)["spec"]["clusterQueue"] == "team-a"


@pytest.mark.parametrize(("obj", "field"), [x[1:] for x in refused_samples()], ids=[x[0] for x in refused_samples()])
def test_fields_kueue_acts_on_and_the_local_cluster_does_not_are_refused(obj: dict, field: str) -> None:
    """Valid upstream (not a schema error), and once accepted-and-ignored: now a 422 naming the field, saying
    what Kueue would do differently and what to do instead."""
    assert crd_errors(obj) == []
    message = _causes(obj)[field]
    assert message.startswith("Forbidden: ") and "local cluster" in message, message
    assert any(fix in message for fix in ("remove ", "use ", "put ", "request them", "give it")), message


def test_a_refused_field_set_to_what_the_local_cluster_does_anyway_is_honoured() -> None:
    """Kueue's defaults for flavorFungibility are what the scheduler does: a stored queue, defaults filled in,
    can be sent back unchanged (`kubectl get -o yaml | kubectl apply -f -`)."""
    stored = _admit(cluster_queue(admissionScope={"admissionMode": "NoAdmissionFairSharing"}))
    assert stored["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    assert _admit(_with(stored, "metadata", {"name": "team-copy"}))["spec"] == stored["spec"]  # created as sent
    assert _admit(flavor(nodeTaints=[{"key": "gpu", "effect": "PreferNoSchedule"}]))["spec"]["nodeTaints"]
    assert "spec.flavorFungibility.whenCanBorrow" in _causes(_with(stored, "spec.flavorFungibility.whenCanBorrow",
                                                                    "TryNextFlavor"), stored)


def test_a_status_write_to_an_object_stored_before_a_rule_passes_and_a_spec_change_does_not() -> None:
    old = _admit(cluster_queue())
    old["spec"]["flavorFungibility"]["whenCanBorrow"] = "TryNextFlavor"  # as an earlier server stored it
    assert _admit(_with(old, "status", {"pendingWorkloads": 1}), old)["status"] == {"pendingWorkloads": 1}
    assert _admit(_with(old, "metadata", {"name": "team-a", "labels": {"a": "b"}}), old)
    causes = _causes(_with(old, "spec.queueingStrategy", "StrictFIFO"), old)
    assert list(causes) == ["spec.flavorFungibility.whenCanBorrow"], causes


def test_every_cause_names_a_fix_or_the_accepted_values() -> None:
    """Messages carry the value given and what would be accepted, not just 'invalid'."""
    for _, obj, field, _ in BAD:
        message = _causes(obj)[field]
        assert len(message) > 25, message
