"""What one pod of a job costs this machine beyond its program, which `controllers/kubelet/capacity.py`
counts when it refuses a job the machine could never hold.

    .venv/bin/python bench/podcost.py [--nodes N] [--python]

Runs one TrainJob of N nodes (default 64) whose ranks sleep (`--python`: mpi4py ranks waiting) on a
temporary local cluster (root: pod cgroups), and once every rank runs reads each node pod's processes from
its cgroup, with those above it (`unshare`, its supervisor): tasks (threads) and memory (proportional set
size, so pages shared among pods are split between them), the program apart. Also the server's open file
descriptors per pod. Prints one JSON object: per pod, the median and max over the node pods, beside the
constants capacity.py uses."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster
from surfaces import NAMESPACE, create, delete_all, ready_client

from mpijob.controllers.kubelet import capacity, cgroups

SLEEP = "sleep"
# --python: each rank an mpi4py program that has initialized MPI (what capacity.PROGRAM_* estimate)
PYTHON_RANK = ["python3", "-c", "from mpi4py import MPI; import time; MPI.COMM_WORLD.Barrier(); time.sleep(120)"]
Obj = dict[str, Any]


def pss_kib(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("Pss:")), 0)


def _threads(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("Threads:")), 0)


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def pod_processes(pod: str) -> list[int]:
    """Every process in the pod's cgroup (`cgroups.PodCgroup`: <root>[/memory]/mpijob/<cluster>/<pod name>)."""
    found = [*cgroups.ROOT.glob(f"mpijob/*/{pod}/cgroup.procs"),
             *cgroups.ROOT.glob(f"memory/mpijob/*/{pod}/cgroup.procs")]
    return [int(p) for f in found for p in f.read_text().split()]


def _ppid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rfind(")") + 2:].split()[1])


def with_supervisor(procs: list[int], server: int) -> list[int]:
    """The pod's processes and those above them outside its cgroup (`unshare`, the pod's supervisor), up to the
    supervisors' fork server, the server's child, which all pods share."""
    out, seen = list(procs), set(procs)
    for pid in procs:
        up = _ppid(pid)
        while up > 1 and up not in seen and _ppid(up) not in (server, 0, 1):
            seen.add(up)
            out.append(up)
            up = _ppid(up)
    return out


def measure(nodes: int, python: bool) -> Obj:
    program = "python3" if python else SLEEP
    with temp_cluster("bench-podcost-") as (_, info), ready_client(info.kubeconfig) as http:
        fds_before = len(os.listdir(f"/proc/{info.pid}/fd"))
        name = "podcost"
        create(http, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                      "metadata": {"name": name, "namespace": NAMESPACE},
                      "spec": {"runtimeRef": {"name": "mpi-distributed"},
                               "trainer": {"numNodes": nodes,
                                           "command": ["mpirun", *(PYTHON_RANK if python else [SLEEP, "120"])]}}})
        deadline = time.monotonic() + 240
        while True:
            pods = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods",
                            params={"labelSelector": f"jobset.sigs.k8s.io/jobset-name={name}"}).json()["items"]
            nodes_pods = [p for p in pods if "-node-" in p["metadata"]["name"]]
            procs = {p["metadata"]["name"]: pod_processes(p["metadata"]["name"]) for p in nodes_pods}
            if len(procs) == nodes - 1 and all(any(comm(q) == program for q in ps) for ps in procs.values()):
                break
            if time.monotonic() > deadline:
                seen = {pod: sorted(comm(q) for q in ps) for pod, ps in list(procs.items())[:2]}
                raise SystemExit(f"not every node pod's rank started within 240 s: {len(procs)} node pods seen, "
                                 f"processes of two: {seen}")
            time.sleep(1)
        time.sleep(2)  # wire-up done: the daemons' threads settle
        tasks, memory, programs, program_tasks = [], [], [], []
        for ps in procs.values():
            own = [q for q in with_supervisor(ps, info.pid) if comm(q) != program]
            tasks.append(sum(_threads(q) for q in own))
            memory.append(sum(pss_kib(q) for q in own))
            programs.append(sum(pss_kib(q) for q in ps if comm(q) == program))
            program_tasks.append(sum(_threads(q) for q in ps if comm(q) == program))
        fds = (len(os.listdir(f"/proc/{info.pid}/fd")) - fds_before) / len(pods)
        names = sorted({comm(q) for ps in procs.values() for q in with_supervisor(ps, info.pid)})
        delete_all(http, [name])
    return {
        "nodes": nodes, "node_pods_measured": len(procs), "processes_seen": names,
        "tasks_per_pod": {"median": statistics.median(tasks), "max": max(tasks),
                          "capacity.POD_TASKS": capacity.POD_TASKS},
        "memory_per_pod_mib": {"median": round(statistics.median(memory) / 1024, 1),
                               "max": round(max(memory) / 1024, 1), "capacity.POD_MEMORY": capacity.POD_MEMORY >> 20},
        "program": {"command": program, "memory_mib": round(statistics.median(programs) / 1024, 2),
                    "tasks": statistics.median(program_tasks), "capacity.PROGRAM_MEMORY": capacity.PROGRAM_MEMORY >> 20,
                    "capacity.PROGRAM_TASKS": capacity.PROGRAM_TASKS},
        "server_fds_per_pod": {"measured": round(fds, 1), "capacity.POD_FDS": capacity.POD_FDS},
    }


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--nodes", type=int, default=64)
    args.add_argument("--python", action="store_true", help="ranks of mpi4py, not `sleep`")
    opts = args.parse_args(argv)
    if os.geteuid() != 0:
        print("bench/podcost.py reads pod cgroups, which only a server run as root makes", file=sys.stderr)
        return 1
    print(json.dumps(measure(opts.nodes, opts.python), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
