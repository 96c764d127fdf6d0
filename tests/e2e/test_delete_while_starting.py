"""Deleting a TrainJob at any moment of its start leaves nothing behind and never stalls the controllers.

A deletion that came while the nodes were starting or being probed used to be noticed only once the
launcher had finished, so the controller sat on it for the whole job (here 300 s) and every other job
waited behind it; a late event of a deleted job could also start it."""

from __future__ import annotations

import time

import httpx

from support import TRAINER, condition, create, trainjob, wait_finished, wait_for, wait_no_processes

DELAYS = (0.0, 0.05, 0.15, 0.3, 0.6, 1.0)  # seconds between create and delete: queued, starting, probing, running


def _gone(api: httpx.Client, path: str) -> bool:
    return api.get(path).status_code == 404


def test_delete_at_any_moment_of_the_start_leaves_nothing_and_the_next_job_runs(api: httpx.Client) -> None:
    names = [f"ee-del-{i}" for i in range(len(DELAYS))]
    for name, delay in zip(names, DELAYS):
        create(api, trainjob(name, ["mpirun", "sleep", "300"], num_nodes=3))
        time.sleep(delay)
        assert api.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}").status_code == 200
    for name in names:
        wait_for(lambda n=name: _gone(api, f"{TRAINER}/namespaces/default/trainjobs/{n}"), f"{name} deleted")
        wait_no_processes(name, timeout=15)

    def leftovers() -> list[str]:
        pods = api.get("/api/v1/namespaces/default/pods").json()["items"]
        wls = api.get("/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads").json()["items"]
        return [o["metadata"]["name"] for o in pods + wls if o["metadata"]["name"].startswith(("ee-del-",
                                                                                             "trainjob-ee-del-"))]

    wait_for(lambda: not leftovers(), "no pod or Workload of a deleted job", timeout=15)
    create(api, trainjob("ee-del-after", ["mpirun", "echo", "after"], num_nodes=2))
    try:
        done = wait_finished(api, "ee-del-after", timeout=60)  # the controllers were not left waiting
        assert condition(done, "Complete") is not None, done.get("status")
    finally:
        api.delete(f"{TRAINER}/namespaces/default/trainjobs/ee-del-after")
