"""Kueue fields through kubectl: what the local cluster refuses (a 422 naming the field, nothing created, in
v1beta2 and v1beta1 alike), what it only warns about (kube-apiserver's `Warning:` line), and a LocalQueue's
stopPolicy, which it honours as Kueue does: the queue's jobs wait until it is started again."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import httpx

from support import TRAINER, condition, create, job_pods, trainjob, wait_finished, wait_for

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
QUOTA = [{"coveredResources": ["cpu", "memory"],
          "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "64"},
                                                                {"name": "memory", "nominalQuota": "256Gi"}]}]}]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def _obj(kind: str, name: str, spec: dict, version: str = "v1beta2", namespace: str | None = None) -> str:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return json.dumps({"apiVersion": f"kueue.x-k8s.io/{version}", "kind": kind, "metadata": meta, "spec": spec})


def test_kubectl_shows_what_the_local_cluster_refuses_and_what_it_only_warns_about(api: httpx.Client,
                                                                                  kubectl: Kubectl) -> None:
    cq = _obj("ClusterQueue", "kf-fungible", {"namespaceSelector": {}, "resourceGroups": QUOTA,
                                               "flavorFungibility": {"whenCanBorrow": "TryNextFlavor"}})
    refused = kubectl("apply", "-f", "-", input=cq, check=False)
    assert refused.returncode != 0
    assert ("spec.flavorFungibility.whenCanBorrow: Forbidden: the local cluster assigns flavors as Kueue does by "
            "default") in refused.stderr, refused.stderr
    assert api.get(f"{KUEUE}/clusterqueues/kf-fungible").status_code == 404  # nothing created

    # v1beta1: the refusal names the field as the client sent it
    parent = _obj("Cohort", "kf-east", {"parentName": "kf-research"}, version="v1beta1")
    refused = kubectl("apply", "-f", "-", input=parent, check=False)
    assert refused.returncode != 0 and "spec.parentName: Forbidden: cohorts are flat" in refused.stderr
    assert api.get(f"{KUEUE}/cohorts/kf-east").status_code == 404

    flavor = _obj("ResourceFlavor", "kf-a100", {"nodeLabels": {"example.com/gpu": "a100"}})
    applied = kubectl("apply", "-f", "-", input=flavor)
    assert "resourceflavor.kueue.x-k8s.io/kf-a100 created" in applied.stdout
    assert "Warning: spec.nodeLabels.example.com/gpu: no effect on one machine" in applied.stderr, applied.stderr
    unchanged = kubectl("apply", "-f", "-", input=flavor)  # no spec change: nothing to warn about again
    assert "unchanged" in unchanged.stdout and "Warning" not in unchanged.stderr
    # a stored queue, Kueue's defaults filled in (flavorFungibility among them), copied as a new one
    kubectl("apply", "-f", "-", input=_obj("ClusterQueue", "kf-source", {"resourceGroups": QUOTA}))
    copy = json.loads(kubectl("get", "clusterqueue", "kf-source", "-o", "json").stdout)
    assert copy["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    copy["metadata"] = {"name": "kf-copy"}
    copy.pop("status", None)
    applied = kubectl("apply", "-f", "-", input=json.dumps(copy))
    assert "clusterqueue.kueue.x-k8s.io/kf-copy created" in applied.stdout and "Warning" not in applied.stderr
    for name in ("kf-source", "kf-copy"):
        api.delete(f"{KUEUE}/clusterqueues/{name}")
    api.delete(f"{KUEUE}/resourceflavors/kf-a100")


def test_a_stopped_local_queue_holds_its_jobs_until_started(api: httpx.Client, kubectl: Kubectl) -> None:
    c = api
    kubectl("apply", "-f", "-", input=_obj("ClusterQueue", "kf-stop", {"namespaceSelector": {},
                                                                       "resourceGroups": QUOTA}))
    kubectl("apply", "-f", "-", input=_obj("LocalQueue", "kf-stop-lq", {"clusterQueue": "kf-stop",
                                                                         "stopPolicy": "Hold"}, namespace="default"))
    job = trainjob("kf-held", ["mpirun", "bash", "-c", "echo ran"], num_nodes=1)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "kf-stop-lq"}
    create(c, job)

    def held() -> dict | None:
        items = c.get(f"{KUEUE}/namespaces/default/workloads").json()["items"]
        wl = next((w for w in items if w["metadata"]["ownerReferences"][0]["name"] == "kf-held"), {})
        qr = next((x for x in (wl.get("status") or {}).get("conditions") or [] if x["type"] == "QuotaReserved"), None)
        return qr if qr and qr["status"] == "False" else None

    qr = wait_for(held, "kf-held pending")
    assert (qr["reason"], qr["message"]) == ("Inadmissible", "LocalQueue kf-stop-lq is stopped")
    lq = wait_for(lambda: next((x for x in (c.get(f"{KUEUE}/namespaces/default/localqueues/kf-stop-lq").json()
                                            .get("status") or {}).get("conditions") or []
                                if x["type"] == "Active" and x["status"] == "False"), None), "kf-stop-lq stopped")
    assert (lq["reason"], lq["message"]) == ("Stopped", "LocalQueue is stopped")
    assert job_pods(c, "kf-held") == []

    kubectl("patch", "localqueue", "kf-stop-lq", "--type=merge", "-p", '{"spec":{"stopPolicy":"None"}}')
    assert condition(wait_finished(c, "kf-held"), "Complete") is not None
    c.delete(f"{TRAINER}/namespaces/default/trainjobs/kf-held")
    c.delete(f"{KUEUE}/namespaces/default/localqueues/kf-stop-lq")
    c.delete(f"{KUEUE}/clusterqueues/kf-stop")
