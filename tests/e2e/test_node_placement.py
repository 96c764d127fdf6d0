"""The machine is a Node, and pods go on it only where kube-scheduler would put them: a nodeSelector it
lacks or a taint not tolerated keeps a job's pods Pending with the scheduler's condition and Event (real
kubectl shows them), its Workload admitted and saying why; a `kubectl label node` or `kubectl taint node
...-` starts it without resubmission. Labels and taints added here are removed again: the server is the
whole session's."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

import httpx
import pytest
from mpijob.api import names

from support import TRAINER, condition, job_pods, trainjob, wait_finished, wait_for

NS = "np-e2e"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
LABEL = "example.com/e2e-disk"
TAINT = "example.com/e2e-dedicated"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def node(api: httpx.Client, kubectl: Kubectl) -> Iterator[str]:
    """The machine's Node, in a namespace of the module's own; its test label and taint removed after."""
    r = api.post("/api/v1/namespaces", json={"metadata": {"name": NS}})
    assert r.status_code in (201, 409), r.text
    name = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout
    assert name
    yield name
    kubectl("label", "node", name, f"{LABEL}-", check=False)
    kubectl("taint", "node", name, f"{TAINT}-", check=False)
    api.delete(f"/api/v1/namespaces/{NS}")


def placed(name: str, pod: dict) -> dict:
    """A two-node job whose pods (node and launcher) get `pod` through a runtime patch."""
    job = trainjob(name, ["mpirun", "hostname"], num_nodes=2)
    job["spec"]["runtimePatches"] = [{"manager": "example.com/e2e", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": rjob, "template": {"spec": {"template": {"spec": pod}}}}
                           for rjob in ("node", "launcher")]}}}}]
    return job


def unschedulable(api: httpx.Client, job: str) -> list[dict]:
    """The job's pods once all are Pending with PodScheduled=False."""
    def probe() -> list[dict] | None:
        pods = job_pods(api, job, NS)
        stuck = [p for p in pods if p["status"]["phase"] == "Pending" and any(
            c["type"] == "PodScheduled" and c["status"] == "False" for c in p["status"].get("conditions") or [])]
        return pods if pods and len(stuck) == len(pods) else None
    return wait_for(probe, f"{job}'s pods unschedulable", timeout=30)


def scheduled_condition(pod: dict) -> dict:
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def workload(api: httpx.Client, job: str) -> dict:
    items = api.get(f"{KUEUE}/namespaces/{NS}/workloads").json()["items"]
    return next(w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job)


def test_a_node_selector_the_node_lacks_waits_until_the_node_is_labelled(api: httpx.Client, kubectl: Kubectl,
                                                                         node: str) -> None:
    r = api.post(f"{TRAINER}/namespaces/{NS}/trainjobs", json=placed("np-select", {"nodeSelector": {LABEL: "fast"}}))
    assert r.status_code == 201, r.text
    pods = unschedulable(api, "np-select")
    message = ("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes "
               "are available: 1 Preemption is not helpful for scheduling.")
    for pod in pods:
        cond = scheduled_condition(pod)
        assert (cond["reason"], cond["message"]) == ("Unschedulable", message)
        assert not pod["spec"].get("nodeName") and not pod["status"].get("startTime")
    wl = workload(api, "np-select")
    assert any(c["type"] == "Admitted" and c["status"] == "True" for c in wl["status"]["conditions"])  # Kueue first
    assert "fits no node" in wl["metadata"]["annotations"][names.ANNOTATION_WAITING]
    described = kubectl("describe", "pod", "-n", NS, pods[0]["metadata"]["name"]).stdout
    assert "FailedScheduling" in described and "default-scheduler" in described, described
    assert "didn't match Pod's node affinity/selector" in described
    got = kubectl("get", "pods", "-n", NS, "-l", "jobset.sigs.k8s.io/jobset-name=np-select").stdout
    assert got.count("Pending") == 2, got
    assert condition(api.get(f"{TRAINER}/namespaces/{NS}/trainjobs/np-select").json(), "Complete") is None

    kubectl("label", "node", node, f"{LABEL}=fast")
    done = wait_finished(api, "np-select", NS, timeout=90)
    assert condition(done, "Complete"), done.get("status")
    assert all(p["spec"]["nodeName"] == node for p in job_pods(api, "np-select", NS))
    assert names.ANNOTATION_WAITING not in (workload(api, "np-select")["metadata"].get("annotations") or {})
    escaped = LABEL.replace(".", "\\.")
    shown = kubectl("get", "node", node, "-o", f"jsonpath={{.metadata.labels.{escaped}}}").stdout
    assert shown == "fast"  # the admin's label is kept on the Node


def test_a_taint_holds_the_job_and_a_toleration_lets_it_run(api: httpx.Client, kubectl: Kubectl, node: str) -> None:
    kubectl("taint", "node", node, f"{TAINT}=ml:NoSchedule")
    try:
        r = api.post(f"{TRAINER}/namespaces/{NS}/trainjobs", json=placed("np-held", {}))
        assert r.status_code == 201, r.text
        pods = unschedulable(api, "np-held")
        assert scheduled_condition(pods[0])["message"].startswith(
            f"0/1 nodes are available: 1 node(s) had untolerated taint {{{TAINT}: ml}}. preemption:")
        tolerating = placed("np-tolerant", {"tolerations": [{"key": TAINT, "operator": "Equal", "value": "ml",
                                                             "effect": "NoSchedule"}]})
        r = api.post(f"{TRAINER}/namespaces/{NS}/trainjobs", json=tolerating)
        assert r.status_code == 201, r.text
        done = wait_finished(api, "np-tolerant", NS, timeout=90)
        assert condition(done, "Complete"), done.get("status")
        assert condition(api.get(f"{TRAINER}/namespaces/{NS}/trainjobs/np-held").json(), "Complete") is None
        events = kubectl("get", "events", "-n", NS, "--field-selector", "reason=FailedScheduling", "-o", "name").stdout
        assert events.strip(), "no FailedScheduling event"
    finally:
        kubectl("taint", "node", node, f"{TAINT}-")
    done = wait_finished(api, "np-held", NS, timeout=90)  # the taint gone, the held job starts by itself
    assert condition(done, "Complete"), done.get("status")
