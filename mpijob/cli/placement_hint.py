"""`mpijob describe`'s hint for a multi-node job whose pods all share one machine: there one pod with
every process would talk over shared memory instead of TCP between pods (bench/datapath.py measures
both)."""

from __future__ import annotations

from mpijob.api import Obj
from mpijob.api.core.errors import ApiError
from mpijob.client.core import Call, Op
from mpijob.client.doctor.cluster import LOCAL_MARK

# Median one-way latency of an 8 B MPI ping-pong between two ranks, from bench/datapath.py on the 2-core
# dev machine (2026-11-24, bench/README.md): both ranks in one pod, and one rank in each of two pods.
ONE_POD_LATENCY_US = 0.93
TWO_PODS_LATENCY_US = 4.87


def on_local_cluster() -> Op[bool]:
    """Whether the server is the local one-machine cluster (its `/version` says so, as `mpijob doctor`
    reads it); False for a server that hides its version."""
    try:
        version = (yield from Call("GET", "/version")) or {}
    except ApiError:
        return False
    return str(version.get("gitVersion") or "").endswith(LOCAL_MARK)


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def one_machine_hint(trainjob: Obj, pods: list[Obj], runtime: Obj | None) -> str | None:
    """The hint line for a job of numNodes > 1 whose pods are all bound to the same Node; None otherwise.
    Call it only on the local cluster, where a Node is the machine."""
    trainer = (trainjob.get("spec") or {}).get("trainer") or {}
    policy = ((runtime or {}).get("spec") or {}).get("mlPolicy") or {}
    nodes = _int(trainer.get("numNodes"), _int(policy.get("numNodes"), 1))
    machines = {str((p.get("spec") or {}).get("nodeName") or "") for p in pods}
    if nodes < 2 or not pods or len(machines) != 1 or "" in machines:
        return None
    per_node = _int(trainer.get("numProcPerNode"), _int((policy.get("mpi") or {}).get("numProcPerNode"), 1))
    procs = nodes * per_node
    return (f"Hint: all {len(pods)} pods run on one machine ({machines.pop()}); one pod with {procs} processes "
            f"(numNodes: 1, numProcPerNode: {procs} on a runtime without runLauncherAsNode) talks over shared "
            f"memory instead of TCP: ping-pong latency {ONE_POD_LATENCY_US:g} µs vs {TWO_PODS_LATENCY_US:g} µs "
            "(bench/datapath.py).")
