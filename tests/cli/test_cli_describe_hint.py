"""`mpijob describe trainjob`'s one-machine hint: a job of several nodes whose pods all run on the local
cluster's one machine is told that one pod with every process would use shared memory."""

from __future__ import annotations

import json
from typing import Any

from cli_support import Invoke
from mpijob.cli.placement_hint import ONE_POD_LATENCY_US, TWO_PODS_LATENCY_US, on_local_cluster, one_machine_hint
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection


def _pod(node: str | None) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"nodeName": node} if node else {}}


def _job(trainer: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "j"}, "spec": {"trainer": trainer}}


def test_describe_hints_one_pod_when_every_pod_shares_the_machine(mpijob_proc: Invoke) -> None:
    r = mpijob_proc("run", "trainjob", "hint-two-nodes", "--nodes", "2", "--timeout", "180", "--", "mpirun", "true")
    assert r.exit_code == 0, r.stderr
    try:
        text = mpijob_proc("describe", "trainjob", "hint-two-nodes").stdout
        hint = [line for line in text.splitlines() if line.startswith("Hint: ")]
        assert len(hint) == 1, text
        assert hint[0].startswith("Hint: all 2 pods run on one machine (")
        assert "one pod with 2 processes (numNodes: 1, numProcPerNode: 2 on a runtime without runLauncherAsNode)" \
            in hint[0]
        assert f"{ONE_POD_LATENCY_US:g} µs vs {TWO_PODS_LATENCY_US:g} µs" in hint[0]
        as_json = mpijob_proc("describe", "trainjob", "hint-two-nodes", "-o", "json").stdout
        assert json.loads(as_json)["metadata"]["name"] == "hint-two-nodes"  # the object alone, no hint
    finally:
        assert mpijob_proc("delete", "trainjob", "hint-two-nodes").exit_code == 0


def test_the_local_cluster_is_told_from_its_version(server: Any) -> None:
    with Connection(choose_cluster(server.kubeconfig)) as conn:
        assert conn.run(on_local_cluster()) is True
    op = on_local_cluster()
    assert next(op).path == "/version"
    try:
        op.send({"gitVersion": "v1.32.0"})  # a real Kubernetes
    except StopIteration as done:
        assert done.value is False
    else:
        raise AssertionError("on_local_cluster asked more than /version")


def test_no_hint_for_one_node_for_pods_on_two_nodes_or_for_unscheduled_pods() -> None:
    two = _job({"numNodes": 2, "numProcPerNode": 3})
    assert "one pod with 6 processes" in (one_machine_hint(two, [_pod("vm"), _pod("vm")], None) or "")
    assert one_machine_hint(_job({"numNodes": 1}), [_pod("vm"), _pod("vm")], None) is None
    assert one_machine_hint(two, [_pod("vm"), _pod("other")], None) is None
    assert one_machine_hint(two, [_pod("vm"), _pod(None)], None) is None
    assert one_machine_hint(two, [], None) is None
    runtime = {"spec": {"mlPolicy": {"numNodes": 4, "mpi": {"numProcPerNode": 2}}}}
    hint = one_machine_hint(_job({}), [_pod("vm")] * 4, runtime)  # numbers from the runtime
    assert hint is not None and "all 4 pods" in hint and "one pod with 8 processes" in hint
