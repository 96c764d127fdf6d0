"""`kubectl exec` round trip into a running pod of the local cluster, against entering the same pod by hand
with `nsenter` (its namespaces, the same `true`) in the same run; `kubectl get pod` beside them, for what any
kubectl call costs (its start, TLS, the pod's GET that exec makes first).

    .venv/bin/python bench/exec.py [--runs N]

Prints one JSON object (see bench/README.md). Never asserts on the figures: exit 0 whenever every side ran,
exit 1 with a message on stderr when something failed to run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster

JOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "exec-bench"},
       "spec": {"runtimeRef": {"name": "mpi-distributed"},
                "trainer": {"numNodes": 2, "command": ["mpirun", "-n", "2", "sleep", "600"]}}}
READY_S = 120.0


def timed(argv: list[str], runs: int) -> list[float]:
    """Wall seconds of each of `runs` runs of `argv`, which must succeed."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
        out.append(time.perf_counter() - start)
    return out


def sandbox_init(namespace: str, pod: str) -> int:
    """The host pid of the pod's sandbox PID 1 (its status' NSpid ends in 1; its env carries the pod marker)."""
    marker = f"MPIJOB_POD={namespace}/{pod}".encode()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes():
                nspid = next(ln for ln in (entry / "status").read_text().splitlines() if ln.startswith("NSpid:"))
                if nspid.split()[-1] == "1" and len(nspid.split()) > 2:
                    return int(entry.name)
        except (OSError, StopIteration):
            continue
    raise RuntimeError(f"no sandbox init found for pod {namespace}/{pod}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with temp_cluster("mpijob-bench-exec-") as (home, _):
        kubectl = ["kubectl", "--kubeconfig", str(home.kubeconfig)]
        subprocess.run([*kubectl, "apply", "-f", "-"], input=yaml.safe_dump(JOB), text=True, check=True,
                       capture_output=True)
        deadline, pod = time.monotonic() + READY_S, ""
        while not pod and time.monotonic() < deadline:
            names = subprocess.run([*kubectl, "get", "pods", "-o", "name", "--field-selector=status.phase=Running"],
                                   capture_output=True, text=True, check=False).stdout.split()
            pod = next((n.split("/")[1] for n in names if "-node-" in n), "")
            time.sleep(0.2)
        if not pod:
            print(f"no node pod ran within {READY_S:g} s", file=sys.stderr)
            return 1
        init = sandbox_init("default", pod)
        by_hand = timed(["nsenter", f"--target={init}", "--mount", "--pid", "--uts", "--net", "--", "true"], args.runs)
        exec_ = timed([*kubectl, "exec", pod, "--", "true"], args.runs)
        get = timed([*kubectl, "get", "pod", pod, "-o", "name"], args.runs)
    result = {"bench": "exec", "runs": args.runs,
              "kubectl_exec_median_s": round(statistics.median(exec_), 4),
              "nsenter_by_hand_median_s": round(statistics.median(by_hand), 4),
              "kubectl_get_median_s": round(statistics.median(get), 4),
              "exec_over_get_s": round(statistics.median(exec_) - statistics.median(get), 4)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
