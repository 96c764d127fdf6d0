"""Any numNodes Trainer accepts (an int32) is accepted here too, up to what this machine can hold: a job of
100 nodes runs, with every rank's line in its log; one the machine could never hold is refused at creation,
naming the limit and the largest job that fits (`controllers/kubelet/capacity.py`), and nothing is made."""

from __future__ import annotations

import re

import httpx
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
