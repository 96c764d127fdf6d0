"""TrainJob and runtime fields the local cluster used to accept and ignore, now honoured as Trainer, Kueue
and the kubelet honour them: activeDeadlineSeconds, suspend at creation, pod readiness, workingDir, and
ranks that yield when they outnumber their cores."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import time
from collections.abc import Callable

import httpx
from mpijob.api.trainer.runtimes import bundled

from support import (
    TRAINER,
    condition,
    create,
    get_trainjob,
    job_pods,
    launcher_of,
    pod_log,
    trainjob,
    wait_finished,
    wait_for,
)

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
MERGE = {"Content-Type": "application/merge-patch+json"}
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def _workload(c: httpx.Client, job: str) -> dict | None:
    items = c.get(f"{KUEUE}/namespaces/default/workloads").json()["items"]
    return next((w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job), None)


def _conditions(obj: dict) -> dict[str, dict]:
    return {c["type"]: c for c in obj.get("status", {}).get("conditions") or []}


def _delete(c: httpx.Client, name: str) -> None:
    c.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")


def test_active_deadline_fails_the_job_and_restarts_on_resume(api: httpx.Client, kubectl: Kubectl) -> None:
    job = trainjob("ee-deadline", ["mpirun", "bash", "-c", 'echo "started $OMPI_COMM_WORLD_RANK"; sleep 60'])
    job["spec"]["activeDeadlineSeconds"] = 4
    job["spec"]["suspend"] = True  # created suspended: no clock runs
    create(api, job)
    time.sleep(5)  # longer than the deadline: a suspended job's clock does not run
    assert condition(get_trainjob(api, "ee-deadline"), "Failed") is None
    resumed_at = time.monotonic()
    r = api.patch(f"{TRAINER}/namespaces/default/trainjobs/ee-deadline", json={"spec": {"suspend": False}},
                  headers=MERGE)
    assert r.status_code == 200, r.text
    done = wait_finished(api, "ee-deadline", timeout=60)
    took = time.monotonic() - resumed_at
    failed = condition(done, "Failed")
    assert failed and failed["reason"] == "DeadlineExceeded", done.get("status")
    assert failed["message"] == "TrainJob exceeded its active deadline"
    assert 3 <= took < 20, took  # the clock started at the resume, not at creation
    pods = job_pods(api, "ee-deadline")
    assert pods and all(p["status"]["phase"] in ("Succeeded", "Failed") for p in pods), [p["status"] for p in pods]
    stopped = launcher_of(pods)["status"]  # killed while it ran its `sleep 60`
    assert (stopped["phase"], stopped["reason"]) == ("Failed", "DeadlineExceeded"), stopped
    described = kubectl("describe", "trainjob", "ee-deadline").stdout
    assert "DeadlineExceeded" in described
    _delete(api, "ee-deadline")


def test_a_job_created_suspended_has_an_inactive_workload_and_starts_when_unsuspended(
    api: httpx.Client, kubectl: Kubectl
) -> None:
    job = trainjob("ee-held", ["mpirun", "bash", "-c", 'echo "held rank $OMPI_COMM_WORLD_RANK"'])
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    job["spec"]["suspend"] = True
    create(api, job)
    wl = wait_for(lambda: _workload(api, "ee-held"), "the held job's Workload")
    assert wl["spec"]["active"] is False and wl["spec"]["queueName"] == "user-queue"
    assert "admission" not in wl.get("status", {})
    time.sleep(1)
    assert job_pods(api, "ee-held") == []
    assert condition(get_trainjob(api, "ee-held"), "Suspended")["reason"] == "Suspended"

    kubectl("patch", "trainjob", "ee-held", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    done = wait_finished(api, "ee-held")
    assert condition(done, "Complete"), done.get("status")
    assert "held rank 1" in pod_log(api, launcher_of(job_pods(api, "ee-held"))["metadata"]["name"])
    assert _conditions(done)["Suspended"]["status"] == "False"
    _delete(api, "ee-held")


def test_pods_report_ready_as_a_kubelet_does(api: httpx.Client, kubectl: Kubectl) -> None:
    create(api, trainjob("ee-ready", ["mpirun", "bash", "-c", "sleep 4"]))
    launcher = wait_for(lambda: next((p["metadata"]["name"] for p in job_pods(api, "ee-ready")
                                      if "-launcher-" in p["metadata"]["name"]), None), "the launcher pod")
    # kubectl's own wait for the Ready condition, on the launcher (no readiness probe) and every node
    kubectl("wait", "--for=condition=Ready", f"pod/{launcher}", "--timeout=30s", timeout=40)
    pods = job_pods(api, "ee-ready")
    for pod in pods:
        conditions = _conditions(pod)
        assert conditions["Ready"]["status"] == "True" and conditions["ContainersReady"]["status"] == "True", pod
        assert pod["status"]["containerStatuses"][0]["ready"] is True
    done = wait_finished(api, "ee-ready")
    assert condition(done, "Complete")
    for pod in job_pods(api, "ee-ready"):
        ready = _conditions(pod)["Ready"]
        assert (ready["status"], ready["reason"]) == ("False", "PodCompleted"), pod["status"]
    assert {s["name"]: s["ready"] for s in done["status"]["jobsStatus"]} == {"node": 0, "launcher": 0}
    _delete(api, "ee-ready")


def test_the_runtimes_working_dir_is_where_the_command_runs(api: httpx.Client) -> None:
    runtime = copy.deepcopy(bundled()[0])
    runtime["metadata"]["name"] = "ee-workdir-runtime"
    launcher = runtime["spec"]["template"]["spec"]["replicatedJobs"][1]
    container = launcher["template"]["spec"]["template"]["spec"]["containers"][0]
    container["workingDir"] = "/home/mpiuser/work/here"  # inside the job user's home: it may create it
    r = api.post(f"{TRAINER}/clustertrainingruntimes", json=runtime)
    assert r.status_code == 201, r.text
    try:
        create(api, trainjob("ee-workdir", ["bash", "-c", 'echo "cwd=$(pwd)"; mpirun bash -c \'echo "rank cwd=$(pwd)"\''],
                             runtime="ee-workdir-runtime"))
        done = wait_finished(api, "ee-workdir")
        log = pod_log(api, launcher_of(job_pods(api, "ee-workdir"))["metadata"]["name"])
        assert condition(done, "Complete"), (done.get("status"), log)
        assert "cwd=/home/mpiuser/work/here" in log.splitlines(), log
        # mpirun starts each rank in its own cwd where that exists: on the launcher host; a node pod has
        # its own files, as on a cluster, so its rank falls back to the home directory
        assert sorted(ln for ln in log.splitlines() if ln.startswith("rank cwd=")) == [
            "rank cwd=/home/mpiuser", "rank cwd=/home/mpiuser/work/here"], log

        container["workingDir"] = "/proc/not-a-place"  # nobody can create this: a clear failure
        runtime["metadata"]["name"] = "ee-workdir-bad"
        assert api.post(f"{TRAINER}/clustertrainingruntimes", json=runtime).status_code == 201
        create(api, trainjob("ee-workdir-bad", ["mpirun", "hostname"], runtime="ee-workdir-bad"))
        failed = condition(wait_finished(api, "ee-workdir-bad"), "Failed")
        assert failed and "workingDir /proc/not-a-place" in failed["message"], failed
    finally:
        for name in ("ee-workdir", "ee-workdir-bad"):
            _delete(api, name)
        for name in ("ee-workdir-runtime", "ee-workdir-bad"):
            api.delete(f"{TRAINER}/clustertrainingruntimes/{name}")


def test_ranks_yield_when_they_outnumber_their_cores(api: httpx.Client, kubectl: Kubectl) -> None:
    cores = len(os.sched_getaffinity(0))
    nodes = cores + 1  # one rank per node, one more rank than the machine has cores
    show = ["mpirun", "bash", "-c", 'echo "yield=${OMPI_MCA_mpi_yield_when_idle:-unset}"']
    create(api, trainjob("ee-crowd", show, num_nodes=nodes))
    create(api, trainjob("ee-crowd-own", show, num_nodes=nodes, env={"OMPI_MCA_mpi_yield_when_idle": "0"}))
    create(api, trainjob("ee-roomy", show, num_nodes=1))
    for name, want in (("ee-crowd", "1"), ("ee-crowd-own", "0"), ("ee-roomy", "unset")):
        assert condition(wait_finished(api, name), "Complete"), name
        log = pod_log(api, launcher_of(job_pods(api, name))["metadata"]["name"])
        seen = [line for line in log.splitlines() if line.startswith("yield=")]
        assert seen and seen == [f"yield={want}"] * len(seen), log
        assert name == "ee-roomy" or len(seen) == nodes, log
    described = kubectl("describe", "trainjob", "ee-crowd").stdout
    assert f"{nodes} MPI ranks share {cores} CPU core(s)" in described and "yield" in described, described
    assert "which wins" in kubectl("describe", "trainjob", "ee-crowd-own").stdout
    assert "Oversubscribed" not in kubectl("describe", "trainjob", "ee-roomy").stdout
    for name in ("ee-crowd", "ee-crowd-own", "ee-roomy"):
        _delete(api, name)


def test_kubectl_shows_what_the_local_cluster_refuses_and_what_it_only_warns_about(api: httpx.Client,
                                                                                  kubectl: Kubectl) -> None:
    job = trainjob("ee-patched", ["mpirun", "hostname"])
    job["spec"]["runtimePatches"] = [{"manager": "me.example.com/tool", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
            "volumes": [{"name": "data", "iscsi": {"targetPortal": "10.0.0.9:3260", "iqn": "iqn.x", "lun": 0}}]}}}}}]}}}}]
    refused = kubectl("apply", "-f", "-", input=json.dumps(job), check=False)
    assert refused.returncode != 0
    assert ("spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
            ".volumes[0]: Forbidden: this type of volume is not provided by the local cluster") in refused.stderr, \
        refused.stderr
    assert api.get(f"{TRAINER}/namespaces/default/trainjobs/ee-patched").status_code == 404  # nothing created

    runtime = copy.deepcopy(bundled()[0])
    runtime["metadata"]["name"] = "ee-warned"
    launcher = runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    launcher["priorityClassName"] = "high"
    applied = kubectl("apply", "-f", "-", input=json.dumps(runtime))
    assert "clustertrainingruntime.trainer.kubeflow.org/ee-warned created" in applied.stdout
    assert ("Warning: spec.template.spec.replicatedJobs[1].template.spec.template.spec.priorityClassName: "
            "no effect on one machine") in applied.stderr, applied.stderr
    api.delete(f"{TRAINER}/clustertrainingruntimes/ee-warned")


def test_the_pods_fs_group_is_a_group_of_every_rank(api: httpx.Client) -> None:
    runtime = copy.deepcopy(bundled()[0])
    runtime["metadata"]["name"] = "ee-fsgroup"
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["securityContext"] = {"fsGroup": 2345}
    assert api.post(f"{TRAINER}/clustertrainingruntimes", json=runtime).status_code == 201
    try:
        create(api, trainjob("ee-fsgroup", ["mpirun", "bash", "-c", 'echo "groups $(id -u) $(id -G)"'],
                             runtime="ee-fsgroup"))
        assert condition(wait_finished(api, "ee-fsgroup"), "Complete")
        log = pod_log(api, launcher_of(job_pods(api, "ee-fsgroup"))["metadata"]["name"])
        groups = [line.split()[1:] for line in log.splitlines() if line.startswith("groups ")]
        assert len(groups) == 2, log  # the launcher's rank and the node's, started through its sshd
        # the admin's job (nonroot-v2 admits a group outside the range) runs as the namespace's first UID
        uids = api.get("/api/v1/namespaces/default").json()["metadata"]["annotations"]["openshift.io/sa.scc.uid-range"]
        assert all(g[0] == uids.split("/")[0] and "2345" in g[1:] for g in groups), log
    finally:
        _delete(api, "ee-fsgroup")
        api.delete(f"{TRAINER}/clustertrainingruntimes/ee-fsgroup")
