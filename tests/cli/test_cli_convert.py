"""`mpijob convert`: objects on stdout (YAML documents or a JSON List), the report on stderr, the exit-code
contract for bad input. No cluster is needed, and none is configured here."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from mpijob.api import names
from mpijob.cli.exitcodes import Exit
from mpijob.cli.main import app
from typer.testing import CliRunner

from support import UPSTREAM

REPO = Path(__file__).resolve().parents[2]
PI = REPO / "examples" / "mpijob" / "pi.yaml"
HELLO = REPO / "examples" / "mpijob" / "hello.yaml"
INTEL = UPSTREAM / "mpi-operator" / "example_pi-intel.yaml"


def run(*args: str, stdin: str | None = None, home: Path) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, ["convert", *args], input=stdin, env={"MPIJOB_HOME": str(home), "KUBECONFIG": None})
    return r.exit_code, r.stdout, r.stderr


def test_yaml_documents_runtime_first_and_the_report_on_stderr(tmp_path: Path) -> None:
    code, out, err = run("-f", str(PI), home=tmp_path)
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [("TrainingRuntime", "pi"), ("TrainJob", "pi")]
    assert docs[1]["spec"]["runtimeRef"]["kind"] == "TrainingRuntime"
    assert err.startswith("MPIJob pi → TrainJob pi on TrainingRuntime pi (generated)\n")
    for section in ("mapped into the TrainJob", "moved to the TrainingRuntime", "dropped (2):"):
        assert section in err, err
    assert "    spec.slotsPerWorker → spec.trainer.numProcPerNode\n" in err
    assert "    spec.runPolicy.cleanPodPolicy\n        a TrainJob has no cleanup policy" in err
    assert "MPIJob" not in out


def test_json_list_from_stdin_and_several_documents(tmp_path: Path) -> None:
    both = HELLO.read_text() + "\n---\n" + INTEL.read_text()
    code, out, err = run("-f", "-", "-o", "json", stdin=both, home=tmp_path)
    assert code == 0, err
    listed = json.loads(out)
    assert listed["kind"] == "List"
    assert [(o["kind"], o["metadata"]["name"]) for o in listed["items"]] == [
        ("TrainJob", "hello"), ("TrainingRuntime", "pi"), ("TrainJob", "pi")]
    assert listed["items"][0]["spec"]["runtimeRef"] == {"name": "mpi-distributed"}
    assert listed["items"][1]["metadata"]["annotations"] == {names.ANNOTATION_MPI_IMPLEMENTATION: names.MPI_INTEL}
    assert "MPIJob hello → TrainJob hello on ClusterTrainingRuntime mpi-distributed\n" in err
    assert "MPIJob pi → TrainJob pi on TrainingRuntime pi (generated)\n" in err


def test_report_only(tmp_path: Path) -> None:
    code, out, err = run("-f", str(PI), "--report-only", home=tmp_path)
    assert code == 0 and err == ""
    assert out.startswith("MPIJob pi → ") and "kind: TrainJob" not in out
    code, out, _ = run("-f", str(PI), "--report-only", "-o", "json", home=tmp_path)
    rows = json.loads(out)
    assert {"mpijob": "pi", "field": "spec.runPolicy.ttlSecondsAfterFinished", "verdict": "dropped", "to": "",
            "why": "a TrainJob has no TTL; delete finished TrainJobs yourself (kubectl delete trainjob NAME)"} in rows
    assert {r["verdict"] for r in rows} == {"mapped", "runtime", "dropped"}


def test_a_bad_mpijob_prints_nothing_and_exits_3(tmp_path: Path) -> None:
    bad = yaml.safe_load(PI.read_text())
    bad["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
    text = HELLO.read_text() + "\n---\n" + yaml.safe_dump(bad)
    code, out, err = run("-f", "-", stdin=text, home=tmp_path)
    assert code == Exit.INVALID == 3
    assert out == ""  # not even the good document: nothing half-converted reaches `kubectl apply`
    assert 'error: MPIJob.kubeflow.org "pi" is invalid:' in err
    assert ("* spec.mpiReplicaSpecs.Launcher.replicas: Invalid value: 2: an MPIJob has exactly one launcher; "
            "set it to 1 or remove it") in err


def test_not_an_mpijob_unparsable_missing_file_and_bad_flag(tmp_path: Path) -> None:
    code, out, err = run("-f", str(REPO / "examples" / "pi.yaml"), home=tmp_path)
    assert (code, out) == (Exit.INVALID, "") and '* kind: Invalid value: "TrainJob"' in err
    code, out, err = run("-f", "-", stdin="spec: [unclosed", home=tmp_path)
    assert (code, out) == (Exit.INVALID, "") and "cannot parse YAML" in err
    code, out, err = run("-f", str(tmp_path / "missing.yaml"), home=tmp_path)
    assert (code, out) == (Exit.INVALID, "") and "no such file" in err
    code, out, err = run("-f", str(PI), "-o", "wide", home=tmp_path)
    assert (code, out) == (Exit.USAGE, "") and "use one of: yaml, json" in err
    code, _, err = run(home=tmp_path)
    assert code == Exit.USAGE and "--filename" in err
