"""MPI Operator's MPIJobs through the local Kueue, as Kueue's MPIJob integration takes them: a Workload named
as Kueue names it with pod sets `launcher` and `worker`, held (MPI Operator's `Suspended`) until its
ClusterQueue has room, preempted by and preempting TrainJobs by priority, suspended and resumed by its
user (`spec.runPolicy.suspend`), and kept in the job history. Each test has a namespace and a ClusterQueue
of its own (one CPU, which one job fills) on the shared server."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml
from mpijob.cli.main import app
from typer.testing import CliRunner

from support import TRAINER, condition, events_of, trainjob, wait_for

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"
MPI = "/apis/kubeflow.org/v2beta1"
QUEUE, PRIORITY = "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class"
HALF_CPU = {"requests": {"cpu": "500m"}}  # launcher + one worker: one CPU, all the queue has


def _queue(api: httpx.Client, ns: str, preemption: bool = False) -> None:
    """Namespace `ns` with LocalQueue `q` into ClusterQueue `<ns>` of one CPU."""
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["cpu"], "flavors": [{"name": "default-flavor", "resources": [
            {"name": "cpu", "nominalQuota": "1"}]}]}]}
    if preemption:
        spec["preemption"] = {"withinClusterQueue": "LowerPriority"}
    r = api.post(f"{KUEUE}/clusterqueues", json={"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                                 "metadata": {"name": ns}, "spec": spec})
    assert r.status_code == 201, r.text
    r = api.post(f"{KUEUE}/namespaces/{ns}/localqueues", json={
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q"},
        "spec": {"clusterQueue": ns}})
    assert r.status_code == 201, r.text


def _priorities(api: httpx.Client) -> None:
    for name, value in (("w1-low", 10), ("w1-high", 1000)):
        r = api.post(f"{KUEUE}/workloadpriorityclasses", json={
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": name},
            "value": value})
        assert r.status_code in (201, 409), r.text


def _mpijob(name: str, script: str, labels: dict[str, str] | None = None, **run_policy: object) -> str:
    """An MPIJob of a launcher running `script` and one sshd worker, half a CPU each, in queue `q`."""
    worker = {"name": "mpi-worker", "image": "mpioperator/openmpi", "command": ["/usr/sbin/sshd"],
              "args": ["-De", "-p", "2222"], "resources": HALF_CPU}
    launcher = {"name": "mpi-launcher", "image": "mpioperator/openmpi", "command": ["bash", "-c", script],
                "resources": HALF_CPU}
    spec: dict[str, Any] = {"slotsPerWorker": 1, "sshAuthMountPath": "/home/mpiuser/.ssh", "mpiReplicaSpecs": {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
        "Worker": {"replicas": 1, "template": {"spec": {"containers": [worker]}}}}}
    if run_policy:
        spec["runPolicy"] = run_policy
    return yaml.safe_dump({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                           "metadata": {"name": name, "labels": {QUEUE: "q", **(labels or {})}}, "spec": spec})


def _job(api: httpx.Client, ns: str, name: str) -> dict:
    r = api.get(f"{MPI}/namespaces/{ns}/mpijobs/{name}")
    assert r.status_code == 200, r.text
    return r.json()


def _cond(obj: dict, kind: str) -> dict:
    """The condition of type `kind` whatever its status ({} when absent)."""
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def _workload(api: httpx.Client, ns: str, owner: str) -> dict | None:
    items = api.get(f"{KUEUE}/namespaces/{ns}/workloads").json()["items"]
    return next((w for w in items if w["metadata"]["ownerReferences"][0]["name"] == owner), None)


def _pods(api: httpx.Client, ns: str, job: str) -> list[dict]:
    return api.get(f"/api/v1/namespaces/{ns}/pods",
                   params={"labelSelector": f"training.kubeflow.org/job-name={job}"}).json()["items"]


def _succeeded(api: httpx.Client, ns: str, job: str) -> dict:
    return wait_for(lambda: (j := _job(api, ns, job)) and _cond(j, "Succeeded").get("status") == "True" and j,
                    f"MPIJob {job} to succeed", timeout=120)


def test_an_mpijob_waits_for_room_then_runs_under_kueues_workload(api: httpx.Client, kubectl: Kubectl,
                                                                 home: Path) -> None:
    ns = "ee-w1-mpiq"
    _queue(api, ns)
    kubectl("apply", "-n", ns, "-f", "-", input=_mpijob("first", "sleep 4; echo first-done"))
    wait_for(lambda: len(_pods(api, ns, "first")) == 2 or None, "the first job's pods")
    kubectl("apply", "-n", ns, "-f", "-", input=_mpijob("second", "echo second-done"))

    # The second waits whole: a Workload Kueue's way, no pod, and MPI Operator's Suspended condition.
    wl = wait_for(lambda: (w := _workload(api, ns, "second")) and _cond(w, "QuotaReserved") and w, "a pending Workload")
    job = _job(api, ns, "second")
    uid = job["metadata"]["uid"]
    digest = hashlib.sha1(f"MPIJob\nkubeflow.org\nsecond\n{uid}".encode()).hexdigest()[:5]
    assert wl["metadata"]["name"] == f"mpijob-second-{digest}"
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
    assert wl["spec"]["queueName"] == "q"
    assert [(p["name"], p["count"], p["template"]["spec"]["containers"][0]["resources"]["requests"])
            for p in wl["spec"]["podSets"]] == [("launcher", 1, {"cpu": "500m"}), ("worker", 1, {"cpu": "500m"})]
    assert _cond(wl, "QuotaReserved")["status"] == "False" and "cpu" in _cond(wl, "QuotaReserved")["message"]
    assert _pods(api, ns, "second") == []
    suspended = _cond(job, "Suspended")
    assert (suspended["status"], suspended["reason"]) == ("True", "MPIJobSuspended"), job["status"]
    assert _cond(job, "Running")["status"] == "False"
    # the field stays the user's: Kueue's gate is the Workload's admission
    assert (job["spec"].get("runPolicy") or {}).get("suspend") in (None, False)

    pending = api.get(f"{VISIBILITY}/clusterqueues/{ns}/pendingworkloads").json()["items"]
    assert [(p["metadata"]["name"], p["metadata"]["ownerReferences"][0]["kind"]) for p in pending] == [
        (wl["metadata"]["name"], "MPIJob")]
    listed = kubectl("get", "workloads", "-n", ns).stdout
    assert wl["metadata"]["name"] in listed and "q" in listed, listed

    # Room frees when the first ends: the second is admitted and runs.
    done = _succeeded(api, ns, "second")
    resumed = _cond(done, "Suspended")
    assert (resumed["status"], resumed["reason"]) == ("False", "MPIJobResumed"), done["status"]
    assert [c["type"] for c in done["status"]["conditions"]] == ["Created", "Suspended", "Running", "Succeeded"]
    admitted = api.get(f"{KUEUE}/namespaces/{ns}/workloads/{wl['metadata']['name']}").json()
    assert condition(admitted, "Admitted") and condition(admitted, "Finished"), admitted["status"]
    assert admitted["status"]["admission"]["clusterQueue"] == ns
    reasons = [e["reason"] for e in events_of(api, "second", ns)]
    assert {"CreatedWorkload", "MPIJobSuspended", "Admitted", "MPIJobResumed"} <= set(reasons), reasons
    first = _job(api, ns, "first")
    assert _cond(first, "Succeeded")["status"] == "True"
    assert _cond(first, "Succeeded")["lastTransitionTime"] <= _cond(done, "Suspended")["lastTransitionTime"]

    # Both are in the job history, as MPIJobs.
    r = CliRunner().invoke(app, ["history", "-n", ns, "-o", "json"], env={"MPIJOB_HOME": str(home), "KUBECONFIG": None})
    assert r.exit_code == 0, r.output
    records = {i["metadata"]["name"]: i for i in json.loads(r.stdout)["items"]}
    assert {n: (i["jobKind"], i["state"], i["reason"], i["nodes"]) for n, i in records.items()} == {
        "first": ("MPIJob", "Complete", "MPIJobSucceeded", 1),
        "second": ("MPIJob", "Complete", "MPIJobSucceeded", 1)}, records
    assert records["second"]["admitted"] and records["second"]["waitSeconds"] > records["first"]["waitSeconds"]
    table = CliRunner().invoke(app, ["history", "-n", ns], env={"MPIJOB_HOME": str(home), "KUBECONFIG": None})
    header, *rows = table.stdout.splitlines()
    assert header.split()[:3] == ["NAME", "KIND", "USER"] and [r.split()[:2] for r in rows] == [
        ["first", "MPIJob"], ["second", "MPIJob"]], table.stdout

    # A job its queue could never admit is refused at the door, as a TrainJob is, and nothing is stored.
    huge = _mpijob("huge", "true").replace("500m", "2")
    refused = kubectl("apply", "-n", ns, "-f", "-", input=huge, check=False)
    assert refused.returncode != 0 and "exceeded quota" in refused.stderr and "cpu" in refused.stderr, refused.stderr
    assert kubectl("get", "mpijob", "-n", ns, "huge", check=False).returncode != 0
    kubectl("delete", "namespace", ns, timeout=90)


def test_priorities_preempt_across_kinds(api: httpx.Client, kubectl: Kubectl) -> None:
    ns = "ee-w1-mpiprio"
    _queue(api, ns, preemption=True)
    _priorities(api)
    # A low MPIJob runs; a high TrainJob preempts it, runs, and the MPIJob is admitted again.
    kubectl("apply", "-n", ns, "-f", "-", input=_mpijob("low-mpi", "sleep 60", {PRIORITY: "w1-low"}))
    wait_for(lambda: _cond(_job(api, ns, "low-mpi"), "Running").get("status") == "True", "the MPIJob running")
    high = trainjob("high-tj", ["echo", "high-done"], num_nodes=2)
    high["metadata"]["labels"] = {QUEUE: "q", PRIORITY: "w1-high"}
    high["spec"]["trainer"]["resourcesPerNode"] = HALF_CPU
    assert api.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=high).status_code == 201
    wl = wait_for(lambda: (w := _workload(api, ns, "low-mpi")) and condition(w, "Preempted") and w, "preemption")
    assert condition(wl, "Evicted")["reason"] == "Preempted"
    held = wait_for(lambda: (j := _job(api, ns, "low-mpi")) and _cond(j, "Suspended").get("status") == "True" and j,
                    "the preempted MPIJob suspended")
    assert _cond(held, "Running")["status"] == "False" and _cond(held, "Failed") == {}, held["status"]
    assert "Preempted" in [e["reason"] for e in events_of(api, "low-mpi", ns)]
    wait_for(lambda: (t := api.get(f"{TRAINER}/namespaces/{ns}/trainjobs/high-tj").json())
             and condition(t, "Complete"), "the TrainJob to complete")
    again = wait_for(lambda: (j := _job(api, ns, "low-mpi")) and _cond(j, "Running").get("status") == "True" and j,
                     "the MPIJob running again")
    assert _cond(again, "Suspended")["reason"] == "MPIJobResumed"
    assert len(_pods(api, ns, "low-mpi")) == 2

    # The other way: a high MPIJob preempts the low one's successor, a low TrainJob.
    kubectl("delete", "mpijob", "-n", ns, "low-mpi", timeout=90)
    low = trainjob("low-tj", ["sleep", "60"], num_nodes=2)
    low["metadata"]["labels"] = {QUEUE: "q", PRIORITY: "w1-low"}
    low["spec"]["trainer"]["resourcesPerNode"] = HALF_CPU
    assert api.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=low).status_code == 201
    wait_for(lambda: (w := _workload(api, ns, "low-tj")) and condition(w, "Admitted"), "the low TrainJob admitted")
    kubectl("apply", "-n", ns, "-f", "-", input=_mpijob("high-mpi", "echo high-done", {PRIORITY: "w1-high"}))
    wl = wait_for(lambda: (w := _workload(api, ns, "low-tj")) and condition(w, "Preempted") and w, "preemption")
    assert condition(wl, "Evicted")["reason"] == "Preempted"
    _succeeded(api, ns, "high-mpi")
    high_wl = _workload(api, ns, "high-mpi")
    assert high_wl and high_wl["spec"]["priority"] == 1000 and high_wl["spec"]["priorityClassRef"]["name"] == "w1-high"
    kubectl("delete", "namespace", ns, timeout=90)


def test_the_users_run_policy_suspend_holds_stops_and_resumes_the_job(api: httpx.Client, kubectl: Kubectl) -> None:
    ns = "ee-w1-mpisusp"
    _queue(api, ns)
    kubectl("apply", "-n", ns, "-f", "-", input=_mpijob("held", "sleep 3; echo held-done", suspend=True))
    wl = wait_for(lambda: _workload(api, ns, "held"), "the held job's Workload")
    assert wl["spec"]["active"] is False and "admission" not in (wl.get("status") or {})
    job = wait_for(lambda: (j := _job(api, ns, "held")) and _cond(j, "Suspended") and j, "Suspended")
    assert (_cond(job, "Suspended")["status"], _cond(job, "Suspended")["reason"]) == ("True", "MPIJobSuspended")
    waiting = wait_for(lambda: (_workload(api, ns, "held") or {}).get("metadata", {}).get("annotations", {})
                       .get("mpijob.io/waiting"), "why it waits")
    assert "spec.runPolicy.suspend" in waiting, waiting
    assert _pods(api, ns, "held") == []

    patch = ("merge", "-p", '{"spec": {"runPolicy": {"suspend": false}}}')
    kubectl("patch", "mpijob", "-n", ns, "held", "--type", *patch)
    wait_for(lambda: _cond(_job(api, ns, "held"), "Running").get("status") == "True", "the resumed job running")
    kubectl("patch", "mpijob", "-n", ns, "held", "--type", "merge", "-p", '{"spec": {"runPolicy": {"suspend": true}}}')
    wait_for(lambda: _pods(api, ns, "held") == [] or None, "the suspended job's pods deleted")
    job = _job(api, ns, "held")
    assert _cond(job, "Suspended")["status"] == "True" and _cond(job, "Succeeded") == {}, job["status"]
    assert (_workload(api, ns, "held") or {})["spec"]["active"] is False
    kubectl("patch", "mpijob", "-n", ns, "held", "--type", *patch)
    done = _succeeded(api, ns, "held")
    assert _cond(done, "Suspended")["reason"] == "MPIJobResumed"
    kubectl("delete", "namespace", ns, timeout=90)
