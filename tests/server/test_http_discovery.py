"""Discovery and OpenAPI documents, in the shapes kubectl 1.32 reads."""

from __future__ import annotations

import httpx


def test_version_reports_kubernetes_1_32(http: httpx.Client) -> None:
    v = http.get("/version").json()
    assert (v["major"], v["minor"]) == ("1", "32")
    assert v["gitVersion"].startswith("v1.32.0")


def test_core_and_group_lists(http: httpx.Client) -> None:
    api = http.get("/api").json()
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    groups = http.get("/apis").json()
    assert groups["kind"] == "APIGroupList"
    trainer = next(g for g in groups["groups"] if g["name"] == "trainer.kubeflow.org")
    assert trainer["preferredVersion"]["groupVersion"] == "trainer.kubeflow.org/v1alpha1"
    one = http.get("/apis/trainer.kubeflow.org").json()
    assert one["kind"] == "APIGroup" and one["name"] == "trainer.kubeflow.org"


def test_core_resource_list(http: httpx.Client) -> None:
    doc = http.get("/api/v1").json()
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in doc["resources"]}
    pods = by_name["pods"]
    assert pods["namespaced"] is True and pods["kind"] == "Pod" and pods["singularName"] == "pod"
    assert "po" in pods["shortNames"] and {"get", "list", "watch", "create", "delete", "patch"} <= set(pods["verbs"])
    assert by_name["pods/log"]["verbs"] == ["get"]
    assert pods["categories"] == ["all"]  # `kubectl get all`: kube's workload kinds, of which pods are served
    assert by_name["pods/exec"]["kind"] == "PodExecOptions" and by_name["pods/exec"]["verbs"] == ["create", "get"]
    assert by_name["pods/portforward"]["kind"] == "PodPortForwardOptions"
    assert "update" in by_name["pods/status"]["verbs"]
    assert by_name["namespaces"]["namespaced"] is False
    assert {"configmaps", "secrets", "events"} <= set(by_name)


def test_trainer_resource_list(http: httpx.Client) -> None:
    doc = http.get("/apis/trainer.kubeflow.org/v1alpha1").json()
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["trainjobs"]["kind"] == "TrainJob" and by_name["trainjobs"]["namespaced"]
    assert "trainjobs/status" in by_name
    assert by_name["clustertrainingruntimes"]["namespaced"] is False
    assert by_name["trainingruntimes"]["namespaced"] is True


def test_unknown_group_version_is_404(http: httpx.Client) -> None:
    for path in ("/apis/nope.example.com/v1", "/apis/nope.example.com", "/api/v2"):
        resp = http.get(path)
        assert resp.status_code == 404 and resp.json()["kind"] == "Status", path


def test_openapi_v3_root_and_group_documents(http: httpx.Client) -> None:
    root = http.get("/openapi/v3").json()["paths"]
    assert root["api/v1"]["serverRelativeURL"] == "/openapi/v3/api/v1"
    url = root["apis/trainer.kubeflow.org/v1alpha1"]["serverRelativeURL"]
    doc = http.get(url).json()
    op = doc["paths"]["/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "trainer.kubeflow.org", "version": "v1alpha1",
                                                     "kind": "TrainJob"}
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in op["parameters"])
    assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]
    core = http.get("/openapi/v3/api/v1").json()
    assert "/api/v1/namespaces/{namespace}/configmaps/{name}" in core["paths"]
    assert "/api/v1/namespaces/{name}" in core["paths"]
    assert http.get("/openapi/v3/apis/nope/v1").status_code == 404


def test_health_endpoints_answer_without_token(connect) -> None:  # type: ignore[no-untyped-def]
    with connect(token="") as anon:
        assert anon.get("/healthz").text == "ok"
        assert anon.get("/readyz").status_code == 200
