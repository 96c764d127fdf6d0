"""The pure side of the metrics: the phases of a job's start read from its stored objects, and the
PodMetrics and NodeMetrics that `kubectl top` reads."""

from __future__ import annotations

import json
from datetime import UTC

from mpijob.api import Obj
from mpijob.api.trainer.metrics import (
    ADMISSION,
    FIRST_OUTPUT,
    NODES_READY,
    Usage,
    gpus_of,
    node_metrics,
    pod_metrics,
    queued_at,
    startup_phases,
)

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def stamp(offset: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(T0 + offset, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, rjob: str, created: float, started: float | None) -> Obj:
    status = {"startTime": stamp(started)} if started is not None else {}
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": stamp(created),
                         "labels": {"jobset.sigs.k8s.io/replicatedjob-name": rjob}}, "status": status}


def workload(created: float, admitted: float | None, requeued: float | None = None) -> Obj:
    conditions = []
    if admitted is not None:
        conditions.append({"type": "Admitted", "status": "True", "lastTransitionTime": stamp(admitted)})
    if requeued is not None:
        conditions.append({"type": "Requeued", "status": "True", "lastTransitionTime": stamp(requeued)})
    return {"metadata": {"creationTimestamp": stamp(created)}, "status": {"conditions": conditions}}


def test_the_phases_of_a_start_are_read_from_what_is_stored() -> None:
    tj = {"metadata": {"creationTimestamp": stamp(0)}}
    pods = [pod("l", "launcher", 12, 15), pod("n0", "node", 12, 12), pod("n1", "node", 13, 13)]
    assert startup_phases(tj, workload(0, 10), pods, first_output=T0 + 15.25) == {
        ADMISSION: 10.0, NODES_READY: 3.0, FIRST_OUTPUT: 0.25}
    # requeued after a preemption: the wait counts from the requeue, as Kueue's does
    assert startup_phases(tj, workload(0, 40, requeued=30), pods, None) == {ADMISSION: 10.0, NODES_READY: 3.0}
    assert queued_at(workload(0, 40, requeued=30)) == T0 + 30
    # never admitted, or admitted but not started: only what happened
    assert startup_phases(tj, workload(0, None), [], None) == {}
    assert startup_phases(tj, workload(0, 5), [pod("n0", "node", 6, None)], None) == {ADMISSION: 5.0}


def test_pod_and_node_metrics_are_metrics_servers_shapes() -> None:
    p = {"metadata": {"name": "job-node-0-0-abcde", "namespace": "ns", "labels": {"a": "b"}}}
    gpus = [{"index": 1, "utilization": 50.0}]
    m = pod_metrics(p, T0, 2.0, {"node": Usage(0.25, 64 << 20)}, gpus)
    assert m["kind"] == "PodMetrics" and m["apiVersion"] == "metrics.k8s.io/v1beta1"
    assert m["timestamp"] == "2023-11-14T22:13:20Z" and m["window"] == "2.000s"
    assert m["containers"] == [{"name": "node", "usage": {"cpu": "250000000n", "memory": "65536Ki"}}]
    assert m["metadata"]["labels"] == {"a": "b"}
    assert json.loads(m["metadata"]["annotations"]["mpijob.io/gpus"]) == gpus == gpus_of(m)
    assert "annotations" not in pod_metrics(p, T0, 2.0, {}, [])["metadata"]
    n = node_metrics({"metadata": {"name": "machine"}}, T0, 1.5, Usage(1.0, 1 << 30))
    assert n["kind"] == "NodeMetrics" and n["usage"] == {"cpu": "1000000000n", "memory": "1048576Ki"}
