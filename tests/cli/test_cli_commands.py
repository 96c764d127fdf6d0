"""create / get / describe / logs / delete / kubeconfig against a real local server.

The TrainJobs here are created suspended: these tests are about the API surface, not about running.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_support import Invoke, example, trainjob_names, write_job
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.core import Call


def _suspended(tmp_path: Path, name: str) -> Path:
    job = example("hello.yaml")
    job["spec"]["suspend"] = True
    return write_job(tmp_path, job, name)


def test_kubeconfig_prints_the_local_kubeconfig(mpijob: Invoke, server: Any) -> None:
    r = mpijob("kubeconfig")
    assert r.exit_code == 0
    path = Path(r.stdout.strip())
    assert path == Path(server.kubeconfig) and path.is_file()
    assert yaml.safe_load(path.read_text())["kind"] == "Config"


def test_create_get_delete_round_trip(mpijob: Invoke, tmp_path: Path) -> None:
    path = _suspended(tmp_path, "cmd-round-trip")
    r = mpijob("create", "-f", str(path))
    assert (r.exit_code, r.stdout) == (0, "trainjob.trainer.kubeflow.org/cmd-round-trip created\n")

    r = mpijob("get", "trainjobs")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "NODES", "PROGRESS", "ETA", "AGE"]
    row = next(line.split() for line in lines if line.startswith("cmd-round-trip "))
    assert row[1:3] == ["Suspended", "3"]

    r = mpijob("get", "trainjobs", "-o", "wide")
    assert r.stdout.splitlines()[0].split()[:8] == ["NAME", "STATE", "NODES", "PROGRESS", "ETA", "AGE", "RUNTIME",
                                                    "MESSAGE"]
    assert "ClusterTrainingRuntime/mpi-distributed" in r.stdout

    one = json.loads(mpijob("get", "trainjob", "cmd-round-trip", "-o", "json").stdout)
    assert one["kind"] == "TrainJob" and one["metadata"]["name"] == "cmd-round-trip"
    assert one["spec"]["trainer"]["env"] == [{"name": "GREETING", "value": "hello-from-mpijob"}]
    listed = json.loads(mpijob("get", "trainjobs", "-o", "json").stdout)
    assert listed["kind"] == "List" and "cmd-round-trip" in [i["metadata"]["name"] for i in listed["items"]]
    as_yaml = yaml.safe_load(mpijob("get", "tj", "cmd-round-trip", "-o", "yaml").stdout)
    assert as_yaml["metadata"]["uid"] == one["metadata"]["uid"]
    names = mpijob("get", "trainjobs", "-o", "name").stdout.splitlines()
    assert "trainjob.trainer.kubeflow.org/cmd-round-trip" in names

    r = mpijob("delete", "trainjob", "cmd-round-trip", "--wait")
    assert (r.exit_code, r.stdout) == (0, 'trainjob.trainer.kubeflow.org "cmd-round-trip" deleted\n')
    assert "cmd-round-trip" not in trainjob_names(mpijob)
    assert mpijob("get", "trainjob", "cmd-round-trip").exit_code == 4
    assert mpijob("delete", "trainjob", "cmd-round-trip").exit_code == 4
    assert mpijob("delete", "trainjob", "cmd-round-trip", "--ignore-not-found").exit_code == 0


def test_create_from_stdin(mpijob: Invoke, tmp_path: Path) -> None:
    text = _suspended(tmp_path, "cmd-stdin").read_text()
    r = mpijob("create", "-f", "-", input=text)
    assert r.exit_code == 0 and "cmd-stdin created" in r.stdout
    assert mpijob("delete", "trainjob", "cmd-stdin").exit_code == 0


def test_get_missing_exits_3(mpijob: Invoke) -> None:
    r = mpijob("get", "trainjobs", "does-not-exist")
    assert r.exit_code == 4 and "not found" in r.stderr
    assert mpijob("get", "pods", "does-not-exist").exit_code == 4
    assert mpijob("get", "runtimes", "does-not-exist").exit_code == 4
    assert mpijob("describe", "trainjob", "does-not-exist").exit_code == 4
    assert mpijob("logs", "does-not-exist").exit_code == 4


def test_get_runtimes_shows_the_bundled_mpi_runtime(mpijob: Invoke) -> None:
    r = mpijob("get", "runtimes")
    assert r.exit_code == 0
    row = next(line.split() for line in r.stdout.splitlines() if line.startswith("mpi-distributed "))
    assert row[1:3] == ["ClusterTrainingRuntime", "mpi"]
    obj = json.loads(mpijob("get", "runtimes", "mpi-distributed", "-o", "json").stdout)
    assert obj["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] is True
    wide = mpijob("get", "clustertrainingruntimes", "-o", "wide").stdout
    assert "OpenMPI" in wide and "LAUNCHER-AS-NODE" in wide


def test_other_namespace_is_empty(mpijob: Invoke) -> None:
    r = mpijob("-n", "kubeflow-system", "get", "trainjobs")
    assert r.exit_code == 0 and "No resources found in kubeflow-system namespace." in r.stderr
    assert json.loads(mpijob("get", "trainjobs", "-n", "kubeflow-system", "-o", "json").stdout)["items"] == []


def test_namespace_mismatch_is_refused(mpijob: Invoke, tmp_path: Path) -> None:
    path = _suspended(tmp_path, "cmd-ns")
    job = yaml.safe_load(path.read_text())
    job["metadata"]["namespace"] = "default"
    path.write_text(yaml.safe_dump(job))
    r = mpijob("create", "-f", str(path), "-n", "kubeflow-system")
    assert r.exit_code == 3 and "--namespace=default" in r.stderr
    assert "cmd-ns" not in trainjob_names(mpijob)


def test_describe_shows_spec_conditions_and_events(mpijob: Invoke, tmp_path: Path, server: Any) -> None:
    assert mpijob("create", "-f", str(_suspended(tmp_path, "cmd-describe"))).exit_code == 0
    with Connection(choose_cluster(server.kubeconfig)) as cluster:
        job = cluster.get_trainjob("cmd-describe")
        cluster.run(Call("POST", "/api/v1/namespaces/default/events", body={
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "cmd-describe.test1", "namespace": "default"},
            "involvedObject": {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                               "name": "cmd-describe", "namespace": "default", "uid": job["metadata"]["uid"]},
            "reason": "TestReason", "message": "a message for describe", "type": "Normal",
            "firstTimestamp": job["metadata"]["creationTimestamp"],
            "lastTimestamp": job["metadata"]["creationTimestamp"], "count": 1,
            "source": {"component": "test"},
        }))
    r = mpijob("describe", "trainjob", "cmd-describe")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    for text in ("Name:             cmd-describe", "Runtime:          ClusterTrainingRuntime/mpi-distributed",
                 "Nodes:          3", "GREETING=hello-from-mpijob", "Conditions:", "Jobs Status:", "Pods:",
                 "Events:", "TestReason", "a message for describe"):
        assert text in out, (text, out)
    assert mpijob("delete", "trainjob", "cmd-describe").exit_code == 0


def test_logs_without_a_launcher_exits_4(mpijob: Invoke, tmp_path: Path) -> None:
    assert mpijob("create", "-f", str(_suspended(tmp_path, "cmd-nolog"))).exit_code == 0
    r = mpijob("logs", "cmd-nolog")
    assert r.exit_code == 4 and "no launcher pod" in r.stderr and "Suspended" in r.stderr
    assert mpijob("delete", "trainjob", "cmd-nolog").exit_code == 0


def test_dump_hides_managed_fields_as_kubectl_does(capsys: pytest.CaptureFixture[str]) -> None:
    from mpijob.cli.output import dump

    managed = [{"manager": "kubectl", "operation": "Apply"}]
    dump({"kind": "List", "items": [{"metadata": {"name": "a", "managedFields": managed}}]}, "json")
    dump({"metadata": {"name": "b", "managedFields": managed}}, "yaml")
    out = capsys.readouterr().out
    assert "managedFields" not in out and '"name": "a"' in out and "name: b" in out
