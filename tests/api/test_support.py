"""The field rules: a refused field is a 422 cause naming it, a warned one a warning naming it, and an
honoured one neither."""

from __future__ import annotations

import copy

import pytest
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CLUSTER_TRAINING_RUNTIMES, TRAINJOBS
from mpijob.api.core.validation import admit
from mpijob.api.trainer.runtimes import bundled
from mpijob.api.trainer.support import check, rule_for

POD = "spec.template.spec.replicatedJobs[1].template.spec.template.spec"


def _job(**spec: object) -> dict:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "j"},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, **spec}}


def _runtime() -> dict:
    return copy.deepcopy(bundled()[0])


def _causes(res: object, obj: dict) -> dict[str, str]:
    with pytest.raises(ApiError) as err:
        admit(res, obj)  # type: ignore[arg-type]
    assert err.value.code == 422
    return {c.field: c.message for c in err.value.causes}


def test_the_nearest_rule_covers_a_field() -> None:
    assert rule_for("TrainJob", "spec.trainer.env[].value")[0] == "spec.trainer.env"
    assert rule_for("TrainJob", "spec.trainer.env[].valueFrom.secretKeyRef.name")[0] == "spec.trainer.env[].valueFrom"
    assert rule_for("TrainJob", "spec.nonsense") is None


def test_refused_trainjob_fields_are_422_naming_the_field() -> None:
    volumes = {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
        "volumes": [{"name": "d", "nfs": {"server": "nas", "path": "/export"}}]}}}}}]}
    causes = _causes(TRAINJOBS, _job(runtimePatches=[{"manager": "example.com/me", "trainingRuntimeSpec": {
                                         "template": {"spec": volumes}}}],
                                     initializer={"dataset": {"storageUri": "hf://x"}},
                                     trainer={"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}))
    patched = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
    assert set(causes) == {f"{patched}.volumes[0]", "spec.initializer", "spec.trainer.env[0].valueFrom"}, causes
    assert all(m.startswith("Forbidden: ") and "local cluster" in m for m in causes.values())


def test_volumes_the_local_cluster_cannot_mount_are_refused_with_the_fix() -> None:
    rt = _runtime()
    pod = rt["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod["volumes"] = [{"name": "data", "emptyDir": {}}, {"name": "nas", "nfs": {"server": "nas", "path": "/x"}}]
    pod["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data", "mountPropagation": "Bidirectional"}]
    pod["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    causes = _causes(CLUSTER_TRAINING_RUNTIMES, rt)
    assert set(causes) == {f"{POD}.volumes[1]", f"{POD}.containers[0].volumeMounts[0].mountPropagation",
                           f"{POD}.initContainers"}, causes
    assert "use a hostPath volume" in causes[f"{POD}.volumes[1]"]


def test_harmless_fields_are_warned_by_name_and_honoured_ones_are_silent() -> None:
    rt = _runtime()
    pod = rt["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod["priorityClassName"] = "high"
    pod["nodeSelector"] = {"gpu": "a100"}  # honoured: the pods are placed on the Node (api/core/placement.py)
    pod["containers"][0]["workingDir"] = "/tmp"
    found = check("ClusterTrainingRuntime", rt)
    assert found.causes == []
    assert f"{POD}.priorityClassName: no effect on one machine: every pod runs on this machine" in found.warnings
    assert not any("workingDir" in w or "command" in w or "runAsUser" in w or "nodeSelector" in w
                   for w in found.warnings), found.warnings
    assert check("TrainJob", _job(trainer={"numNodes": 2, "env": [{"name": "A", "value": "1"}]})).warnings == []
    assert check("TrainJob", _job(trainer={"image": "pytorch"})).warnings == [
        "spec.trainer.image: recorded on the pods, not pulled: the local cluster runs this machine's programs"]


def test_a_runtime_step_that_does_not_run_is_warned() -> None:
    rt = _runtime()
    rt["spec"]["template"]["spec"]["replicatedJobs"].insert(0, {"name": "dataset-initializer", "template": {}})
    assert any("'dataset-initializer' is not run by the local cluster" in w for w in check("TrainingRuntime", rt).warnings)
