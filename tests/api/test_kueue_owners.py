"""The pure half of Kueue's job integrations (`mpijob/api/kueue/owners.py`): an MPIJob's Workload is named as
Kueue's `GetWorkloadNameForOwnerWithGVK` names it and has Kueue's MPIJob pod sets; a TrainJob's keeps its name."""

from __future__ import annotations

import hashlib

import yaml
from mpijob.api.kueue import owners
from mpijob.api.kueue.adapters import workload_name, workload_object
from mpijob.api.mpioperator import naming
from mpijob.api.mpioperator.convert import convert
from mpijob.api.trainer.plan import resolve

from support import UPSTREAM


def _mpijob(name: str = "pi", suspend: object = None) -> dict:
    run_policy = {} if suspend is None else {"suspend": suspend}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": name, "namespace": "team", "uid": "8c1f7a1e-uid", "labels": {
                "kueue.x-k8s.io/queue-name": "gpus"}},
            "spec": {"runPolicy": run_policy}}


def test_an_mpijobs_workload_is_named_as_kueue_names_it() -> None:
    # Kueue: sha1("MPIJob\nkubeflow.org\n<name>\n<uid>"), its first five hex digits, after "mpijob-<name>-"
    digest = hashlib.sha1(b"MPIJob\nkubeflow.org\npi\n8c1f7a1e-uid").hexdigest()[:5]
    assert workload_name(_mpijob()) == f"mpijob-pi-{digest}"
    long = workload_name(_mpijob("x" * 300))
    assert len(long) == 253 and long.startswith("mpijob-xxx") and long[-6] == "-"


def test_a_trainjob_keeps_its_workload_name() -> None:
    tj = {"kind": "TrainJob", "metadata": {"name": "pi", "uid": "u1"}}
    assert workload_name(tj) == f"trainjob-pi-{hashlib.sha256(b'u1').hexdigest()[:5]}"
    assert workload_name({"metadata": {"name": "pi", "uid": "u1"}}) == workload_name(tj)  # kind unsaid: a TrainJob


def test_an_mpijobs_pod_sets_are_launcher_and_worker_and_its_suspend_deactivates_it() -> None:
    job = yaml.safe_load((UPSTREAM / "mpi-operator" / "example_pi.yaml").read_text())  # a Launcher, 2 Workers
    job["metadata"] |= {"namespace": "team", "uid": "8c1f7a1e-uid", "labels": {"kueue.x-k8s.io/queue-name": "gpus"}}
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"requests": {"cpu": "2"}, "limits": {"memory": "1Gi"}}
    form = convert(job, always_runtime=True)
    plan = naming.rename(resolve({**form.trainjob, "metadata": {**form.trainjob["metadata"], **job["metadata"]}},
                                 form.runtime or {}))
    wl = workload_object(job, plan, None, 100, "high")
    sets = [(p["name"], p["count"], p["template"]["spec"]["containers"][0]["resources"]["requests"])
            for p in wl["spec"]["podSets"]]
    assert sets[1] == ("worker", 2, {"cpu": "2", "memory": "1Gi"}) and sets[0][:2] == ("launcher", 1), sets
    assert wl["metadata"]["name"] == workload_name(job)
    assert (wl["spec"]["queueName"], wl["spec"]["priority"], wl["spec"]["active"]) == ("gpus", 100, True)
    assert wl["spec"]["priorityClassRef"]["name"] == "high"
    job["spec"].setdefault("runPolicy", {})["suspend"] = True
    assert workload_object(job, plan, None, 0, None)["spec"]["active"] is False
    assert owners.MPIJOB.suspended(_mpijob(suspend=False)) is False


def test_a_workloads_owner_and_a_jobs_end_are_read_for_either_kind() -> None:
    wl = {"metadata": {"ownerReferences": [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "name": "pi",
                                            "uid": "u"}]}}
    found = owners.owner(wl)
    assert found is not None and found[0] is owners.MPIJOB and found[1]["name"] == "pi"
    other_version = {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob"}  # Kueue's MPIJob integration is v2beta1's
    assert owners.owner({"metadata": {"ownerReferences": [other_version]}}) is None
    done = {"status": {"conditions": [{"type": "Running", "status": "False"},
                                      {"type": "Succeeded", "status": "True", "message": "ok"}]}}
    assert owners.MPIJOB.end(done) == done["status"]["conditions"][1]
    assert owners.TRAINJOB.end(done) is None  # a TrainJob completes with Complete
