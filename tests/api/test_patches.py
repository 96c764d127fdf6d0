"""spec.runtimePatches: applied as Trainer's strategic merge of the JobSet spec, checked as its CRD and
webhook check them, and judged field by field with a runtime's verdicts."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import TRAINJOBS
from mpijob.api.core.validation import admit
from mpijob.api.trainer import patches, support, support_rules
from mpijob.api.trainer.plan import resolve
from mpijob.api.trainer.runtimes import bundled

POD = "trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"


def patch(manager: str, rjob: str = "node", pod: dict | None = None, pod_meta: dict | None = None,
          job_meta: dict | None = None, jobset_meta: dict | None = None) -> dict:
    template: dict = {}
    if pod is not None:
        template["spec"] = pod
    if pod_meta is not None:
        template["metadata"] = pod_meta
    rj: dict = {"name": rjob, "template": {"spec": {"template": template}}}
    if job_meta is not None:
        rj["template"]["metadata"] = job_meta
    spec: dict = {"template": {"spec": {"replicatedJobs": [rj]}}}
    if jobset_meta is not None:
        spec["template"]["metadata"] = jobset_meta
    return {"manager": manager, "trainingRuntimeSpec": spec}


def trainjob(*entries: dict, suspend: bool = False) -> dict:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "pi", "namespace": "default", "uid": "u1"},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "suspend": suspend,
                     "trainer": {"numNodes": 2, "command": ["mpirun", "hostname"]},
                     "runtimePatches": list(entries)}}


def pod_spec(runtime: dict, rjob: str) -> dict:
    rj = next(r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == rjob)
    return rj["template"]["spec"]["template"]["spec"]


def test_later_patches_win_maps_merge_and_tolerations_are_replaced():
    rt = bundled()[0]
    first = patch("example.com/a", pod={"nodeSelector": {"disk": "ssd", "zone": "a"},
                                        "tolerations": [{"key": "x", "operator": "Exists"}]})
    second = patch("example.com/b", pod={"nodeSelector": {"zone": "b"},
                                         "tolerations": [{"key": "y", "operator": "Exists"}]})
    out = patches.apply(trainjob(first, second), rt)
    node = pod_spec(out, "node")
    assert node["nodeSelector"] == {"disk": "ssd", "zone": "b"}  # a map merges key by key, the later wins
    assert node["tolerations"] == [{"key": "y", "operator": "Exists"}]  # an atomic list is replaced whole
    assert "nodeSelector" not in pod_spec(out, "launcher")  # only the named replicatedJob
    assert rt == bundled()[0]  # the runtime given is untouched


def test_containers_merge_by_name_keeping_the_runtimes_fields_and_order():
    rt = bundled()[0]
    out = patches.apply(trainjob(patch("example.com/a", rjob="launcher", pod={
        "containers": [{"name": "node", "securityContext": {"runAsUser": 1000}}]})), rt)
    [container] = pod_spec(out, "launcher")["containers"]
    assert container["securityContext"]["runAsUser"] == 1000
    kept = {k: v for k, v in pod_spec(rt, "launcher")["containers"][0].items() if k != "securityContext"}
    assert kept and {k: container[k] for k in kept} == kept  # the runtime's own fields are kept
    assert [r["name"] for r in out["spec"]["template"]["spec"]["replicatedJobs"]] == ["node", "launcher"]


def test_env_merges_by_name_and_volume_mounts_by_mount_path():
    base = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "volumeMounts": [{"name": "x", "mountPath": "/data"}]}
    merged = patches.merge(base, {"env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                                  "volumeMounts": [{"name": "y", "mountPath": "/data"}]})
    assert merged["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]
    assert merged["volumeMounts"] == [{"name": "y", "mountPath": "/data"}]


def test_labels_and_annotations_reach_the_planned_pods_at_every_level():
    tj = trainjob(patch("example.com/a", pod_meta={"labels": {"team": "ml"}, "annotations": {"note": "hi"}},
                        job_meta={"labels": {"job-level": "yes"}}, jobset_meta={"labels": {"set": "s"}}))
    out = patches.apply(tj, bundled()[0])
    assert out["spec"]["template"]["metadata"]["labels"]["set"] == "s"
    plan = resolve(tj, bundled()[0])
    node = next(p for p in plan.pods if p.rjob == "node")
    launcher = next(p for p in plan.pods if p.is_launcher)
    assert node.labels["team"] == "ml" and node.annotations["note"] == "hi"
    assert "team" not in launcher.labels
    assert node.pod_spec.get("nodeSelector") is None


def test_resolve_plans_from_the_patched_runtime():
    tj = trainjob(patch("example.com/a", pod={"nodeSelector": {"disk": "ssd"}, "securityContext": {"fsGroup": 2000}}))
    node = next(p for p in resolve(tj, bundled()[0]).pods if p.rjob == "node")
    assert node.pod_spec["nodeSelector"] == {"disk": "ssd"} and node.fs_group == 2000


@pytest.mark.parametrize("entries,field,words", [
    ([patch(f"example.com/m{i}") for i in range(17)], "spec.runtimePatches", "Too many: 17"),
    ([patch("example.com/a"), patch("example.com/a")], "spec.runtimePatches[1]", "Duplicate value"),
    ([patch("kueue")], "spec.runtimePatches[0].manager", "domain-prefixed path"),
])
def test_the_structure_is_checked_with_the_field_named(entries, field, words):
    with pytest.raises(ApiError) as err:
        admit(TRAINJOBS, trainjob(*entries))
    assert err.value.code == 422
    assert any(c.field == field and words in c.message for c in err.value.causes), err.value.causes


def test_a_manager_is_required():
    with pytest.raises(ApiError) as err:
        admit(TRAINJOBS, trainjob({"trainingRuntimeSpec": {}}))
    assert [c.field for c in err.value.causes] == ["spec.runtimePatches[0].manager"]


def test_patches_change_only_while_suspended():
    old = admit(TRAINJOBS, trainjob(patch("example.com/a", pod={"nodeSelector": {"a": "1"}})))
    new = copy.deepcopy(old)
    new["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"][
        "spec"]["template"]["spec"]["nodeSelector"] = {"a": "2"}
    with pytest.raises(ApiError) as err:
        admit(TRAINJOBS, new, old)
    assert any("only be modified when the TrainJob is suspended" in c.message for c in err.value.causes)
    new["spec"]["suspend"] = True
    assert admit(TRAINJOBS, new, old)["spec"]["runtimePatches"][0]["time"]


def test_time_is_stamped_and_kept_while_the_entry_is_unchanged():
    tj = trainjob(patch("example.com/a"))
    patches.stamp(tj, None, datetime(2026, 5, 1, 15, 20, tzinfo=UTC))
    assert tj["spec"]["runtimePatches"][0]["time"] == "2026-05-01T15:20:00Z"
    again = copy.deepcopy(tj)
    patches.stamp(again, tj, datetime(2026, 6, 1, tzinfo=UTC))
    assert again["spec"]["runtimePatches"][0]["time"] == "2026-05-01T15:20:00Z"
    again["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["metadata"] = {"labels": {"a": "b"}}
    patches.stamp(again, tj, datetime(2026, 6, 1, tzinfo=UTC))
    assert again["spec"]["runtimePatches"][0]["time"] == "2026-06-01T00:00:00Z"


@pytest.mark.parametrize("pod,field,words", [
    ({"volumes": [{"name": "d", "csi": {"driver": "x.example.com"}}]}, f"spec.runtimePatches[0].{POD}.volumes[0]",
     support_rules.UNMOUNTABLE),
    ({"containers": [{"name": "node", "volumeMounts": [{"name": "d", "mountPath": "/d", "subPathExpr": "$(X)"}]}]},
     f"spec.runtimePatches[0].{POD}.containers[0].volumeMounts[0].subPathExpr", "use subPath"),
    ({"initContainers": [{"name": "fetch"}]}, f"spec.runtimePatches[0].{POD}.initContainers", "init containers"),
    ({"schedulingGates": [{"name": "example.com/gate"}]}, f"spec.runtimePatches[0].{POD}.schedulingGates",
     "scheduling gates"),
])
def test_a_patch_is_refused_what_a_runtime_is_refused_in_the_same_words(pod, field, words):
    with pytest.raises(ApiError) as err:
        admit(TRAINJOBS, trainjob(patch("example.com/a", pod=pod)))
    assert any(c.field == field and words in c.message for c in err.value.causes), err.value.causes


def test_honoured_and_warned_patch_fields():
    tj = trainjob(patch("example.com/a", pod={
        "nodeSelector": {"a": "b"}, "serviceAccountName": "sa", "tolerations": [{"operator": "Exists"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}},
        "securityContext": {"runAsUser": 1000, "fsGroup": 1000}, "imagePullSecrets": [{"name": "r"}]},
        pod_meta={"labels": {"a": "b"}}, jobset_meta={"labels": {"a": "b"}}))
    found = support.check("TrainJob", tj)
    assert found.causes == []
    assert sorted(w.split(":")[0] for w in found.warnings) == [
        "spec.runtimePatches[0].trainingRuntimeSpec.template.metadata.labels.a",
        f"spec.runtimePatches[0].{POD}.imagePullSecrets[0].name"]


def test_the_runtime_decides_which_jobs_and_containers_exist():
    rt = bundled()[0]
    causes = patches.runtime_causes(trainjob(patch("example.com/a", rjob="worker")), rt)
    assert [c.field for c in causes] == ["spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name"]
    assert "doesn't exist in the runtime job template" in causes[0].message
    causes = patches.runtime_causes(trainjob(patch("example.com/a", pod={"containers": [{"name": "sidecar"}]})), rt)
    assert [c.field for c in causes] == [f"spec.runtimePatches[0].{POD}.containers[0].name"]


def test_env_for_the_node_container_is_refused_with_the_trainer_fix():
    causes = patches.runtime_causes(trainjob(patch("example.com/a", pod={
        "containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}]})), bundled()[0])
    assert [c.field for c in causes] == [f"spec.runtimePatches[0].{POD}.containers[0].env"]
    assert "spec.trainer.env" in causes[0].message
