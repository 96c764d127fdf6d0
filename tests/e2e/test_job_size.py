"""Any numNodes Trainer accepts (an int32) is accepted here too, up to what this machine can hold: a job of
100 nodes runs, with every rank's line in its log; one the machine could never hold is refused at creation,
naming the limit and the largest job that fits (`controllers/kubelet/capacity.py`), and nothing is made."""

from __future__ import annotations

import copy
import os
import re

import httpx
import pytest
from mpijob.api import names
from mpijob.api.trainer import runtimes
from mpijob.controllers.kubelet import capacity

from support import TRAINER, condition, create, job_pods, launcher_of, pod_log, trainjob, wait_finished

RANK = 'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE on $(hostname)"'


def test_a_job_the_machine_could_never_hold_is_refused_naming_the_limit(api: httpx.Client) -> None:
    tj = trainjob("ee-size-huge", ["mpirun", "sh", "-c", RANK], num_nodes=1_000_000)
    r = api.post(f"{TRAINER}/namespaces/default/trainjobs", json=tj)
    assert r.status_code == 422, r.text
    cause = r.json()["details"]["causes"][0]
    assert cause["field"] == "spec.trainer.numNodes", cause
    said = re.search(r"holds at most (\d+) pods of 1 process\(es\) each, not 1000000: (.+) is ", cause["message"])
    assert said, cause
    tight = min(capacity.rooms(1), key=lambda room: room.pods)  # the same machine, read by the test
    assert (int(said[1]), said[2]) == (tight.pods, tight.resource), cause
    assert 100 < tight.pods < 1_000_000
    assert api.get(f"{TRAINER}/namespaces/default/trainjobs/ee-size-huge").status_code == 404
    assert not job_pods(api, "ee-size-huge")


def test_a_hundred_nodes_run_every_rank(api: httpx.Client) -> None:
    """numNodes 100 under the bundled runtime (the launcher is a node): 100 pods, one rank each."""
    create(api, trainjob("ee-size-100", ["mpirun", "sh", "-c", RANK], num_nodes=100))
    tj = wait_finished(api, "ee-size-100", timeout=300)
    log = pod_log(api, launcher_of(job_pods(api, "ee-size-100"))["metadata"]["name"])
    assert condition(tj, "Complete"), (tj.get("status"), log[-3000:])
    ranks = sorted(int(m[1]) for m in re.finditer(r"^rank (\d+) of 100 on \S+$", log, re.M))
    assert ranks == list(range(100)), log[-3000:]
    assert len({line.split()[-1] for line in log.splitlines() if line.startswith("rank ")}) == 100
    api.delete(f"{TRAINER}/namespaces/default/trainjobs/ee-size-100")


# Every run: Open MPI 5 at 50 nodes × 2 ranks. With MPIJOB_E2E_SIZE_ALL=1 (by hand; 75 s on 2 cores), also
# Open MPI 5, MPICH and Intel MPI at 100 × 1.
SIZES = [(names.MPI_OPEN_MPI_5, 50, 2)] + ([(impl, 100, 1) for impl in (names.MPI_OPEN_MPI_5, names.MPI_MPICH,
                                                                        names.MPI_INTEL)]
                                         if os.environ.get("MPIJOB_E2E_SIZE_ALL") else [])


@pytest.mark.parametrize(("impl", "nodes", "procs"), SIZES)
def test_large_jobs_under_each_mpi(impl: str, nodes: int, procs: int, api: httpx.Client) -> None:
    rt = copy.deepcopy(runtimes.bundled()[0])
    name = f"size-{impl.lower()}"
    rt["kind"], rt["metadata"] = "TrainingRuntime", {"name": name, "annotations": {names.ANNOTATION_MPI_IMPLEMENTATION: impl}}
    api.delete(f"{TRAINER}/namespaces/default/trainingruntimes/{name}")
    assert api.post(f"{TRAINER}/namespaces/default/trainingruntimes", json=rt).status_code == 201
    job = f"ee-size-{impl.lower()}-{nodes}x{procs}"
    tj = trainjob(job, ["mpirun", "sh", "-c", RANK.replace("OMPI_COMM_WORLD", "PMI")
                        if impl in (names.MPI_MPICH, names.MPI_INTEL) else RANK], num_nodes=nodes)
    tj["spec"]["runtimeRef"] = {"name": name, "kind": "TrainingRuntime"}
    tj["spec"]["trainer"]["numProcPerNode"] = procs
    create(api, tj)
    done = wait_finished(api, job, timeout=600)
    log = pod_log(api, launcher_of(job_pods(api, job))["metadata"]["name"])
    assert condition(done, "Complete"), (done.get("status"), log[-3000:])
    size = nodes * procs
    ranks = sorted(int(m[1]) for m in re.finditer(rf"^rank (\d+) of {size} on \S+$", log, re.M))
    assert ranks == list(range(size)), log[-3000:]
    api.delete(f"{TRAINER}/namespaces/default/trainjobs/{job}")
    api.delete(f"{TRAINER}/namespaces/default/trainingruntimes/{name}")
