"""`Connection` and the waits against a real local server: create (and dry run), lists, waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijob.api.core.errors import ApiError
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.core import Call, collection_path, display_name, resource_for
from mpijob.client.errors import WaitTimeout
from mpijob.client.wait import wait_for_finish, wait_until_gone

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def cluster(server: Any) -> Iterator[Connection]:
    with Connection(choose_cluster(server.kubeconfig)) as c:
        yield c


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def _suspended_job(name: str) -> dict[str, Any]:
    job = yaml.safe_load((EXAMPLES / "hello.yaml").read_text())
    job["metadata"]["name"] = name
    job["spec"]["suspend"] = True
    return job


def test_dry_run_creates_nothing_then_create_does(cluster: Connection) -> None:
    cm = _configmap("client-dry")
    assert cluster.create(cm, dry_run=True)["metadata"]["name"] == "client-dry"
    with pytest.raises(ApiError) as e:
        cluster.run(Call("GET", "/api/v1/namespaces/default/configmaps/client-dry"))
    assert e.value.code == 404
    created = cluster.create(cm)
    assert created["metadata"]["uid"] and created["data"] == {"k": "v"}
    with pytest.raises(ApiError) as e:
        cluster.create(cm)
    assert (e.value.code, e.value.reason) == (409, "AlreadyExists")
    cluster.run(Call("DELETE", "/api/v1/namespaces/default/configmaps/client-dry"))


def test_invalid_trainjob_error_carries_causes(cluster: Connection) -> None:
    job = _suspended_job("client-bad")
    job["spec"]["trainer"]["numNodes"] = 0
    with pytest.raises(ApiError) as e:
        cluster.create(job, dry_run=True)
    assert e.value.code == 422 and e.value.reason == "Invalid"
    assert [c.field for c in e.value.causes] == ["spec.trainer.numNodes"]


def test_trainjob_get_list_delete(cluster: Connection) -> None:
    cluster.create(_suspended_job("client-tj"))
    assert cluster.get_trainjob("client-tj")["spec"]["suspend"] is True
    assert "client-tj" in [j["metadata"]["name"] for j in cluster.list_trainjobs()]
    assert "client-tj" in [j["metadata"]["name"] for j in cluster.list_trainjobs(all_namespaces=True)]
    assert cluster.runtime_for(cluster.get_trainjob("client-tj"))["metadata"]["name"] == "mpi-distributed"
    cluster.delete_trainjob("client-tj")
    cluster.run(wait_until_gone("default", "client-tj"))
    with pytest.raises(ApiError) as e:
        cluster.get_trainjob("client-tj")
    assert e.value.code == 404


def test_runtimes(cluster: Connection) -> None:
    assert "mpi-distributed" in [r["metadata"]["name"] for r in cluster.list_cluster_runtimes()]
    assert cluster.list_runtimes() == []


def test_wait_for_finish_sees_the_terminal_condition(cluster: Connection) -> None:
    cluster.create(_suspended_job("client-wait"))
    with pytest.raises(WaitTimeout):
        cluster.run(wait_for_finish("default", "client-wait", timeout=0.5))

    def finish() -> None:
        time.sleep(0.3)
        cluster.run(Call(
            "PATCH", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/client-wait/status",
            body={"status": {"conditions": [{
                "type": "Failed", "status": "True", "reason": "FailedJobs", "message": "rank 1 exited with code 3",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
            content_type="application/merge-patch+json",
        ))

    t = threading.Thread(target=finish)
    t.start()
    try:
        outcome = cluster.run(wait_for_finish("default", "client-wait", timeout=60))
    finally:
        t.join()
    assert (outcome.type, outcome.reason, outcome.message) == ("Failed", "FailedJobs", "rank 1 exited with code 3")
    assert not outcome.succeeded
    cluster.delete_trainjob("client-wait")


def test_resource_paths_and_names() -> None:
    cm, job = resource_for(_configmap("x")), resource_for(_suspended_job("y"))
    assert collection_path(cm, "ns") == "/api/v1/namespaces/ns/configmaps"
    assert collection_path(job, "ns") == "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs"
    assert display_name(job, "y") == "trainjob.trainer.kubeflow.org/y"
    assert display_name(cm, "x") == "configmap/x"
    with pytest.raises(ApiError, match="not a kind mpijob can create"):
        resource_for({"apiVersion": "trainer.kubeflow.org/v1", "kind": "TrainJob"})
