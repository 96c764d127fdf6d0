"""Table columns and ages as `kubectl get` prints them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mpijob.api.core import durations, resources, tables

NOW = datetime(2025, 1, 10, 12, 0, 0, tzinfo=UTC)


def created(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("seconds", "text"), [
    (5, "5s"), (119, "119s"), (180, "3m"), (190, "3m10s"), (45 * 60, "45m"), (2 * 3600, "120m"),
    (3 * 3600, "3h"), (3 * 3600 + 600, "3h10m"), (10 * 3600, "10h"), (4 * 86400, "4d"), (4 * 86400 + 7200, "4d2h"),
    (30 * 86400, "30d"), (3 * 365 * 86400, "3y"),
])
def test_human_duration(seconds: int, text: str) -> None:
    assert durations.human_duration(seconds) == text


def test_trainjob_columns_follow_upstream_printer_columns() -> None:
    tj = {"metadata": {"name": "pi", "creationTimestamp": created(300)},
          "status": {"conditions": [{"type": "Suspended", "status": "False"}, {"type": "Complete", "status": "True"}]}}
    t = tables.table(resources.TRAINJOBS, [tj, {"metadata": {"name": "new", "creationTimestamp": created(2)}}], "7",
                     now=NOW)
    assert t["kind"] == "Table" and t["metadata"]["resourceVersion"] == "7"
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "State", "Age"]
    assert t["rows"][0]["cells"] == ["pi", "Complete", "5m"]
    assert t["rows"][1]["cells"] == ["new", "", "2s"]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_pod_columns_and_status() -> None:
    pod = {"metadata": {"name": "p", "creationTimestamp": created(60)},
           "spec": {"containers": [{"name": "node"}, {"name": "side"}], "nodeName": "host"},
           "status": {"phase": "Running", "podIP": "10.0.0.2", "containerStatuses": [
               {"name": "node", "ready": True, "restartCount": 1, "state": {"running": {}}},
               {"name": "side", "ready": False, "restartCount": 2, "state": {"terminated": {"exitCode": 137,
                                                                                         "reason": "OOMKilled"}}}]}}
    t = tables.table(resources.PODS, [pod], "1", now=NOW)
    defs = t["columnDefinitions"]
    assert [c["name"] for c in defs if c["priority"] == 0] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert [c["name"] for c in defs if c["priority"] > 0][:2] == ["IP", "Node"]
    assert t["rows"][0]["cells"][:7] == ["p", "1/2", "OOMKilled", 3, "60s", "10.0.0.2", "host"]
    exited = {"metadata": {"name": "e"}, "spec": {"containers": [{"name": "c"}]},
              "status": {"phase": "Failed", "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 3}}}]}}
    assert tables.table(resources.PODS, [exited], "1", now=NOW)["rows"][0]["cells"][2] == "ExitCode:3"
    deleting = {"metadata": {"name": "d", "deletionTimestamp": created(1)}, "spec": {"containers": []},
                "status": {"phase": "Running"}}
    assert tables.table(resources.PODS, [deleting], "1", now=NOW)["rows"][0]["cells"][2] == "Terminating"


def test_other_kinds() -> None:
    secret = {"metadata": {"name": "s", "creationTimestamp": created(10)}, "type": "kubernetes.io/ssh-auth",
              "data": {"a": "", "b": ""}}
    assert tables.table(resources.SECRETS, [secret], "1", now=NOW)["rows"][0]["cells"] == ["s", "kubernetes.io/ssh-auth",
                                                                                          2, "10s"]
    cm = {"metadata": {"name": "c", "creationTimestamp": created(10)}, "data": {"x": "1"}}
    assert tables.table(resources.CONFIGMAPS, [cm], "1", now=NOW)["rows"][0]["cells"] == ["c", 1, "10s"]
    rt = {"metadata": {"name": "mpi", "creationTimestamp": created(7200 * 12)}}
    t = tables.table(resources.CLUSTER_TRAINING_RUNTIMES, [rt], "1", now=NOW, include_object="Object")
    assert t["rows"][0]["cells"] == ["mpi", "24h"] and t["rows"][0]["object"] is rt
    ev = {"metadata": {"name": "e1"}, "type": "Warning", "reason": "Failed", "message": "rank 3 exited",
          "involvedObject": {"kind": "TrainJob", "name": "pi"}, "lastTimestamp": created(30)}
    cells = tables.table(resources.EVENTS, [ev], "1", now=NOW)["rows"][0]["cells"]
    assert cells[:5] == ["30s", "Warning", "Failed", "trainjob/pi", "rank 3 exited"]
