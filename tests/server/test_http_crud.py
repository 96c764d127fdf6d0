"""Generic CRUD over real HTTPS: object shapes, Status errors, patches, dry runs, finalizers."""

from __future__ import annotations

import json
import uuid

import httpx

CM = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
TJ = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"


def name(prefix: str = "cm") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def configmap(n: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "labels": {"app": "t"}},
            "data": data or {"k": "v"}}


def assert_status(resp: httpx.Response, code: int, reason: str) -> dict:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["code"] == code and body["reason"] == reason
    return body


def test_create_get_list_update_delete(http: httpx.Client) -> None:
    n = name()
    created = http.post(CM, json=configmap(n, a="1"))
    assert created.status_code == 201, created.text
    obj = created.json()
    meta = obj["metadata"]
    assert meta["namespace"] == "default" and meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0 and obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"

    got = http.get(f"{CM}/{n}").json()
    assert got == obj

    listed = http.get(CM).json()
    assert listed["kind"] == "ConfigMapList" and listed["apiVersion"] == "v1"
    assert int(listed["metadata"]["resourceVersion"]) >= int(meta["resourceVersion"])
    assert n in [i["metadata"]["name"] for i in listed["items"]]

    got["data"]["a"] = "2"
    updated = http.put(f"{CM}/{n}", json=got)
    assert updated.status_code == 200, updated.text
    assert updated.json()["data"]["a"] == "2"
    assert int(updated.json()["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])

    deleted = http.delete(f"{CM}/{n}")
    assert deleted.status_code == 200
    assert deleted.json()["status"] == "Success" and deleted.json()["details"]["name"] == n
    assert_status(http.get(f"{CM}/{n}"), 404, "NotFound")


def test_not_found_status_shape(http: httpx.Client) -> None:
    body = assert_status(http.get(f"{CM}/does-not-exist"), 404, "NotFound")
    assert body["message"] == 'configmaps "does-not-exist" not found'
    assert body["details"] == {"name": "does-not-exist", "kind": "configmaps"}
    tj = assert_status(http.get(f"{TJ}/nope"), 404, "NotFound")
    assert tj["details"]["group"] == "trainer.kubeflow.org"


def test_unknown_resource_path_is_404_status(http: httpx.Client) -> None:
    assert_status(http.get("/api/v1/namespaces/default/widgets"), 404, "NotFound")
    assert_status(http.get("/apis/example.com/v1/things"), 404, "NotFound")
    assert_status(http.get("/nothing/here"), 404, "NotFound")


def test_already_exists_is_409(http: httpx.Client) -> None:
    n = name()
    assert http.post(CM, json=configmap(n)).status_code == 201
    body = assert_status(http.post(CM, json=configmap(n)), 409, "AlreadyExists")
    assert n in body["message"]


def test_stale_resource_version_is_409_conflict(http: httpx.Client) -> None:
    n = name()
    obj = http.post(CM, json=configmap(n)).json()
    fresh = dict(obj, data={"k": "new"})
    assert http.put(f"{CM}/{n}", json=fresh).status_code == 200
    stale = dict(obj, data={"k": "stale"})  # still carries the old resourceVersion
    body = assert_status(http.put(f"{CM}/{n}", json=stale), 409, "Conflict")
    assert "modified" in body["message"]


def test_invalid_name_is_422_with_cause(http: httpx.Client) -> None:
    body = assert_status(http.post(CM, json=configmap("Not_Valid")), 422, "Invalid")
    causes = body["details"]["causes"]
    assert causes[0]["field"] == "metadata.name" and "Not_Valid" in causes[0]["message"]
    assert "RFC 1123" in causes[0]["message"]
    missing = assert_status(http.post(CM, json={"metadata": {}, "data": {}}), 422, "Invalid")
    assert missing["details"]["causes"][0]["field"] == "metadata.name"


def test_trainjob_validation_is_422_with_field_causes(http: httpx.Client) -> None:
    bad = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name("tj")},
           "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 0}}}
    body = assert_status(http.post(TJ, json=bad), 422, "Invalid")
    assert any("numNodes" in c["field"] for c in body["details"]["causes"])
    assert http.get(f"{TJ}/{bad['metadata']['name']}").status_code == 404


def test_unparsable_body_is_400(http: httpx.Client) -> None:
    resp = http.post(CM, content=b"{not json", headers={"Content-Type": "application/json"})
    body = assert_status(resp, 400, "BadRequest")
    assert "not valid JSON" in body["message"]
    array = assert_status(http.post(CM, json=[1, 2]), 400, "BadRequest")
    assert "must be an object" in array["message"]


def test_mismatched_kind_or_namespace_is_400(http: httpx.Client) -> None:
    wrong_kind = dict(configmap(name()), kind="Secret")
    assert "kind" in assert_status(http.post(CM, json=wrong_kind), 400, "BadRequest")["message"]
    other_ns = configmap(name())
    other_ns["metadata"]["namespace"] = "kube-system"
    assert "namespace" in assert_status(http.post(CM, json=other_ns), 400, "BadRequest")["message"]


def test_create_in_missing_namespace_is_404_for_the_namespace(http: httpx.Client) -> None:
    body = assert_status(http.post("/api/v1/namespaces/ghost/configmaps", json=configmap(name())), 404, "NotFound")
    assert body["message"] == 'namespaces "ghost" not found'


def test_system_namespaces_exist_and_cannot_be_deleted(http: httpx.Client) -> None:
    names = {n["metadata"]["name"] for n in http.get("/api/v1/namespaces").json()["items"]}
    assert {"default", "kube-system", "kubeflow-system"} <= names
    assert_status(http.delete("/api/v1/namespaces/default"), 403, "Forbidden")


def test_namespace_lifecycle_deletes_contents(http: httpx.Client) -> None:
    ns = name("ns")
    created = http.post("/api/v1/namespaces", json={"metadata": {"name": ns}})
    assert created.status_code == 201 and created.json()["status"]["phase"] == "Active"
    assert http.post(f"/api/v1/namespaces/{ns}/configmaps", json=configmap("inside")).status_code == 201
    assert http.delete(f"/api/v1/namespaces/{ns}").status_code == 200
    assert http.get(f"/api/v1/namespaces/{ns}/configmaps/inside").status_code == 404


def test_bootstrap_objects(http: httpx.Client) -> None:
    cm = http.get("/api/v1/namespaces/kubeflow-system/configmaps/kubeflow-trainer-public").json()
    assert cm["data"]["kubeflow_trainer_version"]
    runtimes = http.get("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes").json()
    assert "mpi-distributed" in [r["metadata"]["name"] for r in runtimes["items"]]


def test_generate_name(http: httpx.Client) -> None:
    resp = http.post(CM, json={"metadata": {"generateName": "gen-"}, "data": {"a": "b"}})
    assert resp.status_code == 201
    generated = resp.json()["metadata"]["name"]
    assert generated.startswith("gen-") and len(generated) == len("gen-") + 5
    assert http.get(f"{CM}/{generated}").status_code == 200


def test_dry_run_validates_but_does_not_store(http: httpx.Client) -> None:
    n = name()
    resp = http.post(CM, params={"dryRun": "All"}, json=configmap(n))
    assert resp.status_code == 201 and resp.json()["metadata"]["uid"]
    assert http.get(f"{CM}/{n}").status_code == 404
    assert_status(http.post(CM, params={"dryRun": "All"}, json=configmap("BAD")), 422, "Invalid")


def test_merge_patch_json_patch_and_strategic(http: httpx.Client) -> None:
    n = name()
    http.post(CM, json=configmap(n, a="1", b="2"))
    merge = http.patch(f"{CM}/{n}", content=json.dumps({"data": {"a": None, "c": "3"}}),
                       headers={"Content-Type": "application/merge-patch+json"})
    assert merge.status_code == 200 and merge.json()["data"] == {"b": "2", "c": "3"}
    ops = [{"op": "replace", "path": "/data/b", "value": "20"}, {"op": "add", "path": "/metadata/labels/x", "value": "y"}]
    jp = http.patch(f"{CM}/{n}", content=json.dumps(ops), headers={"Content-Type": "application/json-patch+json"})
    assert jp.status_code == 200 and jp.json()["data"]["b"] == "20" and jp.json()["metadata"]["labels"]["x"] == "y"
    smp = http.patch(f"{CM}/{n}", content=json.dumps({"$setElementOrder/x": [], "data": {"d": "4"}}),
                     headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert smp.status_code == 200 and smp.json()["data"]["d"] == "4" and "$setElementOrder/x" not in smp.json()
    failed_test = [{"op": "test", "path": "/data/b", "value": "nope"}]
    assert http.patch(f"{CM}/{n}", content=json.dumps(failed_test),
                      headers={"Content-Type": "application/json-patch+json"}).status_code == 422
    missing = http.patch(f"{CM}/ghost-{n}", content="{}", headers={"Content-Type": "application/merge-patch+json"})
    assert_status(missing, 404, "NotFound")


def test_strategic_merge_patch_refused_for_custom_resources(http: httpx.Client) -> None:
    resp = http.patch(f"{TJ}/anything", content="{}", headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert_status(resp, 415, "UnsupportedMediaType")


def test_server_side_apply_creates_then_merges(http: httpx.Client) -> None:
    n = name()
    headers = {"Content-Type": "application/apply-patch+yaml"}
    body = configmap(n, a="1")
    first = http.patch(f"{CM}/{n}", params={"fieldManager": "t"}, content=json.dumps(body), headers=headers)
    assert first.status_code == 201, first.text
    # another manager's fields merge in; the first manager's re-apply without `a` removes only its own field
    second = http.patch(f"{CM}/{n}", params={"fieldManager": "u"}, headers=headers,
                        content=f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\ndata:\n  b: '2'\n")
    assert second.status_code == 200 and second.json()["data"] == {"a": "1", "b": "2"}
    third = http.patch(f"{CM}/{n}", params={"fieldManager": "t"}, headers=headers,
                       content=f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n")
    assert third.status_code == 200 and third.json()["data"] == {"b": "2"}


def test_status_subresource_writes_only_status(http: httpx.Client) -> None:
    pods = "/api/v1/namespaces/default/pods"
    n = name("pod")
    pod = {"metadata": {"name": n}, "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    assert http.post(pods, json=pod).status_code == 201
    patch = {"status": {"phase": "Running"}, "spec": {"containers": [{"name": "changed", "image": "x"}]}}
    resp = http.patch(f"{pods}/{n}/status", content=json.dumps(patch),
                      headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    stored = http.get(f"{pods}/{n}").json()
    assert stored["status"]["phase"] == "Running"
    assert stored["spec"]["containers"][0]["name"] == "main"
    assert http.get(f"{pods}/{n}/status").json()["status"]["phase"] == "Running"


def test_finalizers_hold_deletion_until_removed(http: httpx.Client) -> None:
    n = name()
    obj = configmap(n)
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    http.post(CM, json=obj)
    pending = http.request("DELETE", f"{CM}/{n}", content=json.dumps({"propagationPolicy": "Background"}))
    assert pending.status_code == 200 and pending.json()["metadata"]["deletionTimestamp"]
    assert http.get(f"{CM}/{n}").status_code == 200
    released = http.patch(f"{CM}/{n}", content=json.dumps({"metadata": {"finalizers": None}}),
                          headers={"Content-Type": "application/merge-patch+json"})
    assert released.status_code == 200
    assert http.get(f"{CM}/{n}").status_code == 404


def test_delete_preconditions(http: httpx.Client) -> None:
    n = name()
    http.post(CM, json=configmap(n))
    body = {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}
    assert_status(http.request("DELETE", f"{CM}/{n}", content=json.dumps(body)), 409, "Conflict")
    assert http.get(f"{CM}/{n}").status_code == 200


def test_all_namespaces_list_and_cluster_scope(http: httpx.Client) -> None:
    items = http.get("/api/v1/configmaps").json()["items"]
    assert {"default", "kubeflow-system"} <= {i["metadata"]["namespace"] for i in items}
    assert_status(http.get("/api/v1/configmaps/kubeflow-trainer-public"), 404, "NotFound")
    assert http.get("/apis/trainer.kubeflow.org/v1alpha1/trainjobs").json()["kind"] == "TrainJobList"


def test_secret_crud_and_delete_collection(http: httpx.Client) -> None:
    label = name("grp")
    for i in range(3):
        s = {"metadata": {"name": f"{label}-{i}", "labels": {"grp": label}}, "type": "Opaque",
             "data": {"x": "eA=="}}
        assert http.post(SECRETS, json=s).status_code == 201
    resp = http.request("DELETE", SECRETS, params={"labelSelector": f"grp={label}"})
    assert resp.status_code == 200 and len(resp.json()["items"]) == 3
    assert http.get(SECRETS, params={"labelSelector": f"grp={label}"}).json()["items"] == []


def test_protobuf_bodies_only_for_known_kinds(http: httpx.Client) -> None:
    headers = {"Content-Type": "application/vnd.kubernetes.protobuf"}
    assert_status(http.post(CM, content=b"not-k8s", headers=headers), 400, "BadRequest")
    # envelope: typeMeta{apiVersion: v1, kind: Pod}, raw empty
    type_meta = b"\x0a\x02v1\x12\x03Pod"
    body = b"k8s\x00" + b"\x0a" + bytes([len(type_meta)]) + type_meta
    resp = http.post("/api/v1/namespaces/default/pods", content=body, headers=headers)
    assert_status(resp, 415, "UnsupportedMediaType")
    assert "application/json" in resp.json()["message"]
    cbor = http.post(CM, content=b"\xa0", headers={"Content-Type": "application/cbor"})
    assert_status(cbor, 415, "UnsupportedMediaType")
