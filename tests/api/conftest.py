"""Shared fixtures for api tests: upstream manifests and CRD schemas, loaded from ../shared/upstream."""

from __future__ import annotations

import copy
import json
from functools import cache

import jsonschema
import pytest
import yaml

from support import UPSTREAM


def load_yaml(rel: str) -> dict:
    return yaml.safe_load((UPSTREAM / rel).read_text())


@cache
def crd_schema(rel: str) -> dict:
    crd = load_yaml(rel)
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return version["schema"]["openAPIV3Schema"]


def _unknown_fields(obj, schema: dict, path: str = "") -> list[str]:
    """Fields the CRD schema does not declare (kube would prune them; Strict validation would refuse)."""
    out: list[str] = []
    if isinstance(obj, dict) and schema.get("type") == "object":
        props = schema.get("properties")
        if props is None or schema.get("x-kubernetes-preserve-unknown-fields"):
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                for k, v in obj.items():
                    out += _unknown_fields(v, extra, f"{path}.{k}")
            return out
        for k, v in obj.items():
            if k not in props:
                out.append(f"{path}.{k}".lstrip("."))
            else:
                out += _unknown_fields(v, props[k], f"{path}.{k}")
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(obj):
            out += _unknown_fields(v, schema["items"], f"{path}[{i}]")
    return out


def assert_valid_for_crd(obj: dict, rel: str) -> None:
    """`obj` conforms to the upstream CRD's openAPIV3Schema and declares no unknown fields."""
    schema = crd_schema(rel)
    body = copy.deepcopy(obj)
    body.get("metadata", {}).pop("creationTimestamp", None)
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in
              jsonschema.Draft7Validator(schema).iter_errors(json.loads(json.dumps(body)))]
    assert errors == []
    assert _unknown_fields(body, schema) == []


TRAINJOB_CRD = "trainer/trainer.kubeflow.org_trainjobs.yaml"
CTR_CRD = "trainer/trainer.kubeflow.org_clustertrainingruntimes.yaml"
TR_CRD = "trainer/trainer.kubeflow.org_trainingruntimes.yaml"


@pytest.fixture
def deepspeed() -> dict:
    return load_yaml("trainer/runtime_deepspeed_distributed.yaml")


@pytest.fixture
def mlx() -> dict:
    return load_yaml("trainer/runtime_mlx_distributed.yaml")


@pytest.fixture
def torch_runtime() -> dict:
    return load_yaml("trainer/runtime_torch_distributed.yaml")


def _make_trainjob(name: str = "pi", **trainer) -> dict:
    tj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default", "uid": "0b7c5b1e-1111-2222-3333-444455556666"},
        "spec": {"runtimeRef": {"name": "mpi-distributed"}},
    }
    if trainer:
        tj["spec"]["trainer"] = trainer
    return tj


@pytest.fixture
def make_trainjob():
    """Factory: make_trainjob(name="pi", **trainer_fields) -> a TrainJob on mpi-distributed."""
    return _make_trainjob


@pytest.fixture
def assert_crd():
    """assert_crd(obj, "trainjobs" | "clustertrainingruntimes" | "trainingruntimes")."""
    files = {"trainjobs": TRAINJOB_CRD, "clustertrainingruntimes": CTR_CRD, "trainingruntimes": TR_CRD}
    return lambda obj, which: assert_valid_for_crd(obj, files[which])


@pytest.fixture
def assert_crd_file():
    """assert_crd_file(obj, "<folder>/<crd file>" under the upstream data, e.g. "kueue/kueue.x-k8s.io_clusterqueues.yaml")."""
    return assert_valid_for_crd
