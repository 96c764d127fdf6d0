"""Upstream's `deepspeed-distributed` ClusterTrainingRuntime, applied unchanged with kubectl, runs: its node
container's command is sshd (`-f /home/mpiuser/.sshd_config`, a file only the upstream image has), and
the local cluster runs its own managed sshd in that place."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable

import httpx
import yaml

from support import (
    UPSTREAM_TRAINER as UPSTREAM,
)
from support import (
    by_role,
    condition,
    create,
    job_pods,
    launcher_of,
    pod_log,
    trainjob,
    wait_finished,
)

JOB = "ee-ds"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def test_deepspeed_runtime_applied_unchanged_runs_a_job(api: httpx.Client, kubectl: Kubectl) -> None:
    path = UPSTREAM / "runtime_deepspeed_distributed.yaml"
    applied = kubectl("apply", "-f", str(path))
    assert "clustertrainingruntime.trainer.kubeflow.org/deepspeed-distributed" in applied.stdout

    upstream = yaml.safe_load(path.read_text())
    stored = yaml.safe_load(kubectl("get", "clustertrainingruntime", "deepspeed-distributed", "-o", "yaml").stdout)
    assert stored["spec"]["template"] == upstream["spec"]["template"]
    assert stored["metadata"]["labels"] == upstream["metadata"]["labels"]

    command = ["mpirun", "bash", "-c", 'echo "ds-rank=$OMPI_COMM_WORLD_RANK host=$(hostname)"']
    create(api, trainjob(JOB, command, num_nodes=2, runtime="deepspeed-distributed"))
    tj = wait_finished(api, JOB)
    pods = job_pods(api, JOB)
    log = pod_log(api, launcher_of(pods)["metadata"]["name"])
    assert condition(tj, "Complete") is not None, (tj.get("status"), log)
    ranks = dict(re.findall(r"^ds-rank=(\d+) host=(\S+)$", log, re.MULTILINE))
    assert sorted(ranks) == ["0", "1"], log
    assert set(ranks.values()) == {f"{JOB}-node-0-0", f"{JOB}-launcher-0-0"}

    [node] = by_role(pods, "node")  # the pod keeps the runtime's image and command, as on a cluster
    container = node["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/kubeflow/trainer/deepspeed-runtime"
    assert container["command"] == ["/usr/sbin/sshd"]
    assert container["args"] == ["-De", "-f", "/home/mpiuser/.sshd_config"]
