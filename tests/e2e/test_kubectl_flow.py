"""A user's kubectl session, unchanged: apply the hello example, watch it finish, look at it, delete it.

The example is applied exactly as shipped (name `hello`) into a namespace of its own, so it cannot
collide with other tests on the shared server."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

from support import JOBSET, REPO, job_dirs, wait_for

NS = "ee-kubectl"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def _state(kubectl: Kubectl, job: str) -> str:
    """What the job, its Workload and its pods were doing, and what they said: why a wait ran out."""
    said = [kubectl("describe", "trainjob", "-n", NS, job, check=False).stdout,
            kubectl("get", "workloads,pods", "-n", NS, "-o", "wide", check=False).stdout]
    for pod in kubectl("get", "pods", "-n", NS, "-o", "name", check=False).stdout.split():
        said.append(f"--- {pod}\n" + kubectl("logs", "-n", NS, pod, "--tail=20", check=False).stdout)
    return "\n".join(said)


def test_hello_example_through_kubectl(kubectl: Kubectl, home: Path) -> None:
    example = REPO / "examples" / "hello.yaml"
    job = yaml.safe_load(example.read_text())["metadata"]["name"]
    nodes = yaml.safe_load(example.read_text())["spec"]["trainer"]["numNodes"]
    greeting = yaml.safe_load(example.read_text())["spec"]["trainer"]["env"][0]["value"]

    kubectl("create", "namespace", NS)
    applied = kubectl("apply", "-n", NS, "-f", str(example)).stdout
    assert f"trainjob.trainer.kubeflow.org/{job} created" in applied
    waited = kubectl("wait", "-n", NS, "--for=condition=Complete", f"trainjob/{job}", "--timeout=120s", timeout=150,
                     check=False)
    assert "condition met" in waited.stdout, f"{waited.stdout}{waited.stderr}\n{_state(kubectl, job)}"

    table = kubectl("get", "trainjobs", "-n", NS).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "AGE"]
    assert re.match(rf"^{job}\s+\S+\s+\S+$", table[1]), table

    pods_out = kubectl("get", "pods", "-n", NS, "-l", f"{JOBSET}={job}").stdout.splitlines()
    assert pods_out[0].split()[:3] == ["NAME", "READY", "STATUS"]
    rows = [line.split() for line in pods_out[1:]]
    assert len(rows) == nodes and {r[2] for r in rows} == {"Completed"}, pods_out
    launcher = next(r[0] for r in rows if f"{job}-launcher-" in r[0])
    everything = kubectl("get", "all", "-n", NS).stdout  # the `all` category: its pods
    assert all(r[0] in everything for r in rows), everything

    logs = kubectl("logs", "-n", NS, launcher).stdout
    # what the ranks printed, as on a Trainer cluster: no Open MPI rank tags
    ranks = re.findall(rf"^rank=(\d+) size={nodes} node=(\S+) greeting={greeting}$", logs, re.MULTILINE)
    assert sorted(int(r[0]) for r in ranks) == list(range(nodes)), logs
    assert len(logs.splitlines()) == nodes, logs

    described = kubectl("describe", "trainjob", "-n", NS, job).stdout
    assert f"Name:         {job}" in described
    events = described.split("Events:", 1)[1]
    assert "CreatedPods" in events and "AllJobsCompleted" in events, described

    [job_dir] = job_dirs(home, job, NS)
    deleted = kubectl("delete", "trainjob", "-n", NS, job, timeout=90).stdout
    assert f'trainjob.trainer.kubeflow.org "{job}" deleted' in deleted
    gone = kubectl("get", "trainjob", "-n", NS, job, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    wait_for(lambda: json.loads(kubectl("get", "pods", "-n", NS, "-o", "json").stdout)["items"] == [],
             "the job's pods to be deleted")
    wait_for(lambda: not job_dir.exists(), f"{job_dir} to be removed")
