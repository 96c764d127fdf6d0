"""Open MPI's default binding keeps every rank on its pod's CPU set (docs: kubelet/mpi_env.py LOCAL_MCA).

A pod that asks for whole CPUs runs on its own cores (`taskset`); Open MPI binds ranks to cores of the
whole machine regardless, so without the local cluster's `binding_policy=none` a rank of the pod on core 1
was moved to core 0 (the process sandbox), and one pod's two ranks were spread over both cores. Each
rank here prints its own `Cpus_allowed_list`; a fresh server on each sandbox has every core free.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable

import httpx
import pytest
from mpijob.store.server_process import ServerInfo

from support import TRAINER, create, job_pods, launcher_of, pod_log, trainjob, wait_finished, wait_for

PRINT = 'echo "RANKCPUS $OMPI_COMM_WORLD_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
RUN = ["mpirun", "-np", "2", "bash", "-c", PRINT]
ONE_CPU = {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}


def _ranks(c: httpx.Client, job: dict) -> tuple[list[str], str]:
    """Each rank's CPU list, by rank, and the launcher's log."""
    create(c, job)
    name = job["metadata"]["name"]
    tj = wait_finished(c, name, timeout=180)
    log = pod_log(c, launcher_of(job_pods(c, name))["metadata"]["name"])
    assert any(x["type"] == "Complete" and x["status"] == "True" for x in tj["status"]["conditions"]), log
    found = dict(re.findall(r"^RANKCPUS (\d+) (\S+)$", log, re.M))
    assert sorted(found) == ["0", "1"], log
    # gone, so its cores are free again for the next job (a job keeps them until its run has ended)
    assert c.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}").status_code == 200
    wait_for(lambda: c.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").status_code == 404 and not job_pods(c, name),
             f"TrainJob {name} and its pods to be gone")
    return [found["0"], found["1"]], log


def _one_pod_runtime(c: httpx.Client) -> str:
    """`mpi-distributed` without runLauncherAsNode, its node pod asking for one whole CPU: numNodes 1 is
    one node pod holding every rank (trainer.resourcesPerNode would reach the launcher, which carries
    Trainer's ancestor label)."""
    cluster = c.get(f"{TRAINER}/clustertrainingruntimes/mpi-distributed").json()
    spec = copy.deepcopy(cluster["spec"])
    spec["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
    (node,) = [j for j in spec["template"]["spec"]["replicatedJobs"] if j["name"] == "node"]
    node["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = ONE_CPU
    runtime = {"apiVersion": cluster["apiVersion"], "kind": "TrainingRuntime",
               "metadata": {"name": "binding-one-pod", "labels": cluster["metadata"].get("labels") or {}},
               "spec": spec}
    r = c.post(f"{TRAINER}/namespaces/default/trainingruntimes", json=runtime)
    assert r.status_code == 201, r.text
    return "binding-one-pod"


def test_two_pods_ranks_each_keep_their_pods_core(new_server: Callable[..., ServerInfo],
                                                  connect: Callable[..., httpx.Client]) -> None:
    """Two pods of one whole CPU each, one rank in each: each rank on its own pod's core."""
    assert len(os.sched_getaffinity(0)) >= 2, "needs two cores to give two pods one each"
    with connect(new_server("binding-namespace", env={"MPIJOB_SANDBOX": "namespace"})) as c:
        two = trainjob("bind-two-pods", RUN)
        two["spec"]["trainer"]["resourcesPerNode"] = ONE_CPU
        cores, log = _ranks(c, two)
        assert all(re.fullmatch(r"\d+", x) for x in cores) and len(set(cores)) == 2, log  # one core each, apart


@pytest.mark.parametrize("sandbox", ["namespace", "process"])
def test_one_pods_ranks_share_its_one_core(sandbox: str, new_server: Callable[..., ServerInfo],
                                           connect: Callable[..., httpx.Client]) -> None:
    """One pod of one whole CPU with two ranks: both on that core, neither moved to another (Open MPI's
    binding put them on cores 0 and 1 in the process sandbox)."""
    with connect(new_server(f"binding-{sandbox}", env={"MPIJOB_SANDBOX": sandbox})) as c:
        one = trainjob("bind-one-pod", RUN, num_nodes=1, runtime=_one_pod_runtime(c))
        one["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
        one["spec"]["trainer"]["numProcPerNode"] = 2
        cores, log = _ranks(c, one)
        assert len(set(cores)) == 1 and re.fullmatch(r"\d+", cores[0]), log  # the pod's one core, for both
