"""Server-side apply and `managedFields` through the server: the machine's real kubectl 1.32 (conflicts and its
--force-conflicts hint, removal on re-apply, --show-managed-fields, the upgrade from client-side apply), and the
HTTP details other clients meet (a required fieldManager, dry runs, the status subresource, Update entries).
The field-set logic alone: tests/api/test_managed_fields.py."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import yaml

TJ_GROUP = "trainer.kubeflow.org"
TJ_VERSION = f"{TJ_GROUP}/v1alpha1"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def trainjob(name: str, *, suspend: bool | None = None, labels: dict[str, str] | None = None) -> str:
    spec: dict[str, Any] = {"runtimeRef": {"name": "mpi-distributed"},
                            "trainer": {"numNodes": 2, "command": ["mpirun", "hostname"]}}
    if suspend is not None:
        spec["suspend"] = suspend
    meta: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    return yaml.safe_dump({"apiVersion": TJ_VERSION, "kind": "TrainJob", "metadata": meta, "spec": spec})


def suspend_only(name: str, suspend: bool) -> str:
    return yaml.safe_dump({"apiVersion": TJ_VERSION, "kind": "TrainJob", "metadata": {"name": name},
                           "spec": {"suspend": suspend}})


def shown(kubectl, name: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return json.loads(kubectl("get", "trainjob", name, "-o", "json", "--show-managed-fields").stdout)


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """`managedFields` by (manager, operation)."""
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def test_kubectl_server_side_apply_conflicts_force_and_removal(kubectl) -> None:  # type: ignore[no-untyped-def]
    name = uid("ssa")
    out = kubectl("apply", "--server-side", "-f", "-", input=trainjob(name, suspend=True, labels={"team": "a",
                                                                                                   "tier": "x"}))
    assert f"trainjob.trainer.kubeflow.org/{name} serverside-applied" in out.stdout
    obj = shown(kubectl, name)
    (entry,) = entries(obj).values()
    assert (entry["manager"], entry["operation"], entry["apiVersion"], entry["fieldsType"]) == (
        "kubectl", "Apply", TJ_VERSION, "FieldsV1")
    assert entry["fieldsV1"] == {"f:metadata": {"f:labels": {"f:team": {}, "f:tier": {}}},
                                 "f:spec": {"f:runtimeRef": {"f:name": {}}, "f:suspend": {},
                                            "f:trainer": {"f:command": {}, "f:numNodes": {}}}}
    assert "managedFields" not in kubectl("get", "trainjob", name, "-o", "yaml").stdout  # kubectl hides them

    refused = kubectl("apply", "--server-side", "--field-manager=other", "-f", "-", input=suspend_only(name, False),
                      check=False)
    assert refused.returncode != 0
    assert 'error: Apply failed with 1 conflict: conflict with "kubectl": .spec.suspend' in refused.stderr
    assert "re-run the apply\n  command with the `--force-conflicts` flag" in refused.stderr
    assert shown(kubectl, name)["spec"]["suspend"] is True

    kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-",
            input=suspend_only(name, False))
    obj = shown(kubectl, name)
    assert obj["spec"]["suspend"] is False
    owners = entries(obj)
    assert owners["other", "Apply"]["fieldsV1"] == {"f:spec": {"f:suspend": {}}}
    assert "f:suspend" not in owners["kubectl", "Apply"]["fieldsV1"]["f:spec"]

    # kubectl applies again without the `tier` label and without `suspend`: its label goes, other's field stays
    kubectl("apply", "--server-side", "-f", "-", input=trainjob(name, labels={"team": "a"}))
    obj = shown(kubectl, name)
    assert obj["metadata"]["labels"] == {"team": "a"} and obj["spec"]["suspend"] is False
    assert entries(obj)["kubectl", "Apply"]["fieldsV1"]["f:metadata"] == {"f:labels": {"f:team": {}}}


def test_client_side_apply_then_server_side_apply(kubectl) -> None:  # type: ignore[no-untyped-def]
    """kube's upgrade path: fields kubectl's client-side apply set conflict for any other manager, kubectl's own
    server-side apply takes them over (lastAppliedManager), and kubectl then merges the client-side entry into its
    own (csaupgrade) and applies again, so what the new manifest dropped goes."""
    name = uid("csa")
    assert f"{name} created" in kubectl("apply", "-f", "-", input=trainjob(name, suspend=True,
                                                                           labels={"team": "a", "tier": "x"})).stdout
    owners = entries(shown(kubectl, name))
    assert list(owners) == [("kubectl-client-side-apply", "Update")]
    assert "f:kubectl.kubernetes.io/last-applied-configuration" in \
        owners["kubectl-client-side-apply", "Update"]["fieldsV1"]["f:metadata"]["f:annotations"]

    refused = kubectl("apply", "--server-side", "--field-manager=other", "-f", "-", input=suspend_only(name, False),
                      check=False)
    assert refused.returncode != 0
    assert ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using trainer.kubeflow.org/'
            "v1alpha1: .spec.suspend") in refused.stderr

    upgraded = kubectl("apply", "--server-side", "-f", "-", input=trainjob(name, suspend=False, labels={"team": "a"}))
    assert f"{name} serverside-applied" in upgraded.stdout and "Warning" not in upgraded.stderr
    obj = shown(kubectl, name)
    assert obj["spec"]["suspend"] is False and obj["metadata"]["labels"] == {"team": "a"}
    owners = entries(obj)
    assert ("kubectl-client-side-apply", "Update") not in owners and ("kubectl", "Apply") in owners
    assert json.loads(obj["metadata"]["annotations"][LAST_APPLIED])["spec"]["suspend"] is False
    # and from now on kubectl's server-side applies own the job's fields
    again = kubectl("apply", "--server-side", "--field-manager=other", "-f", "-", input=suspend_only(name, True),
                    check=False)
    assert 'conflict with "kubectl": .spec.suspend' in again.stderr


def test_apply_needs_a_field_manager_as_kube_says(http: httpx.Client) -> None:
    name = uid("cm")
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: '1'\n"
    resp = http.patch(f"{CM}/{name}", content=body, headers=APPLY)
    assert resp.status_code == 422, resp.text
    assert resp.json()["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                                      "required for apply patch")
    assert resp.json()["details"]["causes"] == [{"reason": "FieldValueRequired", "field": "fieldManager",
                                                 "message": "Required value: is required for apply patch"}]
    forced = http.patch(f"{CM}/{name}", params={"force": "true"}, json={}, headers={
        "Content-Type": "application/merge-patch+json"})
    assert forced.status_code == 422 and "force: Forbidden: may not be specified for non-apply patch" in forced.text
    given = http.patch(f"{CM}/{name}", params={"fieldManager": "t"}, headers=APPLY,
                       content=body.replace("metadata:\n", "metadata:\n  managedFields: []\n"))
    assert given.status_code == 400 and given.json()["message"] == "metadata.managedFields must be nil"
    assert http.get(f"{CM}/{name}").status_code == 404


def test_dry_run_apply_computes_but_stores_nothing(http: httpx.Client) -> None:
    name = uid("cm")
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: '1'\n"
    dry = http.patch(f"{CM}/{name}", params={"fieldManager": "t", "dryRun": "All"}, content=body, headers=APPLY)
    assert dry.status_code == 201 and dry.json()["metadata"]["managedFields"][0]["manager"] == "t"
    assert http.get(f"{CM}/{name}").status_code == 404
    assert http.patch(f"{CM}/{name}", params={"fieldManager": "t"}, content=body, headers=APPLY).status_code == 201
    stored = http.get(f"{CM}/{name}").json()
    changed = http.patch(f"{CM}/{name}", params={"fieldManager": "u", "dryRun": "All", "force": "true"},
                         content=body.replace("'1'", "'2'"), headers=APPLY)
    assert changed.status_code == 200 and changed.json()["data"] == {"a": "2"}
    assert {e["manager"] for e in changed.json()["metadata"]["managedFields"]} == {"u"}
    assert http.get(f"{CM}/{name}").json() == stored


def test_status_subresource_apply_owns_only_status(http: httpx.Client) -> None:
    name = uid("pod")
    pod = {"metadata": {"name": name}, "spec": {"containers": [{"name": "main", "image": "busybox",
                                                                "ports": [{"containerPort": 80}]}]}}
    created = http.post(PODS, params={"fieldManager": "maker"}, json=pod)
    assert created.status_code == 201, created.text
    status = (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers: []\n"
              "status:\n  phase: Running\n  conditions:\n  - type: Ready\n    status: 'True'\n")
    resp = http.patch(f"{PODS}/{name}/status", params={"fieldManager": "kubelet"}, content=status, headers=APPLY)
    assert resp.status_code == 200, resp.text
    obj = http.get(f"{PODS}/{name}").json()
    assert obj["status"]["phase"] == "Running" and obj["spec"]["containers"][0]["name"] == "main"
    owners = entries(obj)
    assert owners["kubelet", "Apply"]["subresource"] == "status"
    assert owners["kubelet", "Apply"]["fieldsV1"] == {"f:status": {
        "f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}, "f:type": {}}}, "f:phase": {}}}
    maker = owners["maker", "Update"]["fieldsV1"]
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in maker["f:spec"]["f:containers"]['k:{"name":"main"}']["f:ports"]
    assert "f:status" not in maker


def test_writes_are_recorded_as_updates_by_their_manager(http: httpx.Client) -> None:
    name = uid("cm")
    made = http.post(CM, json={"metadata": {"name": name}, "data": {"a": "1"}},
                     headers={"User-Agent": "my-operator/1.2 (linux)"})
    assert made.status_code == 201
    assert [(e["manager"], e["operation"], e["fieldsV1"]) for e in made.json()["metadata"]["managedFields"]] == [
        ("my-operator", "Update", {"f:data": {".": {}, "f:a": {}}})]
    patched = http.patch(f"{CM}/{name}", params={"fieldManager": "editor"}, json={"data": {"a": "2", "b": "1"}},
                         headers={"Content-Type": "application/merge-patch+json"})
    assert {e["manager"]: e["fieldsV1"] for e in patched.json()["metadata"]["managedFields"]} == {
        "my-operator": {"f:data": {}}, "editor": {"f:data": {"f:a": {}, "f:b": {}}}}  # `data` itself stays its
    # an apply may not silently take what the editor set
    clash = http.patch(f"{CM}/{name}", params={"fieldManager": "ci"}, headers=APPLY,
                       content=f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: '3'\n")
    assert clash.status_code == 409 and clash.json()["reason"] == "Conflict"
    assert clash.json()["message"] == 'Apply failed with 1 conflict: conflict with "editor" using v1: .data.a'
    # a PUT that leaves managedFields out keeps them; `managedFields: []` clears them
    obj = patched.json()
    del obj["metadata"]["managedFields"]
    obj["data"]["c"] = "1"
    kept = http.put(f"{CM}/{name}", params={"fieldManager": "put"}, json=obj).json()
    assert {e["manager"] for e in kept["metadata"]["managedFields"]} == {"my-operator", "editor", "put"}
    kept["metadata"]["managedFields"] = []
    kept["data"]["d"] = "1"
    cleared = http.put(f"{CM}/{name}", params={"fieldManager": "put"}, json=kept)
    assert cleared.status_code == 200, cleared.text
    assert [(e["manager"], e["fieldsV1"]) for e in cleared.json()["metadata"]["managedFields"]] == [
        ("put", {"f:data": {"f:d": {}}})]
