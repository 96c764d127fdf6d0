"""v1beta1 ↔ v1beta2: every renamed field, both directions, and round trips that keep objects CRD-valid."""

from __future__ import annotations

import copy

import pytest
from kueue_samples import (
    FULL_CLUSTER_QUEUE_SPEC,
    V1,
    V2,
    cluster_queue,
    crd_errors,
    valid_samples,
    workload,
)
from mpijob.api.core import resources as r
from mpijob.api.core.errors import ApiError
from mpijob.api.core.validation import admit
from mpijob.api.kueue.conversion import down, from_storage, is_converted, to_storage, up


def test_cluster_queue_cohort_is_cohort_name_in_v1beta2() -> None:
    cq = cluster_queue(cohortName="research")
    old = down(cq)
    assert old["apiVersion"] == V1 and old["spec"]["cohort"] == "research" and "cohortName" not in old["spec"]
    assert up(old) == cq
    assert cq["spec"]["cohortName"] == "research"  # conversion copies, never mutates its input


def test_v1beta1_admission_checks_become_a_strategy() -> None:
    old = down(cluster_queue())
    old["spec"]["admissionChecks"] = ["prov", "multikueue"]
    new = up(old)
    assert new["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}, {"name": "multikueue"}]}
    assert "admissionChecks" not in new["spec"] and crd_errors(new) == []


def test_v1beta1_admission_checks_and_strategy_together_are_refused() -> None:
    old = down(cluster_queue())
    old["spec"]["admissionChecks"] = ["prov"]
    old["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "other"}]}
    with pytest.raises(ApiError) as info:
        up(old)
    assert info.value.code == 422 and "not both" in info.value.causes[0].message


@pytest.mark.parametrize(("kind_sample", "section", "field"), [
    (cluster_queue(cohortName="research"), "spec", "cohortName"),
    (workload(), "spec", "priorityClassRef"),
])
def test_v1beta2_only_fields_in_a_v1beta1_body_are_unknown(kind_sample: dict, section: str, field: str) -> None:
    body = copy.deepcopy(kind_sample)
    body["apiVersion"] = V1
    with pytest.raises(ApiError) as info:
        up(body)
    (cause,) = info.value.causes
    assert cause.field == f"{section}.{field}" and "exists only in kueue.x-k8s.io/v1beta2" in cause.message


@pytest.mark.parametrize(("key", "old_value"), [("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")])
def test_v1beta1_only_fungibility_values_become_may_stop_search(key: str, old_value: str) -> None:
    old = down(cluster_queue())
    old["spec"]["flavorFungibility"] = {key: old_value}
    assert crd_errors(old, "v1beta1") == []
    assert up(old)["spec"]["flavorFungibility"] == {key: "MayStopSearch"}


def test_local_queue_flavor_usage_renames_both_ways() -> None:
    usage = [{"name": "default-flavor", "resources": [{"name": "cpu", "total": "4"}]}]
    lq = {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "default"},
          "spec": {"clusterQueue": "team-a"}, "status": {"flavorsUsage": usage, "pendingWorkloads": 1}}
    old = down(lq)
    assert old["status"] == {"flavorUsage": usage, "pendingWorkloads": 1}
    assert crd_errors(old, "v1beta1") == []
    old["status"]["flavors"] = [{"name": "default-flavor", "resources": ["cpu"]}]  # v1beta1 only
    assert up(old) == lq


@pytest.mark.parametrize(("group", "kind", "source"), [
    ("kueue.x-k8s.io", "WorkloadPriorityClass", "kueue.x-k8s.io/workloadpriorityclass"),
    ("scheduling.k8s.io", "PriorityClass", "scheduling.k8s.io/priorityclass"),
])
def test_workload_priority_class_ref_is_source_and_name_in_v1beta1(group: str, kind: str, source: str) -> None:
    wl = workload()
    wl["spec"]["priorityClassRef"] = {"group": group, "kind": kind, "name": "high"}
    old = down(wl)
    assert old["spec"]["priorityClassSource"] == source and old["spec"]["priorityClassName"] == "high"
    assert "priorityClassRef" not in old["spec"]
    assert up(old) == wl


def test_workload_execution_time_typo_is_kept_in_v1beta1() -> None:
    wl = workload()
    wl["status"]["accumulatedPastExecutionTimeSeconds"] = 42
    old = down(wl)
    assert old["status"]["accumulatedPastExexcutionTimeSeconds"] == 42
    assert up(old)["status"]["accumulatedPastExecutionTimeSeconds"] == 42


@pytest.mark.parametrize("sample", valid_samples(), ids=lambda s: f"{s['kind']}-{s['metadata']['name']}")
def test_round_trip_through_v1beta1_is_lossless_and_valid_in_both_schemas(sample: dict) -> None:
    stored = admit(r.for_kind(V2, sample["kind"]), copy.deepcopy(sample))
    old = down(stored)
    assert old["apiVersion"] == V1
    assert crd_errors(old, "v1beta1") == []
    assert up(old) == stored


def test_a_v1beta1_write_is_admitted_as_v1beta2() -> None:
    v1_cq = r.for_kind(V1, "ClusterQueue")
    assert v1_cq is not None and v1_cq.version == "v1beta1" and is_converted(v1_cq)
    body = down(cluster_queue("team-b", **copy.deepcopy(FULL_CLUSTER_QUEUE_SPEC)))
    res, obj = to_storage(v1_cq, body)
    assert res is r.CLUSTER_QUEUES and obj["apiVersion"] == V2
    stored = admit(res, obj)
    assert stored["spec"]["cohortName"] == "research"
    assert from_storage(v1_cq, stored)["spec"]["cohort"] == "research"
    assert from_storage(r.CLUSTER_QUEUES, stored) is stored  # storage-version requests are not copied


def test_other_groups_are_never_converted() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert not is_converted(r.PODS) and to_storage(r.PODS, pod) == (r.PODS, pod)
    assert from_storage(r.TRAINJOBS, pod) is pod


def test_registry_serves_both_versions_with_one_storage() -> None:
    assert r.groups()["kueue.x-k8s.io"] == ["v1beta2", "v1beta1"]  # preferred first
    for plural in ("resourceflavors", "clusterqueues", "localqueues", "workloadpriorityclasses", "workloads",
                   "cohorts"):
        new, old = r.lookup("kueue.x-k8s.io", "v1beta2", plural), r.lookup("kueue.x-k8s.io", "v1beta1", plural)
        assert new is not None and old is not None and new.key == old.key
        assert r.storage(old) is new and r.for_kind(V1, old.kind) is old and r.for_kind(V2, new.kind) is new
    assert r.lookup("kueue.x-k8s.io", "v1beta2", "localqueues").namespaced
    assert not r.lookup("kueue.x-k8s.io", "v1beta2", "clusterqueues").namespaced
    assert r.CLUSTER_QUEUES.short_names == ("cq",) and "lq" in r.LOCAL_QUEUES.short_names
    assert r.RESOURCE_FLAVORS.short_names == ("flavor", "flavors", "rf")
    assert r.WORKLOAD_PRIORITY_CLASSES.short_names == ("wpc",)
    assert "status" in r.WORKLOADS.subresources and "status" not in r.RESOURCE_FLAVORS.subresources
    assert len(r.served_versions()) == len({x.key for x in r.ALL})
