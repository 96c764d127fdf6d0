"""runLauncherAsNode: false — a ClusterTrainingRuntime copied from the bundled one through the API:
numNodes N gives N node pods and a launcher that is not in the hostfile and runs no rank."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator

import httpx
import pytest

from support import (
    TRAINER,
    by_role,
    condition,
    create,
    job_pods,
    launcher_of,
    pod_log,
    section,
    trainjob,
    wait_finished,
)

RUNTIME = "ee-mpi-separate-launcher"
JOB = "ee-sep"
NODES = 3


@pytest.fixture(scope="module")
def runtime(api: httpx.Client) -> Iterator[str]:
    r = api.get(f"{TRAINER}/clustertrainingruntimes/mpi-distributed")
    assert r.status_code == 200, r.text
    bundled = r.json()
    obj = {"apiVersion": bundled["apiVersion"], "kind": bundled["kind"],
           "metadata": {"name": RUNTIME, "labels": bundled["metadata"].get("labels", {})},
           "spec": copy.deepcopy(bundled["spec"])}
    obj["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
    created = api.post(f"{TRAINER}/clustertrainingruntimes", json=obj)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] is False
    yield RUNTIME
    api.delete(f"{TRAINER}/clustertrainingruntimes/{RUNTIME}")


def test_n_nodes_plus_a_launcher_outside_the_hostfile(api: httpx.Client, runtime: str) -> None:
    script = ("echo ---hostfile---; cat /etc/mpi/hostfile; echo ---end-hostfile---; "
              "mpirun bash -c 'echo \"rank=$OMPI_COMM_WORLD_RANK size=$OMPI_COMM_WORLD_SIZE host=$(hostname)\"'; "
              "echo launcher-host=$(hostname)")
    create(api, trainjob(JOB, ["bash", "-c", script], num_nodes=NODES, runtime=runtime))
    tj = wait_finished(api, JOB)
    pods = job_pods(api, JOB)
    log = pod_log(api, launcher_of(pods)["metadata"]["name"])
    assert condition(tj, "Complete") is not None, (tj.get("status"), log)

    nodes = sorted(p["spec"]["hostname"] for p in by_role(pods, "node"))
    assert nodes == [f"{JOB}-node-0-{i}" for i in range(NODES)]  # numNodes node pods, not numNodes-1
    assert len(pods) == NODES + 1

    assert section(log, "hostfile") == "".join(f"{JOB}-node-0-{i}.{JOB} slots=1\n" for i in range(NODES))
    ranks = re.findall(r"^rank=(\d+) size=(\d+) host=(\S+)$", log, re.MULTILINE)
    assert sorted(int(r[0]) for r in ranks) == list(range(NODES)), log
    assert {r[1] for r in ranks} == {str(NODES)}
    assert sorted(r[2] for r in ranks) == nodes  # no rank on the launcher
    assert f"launcher-host={JOB}-launcher-0-0" in log
