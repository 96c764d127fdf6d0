"""Each way a running job is stopped from outside says so in its own words, on its pods and its TrainJob.

Deleted: the pods end `TrainJobDeleted` before they go with it. Suspended: the TrainJob is `Suspended`
(Trainer's reason), not failed, and its pods end `Suspended` before they are deleted. Stopping the local
cluster leaves it running, for the next server to re-adopt; `--drain` stops it, and it runs again at the
next start. None of them claims what did not happen. (A deadline:
test_trainjob_fields.py; a preemption: test_queueing.py; `kill -9` of the server: test_restart.py.)
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
from mpijob.store import server_process
from mpijob.store.home import Home
from mpijob.store.server_process import ServerInfo

from support import (
    TRAINER,
    condition,
    create,
    events_of,
    get_trainjob,
    job_pods,
    pod_log,
    resource_version,
    terminations,
    trainjob,
    wait_finished,
    wait_launcher,
    wait_log,
    wait_no_processes,
)

SLEEPER = ["mpirun", "bash", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60']
MERGE = {"Content-Type": "application/merge-patch+json"}


def _running(c: httpx.Client, name: str) -> list[str]:
    """Start a 2-node job that sleeps, once every rank is up; its pods' names."""
    create(c, trainjob(name, SLEEPER, num_nodes=2))
    wait_log(c, wait_launcher(c, name), lambda t: "rank 0 up" in t and "rank 1 up" in t)
    return [p["metadata"]["name"] for p in job_pods(c, name)]


def _claims_a_restart(c: httpx.Client, name: str) -> list[str]:
    return [e["message"] for e in events_of(c, name) if e["reason"] == "ControlPlaneRestarted"]


def test_a_deleted_job_s_pods_say_it_was_deleted(api: httpx.Client) -> None:
    job = "ee-stop-deleted"
    pods = _running(api, job)
    since = resource_version(api)
    r = api.delete(f"{TRAINER}/namespaces/default/trainjobs/{job}")
    assert r.status_code in (200, 202), r.text
    ended = terminations(api, job, since)
    assert sorted(ended) == sorted(pods)
    for pod, state in ended.items():
        assert (state["reason"], state["message"]) == ("TrainJobDeleted", "stopped: the TrainJob was deleted"), pod
    assert _claims_a_restart(api, job) == []
    wait_no_processes(job, pods=pods)


def test_a_suspended_job_is_suspended_not_failed_and_its_pods_say_so(api: httpx.Client) -> None:
    job = "ee-stop-suspended"
    pods = _running(api, job)
    since = resource_version(api)
    r = api.patch(f"{TRAINER}/namespaces/default/trainjobs/{job}", json={"spec": {"suspend": True}}, headers=MERGE)
    assert r.status_code == 200, r.text
    ended = terminations(api, job, since)
    assert sorted(ended) == sorted(pods)
    for pod, state in ended.items():
        assert (state["reason"], state["message"]) == ("Suspended", "stopped: the TrainJob was suspended"), pod
    tj = get_trainjob(api, job)
    suspended = condition(tj, "Suspended")
    assert suspended and (suspended["reason"], suspended["message"]) == ("Suspended", "TrainJob is suspended")
    assert condition(tj, "Failed") is None and condition(tj, "Complete") is None, tj["status"]
    assert _claims_a_restart(api, job) == []
    wait_no_processes(job, pods=pods)
    api.delete(f"{TRAINER}/namespaces/default/trainjobs/{job}")


def test_stopping_the_local_cluster_leaves_a_running_job_running(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    job = "ee-stop-server"
    info = new_server("stop-server")
    with connect(info) as c:
        create(c, trainjob(job, ["mpirun", "bash", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 4; echo done'],
                           num_nodes=2))
        wait_log(c, launcher := wait_launcher(c, job), lambda t: "rank 0 up" in t and "rank 1 up" in t)
    assert server_process.stop(Home(info.home), timeout=30)  # an orderly stop, as for an upgrade
    again = new_server("stop-server")  # same home
    with connect(again) as c:
        tj = wait_finished(c, job, timeout=60)
        assert condition(tj, "Complete"), tj["status"]
        assert pod_log(c, launcher).splitlines()[-2:] == ["done", "done"]


def test_stopping_with_drain_stops_a_running_job_which_runs_again_at_the_next_start(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    job = "ee-stop-drain"
    info = new_server("stop-drain")
    with connect(info) as c:
        pods = _running(c, job)
    assert server_process.stop(Home(info.home), timeout=60, drain=True)
    wait_no_processes(job, pods=pods)
    again = new_server("stop-drain")
    with connect(again) as c:
        wait_log(c, wait_launcher(c, job), lambda t: "rank 0 up" in t and "rank 1 up" in t)
        tj = get_trainjob(c, job)
        assert condition(tj, "Failed") is None, tj["status"]
