"""`/openapi/v2` and `/openapi/v3` carry the real schemas of every served kind, and the machine's real
kubectl uses them: `explain` prints upstream's descriptions (from v3, and from the v2 protobuf),
`apply`/`create` of served kinds still validate on the server, and an unserved kind ends with
kubectl's own "no matches for kind"."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from mpijob.api import names
from mpijob.api.core.openapi import crd_definition_name, field_paths, kind_schema, ref_name, schemas
from mpijob.api.core.resources import ALL, served_versions
from mpijob.server import openapi

from support import load_tool

REPO = Path(__file__).resolve().parents[2]
PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _generator() -> ModuleType:
    return load_tool("gen_openapi_data")


def _flat(text: str) -> str:
    """kubectl wraps descriptions at 80 columns: compare with whitespace collapsed."""
    return " ".join(text.split())


def _expected_name(group: str, version: str, kind: str) -> str:
    if group in ("rbac.authorization.k8s.io", "networking.k8s.io"):  # a built-in group: kube's own name
        return f"io.k8s.api.{group.split('.', maxsplit=1)[0]}.{version}.{kind}"
    return f"io.k8s.api.core.v1.{kind}" if not group else crd_definition_name(group, version, kind)


# -- the documents --------------------------------------------------------------------------------------


def test_shipped_kueue_schemas_equal_a_fresh_generation() -> None:
    gen = _generator()
    assert gen.OUTPUT.read_text(encoding="utf-8") == gen.render(), f"stale: run {gen.COMMAND}"


def _check_refs_resolve(doc: dict[str, Any]) -> None:
    named = schemas(doc)
    stack: list[Any] = list(named.values())
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict) and id(node) not in seen:
            seen.add(id(node))
            name = ref_name(node)
            assert name is None or name in named, f"dangling reference to {name}"
            stack.extend(node.values())


def test_v2_and_v3_documents_carry_every_served_kind(http: httpx.Client) -> None:
    v2 = http.get("/openapi/v2", headers={"Accept": "application/json"})
    assert v2.status_code == 200 and v2.headers["content-type"].startswith("application/json")
    v2doc = v2.json()
    assert v2doc["swagger"] == "2.0"
    _check_refs_resolve(v2doc)
    root = http.get("/openapi/v3").json()["paths"]
    v3docs: dict[str, dict[str, Any]] = {}
    for r in ALL:
        key = openapi.gv_path(r.group, r.version)
        if key not in v3docs:
            v3docs[key] = http.get(root[key]["serverRelativeURL"]).json()
            _check_refs_resolve(v3docs[key])
        for doc in (v2doc, v3docs[key]):
            found = kind_schema(doc, r.group, r.version, r.kind)
            assert found is not None, (r.kind, r.api_version)
            name, schema = found
            assert name == _expected_name(r.group, r.version, r.kind)
            # MPI Operator's CRD gives MPIJob no description, and kube-apiserver serves it without one
            assert schema.get("description") or r.kind == names.MPIJOB_KIND, r.kind
            assert {"apiVersion", "kind", "metadata"} <= set(schema["properties"])
            assert ref_name(schema["properties"]["metadata"]) == "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        # kubectl's server-side validation test: every PATCH tagged with the GVK takes fieldValidation
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        patches = [p["patch"] for p in v3docs[key]["paths"].values() if "patch" in p
                   and p["patch"]["x-kubernetes-group-version-kind"] == gvk]
        assert patches and all("fieldValidation" in [p["name"] for p in op["parameters"]] for op in patches)
    # strategic merge patch is advertised nowhere: kubectl would build it from schemas without patch strategies
    for item in [*v2doc["paths"].values(), *(p for d in v3docs.values() for p in d["paths"].values())]:
        if "patch" in item:
            types = item["patch"].get("consumes") or item["patch"]["requestBody"]["content"]
            assert "application/strategic-merge-patch+json" not in types
    # v2's Namespace PATCHes (item and status) take no fieldValidation: kubectl would look for CRDs
    namespace_patches = [item["patch"] for path, item in v2doc["paths"].items() if path.startswith("/api/v1/namespaces/{name}")
                         and "patch" in item]
    assert len(namespace_patches) == 2
    assert all("fieldValidation" not in [p.get("name") for p in op["parameters"]] for op in namespace_patches)
    assert http.get("/openapi/v3/apis/kueue.x-k8s.io/v1").status_code == 404


def test_v2_protobuf_when_asked_for_it(http: httpx.Client) -> None:
    resp = http.get("/openapi/v2", headers={"Accept": PROTOBUF})
    assert resp.status_code == 200 and "protobuf" in resp.headers["content-type"]
    assert resp.content.startswith(b"\n\x032.0")  # Document.swagger (field 1) = "2.0"
    assert b"org.kubeflow.trainer.v1alpha1.TrainJob" in resp.content


def test_field_paths_of_the_served_schemas(http: httpx.Client) -> None:
    """The walk the inventory of served fields builds on, over what the server really serves."""
    trainer = http.get("/openapi/v3/apis/trainer.kubeflow.org/v1alpha1").json()
    paths = list(field_paths(trainer, "trainer.kubeflow.org", "v1alpha1", "TrainJob"))
    assert len(paths) == len(set(paths))
    assert {"spec.trainer.numNodes", "spec.trainer.env.valueFrom.secretKeyRef.name", "spec.runtimeRef.name",
            "metadata.labels"} <= set(paths)
    runtime = set(field_paths(trainer, "trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime"))
    assert "spec.mlPolicy.mpi.sshAuthMountPath" in runtime
    assert "spec.template.spec.replicatedJobs.template.spec.template.spec.containers.image" in runtime
    kueue = http.get("/openapi/v3/apis/kueue.x-k8s.io/v1beta2").json()
    queue = set(field_paths(kueue, "kueue.x-k8s.io", "v1beta2", "ClusterQueue"))
    assert {"spec.resourceGroups.flavors.resources.nominalQuota", "spec.cohortName", "spec.preemption"} <= queue


# -- kubectl ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "header", "expected"), [
    ("trainjob.spec.trainer", "FIELD: trainer <Object>",
     ["trainer defines the configuration of the trainer.",
      "numNodes <integer> numNodes is the number of training nodes.",
      "env <[]Object> env is the list of environment variables to set in the training container."]),
    ("clusterqueue.spec.resourceGroups", "FIELD: resourceGroups <[]Object>",
     ["resourceGroups describes groups of resources.",
      "coveredResources <[]string> -required- coveredResources is the list of resources covered by the flavors",
      "flavors <[]Object> -required- flavors is the list of flavors that provide the resources of this group."]),
    ("pod.spec.containers", "FIELD: containers <[]Container>",
     ["List of containers belonging to the pod.",
      "name <string> -required- Name of the container specified as a DNS_LABEL.",
      "image <string> Container image name."]),
    ("pod.spec.containers.resources", "FIELD: resources <ResourceRequirements>",  # v3's Quantity is a oneOf
     ["limits <map[string]Quantity> Limits describes the maximum amount of compute resources allowed."]),
])
def test_explain_prints_upstream_descriptions(kubectl: Any, field: str, header: str, expected: list[str]) -> None:
    out = kubectl("explain", field).stdout
    assert header in out
    for text in expected:
        assert _flat(text) in _flat(out), text


def test_explain_reads_the_v2_protobuf(kubectl: Any) -> None:
    out = _flat(kubectl("explain", "--output=plaintext-openapiv2", "workload.spec.podSets.template.spec").stdout)
    assert "VERSION: kueue.x-k8s.io/v1beta2" in out and "RESOURCE: spec <Object>" in out
    assert "containers <[]Object> -required- List of containers belonging to the pod." in out
    out = _flat(kubectl("explain", "--output=plaintext-openapiv2", "trainjob.spec.trainer.numNodes").stdout)
    assert "FIELD: numNodes <integer>" in out and "numNodes is the number of training nodes." in out


def _everything(http: httpx.Client) -> set[str]:
    """Names of all stored objects of every served resource, all namespaces."""
    names: set[str] = set()
    for r in served_versions():
        base = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
        resp = http.get(f"{base}/{r.plural}")
        assert resp.status_code == 200, r.plural
        names |= {item["metadata"]["name"] for item in resp.json()["items"]}
    return names


@pytest.mark.parametrize(("api_version", "kind", "verb"), [
    ("kueue.x-k8s.io/v1beta2", "Topology", "apply"),
    ("kueue.x-k8s.io/v1beta2", "AdmissionCheck", "apply"),
    ("kueue.x-k8s.io/v1beta2", "ProvisioningRequestConfig", "apply"),
    ("kueue.x-k8s.io/v1beta2", "MultiKueueCluster", "create"),
    ("example.com/v1", "Widget", "apply"),
])
def test_unserved_kind_ends_with_no_matches_and_creates_nothing(
        kubectl: Any, http: httpx.Client, api_version: str, kind: str, verb: str) -> None:
    name = f"unserved-{uuid.uuid4().hex[:6]}"
    manifest = f"apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\nspec: {{}}\n"
    proc = kubectl(verb, "-f", "-", input=manifest, check=False)
    assert proc.returncode != 0
    assert proc.stderr.startswith(
        f'error: resource mapping not found for name: "{name}" namespace: "" from "STDIN": '
        f'no matches for kind "{kind}" in version "{api_version}"\nensure CRDs are installed first'), proc.stderr
    assert "openapi" not in proc.stderr
    assert name not in _everything(http)


def test_served_kinds_apply_and_create_with_server_side_validation(kubectl: Any) -> None:
    name = f"oa-{uuid.uuid4().hex[:6]}"
    flavor = f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: {name}\n"
    assert f"resourceflavor.kueue.x-k8s.io/{name} created" in kubectl("create", "-f", "-", input=flavor).stdout
    queue = (f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n"
             f"  namespaceSelector: {{}}\n")
    assert f"clusterqueue.kueue.x-k8s.io/{name} created" in kubectl("apply", "-f", "-", input=queue).stdout
    cm = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"
    assert f"configmap/{name} created" in kubectl("apply", "-f", "-", input=cm).stdout
    # an unknown field: kubectl leaves the check to the server (fieldValidation=Strict), whose cause it prints
    bad = flavor.replace(name, name + "-bad") + "spec:\n  nodeLabelz: {}\n"
    proc = kubectl("apply", "-v=6", "-f", "-", input=bad, check=False)
    assert proc.returncode != 0
    assert re.search(r"POST https://\S+/resourceflavors\?\S*fieldValidation=Strict", proc.stderr)
    assert 'unknown field "spec.nodeLabelz"' in proc.stderr and "error validating data" not in proc.stderr


def test_document_build_is_cached() -> None:
    assert openapi.v2_protobuf() is openapi.v2_protobuf()
    assert openapi.group_version_json("", "v1") is openapi.group_version_json("", "v1")
    assert openapi.document_json("apis/nope/v1") is None


def test_fields_a_built_in_kind_does_not_have_are_refused_warned_or_dropped_as_kube_does(
    kubectl: Any, http: Any
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typo"}, "datta": {"k": "v"}}
    strict = kubectl("apply", "-f", "-", input=json.dumps(body), check=False)  # kubectl sends Strict
    assert strict.returncode != 0 and 'strict decoding error: unknown field "datta"' in strict.stderr, strict.stderr
    assert http.get("/api/v1/namespaces/default/configmaps/typo").status_code == 404

    warned = http.post("/api/v1/namespaces/default/configmaps", json=body)  # no fieldValidation: Warn
    assert warned.status_code == 201 and "datta" not in warned.json()
    assert warned.headers.get_list("warning") == ['299 - "unknown field \\"datta\\""']
    ignored = http.post("/api/v1/namespaces/default/configmaps", params={"fieldValidation": "Ignore"},
                        json={**body, "metadata": {"name": "typo2"}})
    assert ignored.status_code == 201 and "warning" not in ignored.headers and "datta" not in ignored.json()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicyy": "Always"}]}}
    r = http.post("/api/v1/namespaces/default/pods", params={"fieldValidation": "Strict"}, json=pod)
    assert r.status_code == 400 and 'unknown field "spec.containers[0].imagePullPolicyy"' in r.json()["message"]
    assert http.post("/api/v1/namespaces/default/configmaps", params={"fieldValidation": "Loose"},
                     json=body).status_code == 400
    for name in ("typo", "typo2"):
        http.delete(f"/api/v1/namespaces/default/configmaps/{name}")


# -- the operations ----------------------------------------------------------------------------------------

# kube-apiserver's words for each served group-version in an operationId (its published openapi-spec)
GV_WORDS = {"": "CoreV1", "trainer.kubeflow.org": "TrainerKubeflowOrg", "kueue.x-k8s.io": "KueueXK8sIo",
            "rbac.authorization.k8s.io": "RbacAuthorization", "networking.k8s.io": "Networking",
            "kubeflow.org": "KubeflowOrg", "security.openshift.io": "SecurityOpenshiftIo"}


def _expected_ids(r: Any) -> set[str]:
    gv = GV_WORDS[r.group] + ("" if not r.group else r.version.capitalize())
    ns = "Namespaced" if r.namespaced else ""
    ids = {f"{verb}{gv}{ns}{r.kind}" for verb in ("list", "create", "read", "replace", "patch", "delete")}
    if r.kind != "Namespace":  # kube-apiserver serves no deletecollection of namespaces
        ids.add(f"delete{gv}Collection{ns}{r.kind}")
    if r.namespaced:
        ids.add(f"list{gv}{r.kind}ForAllNamespaces")
    if "status" in r.subresources:
        ids |= {f"{verb}{gv}{ns}{r.kind}Status" for verb in ("read", "replace", "patch")}
    if r.kind == "Pod":
        ids |= {"readCoreV1NamespacedPodLog", "connectCoreV1GetNamespacedPodExec",
                "connectCoreV1GetNamespacedPodAttach", "connectCoreV1GetNamespacedPodPortforward"}
    return ids


def _operations(doc: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId -> (method, path, operation) of a document."""
    out = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                assert op["operationId"] not in out, op["operationId"]
                out[op["operationId"]] = (method, path, {**op, "parameters": item["parameters"] + op["parameters"]})
    return out


def test_every_served_kind_lists_kubes_operations_in_both_documents(http: httpx.Client) -> None:
    v2 = _operations(http.get("/openapi/v2", headers={"Accept": "application/json"}).json())
    v3: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for url in http.get("/openapi/v3").json()["paths"].values():
        v3 |= _operations(http.get(url["serverRelativeURL"]).json())
    expected = set().union(*(_expected_ids(r) for r in ALL))
    assert set(v3) == expected and set(v2) == expected
    assert openapi.v2()["paths"]["/api/v1/namespaces/{namespace}/pods"]["post"]["operationId"] == \
        "createCoreV1NamespacedPod"

    method, path, op = v3["listTrainerKubeflowOrgV1alpha1NamespacedTrainJob"]
    assert (method, path) == ("get", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs")
    assert {"namespace", "fieldSelector", "labelSelector", "resourceVersion", "limit", "continue", "watch",
            "timeoutSeconds"} <= {p["name"] for p in op["parameters"]}
    listed = op["responses"]["200"]["content"]
    assert set(listed) == {"application/json", "application/json;stream=watch"}
    assert listed["application/json"]["schema"]["$ref"].endswith("org.kubeflow.trainer.v1alpha1.TrainJobList")
    method, path, op = v3["createCoreV1NamespacedPod"]
    assert (method, path) == ("post", "/api/v1/namespaces/{namespace}/pods")
    assert {"dryRun", "fieldManager", "fieldValidation"} <= {p["name"] for p in op["parameters"] if p["in"] == "query"}
    assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("io.k8s.api.core.v1.Pod")
    assert op["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].endswith("io.k8s.api.core.v1.Pod")
    method, path, op = v2["deleteRbacAuthorizationV1NamespacedRole"]
    assert (method, path) == ("delete", "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/{name}")
    assert op["responses"]["200"]["schema"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status"
    assert {"name", "namespace"} <= {p["name"] for p in op["parameters"] if p.get("required")}
    _, path, op = v3["readCoreV1NamespacedPodLog"]
    assert path.endswith("/pods/{name}/log") and "text/plain" in op["responses"]["200"]["content"]
    assert {"container", "follow", "tailLines"} <= {p["name"] for p in op["parameters"]}
    # every list schema an operation answers with is tagged with its kind, and its items are the kind
    trainer = http.get("/openapi/v3/apis/trainer.kubeflow.org/v1alpha1").json()
    found = kind_schema(trainer, "trainer.kubeflow.org", "v1alpha1", "TrainJobList")
    assert found is not None
    assert ref_name(found[1]["properties"]["items"]["items"]) == "org.kubeflow.trainer.v1alpha1.TrainJob"


def test_every_listed_operation_is_served(http: httpx.Client) -> None:
    """Each operation, called on a namespace and a name that do not exist (writes dry-run, deletions of
    collections by a selector matching nothing), is answered by its route: never a path the server does
    not know (404 without an object) or a method it does not serve (405)."""
    absent = {"namespace": f"oa-nowhere-{uuid.uuid4().hex[:6]}", "name": "oa-absent"}
    query = {"dryRun": "All", "labelSelector": "openapi-test=never"}
    for url in http.get("/openapi/v3").json()["paths"].values():
        for method, path, _ in _operations(http.get(url["serverRelativeURL"]).json()).values():
            target = path.format(**absent)
            body = None if method == "get" else "{}"
            headers = {"Content-Type": "application/merge-patch+json" if method == "patch" else "application/json"}
            resp = http.request(method.upper(), target, params=query, content=body, headers=headers)
            status = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
            unknown = resp.status_code == 404 and "could not find the requested resource" in status.get("message", "")
            assert resp.status_code != 405 and not unknown, (method, target, resp.status_code, resp.text[:300])
            assert resp.status_code < 500, (method, target, resp.text[:300])
