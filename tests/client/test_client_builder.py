"""`build_trainjob`: keyword fields → the upstream TrainJob, valid against Trainer's published CRD."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml
from mpijob.api import names
from mpijob.api.core.errors import ApiError
from mpijob.api.names import MAX_ENV
from mpijob.api.trainer import trainjob as trainjob_rules
from mpijob.cli.create_cmd import imperative_trainjob
from mpijob.client.builder import build_trainjob, field_causes

from support import UPSTREAM

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
    assert build_trainjob("e", env=["K=", "L=v"])["spec"]["trainer"]["env"] == [
        {"name": "K", "value": ""}, {"name": "L", "value": "v"}]
    with pytest.raises(ApiError) as err:
        build_trainjob("e", env=["novalue"])
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
        "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]", "spec.trainer.resourcesPerNode.limits[cpu]",
        "spec.trainer.resourcesPerNode.limits[memory]", "spec.trainer.env",
        "metadata.labels[kueue.x-k8s.io/queue-name]", "spec.runtimeRef.name",
    }
    assert "'Bad_Name'" in fields["metadata.name"] and "e.g. 'my-job'" in fields["metadata.name"]
    assert "'lots'" in fields["spec.trainer.resourcesPerNode.limits[cpu]"]
    assert "'8 GB'" in fields["spec.trainer.resourcesPerNode.limits[memory]"] and "8Gi" in fields[
        "spec.trainer.resourcesPerNode.limits[memory]"]
    assert sum(c.field == "spec.trainer.env" for c in exc.causes) == 2


def test_command_must_be_a_list() -> None:
    with pytest.raises(ApiError) as err:
        build_trainjob("c", command="mpirun python x.py")  # type: ignore[arg-type]
    assert [c.field for c in err.value.causes] == ["spec.trainer.command"]


def test_resources_and_labels_merge_with_the_conveniences_and_the_server_accepts_the_result() -> None:
    job = build_trainjob("r", num_nodes=2, gpus=2, cpu="4", resources={"memory": "8Gi", "example.com/fpga": 1},
                         labels={"app": "r", "example.com/team": "ml"}, queue="team-a", command=["true"])
    assert job["spec"]["trainer"]["resourcesPerNode"] == {
        "limits": {"nvidia.com/gpu": 2, "cpu": "4", "memory": "8Gi", "example.com/fpga": 1}}
    assert job["metadata"]["labels"] == {"app": "r", "example.com/team": "ml", "kueue.x-k8s.io/queue-name": "team-a"}
    _assert_valid(job)
    assert trainjob_rules.causes(trainjob_rules.default(json.loads(json.dumps(job)))) == []  # the server's own rules
    # args=[] is kept: upstream, an empty list overrides the runtime's args (None leaves them)
    assert build_trainjob("a", args=[])["spec"]["trainer"] == {"args": []}


@pytest.mark.parametrize(
    ("kwargs", "field", "words"),
    [
        ({"cpu": "4", "resources": {"cpu": "2"}}, "spec.trainer.resourcesPerNode.limits[cpu]",
         ("'4'", "cpu=", "resources['cpu']='2'", "only one")),
        ({"gpus": 1, "resources": {"nvidia.com/gpu": 2}}, "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]",
         ("gpus=", "resources['nvidia.com/gpu']=2")),
        ({"queue": "a", "labels": {"kueue.x-k8s.io/queue-name": "b"}}, "metadata.labels[kueue.x-k8s.io/queue-name]",
         ("'a'", "queue=", "labels['kueue.x-k8s.io/queue-name']='b'")),
        ({"priority": "high", "labels": {"kueue.x-k8s.io/priority-class": "low"}},
         "metadata.labels[kueue.x-k8s.io/priority-class]", ("priority=", "'low'")),
    ],
)
def test_two_keywords_writing_the_same_key_are_refused_naming_both(kwargs: dict, field: str,
                                                                   words: tuple[str, ...]) -> None:
    with pytest.raises(ApiError) as err:
        build_trainjob("c", **kwargs)
    assert [c.field for c in err.value.causes] == [field]
    for word in words:
        assert word in err.value.causes[0].message, (word, err.value.causes[0].message)


@pytest.mark.parametrize("reserved", sorted(names.RESERVED_ENV))
def test_reserved_open_mpi_env_is_refused(reserved: str) -> None:
    with pytest.raises(ApiError) as err:
        build_trainjob("r", env={reserved: "x"})
    (cause,) = err.value.causes
    assert cause.field == "spec.trainer.env" and repr(reserved) in cause.message and "reserved" in cause.message


@pytest.mark.parametrize(
    ("kwargs", "field", "words"),
    [
        ({"num_nodes": 0}, "spec.trainer.numNodes", "at least 1"),
        ({"env": {f"V{i}": "1" for i in range(MAX_ENV + 1)}}, "spec.trainer.env", f"at most {MAX_ENV}"),
        ({"env": ["A=1", "A=2"]}, "spec.trainer.env", "given twice"),
        ({"env": {"A.B": "1"}}, "spec.trainer.env", "not a valid variable name"),  # the server's C-identifier rule
        ({"resources": {"cpu": "-1"}}, "spec.trainer.resourcesPerNode.limits[cpu]", "negative"),
        ({"resources": {"nvidia.com/gpu": "0.5"}}, "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]",
         "whole units"),
        ({"resources": {"bad key!": 1}}, "spec.trainer.resourcesPerNode.limits[bad key!]", "not a resource name"),
        ({"memory": "4GB"}, "spec.trainer.resourcesPerNode.limits[memory]", "not a quantity"),
        ({"labels": {"app": "no spaces"}}, "metadata.labels[app]", "not a label value"),
        ({"labels": {"/app": "x"}}, "metadata.labels[/app]", "not a label key"),
        ({"command": []}, "spec.trainer.command", "empty"),
        ({"priority": "High"}, "metadata.labels[kueue.x-k8s.io/priority-class]", "WorkloadPriorityClass"),
        ({"namespace": "a.b"}, "metadata.namespace", "namespace name"),
    ],
)
def test_rules_of_the_server_and_of_trainer_are_checked_before_any_request(kwargs: dict, field: str,
                                                                           words: str) -> None:
    with pytest.raises(ApiError) as err:
        build_trainjob("r", **kwargs)
    assert err.value.code == 422
    assert [c.field for c in err.value.causes] == [field]
    assert words in err.value.causes[0].message


def test_quantities_are_the_api_quantities() -> None:
    job = build_trainjob("q", cpu="1e3", memory="1.5Gi", resources={"ephemeral-storage": 10**9})
    limits = job["spec"]["trainer"]["resourcesPerNode"]["limits"]
    assert limits == {"cpu": "1e3", "memory": "1.5Gi", "ephemeral-storage": 10**9}


def test_field_causes_is_the_rule_build_trainjob_applies() -> None:
    assert field_causes("num_nodes", None) == [] and field_causes("num_nodes", 4) == []
    assert field_causes("name", None)[0].field == "metadata.name"  # name and runtime are required
    with pytest.raises(ApiError) as err:
        build_trainjob("f", num_nodes=0)
    assert err.value.causes == field_causes("num_nodes", 0)


def test_the_cli_imperative_form_gets_the_same_rules() -> None:
    with pytest.raises(ApiError) as err:
        imperative_trainjob(["trainjob", "cli-job", "true"], num_nodes=0,
                            env=["OMPI_MCA_plm_rsh_args=-v"], cpu="-2")
    assert {c.field for c in err.value.causes} == {
        "spec.trainer.numNodes", "spec.trainer.env", "spec.trainer.resourcesPerNode.limits[cpu]"}
