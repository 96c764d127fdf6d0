"""The examples are valid upstream TrainJobs (checked against Trainer's published CRD) and fit the brief."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from cli_support import EXAMPLES

from support import UPSTREAM

CRD = UPSTREAM / "trainer" / "trainer.kubeflow.org_trainjobs.yaml"


def _schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    return version["schema"]["openAPIV3Schema"]


def _unknown_fields(obj: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields the structural schema would prune (kube-apiserver's Strict validation rejects them)."""
    out: list[str] = []
    if isinstance(obj, dict) and "properties" in schema:
        for key, value in obj.items():
            if key not in schema["properties"]:
                if not (path == "" and key in ("apiVersion", "kind")):
                    out.append(f"{path}.{key}".lstrip("."))
                continue
            out += _unknown_fields(value, schema["properties"][key], f"{path}.{key}")
    elif isinstance(obj, list) and "items" in schema:
        for i, item in enumerate(obj):
            out += _unknown_fields(item, schema["items"], f"{path}[{i}]")
    return out


@pytest.mark.parametrize("name", ["hello.yaml", "pi.yaml"])
def test_example_validates_against_upstream_crd(name: str) -> None:
    docs = list(yaml.safe_load_all((EXAMPLES / name).read_text()))
    assert len(docs) == 1
    job = docs[0]
    assert (job["apiVersion"], job["kind"]) == ("trainer.kubeflow.org/v1alpha1", "TrainJob")
    schema = _schema()
    jsonschema.Draft7Validator(schema).validate(job)
    assert _unknown_fields(job, schema) == []


def test_schema_check_catches_a_typo() -> None:
    job = yaml.safe_load((EXAMPLES / "hello.yaml").read_text())
    job["spec"]["trainer"]["numNode"] = 3
    assert _unknown_fields(job, _schema()) == ["spec.trainer.numNode"]
    job["spec"]["trainer"]["numNodes"] = "three"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(_schema()).validate(job)


@pytest.mark.parametrize("name", ["hello.yaml", "pi.yaml"])
def test_examples_use_the_bundled_mpi_runtime_with_2_to_4_nodes(name: str) -> None:
    job = yaml.safe_load((EXAMPLES / name).read_text())
    assert job["spec"]["runtimeRef"]["name"] == "mpi-distributed"
    assert 2 <= job["spec"]["trainer"]["numNodes"] <= 4
    assert job["spec"]["trainer"]["command"][0] == "mpirun"


def test_hello_prints_rank_size_node_and_env() -> None:
    trainer = yaml.safe_load((EXAMPLES / "hello.yaml").read_text())["spec"]["trainer"]
    assert {"name": "GREETING", "value": "hello-from-mpijob"} in trainer["env"]
    script = trainer["command"][-1]
    for text in ("$OMPI_COMM_WORLD_RANK", "$OMPI_COMM_WORLD_SIZE", "$(hostname)", "$GREETING"):
        assert text in script


def test_pi_program_computes_pi_with_mpi_reduce() -> None:
    trainer = yaml.safe_load((EXAMPLES / "pi.yaml").read_text())["spec"]["trainer"]
    assert trainer["command"][:3] == ["mpirun", "python", "-c"]
    program = trainer["command"][3]
    compile(program, "pi.py", "exec")
    assert "from mpi4py import MPI" in program and "comm.reduce(" in program


def test_pi_program_runs_under_real_mpirun(tmp_path: Path) -> None:
    """The inline program itself, under Debian's mpirun on this machine (no cluster involved)."""
    import os
    import shutil
    import subprocess
    import sys

    program = yaml.safe_load((EXAMPLES / "pi.yaml").read_text())["spec"]["trainer"]["command"][3]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe")
    mpirun = shutil.which("mpirun")
    assert mpirun is not None, "Open MPI's mpirun is missing: `make test` installs openmpi-bin"
    p = subprocess.run([mpirun, "-np", "2", sys.executable, "-c", program], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "rank 0 of 2" in p.stdout and "rank 1 of 2" in p.stdout
    # anywhere in a line: a bare mpirun forwards chunks, so another rank's unfinished line can precede it
    found = re.search(r"pi ~= (\S+)", p.stdout)
    assert found is not None, p.stdout
    assert float(found[1]) == pytest.approx(3.141592653589793, abs=1e-9)
