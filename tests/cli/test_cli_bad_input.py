"""Bad input is refused with exit 3, a message naming the field and the fix, and nothing created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_support import Invoke, example, trainjob_names, write_job


def _hello(name: str) -> dict[str, Any]:
    job = example("hello.yaml")
    job["metadata"]["name"] = name
    return job


def _unknown_runtime(job: dict[str, Any]) -> None:
    job["spec"]["runtimeRef"]["name"] = "no-such-runtime"


def _zero_nodes(job: dict[str, Any]) -> None:
    job["spec"]["trainer"]["numNodes"] = 0


def _reserved_env(job: dict[str, Any]) -> None:
    job["spec"]["trainer"]["env"].append({"name": "OMPI_MCA_orte_default_hostfile", "value": "/tmp/h"})


def _long_name(job: dict[str, Any]) -> None:
    job["metadata"]["name"] = "bad-" + "x" * 64


def _unknown_field(job: dict[str, Any]) -> None:
    job["spec"]["trainer"]["numNode"] = 2


CASES = {
    "unknown-runtime": (_unknown_runtime, ["spec.runtimeRef.name", "no-such-runtime"]),
    "zero-nodes": (_zero_nodes, ["spec.trainer.numNodes", "0"]),
    "reserved-env": (_reserved_env, ["spec.trainer.env", "OMPI_MCA_orte_default_hostfile"]),
    "long-name": (_long_name, ["metadata.name", "63"]),
    "unknown-field": (_unknown_field, ["numNode"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_trainjob_exits_3_and_creates_nothing(mpijob: Invoke, tmp_path: Path, case: str) -> None:
    mutate, expected = CASES[case]
    job = _hello(f"bad-{case}")
    mutate(job)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    before = trainjob_names(mpijob)

    for command in ("create", "run"):
        r = mpijob(command, "-f", str(path))
        assert r.exit_code == 3, (command, r.stdout, r.stderr)
        for text in expected:
            assert text in r.stderr, (command, r.stderr)
        assert r.stdout == ""
    assert trainjob_names(mpijob) == before


def test_invalid_trainjob_lists_each_cause(mpijob: Invoke, tmp_path: Path) -> None:
    job = _hello("bad-two-causes")
    _zero_nodes(job)
    _reserved_env(job)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    r = mpijob("create", "-f", str(path))
    assert r.exit_code == 3
    causes = [line for line in r.stderr.splitlines() if line.startswith("* ")]
    assert any("spec.trainer.numNodes" in c for c in causes), r.stderr
    assert any("spec.trainer.env" in c and "OMPI_MCA_orte_default_hostfile" in c for c in causes), r.stderr


@pytest.mark.parametrize(
    "text, expected",
    [
        ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: x\n", "line"),
        ("- just\n- a list\n", "expected an object"),
        ("kind: TrainJob\nmetadata: {name: x}\n", "apiVersion"),
        ("", "no objects"),
    ],
    ids=["unparsable", "not-a-mapping", "no-apiVersion", "empty"],
)
def test_unusable_files_exit_2(mpijob: Invoke, tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    before = trainjob_names(mpijob)
    r = mpijob("create", "-f", str(path))
    assert r.exit_code == 3
    assert expected in r.stderr
    assert str(path) in r.stderr
    assert trainjob_names(mpijob) == before


def test_a_bad_document_in_a_multi_document_file_creates_nothing(mpijob: Invoke, tmp_path: Path) -> None:
    good, bad = _hello("multi-good"), _hello("multi-bad")
    _zero_nodes(bad)
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump_all([good, bad]))
    r = mpijob("create", "-f", str(path))
    assert r.exit_code == 3, r.stderr
    assert "spec.trainer.numNodes" in r.stderr
    assert "multi-good" not in trainjob_names(mpijob)


def test_missing_file_and_unknown_kind_exit_2(mpijob: Invoke, tmp_path: Path) -> None:
    r = mpijob("create", "-f", str(tmp_path / "nope.yaml"))
    assert r.exit_code == 3 and "no such file" in r.stderr
    path = tmp_path / "deploy.yaml"
    path.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    r = mpijob("create", "-f", str(path))
    assert r.exit_code == 3 and "Deployment" in r.stderr


def test_already_exists_exits_3(mpijob: Invoke, tmp_path: Path) -> None:
    path = write_job(tmp_path, _hello("twice"), "twice")
    spec = yaml.safe_load(path.read_text())
    spec["spec"]["suspend"] = True  # never runs: this test is about the API only
    path.write_text(yaml.safe_dump(spec))
    assert mpijob("create", "-f", str(path)).exit_code == 0
    r = mpijob("create", "-f", str(path))
    assert r.exit_code == 3 and "already exists" in r.stderr
    assert mpijob("delete", "trainjob", "twice").exit_code == 0
