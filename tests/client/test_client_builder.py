"""`build_trainjob`: keyword fields → the upstream TrainJob, valid against Trainer's published CRD."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml
from upstream_data import UPSTREAM

from mpijob.api.errors import ApiError
from mpijob.client.builder import build_trainjob, parse_env

TRAINJOB_CRD = UPSTREAM / "trainer" / "trainer.kubeflow.org_trainjobs.yaml"


def _assert_valid(obj: dict[str, Any]) -> None:
    crd = yaml.safe_load(TRAINJOB_CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    schema = version["schema"]["openAPIV3Schema"]
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(json.loads(json.dumps(obj)))]
    assert errors == []


def test_every_field_lands_where_the_yaml_would_put_it() -> None:
    job = build_trainjob(
        "train-4", num_nodes=4, num_proc_per_node=2, command=["mpirun", "python", "train.py"], args=["--lr", "0.1"],
        env={"A": "1", "B": "x=y"}, image="ghcr.io/me/train:1", gpus=1, cpu="4", memory="8Gi", queue="team-a",
        priority="high", namespace="ml",
    )
    assert job == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "train-4", "namespace": "ml", "labels": {
            "kueue.x-k8s.io/queue-name": "team-a", "kueue.x-k8s.io/priority-class": "high"}},
        "spec": {
            "runtimeRef": {"name": "mpi-distributed", "apiGroup": "trainer.kubeflow.org",
                           "kind": "ClusterTrainingRuntime"},
            "trainer": {
                "image": "ghcr.io/me/train:1",
                "command": ["mpirun", "python", "train.py"],
                "args": ["--lr", "0.1"],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "x=y"}],
                "numNodes": 4,
                "numProcPerNode": 2,
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1, "cpu": "4", "memory": "8Gi"}},
            },
        },
    }
    _assert_valid(job)


def test_unset_fields_are_left_to_the_runtime() -> None:
    job = build_trainjob("plain", runtime="other-rt")
    assert job["spec"] == {"runtimeRef": {"name": "other-rt", "apiGroup": "trainer.kubeflow.org",
                                          "kind": "ClusterTrainingRuntime"}}
    assert job["metadata"] == {"name": "plain"}
    _assert_valid(job)
    assert "resourcesPerNode" not in build_trainjob("nogpu", gpus=0, num_nodes=1)["spec"]["trainer"]


def test_env_as_k_equals_v_list() -> None:
    assert build_trainjob("e", env=["X=1", "Y=a=b"])["spec"]["trainer"]["env"] == [
        {"name": "X", "value": "1"}, {"name": "Y", "value": "a=b"}]
    assert parse_env(["K=", "L=v"]) == {"K": "", "L": "v"}
    with pytest.raises(ApiError) as err:
        parse_env(["novalue"])
    assert err.value.code == 422 and "'novalue'" in err.value.message and "NAME=VALUE" in err.value.message


def test_bad_fields_are_all_reported_with_field_value_and_fix() -> None:
    with pytest.raises(ApiError) as err:
        build_trainjob("Bad_Name", num_nodes=0, num_proc_per_node=-1, gpus=-2, cpu="lots", memory="8 GB",
                       env=["1BAD=x", "noeq"], queue="Team A", runtime="")
    exc = err.value
    assert exc.code == 422 and exc.reason == "Invalid"
    fields = {c.field: c.message for c in exc.causes}
    assert set(fields) == {
        "metadata.name", "spec.trainer.numNodes", "spec.trainer.numProcPerNode",
        "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]", "spec.trainer.resourcesPerNode.limits.cpu",
        "spec.trainer.resourcesPerNode.limits.memory", "spec.trainer.env",
        "metadata.labels[kueue.x-k8s.io/queue-name]", "spec.runtimeRef.name",
    }
    assert "'Bad_Name'" in fields["metadata.name"] and "e.g. 'my-job'" in fields["metadata.name"]
    assert "'lots'" in fields["spec.trainer.resourcesPerNode.limits.cpu"]
    assert "'8 GB'" in fields["spec.trainer.resourcesPerNode.limits.memory"] and "8Gi" in fields[
        "spec.trainer.resourcesPerNode.limits.memory"]
    assert sum(c.field == "spec.trainer.env" for c in exc.causes) == 2


def test_command_must_be_a_list() -> None:
    with pytest.raises(ApiError) as err:
        build_trainjob("c", command="mpirun python x.py")  # type: ignore[arg-type]
    assert [c.field for c in err.value.causes] == ["spec.trainer.command"]
