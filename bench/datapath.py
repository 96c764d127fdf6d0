"""The data path is the bare one: two-rank MPI ping-pong (8 B latency, 1 MiB bandwidth) inside the
local cluster against the same program under a bare `mpirun` on the same machine, in the same run.

    .venv/bin/python bench/datapath.py [--runs N] [--iters I]

Two placements, each with its own bare baseline:
* `one_pod` — numNodes 1, numProcPerNode 2 on a TrainingRuntime the bench creates: `mpi-distributed`
  with `runLauncherAsNode: false`, so the job has one node pod holding both ranks (hostfile: one host,
  2 slots) and a launcher that only runs `mpirun`; against `mpirun -np 2` (shared memory on both sides).
  On `mpi-distributed` itself (runLauncherAsNode) numNodes 1 gives a node pod and the launcher as two
  hosts of 2 slots: 4 slots on a 2-core machine, so the cluster would set yield-when-idle (it cannot see
  `-np 2`); the bench checks that the ranks saw no such setting (`yield_when_idle` in the result).
* `two_pods` — numNodes 2, numProcPerNode 1 on `mpi-distributed` (launcher + one node pod, one rank
  each) against `mpirun -np 2 --mca btl tcp,self` (two local ranks forced onto TCP over loopback, the
  transport two pods of one machine use). What differs: the bare side's second rank is not launched
  over ssh and both ranks share one address.
Prints one JSON object (bench/README.md); exit 1 when something failed to run.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from operator import itemgetter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster
from surfaces import (
    NAMESPACE,
    PYTHON,
    RUNTIME,
    BenchError,
    alternate,
    bare_mpirun,
    ready_client,
    recorded,
    run_to_log,
    stats,
)

PROGRAM = str(Path(__file__).resolve().parent / "pingpong.py")
TARGET_RATIO = 1.05
TCP = ["--mca", "btl", "tcp,self"]
ONE_POD_RUNTIME = "mpi-one-pod"  # the bench's TrainingRuntime: mpi-distributed without runLauncherAsNode
TRAINING_RUNTIMES = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NAMESPACE}/trainingruntimes"
# name: (runtimeRef, numNodes, numProcPerNode, bare mpirun's extra arguments)
PLACEMENTS: dict[str, tuple[dict[str, str], int, int, list[str]]] = {
    "one_pod": ({"name": ONE_POD_RUNTIME, "kind": "TrainingRuntime"}, 1, 2, []),
    "two_pods": ({"name": "mpi-distributed"}, 2, 1, TCP),
}


def pingpong(iters: int) -> list[str]:
    return [PYTHON, PROGRAM, "--iters", str(iters)]


def result(text: str) -> dict[str, Any]:
    """The `PINGPONG {json}` line rank 0 printed."""
    for line in text.splitlines():
        if line.startswith("PINGPONG "):
            return json.loads(line[len("PINGPONG "):])
    raise BenchError(f"no PINGPONG line in:\n{text[-2000:]}")


def create_one_pod_runtime(http: Any) -> None:
    """`mpi-distributed` as a TrainingRuntime of the bench's namespace, without runLauncherAsNode."""
    cluster = http.get(RUNTIME).json()
    spec = copy.deepcopy(cluster["spec"])
    spec["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
    runtime = {"apiVersion": cluster["apiVersion"], "kind": "TrainingRuntime",
               "metadata": {"name": ONE_POD_RUNTIME, "namespace": NAMESPACE,
                            "labels": cluster["metadata"].get("labels") or {}}, "spec": spec}
    resp = http.post(TRAINING_RUNTIMES, json=runtime)
    if resp.status_code != 201:
        raise BenchError(f"POST TrainingRuntime {ONE_POD_RUNTIME} answered {resp.status_code}: {resp.text[:1000]}")


def run_job(http: Any, runtime: dict[str, str], nodes: int, procs: int, iters: int) -> dict[str, Any]:
    """One TrainJob running the ping-pong; its rank 0 result."""
    log, _ = run_to_log(http, "pp", {"runtimeRef": runtime,
                                     "trainer": {"numNodes": nodes, "numProcPerNode": procs,
                                                 "command": ["mpirun", "-np", "2", *pingpong(iters)]}})
    return result(log)


def run_bare(extra: list[str], iters: int) -> dict[str, Any]:
    """The same program under the machine's mpirun, outside the cluster."""
    return result(bare_mpirun(["-np", "2", *extra, *pingpong(iters)])[0])


def measure(http: Any, runs: int, iters: int) -> dict[str, Any]:
    """Per placement: latency and bandwidth of ours and the baseline, and their ratios."""
    report: dict[str, Any] = {}
    for placement, (runtime, nodes, procs, extra) in PLACEMENTS.items():
        seen: dict[str, list[dict[str, Any]]] = {"ours": [], "baseline": []}
        latency = itemgetter("latency_us")
        alternate(runs, {"ours": recorded(lambda: run_job(http, runtime, nodes, procs, iters), seen["ours"], latency),  # noqa: B023 — alternate() runs it now
                         "baseline": recorded(lambda: run_bare(extra, iters), seen["baseline"], latency)})  # noqa: B023 — as "ours"
        lat = {k: stats([r["latency_us"] for r in v], 2) for k, v in seen.items()}
        bw = {k: stats([r["bandwidth_MBps"] for r in v], 1) for k, v in seen.items()}
        lat_ratio = lat["ours"]["median"] / lat["baseline"]["median"]
        bw_ratio = bw["baseline"]["median"] / bw["ours"]["median"]  # >1 when ours is slower
        report[placement] = {
            "runtime": runtime["name"], "numNodes": nodes, "numProcPerNode": procs, "bare_mpirun_extra": extra,
            "latency_us": lat, "bandwidth_MBps": bw,
            "ratio_latency_ours_to_bare": round(lat_ratio, 3),
            "ratio_bandwidth_bare_to_ours": round(bw_ratio, 3),
            "meets_target": lat_ratio <= TARGET_RATIO and bw_ratio <= TARGET_RATIO,
            "hosts_ours": seen["ours"][0]["hosts"],
            "yield_when_idle_ours": sorted({str(r["yield_when_idle"]) for r in seen["ours"]}),
        }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10000)
    args = parser.parse_args()
    try:
        with temp_cluster("mpijob-datapath-") as (_, info), ready_client(info.kubeconfig) as http:
            create_one_pod_runtime(http)
            report = measure(http, args.runs, args.iters)
    except BenchError as e:
        print(f"bench/datapath.py: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"runs": args.runs, "iters": args.iters, "cores": len(os.sched_getaffinity(0)),
                      "sandbox_mode": info.sandbox_mode, "target_ratio": TARGET_RATIO, **report,
                      "meets_target": all(r["meets_target"] for r in report.values())}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
