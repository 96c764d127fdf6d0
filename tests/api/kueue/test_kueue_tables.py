"""`kubectl get` columns for Kueue kinds: the CRDs' additionalPrinterColumns, at either version."""

from __future__ import annotations

from datetime import UTC, datetime

from kueue_samples import cluster_queue, local_queue, priority_class, workload
from mpijob.api.core import resources as r
from mpijob.api.core import tables
from mpijob.api.kueue.conversion import down

NOW = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


def _row(res: r.Resource, obj: dict) -> dict[str, object]:
    obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    table = tables.table(res, [obj], "1", now=NOW)
    names = [c["name"] for c in table["columnDefinitions"]]
    return dict(zip(names, table["rows"][0]["cells"]))


def test_cluster_queue_columns_at_both_versions() -> None:
    cq = cluster_queue(cohortName="research", queueingStrategy="StrictFIFO")
    cq["status"] = {"pendingWorkloads": 3, "admittedWorkloads": 2}
    want = {"Name": "team-a", "Cohort": "research", "Strategy": "StrictFIFO", "Pending Workloads": 3,
            "Admitted Workloads": 2}
    assert _row(r.CLUSTER_QUEUES, cq) == want
    v1 = r.lookup("kueue.x-k8s.io", "v1beta1", "clusterqueues")
    assert _row(v1, down(cq)) == want
    wide = {c["name"]: c["priority"] for c in tables.column_definitions(r.CLUSTER_QUEUES)}
    assert wide["Strategy"] == 1 and wide["Admitted Workloads"] == 1 and wide["Pending Workloads"] == 0


def test_local_queue_workload_and_priority_class_columns() -> None:
    lq = local_queue()
    lq["status"] = {"pendingWorkloads": 1, "admittedWorkloads": 0}
    assert _row(r.LOCAL_QUEUES, lq) == {"Name": "user-queue", "ClusterQueue": "team-a", "Pending Workloads": 1,
                                        "Admitted Workloads": 0}
    assert _row(r.WORKLOADS, workload()) == {"Name": "trainjob-pi-1a2b3", "Queue": "user-queue",
                                             "Reserved in": "team-a", "Admitted": "True", "Finished": "",
                                             "Age": "5m"}
    assert _row(r.WORKLOAD_PRIORITY_CLASSES, priority_class()) == {"Name": "high", "Value": 1000}
