"""Kueue semantics end to end on a server that declares 4 GPUs it does not have (`--capacity`): gang
admission, disjoint CUDA_VISIBLE_DEVICES, suspend/resume, preemption by priority — with real jobs."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mpijob.store import server_process
from mpijob.store.home import Home

from support import (
    TRAINER,
    condition,
    create,
    events_of,
    get_trainjob,
    https_client,
    job_pods,
    launcher_of,
    pod_log,
    resource_version,
    terminations,
    trainjob,
    wait_finished,
    wait_for,
)

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def gpu_api(servers: Any) -> Iterator[httpx.Client]:
    info = servers.start("gpus", env={"MPIJOB_CAPACITY": f"{GPU}=4,cpu=8,memory=16Gi"})
    with https_client(info.kubeconfig) as c:
        yield c


def gpu_job(name: str, gpus: int, command: str, num_nodes: int = 2, labels: dict[str, str] | None = None) -> dict:
    job = trainjob(name, ["mpirun", "bash", "-c", command], num_nodes=num_nodes)
    job["spec"]["trainer"]["resourcesPerNode"] = {"limits": {GPU: gpus}}
    job["spec"]["trainer"]["numProcPerNode"] = 1
    if labels:
        job["metadata"]["labels"] = labels
    return job


def any_condition(obj: dict, kind: str) -> dict | None:
    """The condition of type `kind` whatever its status (support's `condition` wants True)."""
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c["type"] == kind), None)


def workload(c: httpx.Client, job: str, namespace: str = "default") -> dict:
    items = c.get(f"{KUEUE}/namespaces/{namespace}/workloads").json()["items"]
    return next(w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job)


def test_default_queue_objects_cover_the_declared_capacity(gpu_api: httpx.Client) -> None:
    cq = gpu_api.get(f"{KUEUE}/clusterqueues/cluster-queue").json()
    quotas = {q["name"]: q["nominalQuota"] for q in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert (quotas[GPU], quotas["cpu"], quotas["memory"]) == ("4", "8", "16Gi")
    assert gpu_api.get(f"{KUEUE}/namespaces/default/localqueues/user-queue").status_code == 200
    assert gpu_api.get(f"{KUEUE}/resourceflavors/default-flavor").status_code == 200


def test_gang_admission_and_disjoint_gpus(gpu_api: httpx.Client) -> None:
    c = gpu_api
    # A: launcher + 1 node, 2 GPUs each = the whole machine, for a while.
    create(c, gpu_job("q-a", 2, 'echo "gpus=$CUDA_VISIBLE_DEVICES host=$(hostname)"; sleep 4'))
    wait_for(lambda: len(job_pods(c, "q-a")) == 2 or None, "q-a pods")
    create(c, gpu_job("q-b", 2, 'echo "gpus=$CUDA_VISIBLE_DEVICES"'))
    # B must wait as a whole: no pod of it exists while A holds the GPUs, and it says why.
    wl = wait_for(lambda: (w := workload(c, "q-b")) and any_condition(w, "QuotaReserved") and w, "q-b pending")
    assert any_condition(wl, "QuotaReserved")["status"] == "False"
    assert GPU in any_condition(wl, "QuotaReserved")["message"]
    assert job_pods(c, "q-b") == []
    events = c.get("/api/v1/namespaces/default/events",
                   params={"fieldSelector": "involvedObject.name=q-b"}).json()["items"]
    assert any("Waiting for quota" in e["message"] or GPU in e["message"] for e in events)

    done_a = wait_finished(c, "q-a")
    assert condition(done_a, "Complete")["status"] == "True"
    log = pod_log(c, launcher_of(job_pods(c, "q-a"))["metadata"]["name"])
    sets = sorted({line.split()[0] for line in log.splitlines() if line.startswith("gpus=")})
    assert len(sets) == 2, log  # two pods, two different device sets
    devices = [d for s in sets for d in s.removeprefix("gpus=").split(",")]
    assert sorted(devices) == ["0", "1", "2", "3"], log  # disjoint, and all four used
    assert condition(wait_finished(c, "q-b"), "Complete")["status"] == "True"
    assert condition(workload(c, "q-b"), "Admitted")["status"] == "True"


def test_over_capacity_job_is_refused_at_creation(gpu_api: httpx.Client) -> None:
    r = gpu_api.post(f"{TRAINER}/namespaces/default/trainjobs", json=gpu_job("q-huge", 8, "true"))
    assert r.status_code in (403, 422), r.text
    assert GPU in r.text
    assert gpu_api.get(f"{TRAINER}/namespaces/default/trainjobs/q-huge").status_code == 404


def test_suspend_stops_and_frees_then_resume_runs_again(gpu_api: httpx.Client) -> None:
    c = gpu_api
    create(c, gpu_job("q-s", 2, 'echo "run on $(hostname)"; sleep 3'))
    wait_for(lambda: len(job_pods(c, "q-s")) == 2 or None, "q-s pods")
    patch = {"spec": {"suspend": True}}
    r = c.patch(f"{TRAINER}/namespaces/default/trainjobs/q-s", json=patch,
                headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    wait_for(lambda: job_pods(c, "q-s") == [] or None, "q-s pods gone")
    wl = workload(c, "q-s")
    assert wl["spec"]["active"] is False and "admission" not in wl.get("status", {})
    assert condition(get_trainjob(c, "q-s"), "Suspended")["status"] == "True"
    r = c.patch(f"{TRAINER}/namespaces/default/trainjobs/q-s", json={"spec": {"suspend": False}},
                headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    done = wait_finished(c, "q-s")
    assert condition(done, "Complete")["status"] == "True"


def test_higher_priority_preempts_and_the_victim_runs_again(gpu_api: httpx.Client) -> None:
    c = gpu_api
    for name, value in (("q-low", 10), ("q-high", 1000)):
        r = c.post(f"{KUEUE}/workloadpriorityclasses",
                   json={"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                         "metadata": {"name": name}, "value": value})
        assert r.status_code in (201, 409), r.text
    cq = c.get(f"{KUEUE}/clusterqueues/cluster-queue").json()
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    assert c.put(f"{KUEUE}/clusterqueues/cluster-queue", json=cq).status_code == 200
    create(c, gpu_job("q-victim", 2, "sleep 2; echo victim-done",
                      labels={"kueue.x-k8s.io/priority-class": "q-low"}))
    wait_for(lambda: len(job_pods(c, "q-victim")) == 2 or None, "victim running")
    since = resource_version(c)
    create(c, gpu_job("q-vip", 2, "echo vip-done", labels={"kueue.x-k8s.io/priority-class": "q-high"}))
    wl = wait_for(lambda: (w := workload(c, "q-victim")) and condition(w, "Preempted") and w, "victim preempted")
    assert condition(wl, "Evicted")["reason"] == "Preempted"
    assert condition(wl, "Preempted")["reason"] == "InClusterQueue"
    # Every pod of the victim that had started ends in Kueue's words (one still starting has no container
    # to end), then they go; the victim is neither failed nor said to be restarted.
    stopped = terminations(c, "q-victim", since)
    assert stopped and {s["reason"] for s in stopped.values()} == {"Preempted"}, stopped
    assert all(s["message"].startswith("stopped: Preempted to accommodate a workload") for s in stopped.values())
    assert condition(get_trainjob(c, "q-victim"), "Failed") is None
    assert condition(wait_finished(c, "q-vip"), "Complete")["status"] == "True"
    events = events_of(c, "q-victim")
    assert any(e["reason"] == "Preempted" for e in events)
    assert not any(e["reason"] == "ControlPlaneRestarted" for e in events)
    # The victim returns to its queue and runs to completion once the GPUs are free again.
    assert condition(wait_finished(c, "q-victim", timeout=60), "Complete")["status"] == "True"


def test_queue_state_survives_kill_9(servers: Any) -> None:
    """Admissions and the pending queue live in the store: after `kill -9` and a new start, the job that
    holds the GPUs is re-adopted and keeps its quota; the waiting job is admitted once it has completed."""
    env = {"MPIJOB_CAPACITY": f"{GPU}=2"}
    info = servers.start("queue-restart", env=env)
    with https_client(info.kubeconfig) as c:
        create(c, gpu_job("q-holder", 1, "sleep 6"))
        def holder_started() -> list[dict] | None:  # started, not only created
            pods = job_pods(c, "q-holder")
            return pods if len(pods) == 2 and all(p.get("status", {}).get("startTime") for p in pods) else None

        wait_for(holder_started, "holder running")
        create(c, gpu_job("q-waiter", 1, "echo waited"))
        wait_for(lambda: any_condition(workload(c, "q-waiter"), "QuotaReserved"), "waiter pending")
        assert job_pods(c, "q-waiter") == []
    os.kill(info.pid, signal.SIGKILL)
    try:
        os.waitpid(info.pid, 0)
    except ChildProcessError:
        pass
    again = server_process.start(Home(info.home), timeout=60, env=env)
    with https_client(again.kubeconfig) as c:
        assert condition(get_trainjob(c, "q-holder"), "Complete") is None  # re-adopted, still running
        assert job_pods(c, "q-waiter") == [] and condition(workload(c, "q-waiter"), "Admitted") is None
        holder = wait_finished(c, "q-holder")
        assert condition(holder, "Complete") is not None, holder["status"]
        assert condition(workload(c, "q-holder"), "Finished") is not None
        assert condition(wait_finished(c, "q-waiter"), "Complete") is not None
        assert condition(workload(c, "q-waiter"), "Admitted") is not None


def test_pods_asking_for_whole_cpus_get_disjoint_cores(gpu_api: httpx.Client) -> None:
    c = gpu_api
    job = trainjob("q-cpu", ["mpirun", "bash", "-c",
                             'echo "cores=$(grep Cpus_allowed_list /proc/self/status | cut -f2) host=$(hostname)"'],
                   num_nodes=2)
    job["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"cpu": "1"}}
    create(c, job)
    assert condition(wait_finished(c, "q-cpu"), "Complete") is not None
    log = pod_log(c, launcher_of(job_pods(c, "q-cpu"))["metadata"]["name"])
    cores = [line.split()[0].removeprefix("cores=") for line in log.splitlines() if line.startswith("cores=")]
    assert len(cores) == 2 and len(set(cores)) == 2, log  # one core each, not the same one
    assert all("," not in c and "-" not in c for c in cores), log


def test_borrowing_then_reclamation_in_a_cohort(gpu_api: httpx.Client) -> None:
    """team-a borrows team-b's idle GPUs; when team-b needs them it reclaims them by preemption."""
    c = gpu_api
    for team in ("team-a", "team-b"):
        cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": team},
              "spec": {"cohortName": "research", "namespaceSelector": {},
                       "preemption": {"reclaimWithinCohort": "Any"},
                       "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                           {"name": "default-flavor", "resources": [{"name": GPU, "nominalQuota": 2}]}]}]}}
        assert c.post(f"{KUEUE}/clusterqueues", json=cq).status_code == 201
        lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
              "metadata": {"name": team, "namespace": "default"}, "spec": {"clusterQueue": team}}
        assert c.post(f"{KUEUE}/namespaces/default/localqueues", json=lq).status_code == 201
    # 4 GPUs for team-a: 2 of its own and 2 borrowed from team-b. (cluster-queue is not in the cohort,
    # and its 4 GPUs of quota are not the same devices: only the queues' quota is modelled.)
    create(c, gpu_job("q-borrower", 2, "sleep 30", labels={"kueue.x-k8s.io/queue-name": "team-a"}))
    wait_for(lambda: len(job_pods(c, "q-borrower")) == 2 or None, "borrower running")
    usage = c.get(f"{KUEUE}/clusterqueues/team-a").json()["status"]["flavorsUsage"][0]["resources"]
    assert {u["name"]: u["borrowed"] for u in usage}[GPU] == "2"
    create(c, gpu_job("q-owner", 1, "echo owner-done", labels={"kueue.x-k8s.io/queue-name": "team-b"}))
    wl = wait_for(lambda: (w := workload(c, "q-borrower")) and condition(w, "Preempted") and w, "reclaimed")
    assert condition(wl, "Preempted")["reason"] == "InCohortReclamation"
    assert condition(wait_finished(c, "q-owner"), "Complete") is not None
    r = c.delete(f"{TRAINER}/namespaces/default/trainjobs/q-borrower")
    assert r.status_code == 200, r.text
