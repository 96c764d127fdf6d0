"""Reading manifests: several documents, `kind: List`, and errors that say where and how to fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from mpijob.api.core.errors import ApiError
from mpijob.client import manifests

JOB = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: %s}\nspec: {}\n"


def test_multi_document_yaml_in_order() -> None:
    objs = manifests.parse(JOB % "a" + "---\n" + JOB % "b" + "---\n", "f.yaml")
    assert [o["metadata"]["name"] for o in objs] == ["a", "b"]


def test_json_and_list_are_unwrapped() -> None:
    objs = manifests.parse('{"apiVersion": "v1", "kind": "List", "items": ['
                           '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]}')
    assert objs == [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]


def test_unparsable_yaml_names_line_and_source() -> None:
    with pytest.raises(ApiError) as e:
        manifests.parse("kind: TrainJob\nmetadata:\n  name: [x\n", "job.yaml")
    assert e.value.code == 400
    assert e.value.message.startswith("job.yaml: cannot parse YAML at line ")
    assert "fix the syntax" in e.value.message


@pytest.mark.parametrize(
    "text, field",
    [
        ("kind: TrainJob\nmetadata: {name: x}\n", "apiVersion"),
        ("apiVersion: v1\nmetadata: {name: x}\n", "kind"),
        ("apiVersion: v1\nkind: ConfigMap\n", "metadata"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {}}\n", "metadata.name"),
    ],
)
def test_missing_envelope_fields_are_causes(text: str, field: str) -> None:
    with pytest.raises(ApiError) as e:
        manifests.parse(text, "f.yaml")
    assert field in [c.field for c in e.value.causes]


def test_non_mapping_and_empty() -> None:
    with pytest.raises(ApiError, match="object 2: expected an object"):
        manifests.parse(JOB % "a" + "---\n- 1\n", "f.yaml")
    with pytest.raises(ApiError, match="contains no objects"):
        manifests.parse("---\n# only a comment\n", "f.yaml")


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ApiError, match="no such file"):
        manifests.load(str(tmp_path / "nope.yaml"))
    (tmp_path / "ok.yaml").write_text(JOB % "ok")
    assert manifests.load(str(tmp_path / "ok.yaml"))[0]["metadata"]["name"] == "ok"
