"""The `TrainJob` builder: what it produces (checked against the upstream CRD) and what it refuses."""

from __future__ import annotations

import subprocess
import sys

import jsonschema
import mpijob
import pytest
from mpijob import TrainJob
from mpijob.client.builder import build_trainjob
from mpijob.sdk.errors import InvalidInput
from sdk_support import trainjob_schema


def test_to_object_is_an_upstream_trainjob_with_kueue_labels() -> None:
    job = TrainJob(name="pi", num_nodes=4, num_proc_per_node=2, command=["mpirun", "python", "pi.py"],
                   args=["--steps", "10"], env={"A": "1"}, image="mpioperator/mpi-pi:openmpi",
                   resources_per_node={"cpu": 2, "memory": "4Gi"}, queue="team-a", priority="high",
                   namespace="ml", labels={"app": "pi"})
    obj = job.to_object()
    jsonschema.validate(obj, trainjob_schema())
    assert obj["apiVersion"] == "trainer.kubeflow.org/v1alpha1" and obj["kind"] == "TrainJob"
    assert obj["metadata"] == {"name": "pi", "namespace": "ml", "labels": {
        "app": "pi", "kueue.x-k8s.io/queue-name": "team-a", "kueue.x-k8s.io/priority-class": "high"}}
    assert obj["spec"]["runtimeRef"] == {"name": "mpi-distributed", "apiGroup": "trainer.kubeflow.org",
                                         "kind": "ClusterTrainingRuntime"}
    assert obj["spec"]["trainer"] == {
        "image": "mpioperator/mpi-pi:openmpi", "command": ["mpirun", "python", "pi.py"], "args": ["--steps", "10"],
        "env": [{"name": "A", "value": "1"}], "numNodes": 4, "numProcPerNode": 2,
        "resourcesPerNode": {"limits": {"cpu": 2, "memory": "4Gi"}},
    }


def test_minimal_job_leaves_everything_to_the_runtime() -> None:
    obj = TrainJob(name="x", runtime="deepspeed-distributed").to_object()
    jsonschema.validate(obj, trainjob_schema())
    assert obj == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "x"},
                   "spec": {"runtimeRef": {"name": "deepspeed-distributed", "apiGroup": "trainer.kubeflow.org",
                                           "kind": "ClusterTrainingRuntime"}}}


def test_builder_is_frozen_and_exported_lazily() -> None:
    job = TrainJob(name="x")
    with pytest.raises(Exception, match="frozen"):
        job.name = "y"  # type: ignore[misc]
    assert mpijob.TrainJob is TrainJob
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        mpijob.Nope  # noqa: B018
    probe = "import sys, mpijob; print('mpijob.sdk' in sys.modules, 'pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]  # `import mpijob` (the CLI's first import) stays cheap


@pytest.mark.parametrize(
    ("kwargs", "field", "words"),
    [
        ({"name": "Pi"}, "metadata.name", "RFC 1035"),
        ({"name": "a" * 64}, "metadata.name", "has 64 characters"),
        ({"name": "x", "num_nodes": 0}, "spec.trainer.numNodes", "at least 1"),
        ({"name": "x", "num_nodes": "four"}, "spec.trainer.numNodes", "'four'"),
        ({"name": "x", "num_proc_per_node": 0}, "spec.trainer.numProcPerNode", "at least 1"),
        ({"name": "x", "env": {"OMPI_MCA_orte_default_hostfile": "/x"}}, "spec.trainer.env", "reserved"),
        ({"name": "x", "env": {"PRTE_MCA_plm_ssh_args": "-v"}}, "spec.trainer.env", "reserved"),
        ({"name": "x", "env": {"1BAD": "v"}}, "spec.trainer.env", "not a valid variable name"),
        ({"name": "x", "resources_per_node": {"cpu": "lots"}}, "spec.trainer.resourcesPerNode", "not a quantity"),
        ({"name": "x", "command": []}, "spec.trainer.command", "empty"),
        ({"name": "x", "queue": "bad queue"}, "metadata.labels[kueue.x-k8s.io/queue-name]", "LocalQueue"),
        ({"name": "x", "namespace": "Bad_NS"}, "metadata.namespace", "namespace name"),
        ({"name": "x", "nodes": 4}, "nodes", "unknown field"),
        ({"name": "x", "env": {f"V{i}": "1" for i in range(129)}}, "spec.trainer.env", "at most 128"),
        ({"name": "x", "resources_per_node": {"nvidia.com/gpu": "0.5"}}, "spec.trainer.resourcesPerNode",
         "whole units"),
        ({"name": "x", "labels": {"bad key!": "v"}}, "metadata.labels", "not a label key"),
        ({"name": "x", "queue": "a", "labels": {"kueue.x-k8s.io/queue-name": "b"}},
         "metadata.labels[kueue.x-k8s.io/queue-name]", "labels['kueue.x-k8s.io/queue-name']='b'"),
    ],
)
def test_invalid_fields_raise_invalid_input_naming_field_value_and_fix(kwargs: dict, field: str, words: str) -> None:
    with pytest.raises(InvalidInput) as info:
        TrainJob(**kwargs)
    err = info.value
    assert [c.field for c in err.causes] == [field]
    assert words in err.message and words in str(err)
    assert err.exit_code == 3 and err.reason == "Invalid"


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(InvalidInput) as info:
        TrainJob(name="Bad", num_nodes=0, env={"OMPI_MCA_plm_rsh_args": "x"})
    assert {c.field for c in info.value.causes} == {"metadata.name", "spec.trainer.numNodes", "spec.trainer.env"}
    assert "TrainJob 'Bad' is invalid" in info.value.message


def test_model_validate_raises_the_same_error() -> None:
    with pytest.raises(InvalidInput, match="num_nodes"):
        TrainJob.model_validate({"name": "x", "num_nodes": -1})


@pytest.mark.parametrize(
    ("conveniences", "resources"),
    [({}, {"cpu": 2, "memory": "4Gi", "nvidia.com/gpu": 1}),
     ({"gpus": 1, "cpu": "2", "memory": "4Gi"}, {"nvidia.com/gpu": 1, "cpu": "2", "memory": "4Gi"})],
)
def test_sdk_and_cli_builder_write_one_and_the_same_object(conveniences: dict, resources: dict) -> None:
    fields = {"num_nodes": 4, "num_proc_per_node": 2, "command": ["mpirun", "python", "pi.py"], "args": ["-n", "9"],
              "env": {"A": "1", "B": "x=y"}, "image": "mpioperator/mpi-pi:openmpi", "queue": "team-a",
              "priority": "high", "namespace": "ml", "runtime": "mpi-distributed"}
    sdk = TrainJob(name="same", resources_per_node=resources, labels={"app": "pi"}, **fields).to_object()
    cli = build_trainjob("same", resources=None if conveniences else resources, labels={"app": "pi"},
                         **conveniences, **fields)
    assert sdk == cli
    assert sdk["spec"]["runtimeRef"] == {"name": "mpi-distributed", "apiGroup": "trainer.kubeflow.org",
                                         "kind": "ClusterTrainingRuntime"}
    assert sdk["spec"]["trainer"]["resourcesPerNode"] == {"limits": resources}
    for obj in (sdk, cli):
        jsonschema.validate(obj, trainjob_schema())
