"""A ClusterQueue that names an AdmissionCheck, or lists a ResourceFlavor whose `topologyName` names a
Topology, is inactive on the local cluster (it serves neither kind), as Kueue makes a queue whose
referenced object is missing. Objects are created through the real API (v1beta1 and v1beta2); a TrainJob
in such a queue stays pending with Kueue's reason and the plain "why", the CLI shows the queue inactive,
and the job runs once the reference is removed from the ClusterQueue."""

from __future__ import annotations

from typing import Any

import httpx
from mpijob.cli.main import app
from typer.testing import CliRunner

from support import condition, create, job_pods, trainjob, wait_finished, wait_for

KUEUE = "/apis/kueue.x-k8s.io"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MERGE = {"Content-Type": "application/merge-patch+json"}
QUOTA = [{"coveredResources": ["cpu", "memory"],
          "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "64"},
                                                                {"name": "memory", "nominalQuota": "256Gi"}]}]}]


def _post(c: httpx.Client, path: str, obj: dict) -> None:
    r = c.post(path, json=obj)
    assert r.status_code == 201, r.text


def _queues(c: httpx.Client, cq: dict, version: str) -> None:
    """The ClusterQueue (at `version`) and a LocalQueue `<cq>-lq` in default pointing at it."""
    name = cq["metadata"]["name"]
    _post(c, f"{KUEUE}/{version}/clusterqueues", {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "ClusterQueue",
                                                   **cq})
    _post(c, f"{KUEUE}/v1beta2/namespaces/default/localqueues",
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
           "metadata": {"name": f"{name}-lq", "namespace": "default"}, "spec": {"clusterQueue": name}})


def _active(c: httpx.Client, path: str) -> dict | None:
    obj = c.get(f"{KUEUE}/v1beta2/{path}").json()
    return next((x for x in (obj.get("status") or {}).get("conditions") or [] if x["type"] == "Active"), None)


def _wait_active(c: httpx.Client, path: str, status: str) -> dict:
    return wait_for(lambda: (a := _active(c, path)) and a["status"] == status and a, f"{path} Active={status}")


def _workload(c: httpx.Client, job: str) -> dict | None:
    items = c.get(f"{KUEUE}/v1beta2/namespaces/default/workloads").json()["items"]
    return next((w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job), None)


def _pending_reason(c: httpx.Client, job: str) -> dict:
    """The workload's QuotaReserved=False condition, once the scheduler has looked at it."""
    def probe() -> dict | None:
        wl = _workload(c, job)
        qr = next((x for x in ((wl or {}).get("status") or {}).get("conditions") or []
                   if x["type"] == "QuotaReserved"), None)
        return qr if qr and qr["status"] == "False" else None

    return wait_for(probe, f"{job} pending with a reason")


def _cli(server: Any, *args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args), env={"MPIJOB_HOME": str(server.home), "KUBECONFIG": None})
    return r.exit_code, r.stdout, r.stderr


def _job(name: str, queue: str) -> dict:
    job = trainjob(name, ["mpirun", "bash", "-c", "echo ran"], num_nodes=1)
    job["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return job


def _assert_held(c: httpx.Client, job: str, cq: str, plain: str) -> None:
    qr = _pending_reason(c, job)
    assert (qr["reason"], qr["message"]) == ("Suspended", f"ClusterQueue {cq} is inactive")
    waiting = (_workload(c, job) or {})["metadata"]["annotations"]["mpijob.io/waiting"]
    assert f"ClusterQueue {cq} is inactive: {plain}" in waiting, waiting
    assert "mpijob.io/estimated-start" not in (_workload(c, job) or {})["metadata"]["annotations"]  # held: no estimate
    assert job_pods(c, job) == []
    events = c.get("/api/v1/namespaces/default/events", params={"fieldSelector": f"involvedObject.name={job}"})
    assert any(plain in e["message"] for e in events.json()["items"])


def test_missing_admission_check_holds_the_job_until_removed(api: httpx.Client, server: Any) -> None:
    c, cq = api, "ac-held"
    # v1beta1's spec.admissionChecks: converted into spec.admissionChecksStrategy on the way in
    _queues(c, {"metadata": {"name": cq}, "spec": {"namespaceSelector": {}, "resourceGroups": QUOTA,
                                                    "admissionChecks": ["prov-check"]}}, "v1beta1")
    active = _wait_active(c, f"clusterqueues/{cq}", "False")
    want = "Can't admit new workloads: references missing AdmissionCheck(s): prov-check."
    assert (active["reason"], active["message"]) == ("AdmissionCheckNotFound", want)
    lq_active = _wait_active(c, f"namespaces/default/localqueues/{cq}-lq", "False")
    assert (lq_active["reason"], lq_active["message"]) == ("ClusterQueueIsInactive",
                                                            "Can't submit new workloads to clusterQueue")

    create(c, _job("ac-job", f"{cq}-lq"))
    _assert_held(c, "ac-job", cq, "AdmissionCheck prov-check not found")

    code, out, err = _cli(server, "get", "queues")
    assert code == 0 and f"ClusterQueue {cq} is inactive (AdmissionCheckNotFound): {want}" in err
    assert any(line.split()[:1] == [cq] for line in out.splitlines())  # the table itself is unchanged
    code, out, _ = _cli(server, "describe", "queue", cq)
    assert code == 0 and f"Active:           False (AdmissionCheckNotFound: {want})" in out
    code, out, _ = _cli(server, "describe", "trainjob", "ac-job")
    assert code == 0 and "AdmissionCheck prov-check not found" in out

    r = c.patch(f"{KUEUE}/v1beta2/clusterqueues/{cq}", json={"spec": {"admissionChecksStrategy": None}},
                headers=MERGE)
    assert r.status_code == 200 and "admissionChecksStrategy" not in r.json()["spec"], r.text
    assert condition(wait_finished(c, "ac-job"), "Complete") is not None
    active = _wait_active(c, f"clusterqueues/{cq}", "True")
    assert (active["reason"], active["message"]) == ("Ready", "Can admit new workloads")
    assert _wait_active(c, f"namespaces/default/localqueues/{cq}-lq", "True")["reason"] == "Ready"


def test_flavor_topology_holds_the_job_until_the_queue_lists_another_flavor(api: httpx.Client) -> None:
    c, cq = api, "tas-held"
    _post(c, f"{KUEUE}/v1beta2/resourceflavors",
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "tas-flavor"},
           "spec": {"nodeLabels": {"example.com/rack": "r1"}, "topologyName": "rack-topology"}})
    groups = [{**QUOTA[0], "flavors": [{**QUOTA[0]["flavors"][0], "name": "tas-flavor"}]}]
    _queues(c, {"metadata": {"name": cq}, "spec": {"namespaceSelector": {}, "resourceGroups": groups}}, "v1beta2")
    active = _wait_active(c, f"clusterqueues/{cq}", "False")
    assert (active["reason"], active["message"]) == (
        "TopologyNotFound", ("Can't admit new workloads: there is no Topology \"rack-topology\" for TAS flavor "
                            "\"tas-flavor\"."))

    create(c, _job("tas-job", f"{cq}-lq"))
    _assert_held(c, "tas-job", cq, "ResourceFlavor tas-flavor names Topology rack-topology, which does not exist")

    stored = c.get(f"{KUEUE}/v1beta2/clusterqueues/{cq}").json()
    stored["spec"]["resourceGroups"] = QUOTA  # topologyName is immutable: list a plain flavor instead
    r = c.put(f"{KUEUE}/v1beta2/clusterqueues/{cq}", json=stored)
    assert r.status_code == 200, r.text
    assert condition(wait_finished(c, "tas-job"), "Complete") is not None
    assert _wait_active(c, f"clusterqueues/{cq}", "True")["reason"] == "Ready"
