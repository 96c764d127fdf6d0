"""`mpijob suspend|resume`, `get queues|clusterqueues|localqueues`, `describe queue`.

Rendering is tested on fixture objects; the commands against a real server without controllers, where
the queue objects and their status are written through the API exactly as given, so every number
the CLI prints is known.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cli_support import Invoke, Result, cli_env, example
from mpijob.cli import queue_views as qv
from mpijob.cli.main import app
from typer.testing import CliRunner

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
NOW = datetime(2026, 1, 1, 1, 0, 0, tzinfo=UTC)
GPU_MSG = ("couldn't assign flavors to pod set node: insufficient quota for nvidia.com/gpu in flavor a100, "
           "previously considered podsets requests (0) + current podset request (32) > maximum capacity (8)")
UNUSED_MSG = "insufficient unused quota for nvidia.com/gpu in flavor a100, 2 more needed"


def _cq(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": ["nvidia.com/gpu", "cpu", "memory"],
                "flavors": [{"name": "a100", "resources": [
                    {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 2},
                    {"name": "cpu", "nominalQuota": "16"}, {"name": "memory", "nominalQuota": "64Gi"}]}]}], **spec}}


CQ_STATUS = {
    "pendingWorkloads": 2, "reservingWorkloads": 1, "admittedWorkloads": 1,
    "flavorsReservation": [{"name": "a100", "resources": [
        {"name": "nvidia.com/gpu", "total": "6", "borrowed": "0"}, {"name": "cpu", "total": "4", "borrowed": "0"},
        {"name": "memory", "total": "8589934592", "borrowed": "0"}]}],
    "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
}


def _lq(ns: str, name: str, cq: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}}


def _workload(name: str, lq: str, priority: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "default", "ownerReferences": [
                {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name.removeprefix("wl-"),
                 "uid": f"uid-{name}", "controller": True}]},
            "spec": {"queueName": lq, "priority": priority, "active": True, "podSets": [
                {"name": "node", "count": 2, "template": {"spec": {"containers": [
                    {"name": "node", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]}}}]}}


def _reserved(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"conditions": [{"type": "QuotaReserved", "status": status, "reason": reason, "message": message,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}


# -- rendering -------------------------------------------------------------------------------------


def test_usage_against_quota_per_flavor_and_resource() -> None:
    cq = {**_cq("team"), "status": CQ_STATUS}
    assert qv.usage_summary(cq) == "a100: nvidia.com/gpu 6/8, cpu 4/16, memory 8Gi/64Gi"
    assert qv.usage_summary(_cq("idle")) == "a100: nvidia.com/gpu 0/8, cpu 0/16, memory 0/64Gi"
    usage_only = {**cq, "status": {"flavorsUsage": [{"name": "a100", "resources": [{"name": "cpu", "total": "3"}]}]}}
    assert "cpu 3/16" in qv.usage_summary(usage_only)


def test_cluster_queue_and_local_queue_rows() -> None:
    cq = {**_cq("team", cohortName="research", queueingStrategy="StrictFIFO",
                preemption={"withinClusterQueue": "LowerPriority"}), "status": CQ_STATUS}
    row = qv.cluster_queue_row(cq, wide=True, now=NOW)
    assert row[:5] == ["team", "research", "StrictFIFO", "2", "1"]
    assert row[6:] == ["1", "within=LowerPriority,reclaim=Never", "1", "60m"]
    v1beta1 = {"spec": {"cohort": "old"}, "metadata": {"name": "x"}}
    assert qv.cluster_queue_row(v1beta1, wide=False)[:3] == ["x", "old", "BestEffortFIFO"]
    lq = {**_lq("default", "team-a", "team"), "status": {"pendingWorkloads": 3, "admittedWorkloads": 2}}
    assert qv.local_queue_row(lq, wide=False) == ["default", "team-a", "team", "3", "2"]
    assert qv.local_queue_row(lq, wide=False, namespace=False) == ["team-a", "team", "3", "2"]


def test_quantities_for_people() -> None:
    assert qv.quantity("8589934592", "memory") == "8Gi"
    assert qv.quantity("1536000000", "memory") == "1536M"
    assert qv.quantity("1024", "cpu") == "1024" and qv.quantity("500m", "cpu") == "500m"


def test_pending_message_is_the_quota_reserved_false_message() -> None:
    assert qv.pending_message({"status": _reserved("False", "Pending", GPU_MSG)}) == GPU_MSG
    assert qv.pending_message({"status": _reserved("True", "QuotaReserved", "Quota reserved")}) == "-"
    assert qv.pending_message(None) == "-"


def test_fallback_order_is_priority_then_age_and_skips_admitted() -> None:
    def wl(name: str, prio: int, created: str, reserved: bool = False) -> dict[str, Any]:
        obj = _workload(name, "team-a", prio)
        obj["metadata"]["creationTimestamp"] = created
        obj["status"] = _reserved("True" if reserved else "False", "x", "")
        return obj

    items = qv.fallback_pending([wl("old", 0, "2026-01-01T00:00:00Z"), wl("hi", 5, "2026-01-02T00:00:00Z"),
                                 wl("run", 9, "2025-01-01T00:00:00Z", reserved=True),
                                 wl("new", 0, "2026-01-03T00:00:00Z")], {("default", "team-a")})
    assert [i["metadata"]["name"] for i in items] == ["hi", "old", "new"]


def test_describe_cluster_queue_text() -> None:
    cq = {**_cq("team", cohortName="research"), "status": CQ_STATUS}
    items = [{"metadata": {"name": "wl-a", "namespace": "default", "creationTimestamp": "2026-01-01T00:30:00Z",
                           "ownerReferences": [{"kind": "TrainJob", "name": "a"}]},
              "priority": 10, "localQueueName": "team-a", "positionInClusterQueue": 0, "positionInLocalQueue": 0}]
    workloads = {("default", "wl-a"): {"status": _reserved("False", "Pending", GPU_MSG)}}
    text = qv.describe_cluster_queue(cq, [_lq("default", "team-a", "team")], items, workloads, now=NOW)
    assert "Cohort:           research" in text
    assert "Borrow Within Cohort:" in text and "Reclaim Within Cohort:" in text
    quota = next(line.split() for line in text.splitlines() if line.split()[:2] == ["a100", "nvidia.com/gpu"])
    assert quota == ["a100", "nvidia.com/gpu", "8", "2", "-", "6", "0"]
    row = next(line for line in text.splitlines() if "default/wl-a" in line)
    assert row.split()[:7] == ["0", "0", "default/wl-a", "TrainJob/a", "default/team-a", "10", "30m"]
    assert row.endswith(GPU_MSG)


# -- against a server --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def k4(servers: Any) -> Any:
    return servers.start("k4-queues", controllers=False)


@pytest.fixture(scope="module")
def api(k4: Any) -> Iterator[httpx.Client]:
    config = yaml.safe_load(Path(k4.kubeconfig).read_text())
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    headers = {"Authorization": f"Bearer {config['users'][0]['user']['token']}"}
    with httpx.Client(base_url=k4.url, verify=ssl.create_default_context(cadata=ca), headers=headers) as c:
        yield c


@pytest.fixture(scope="module")
def cli(k4: Any) -> Invoke:
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        r = runner.invoke(app, list(args), env=cli_env(k4.home))
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception
        return Result(r.exit_code, r.stdout, r.stderr)

    return invoke


def _create(api: httpx.Client, path: str, obj: dict[str, Any], status: dict[str, Any] | None = None) -> None:
    r = api.post(path, json=obj)
    assert r.status_code == 201, r.text
    if status is not None:
        created = r.json()
        created["status"] = status
        name = created["metadata"]["name"]
        r = api.put(f"{path}/{name}/status", json=created)
        assert r.status_code == 200, r.text


@pytest.fixture(scope="module")
def queues(api: httpx.Client) -> httpx.Client:
    """ClusterQueue `team` (cohort research, StrictFIFO) with LocalQueue default/team-a; Workloads:
    wl-run holds quota, wl-hi (priority 10) and wl-lo (priority 0) wait with Kueue's messages."""
    _create(api, f"{KUEUE}/clusterqueues",
            _cq("team", cohortName="research", queueingStrategy="StrictFIFO",
                preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}), CQ_STATUS)
    _create(api, f"{KUEUE}/namespaces/default/localqueues", _lq("default", "team-a", "team"),
            {"pendingWorkloads": 2, "reservingWorkloads": 1, "admittedWorkloads": 1})
    wls = f"{KUEUE}/namespaces/default/workloads"
    _create(api, wls, _workload("wl-run", "team-a", 5),
            _reserved("True", "QuotaReserved", "Quota reserved in ClusterQueue team"))
    _create(api, wls, _workload("wl-lo", "team-a", 0), _reserved("False", "Pending", UNUSED_MSG))
    _create(api, wls, _workload("wl-hi", "team-a", 10), _reserved("False", "Pending", GPU_MSG))
    return api


def test_get_queues_shows_usage_against_quota_and_local_queues(queues: httpx.Client, cli: Invoke) -> None:
    r = cli("get", "queues")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "COHORT", "STRATEGY", "PENDING", "ADMITTED", "USAGE"]
    team = next(line for line in lines if line.startswith("team "))
    assert team.split()[:5] == ["team", "research", "StrictFIFO", "2", "1"]
    assert team.endswith("a100: nvidia.com/gpu 6/8, cpu 4/16, memory 8Gi/64Gi")
    header = next(i for i, line in enumerate(lines) if line.startswith("NAMESPACE"))
    assert lines[header].split() == ["NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED"]
    assert ["default", "team-a", "team", "2", "1"] in [line.split() for line in lines[header:]]

    wide = cli("get", "queues", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-4:] == ["RESERVING", "PREEMPTION", "WEIGHT", "AGE"]
    assert "within=LowerPriority,reclaim=Any" in next(line for line in wide if line.startswith("team "))


def test_get_clusterqueues_and_localqueues_kinds_and_formats(queues: httpx.Client, cli: Invoke) -> None:
    listed = json.loads(cli("get", "queues", "-o", "json").stdout)
    kinds = {(i["kind"], i["metadata"]["name"]) for i in listed["items"]}
    assert {("ClusterQueue", "team"), ("LocalQueue", "team-a")} <= kinds
    one = yaml.safe_load(cli("get", "cq", "team", "-o", "yaml").stdout)
    assert one["kind"] == "ClusterQueue" and one["status"]["pendingWorkloads"] == 2
    assert "clusterqueue.kueue.x-k8s.io/team" in cli("get", "clusterqueues", "-o", "name").stdout.splitlines()
    lqs = cli("get", "localqueues").stdout.splitlines()
    assert lqs[0].split() == ["NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED"]
    assert ["team-a", "team", "2", "1"] in [line.split() for line in lqs]
    assert cli("get", "lq", "-A").stdout.splitlines()[0].split()[0] == "NAMESPACE"
    r = cli("get", "cq", "nope")
    assert r.exit_code == 4 and 'clusterqueues.kueue.x-k8s.io "nope" not found' in r.stderr
    assert cli("get", "queues", "-o", "table").exit_code == 2


def test_describe_queue_lists_pending_workloads_in_order_with_why(queues: httpx.Client, cli: Invoke) -> None:
    r = cli("describe", "queue", "team")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "Kind:             ClusterQueue" in out and "Strategy:         StrictFIFO" in out
    assert "Within ClusterQueue:" in out and "LowerPriority" in out
    lines = out.splitlines()
    pending = lines[next(i for i, line in enumerate(lines) if line.startswith("Pending Workloads:")) + 2:]
    rows = [line for line in pending if "default/wl-" in line]
    assert [row.split()[2] for row in rows] == ["default/wl-hi", "default/wl-lo"]  # priority first; wl-run holds quota
    assert [row.split()[:2] for row in rows] == [["0", "0"], ["1", "1"]]  # positions from the visibility API
    assert rows[0].endswith(GPU_MSG) and rows[1].endswith(UNUSED_MSG)
    assert "TrainJob/hi" in rows[0]


def test_describe_local_queue_with_namespace_and_missing_queue(queues: httpx.Client, cli: Invoke) -> None:
    r = cli("describe", "queue", "team-a", "-n", "default")
    assert r.exit_code == 0, r.stderr
    assert "Kind:             LocalQueue" in r.stdout and "ClusterQueue:     team" in r.stdout
    assert "Quota (ClusterQueue team, shared):" in r.stdout and "default/wl-hi" in r.stdout
    assert "Kind:             LocalQueue" in cli("describe", "queue", "team-a").stdout  # no ClusterQueue of that name
    r = cli("describe", "queue", "nope")
    assert r.exit_code == 4 and 'no ClusterQueue "nope" and no LocalQueue "nope"' in r.stderr
    assert cli("describe", "clusterqueue", "team-a").exit_code == 4


def test_suspend_and_resume_patch_spec_suspend(api: httpx.Client, cli: Invoke, tmp_path: Path) -> None:
    job = example("hello.yaml")
    job["metadata"]["name"] = "k4-susp"
    job["spec"]["suspend"] = False
    assert api.post(TRAINJOBS, json=job).status_code == 201

    r = cli("suspend", "trainjob", "k4-susp")
    assert (r.exit_code, r.stdout) == (0, "trainjob.trainer.kubeflow.org/k4-susp suspended\n")
    assert api.get(f"{TRAINJOBS}/k4-susp").json()["spec"]["suspend"] is True
    r = cli("resume", "tj", "k4-susp")
    assert (r.exit_code, r.stdout) == (0, "trainjob.trainer.kubeflow.org/k4-susp resumed\n")
    assert api.get(f"{TRAINJOBS}/k4-susp").json()["spec"]["suspend"] is False

    r = cli("suspend", "trainjob", "k4-missing")
    assert r.exit_code == 4 and "not found" in r.stderr
    r = cli("resume", "pod", "k4-susp")
    assert r.exit_code == 2 and "use: mpijob resume trainjob NAME" in r.stderr
