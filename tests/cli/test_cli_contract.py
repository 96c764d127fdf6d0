"""Issue 5's CLI contract, each exit code reached by a real scenario against a real server, plus the
machine outputs pipelines rely on: `create`/`run -o json`, `describe -o json|yaml`, and the imperative
`create trainjob NAME … -- COMMAND` that yields the same TrainJob a YAML does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from cli_support import Invoke, trainjob_names
from mpijob.store import server_process
from mpijob.store.home import Home


def _job_file(tmp_path: Path, name: str, script: str, **trainer: Any) -> Path:
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
           "spec": {"runtimeRef": {"name": "mpi-distributed"},
                    "trainer": {"numNodes": 1, "command": ["bash", "-c", script], **trainer}}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def _kubeconfig_with_token(server: Any, path: Path, token: str) -> Path:
    config = yaml.safe_load(Path(server.kubeconfig).read_text())
    config["users"][0]["user"]["token"] = token
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


# -- 0 and 1: run -o json prints only the outcome --------------------------------------------------


def test_run_ok_exits_0_and_prints_only_json(mpijob_proc: Invoke, tmp_path: Path) -> None:
    r = mpijob_proc("run", "-o", "json", "--timeout", "180", "-f",
                    str(_job_file(tmp_path, "c5-ok", "echo from-the-launcher")))
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)  # the whole of stdout is one JSON document
    assert out["name"] == "c5-ok" and out["namespace"] == "default" and out["status"] == "Succeeded"
    assert set(out) == {"name", "namespace", "status", "message"}
    assert "from-the-launcher" in r.stderr and "from-the-launcher" not in r.stdout  # the log went to stderr
    assert "c5-ok created" in r.stderr
    assert mpijob_proc("delete", "trainjob", "c5-ok").exit_code == 0


def test_run_failing_job_exits_1_with_the_failure_message(mpijob_proc: Invoke, tmp_path: Path) -> None:
    r = mpijob_proc("run", "-o", "json", "--timeout", "180", "-f",
                    str(_job_file(tmp_path, "c5-fail", "echo doomed; exit 3")))
    assert r.exit_code == 1, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["status"] == "Failed" and "exited with code 3" in out["message"]
    assert mpijob_proc("delete", "trainjob", "c5-fail").exit_code == 0


# -- 2: usage errors -------------------------------------------------------------------------------


def test_usage_errors_exit_2_and_say_why(mpijob: Invoke) -> None:
    r = mpijob("create", "trainjob", "x", "--nodez", "2")
    assert r.exit_code == 2 and "No such option: --nodez" in r.stderr
    r = mpijob("create", "trainjob")
    assert r.exit_code == 2 and "missing the TrainJob's name" in r.stderr
    r = mpijob("create", "deployment", "web")
    assert r.exit_code == 2 and "'deployment'" in r.stderr and "create trainjob NAME" in r.stderr
    r = mpijob("create")
    assert r.exit_code == 2 and "-f FILE" in r.stderr
    r = mpijob("create", "trainjob", "x", "--nodes", "two")
    assert r.exit_code == 2 and "Invalid value for '--nodes'" in r.stderr
    r = mpijob("get", "trainjobs", "-o", "xml")
    assert r.exit_code == 2 and "'xml'" in r.stderr and "json" in r.stderr
    r = mpijob("run", "-f", "whatever.yaml", "-o", "name")
    assert r.exit_code == 2 and "'name'" in r.stderr


def test_flags_and_file_do_not_mix(mpijob: Invoke, tmp_path: Path) -> None:
    path = _job_file(tmp_path, "c5-mix", "true")
    r = mpijob("create", "-f", str(path), "--nodes", "2")
    assert r.exit_code == 2 and "--nodes cannot be combined with -f" in r.stderr
    r = mpijob("create", "-f", str(path), "trainjob", "x")
    assert r.exit_code == 2 and "not both" in r.stderr
    assert "c5-mix" not in trainjob_names(mpijob)


# -- 3: invalid input ------------------------------------------------------------------------------


def test_invalid_input_exits_3(mpijob: Invoke, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: TrainJob\nmetadata: {name: [x\n")
    r = mpijob("create", "-f", str(bad))
    assert r.exit_code == 3 and "cannot parse YAML" in r.stderr
    r = mpijob("create", "trainjob", "c5-zero", "--nodes", "0", "--memory", "lots", "--", "true")  # before any request
    assert r.exit_code == 3
    assert "* spec.trainer.numNodes: Invalid value: 0" in r.stderr and "'lots'" in r.stderr
    r = mpijob("create", "trainjob", "c5-rt", "--runtime", "no-such-runtime", "--", "true")  # the server's 422
    assert r.exit_code == 3 and "spec.runtimeRef.name" in r.stderr and "no-such-runtime" in r.stderr
    assert not {"c5-zero", "c5-rt"} & set(trainjob_names(mpijob))


# -- 4, 5, 6 ---------------------------------------------------------------------------------------


def test_not_found_exits_4(mpijob: Invoke) -> None:
    r = mpijob("get", "trainjob", "nope")
    assert r.exit_code == 4 and '"nope" not found' in r.stderr
    assert mpijob("describe", "trainjob", "nope", "-o", "json").exit_code == 4


def test_wrong_token_exits_5(mpijob: Invoke, server: Any, tmp_path: Path) -> None:
    kc = _kubeconfig_with_token(server, tmp_path / "kc", "not-the-token")
    r = mpijob("get", "trainjobs", "--kubeconfig", str(kc))
    assert r.exit_code == 5 and "Unauthorized" in r.stderr and "kubeconfig" in r.stderr
    assert "not-the-token" not in r.stderr + r.stdout


def test_over_capacity_exits_6(mpijob: Invoke) -> None:
    r = mpijob("create", "trainjob", "c5-huge", "--gpus", "64", "--", "true")
    assert r.exit_code == 6, r.stderr
    assert "exceeded quota" in r.stderr and "nvidia.com/gpu" in r.stderr
    assert "c5-huge" not in trainjob_names(mpijob)


# -- 7 and 8 ---------------------------------------------------------------------------------------


def test_run_timeout_exits_7_and_reports_where_the_job_stood(mpijob_proc: Invoke, tmp_path: Path) -> None:
    r = mpijob_proc("run", "-o", "json", "--timeout", "1", "-f",
                    str(_job_file(tmp_path, "c5-sleep", "sleep 120")))
    assert r.exit_code == 7, r.stderr
    out = json.loads(r.stdout)
    assert out["name"] == "c5-sleep" and out["status"] in ("Queued", "Starting", "Running")
    assert "c5-sleep" in out["message"] and "c5-sleep" in r.stderr
    assert mpijob_proc("get", "trainjob", "c5-sleep").exit_code == 0  # the job keeps running
    assert mpijob_proc("delete", "trainjob", "c5-sleep", "--wait").exit_code == 0


def test_stopped_server_exits_8(mpijob: Invoke, new_server: Any, tmp_path: Path) -> None:
    info = new_server("c5-stopped", controllers=False)
    kc = tmp_path / "stopped-kubeconfig"
    kc.write_text(Path(info.kubeconfig).read_text())
    kc.chmod(0o600)
    server_process.stop(Home(info.home), timeout=20)
    r = mpijob("get", "trainjobs", "--kubeconfig", str(kc))
    assert r.exit_code == 8 and "cannot reach the API server" in r.stderr and r.stdout == ""


# -- machine outputs -------------------------------------------------------------------------------


def test_create_o_json_prints_name_namespace_status(mpijob: Invoke) -> None:
    r = mpijob("create", "trainjob", "c5-json", "--nodes", "2", "-o", "json", "--", "sleep", "60")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"name": "c5-json", "namespace": "default", "status": "Queued"}
    r = mpijob("create", "trainjob", "c5-name", "-o", "name", "--", "true")
    assert r.stdout == "trainjob.trainer.kubeflow.org/c5-name\n"
    for name in ("c5-json", "c5-name"):
        assert mpijob("delete", "trainjob", name).exit_code == 0


def test_describe_o_json_and_yaml_print_the_object(mpijob: Invoke) -> None:
    assert mpijob("create", "trainjob", "c5-desc", "--", "true").exit_code == 0
    as_json = json.loads(mpijob("describe", "trainjob", "c5-desc", "-o", "json").stdout)
    as_yaml = yaml.safe_load(mpijob("describe", "trainjob", "c5-desc", "-o", "yaml").stdout)
    assert as_json["kind"] == "TrainJob" and as_json["metadata"]["name"] == "c5-desc"
    assert as_yaml["metadata"]["uid"] == as_json["metadata"]["uid"]
    queue = json.loads(mpijob("describe", "clusterqueue", "cluster-queue", "-o", "json").stdout)
    assert queue["kind"] == "ClusterQueue" and queue["metadata"]["name"] == "cluster-queue"
    assert mpijob("describe", "trainjob", "c5-desc", "-o", "wide").exit_code == 2
    assert mpijob("delete", "trainjob", "c5-desc").exit_code == 0


def test_imperative_dry_run_is_the_same_trainjob_as_the_yaml(mpijob: Invoke, tmp_path: Path) -> None:
    flags = mpijob("create", "trainjob", "c5-same", "--nodes", "2", "--procs-per-node", "2", "--cpu", "1",
                   "--memory", "1Gi", "--env", "A=1", "--env", "B=x=y", "--queue", "user-queue",
                   "--priority", "low", "--image", "img:1", "--dry-run", "-o", "yaml",
                   "--", "mpirun", "python", "-c", "print(1)")
    assert flags.exit_code == 0, flags.stderr
    written = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "c5-same", "labels": {"kueue.x-k8s.io/queue-name": "user-queue",
                                                   "kueue.x-k8s.io/priority-class": "low"}},
        "spec": {"runtimeRef": {"name": "mpi-distributed", "apiGroup": "trainer.kubeflow.org",
                                "kind": "ClusterTrainingRuntime"},
                 "trainer": {"image": "img:1", "command": ["mpirun", "python", "-c", "print(1)"],
                             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "x=y"}],
                             "numNodes": 2, "numProcPerNode": 2,
                             "resourcesPerNode": {"limits": {"cpu": "1", "memory": "1Gi"}}}},
    }
    path = tmp_path / "same.yaml"
    path.write_text(yaml.safe_dump(written))
    from_file = mpijob("create", "-f", str(path), "--dry-run", "-o", "yaml")
    assert from_file.exit_code == 0, from_file.stderr
    a, b = yaml.safe_load(flags.stdout), yaml.safe_load(from_file.stdout)
    assert a["spec"] == b["spec"] and a["metadata"]["labels"] == b["metadata"]["labels"]
    assert a["spec"]["trainer"]["command"] == ["mpirun", "python", "-c", "print(1)"]  # the server's answer
    assert "c5-same" not in trainjob_names(mpijob)  # a dry run creates nothing
