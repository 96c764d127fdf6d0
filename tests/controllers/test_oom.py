"""Memory limits are real: a rank that allocates past `resourcesPerNode.limits.memory` is OOM-killed by
the kernel, its pod reports `OOMKilled` like a kubelet would, and the job's message says so."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

MPIJOB = str(Path(sys.executable).parent / "mpijob")


def _mpijob(server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MPIJOB_HOME": str(server.home)}
    env.pop("KUBECONFIG", None)
    return subprocess.run([MPIJOB, *args], env=env, capture_output=True, text=True, timeout=180)


def test_rank_over_its_memory_limit_is_oomkilled(server: Any, tmp_path: Path) -> None:
    assert os.geteuid() == 0, "memory limits need cgroups, which need root (CI runs as root)"
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "oom"},
        "spec": {
            "runtimeRef": {"name": "mpi-distributed"},
            "trainer": {
                "numNodes": 2,
                "resourcesPerNode": {"limits": {"memory": "64Mi"}},
                "command": ["mpirun", "bash", "-c",
                            ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then '
                            'exec python -c "a = bytearray(512 * 1024 * 1024); print(len(a))"; fi; sleep 20')],
            },
        },
    }
    path = tmp_path / "oom.yaml"
    path.write_text(yaml.safe_dump(job))
    run = _mpijob(server, "run", "-f", str(path))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "OOMKilled" in run.stdout + run.stderr

    pods = json.loads(_mpijob(server, "get", "pods", "--job", "oom", "-o", "json").stdout)["items"]
    by_role = {p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]: p for p in pods}
    node = by_role["node"]  # rank 1 lives on the one node pod (rank 0 on the launcher)
    terminated = node["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
    assert node["status"]["phase"] == "Failed"

    trainjob = json.loads(_mpijob(server, "get", "trainjobs", "oom", "-o", "json").stdout)
    failed = next(c for c in trainjob["status"]["conditions"] if c["type"] == "Failed")
    assert "rank 1" in failed["message"] and node["metadata"]["name"] in failed["message"]
    # classified (docs/troubleshooting.md#oom-killed): the reason stays upstream's, the class leads the message
    # with the pod's peak (the kernel kills at the limit, so it reached it) and its limit
    assert failed["reason"] == "FailedJobs" and failed["message"].startswith("OOMKilled: rank 1 on node pod ")
    peak = re.search(r"peak ([\d.]+) MiB of a 64\.0 MiB limit \(1 OOM kill\)", failed["message"])
    assert peak and float(peak.group(1)) >= 63.0, failed["message"]
    assert failed["message"].endswith("See docs/troubleshooting.md#oom-killed")
    assert _mpijob(server, "delete", "trainjob", "oom").returncode == 0
