"""`/metrics` and the resource metrics API over HTTP against a real server (no controllers, so no pod
runs and nothing is sampled): who may read them, what kubectl's discovery finds, what they answer."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import httpx
from prometheus_client.parser import text_string_to_metric_families

USERS = "/apis/mpijob.io/v1alpha1/users"
METRICS_API = "/apis/metrics.k8s.io/v1beta1"




def bind(http: httpx.Client, user: str, role: str, namespace: str | None = None) -> None:
    body = {"metadata": {"name": f"b-{uuid.uuid4().hex[:6]}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}
    kind = f"namespaces/{namespace}/rolebindings" if namespace else "clusterrolebindings"
    assert http.post(f"/apis/rbac.authorization.k8s.io/v1/{kind}", json=body).status_code == 201


def test_metrics_are_the_prometheus_exposition_of_kueues_and_trainers_names(http: httpx.Client) -> None:
    cq = f"cq-{uuid.uuid4().hex[:6]}"
    made = http.post("/apis/kueue.x-k8s.io/v1beta2/clusterqueues", json={
        "metadata": {"name": cq}, "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"], "flavors": [{"name": "f", "resources": [
                {"name": "cpu", "nominalQuota": "1500m"}, {"name": "memory", "nominalQuota": "2Gi"}]}]}]}})
    assert made.status_code == 201, made.text
    resp = http.get("/metrics")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(resp.text)}
    for name in ("kueue_pending_workloads", "kueue_admitted_workloads", "kueue_admission_wait_time_seconds",
                 "kueue_cluster_queue_nominal_quota", "kueue_local_queue_pending_workloads",
                 "kubeflow_trainer_trainjobs_created", "mpijob_trainjob_startup_phase_seconds"):
        assert name in families, name
    assert families["kueue_admission_wait_time_seconds"].type == "histogram"
    # the queue's quota in Kueue's units (cores, bytes) and labels; no `_created` series (Kueue has none)
    quota = {s.labels["resource"]: s for s in families["kueue_cluster_queue_nominal_quota"].samples
             if s.labels["cluster_queue"] == cq}
    assert (quota["cpu"].value, quota["memory"].value) == (1.5, 2 << 30)
    assert quota["cpu"].labels == {"cohort": "", "cluster_queue": cq, "flavor": "f", "resource": "cpu",
                                   "replica_role": "standalone"}
    status = {s.labels["status"]: s.value for s in families["kueue_cluster_queue_status"].samples
              if s.labels["cluster_queue"] == cq}
    assert status == {"pending": 1, "active": 0, "terminating": 0}  # its flavor `f` does not exist
    assert not re.search(r"^\w+_created[{ ]", resp.text, re.M)
    openmetrics = http.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert openmetrics.text.rstrip().endswith("# EOF")


def test_metrics_need_the_metrics_reader_role(http: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    alice = new_user()
    denied = alice.get("/metrics")
    assert denied.status_code == 403, denied.text
    name = alice.user  # type: ignore[attr-defined]
    assert denied.json()["message"] == f'forbidden: User "{name}" cannot get path "/metrics"'
    role = http.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/metrics-reader").json()
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    bind(http, alice.user, "metrics-reader")  # type: ignore[attr-defined]
    assert alice.get("/metrics").status_code == 200
    assert alice.get("/api/v1/namespaces/default/pods").status_code == 403  # metrics only


def test_kubectl_finds_the_resource_metrics_api_in_discovery(http: httpx.Client) -> None:
    groups = {g["name"]: g for g in http.get("/apis").json()["groups"]}
    assert groups["metrics.k8s.io"]["preferredVersion"]["groupVersion"] == "metrics.k8s.io/v1beta1"
    resources = {r["name"]: r for r in http.get(METRICS_API).json()["resources"]}
    assert resources["pods"]["kind"] == "PodMetrics" and resources["pods"]["namespaced"] is True
    assert resources["nodes"]["kind"] == "NodeMetrics" and resources["nodes"]["namespaced"] is False
    assert http.get("/apis/metrics.k8s.io").json()["kind"] == "APIGroup"


def test_resource_metrics_are_read_only_lists_and_say_what_is_missing(http: httpx.Client) -> None:
    pods = http.get(f"{METRICS_API}/namespaces/default/pods", params={"labelSelector": "a=b"})
    assert pods.status_code == 200 and pods.json() == {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
                                                        "metadata": {}, "items": []}
    assert http.get(f"{METRICS_API}/nodes").json()["items"] == []  # no controllers: no kubelet, no Node
    missing = http.get(f"{METRICS_API}/namespaces/default/pods/nope")
    assert missing.status_code == 404 and missing.json()["message"] == 'pods.metrics.k8s.io "nope" not found'
    assert http.post(f"{METRICS_API}/nodes", json={}).status_code == 405
    assert http.get(f"{METRICS_API}/namespaces/default/services").status_code == 404
    bad = http.get(f"{METRICS_API}/pods", params={"labelSelector": "a in (b"})
    assert bad.status_code == 400


def test_whoever_may_view_a_namespace_may_top_its_pods(http: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    bob = new_user()
    assert bob.get(f"{METRICS_API}/namespaces/default/pods").status_code == 403
    bind(http, bob.user, "view", "default")  # type: ignore[attr-defined]
    assert bob.get(f"{METRICS_API}/namespaces/default/pods").status_code == 200
    assert bob.get(f"{METRICS_API}/nodes").status_code == 403  # nodes are cluster-wide
