"""The fuzzer's map of a server: the routes it serves (read from its discovery and OpenAPI documents) and
one valid object per resource, the base the hostile inputs of `fuzz_support` mutate.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import httpx

VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"
HEALTH = ("/healthz", "/readyz", "/livez")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's default --max-request-bytes
FUZZ_NS = "fuzz"
KUBE_ACTIONS = {"post": "create", "put": "update", "connect": "get"}  # the OpenAPI's actions, as discovery's verbs


# -- routes ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One method on one path template (`{namespace}`, `{name}` filled per request)."""

    method: str  # a method, or "*": any method the path does not serve
    template: str
    verb: str  # kube's verb (list, watch, create, ...), "other" for the methods a path does not serve
    plural: str = ""  # the resource, "" for a non-resource path
    sub: str = ""
    kind: str = ""
    api_version: str = ""
    namespaced: bool = False

    @property
    def label(self) -> str:
        return f"{self.method} {self.template}" + (" (watch)" if self.verb == "watch" else "")

    @property
    def key(self) -> str:
        """The seed object this route's `{name}` prefers: group-resource."""
        return f"{self.api_version.rpartition('/')[0]}/{self.plural}"

    @property
    def writes(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE", "*")


def _collection(prefix: str, plural: str, namespaced: bool) -> str:
    return f"{prefix}/namespaces/{{namespace}}/{plural}" if namespaced else f"{prefix}/{plural}"


def discover(http: httpx.Client) -> list[Route]:
    """Every route the server says it serves: discovery (`/api`, `/apis`, each group-version's resource
    list, verbs and subresources), the OpenAPI v3 documents' operations, the non-resource paths, and for
    each path the methods it does not serve."""
    routes: dict[tuple[str, str, str], Route] = {}

    def add(route: Route) -> None:
        routes.setdefault((route.method, route.template, route.verb), route)

    plain = ["/version", *HEALTH, "/openapi/v2", "/openapi/v3", "/api", "/apis"]
    versions = http.get("/api").json()["versions"]
    group_versions = [(f"/api/{v}", v) for v in versions]
    plain += [f"/api/{v}" for v in versions]
    groups = http.get("/apis").json()["groups"]
    named = {g["name"]: [v["groupVersion"] for v in g["versions"]] for g in groups}
    named.setdefault(VISIBILITY.split("/")[2], [VISIBILITY.removeprefix("/apis/")])  # not in /apis (see report)
    for group, gvs in named.items():
        plain.append(f"/apis/{group}")
        for gv in gvs:
            plain.append(f"/apis/{gv}")
            group_versions.append((f"/apis/{gv}", gv))
    openapi_paths = http.get("/openapi/v3").json()["paths"]
    plain += [f"/openapi/v3/{p}" for p in openapi_paths]
    for path in plain:
        add(Route("GET", path, "get"))
        add(Route("*", path, "other"))

    for prefix, gv in group_versions:
        doc = http.get(prefix)
        assert doc.status_code == 200, (prefix, doc.text)
        resources = doc.json()["resources"]
        kinds = {r["name"]: r["kind"] for r in resources if "/" not in r["name"]}
        for entry in resources:
            plural, _, sub = entry["name"].partition("/")
            namespaced, verbs = entry["namespaced"], set(entry["verbs"])
            common = {"plural": plural, "sub": sub, "kind": kinds.get(plural, entry["kind"]), "api_version": gv,
                      "namespaced": namespaced}
            collection = _collection(prefix, plural, namespaced)
            item = f"{collection}/{{name}}"
            if sub:
                path = f"{item}/{sub}"
                mapping = {"get": "GET", "update": "PUT", "patch": "PATCH"}
                for verb in sorted(verbs & set(mapping)):
                    add(Route(mapping[verb], path, verb, **common))
                add(Route("*", path, "other", **common))
                continue
            if "list" in verbs:
                add(Route("GET", collection, "list", **common))
                if namespaced:
                    add(Route("GET", f"{prefix}/{plural}", "list", **common))
            if "watch" in verbs:
                add(Route("GET", collection, "watch", **common))
            if "create" in verbs:
                add(Route("POST", collection, "create", **common))
            if "deletecollection" in verbs:
                add(Route("DELETE", collection, "deletecollection", **common))
            for verb, method in (("get", "GET"), ("update", "PUT"), ("patch", "PATCH"), ("delete", "DELETE")):
                if verb in verbs:
                    add(Route(method, item, verb, **common))
            add(Route("*", collection, "other", **common))
            add(Route("*", item, "other", **common))

    for gv_path in openapi_paths:  # the OpenAPI documents' operations, in case discovery missed one
        doc = http.get(f"/openapi/v3/{gv_path}").json()
        for path, item in doc.get("paths", {}).items():
            for method, op in item.items():
                if method.upper() not in METHODS:
                    continue
                gvk = op.get("x-kubernetes-group-version-kind", {})
                parts = path.split("/")
                sub = parts[-1] if parts[-2] == "{name}" else ""  # .../{name}/status, /log, /exec, ...
                plural = parts[-3] if sub else parts[-2] if path.endswith("{name}") else parts[-1]
                api_version = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk.get("version", "")
                action = op.get("x-kubernetes-action", method)
                verb = KUBE_ACTIONS.get(action, action)
                add(Route(method.upper(), path, verb, plural, sub, gvk.get("kind", ""), api_version,
                          "{namespace}" in path))
    # what each path does not serve, drawn per request; destructive verbs last so seeds live long
    order = {"other": 0, "get": 1, "list": 1, "watch": 1, "create": 2, "update": 3, "patch": 3, "delete": 4,
             "deletecollection": 5}
    return sorted(routes.values(), key=lambda r: (order.get(r.verb, 2), r.template, r.method))


# -- seeds: one valid object per resource, the base that type confusion mutates -----------------------

POD_SPEC = {"containers": [{"name": "main", "image": "busybox", "command": ["true"]}]}


def seed_objects(bundled_runtime: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(collection path, group/plural, object) to create before fuzzing, in dependency order."""
    trainer, kueue = "/apis/trainer.kubeflow.org/v1alpha1", "/apis/kueue.x-k8s.io/v1beta2"
    ns = f"namespaces/{FUZZ_NS}"
    runtime_spec = copy.deepcopy(bundled_runtime["spec"])
    meta = {"name": "fuzz-seed", "labels": {"fuzz": "seed"}}

    def obj(api_version: str, kind: str, **rest: Any) -> dict[str, Any]:
        return {"apiVersion": api_version, "kind": kind, "metadata": copy.deepcopy(meta), **rest}

    return [
        ("/api/v1/namespaces", "/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": FUZZ_NS}}),
        (f"/api/v1/{ns}/configmaps", "/configmaps", obj("v1", "ConfigMap", data={"k": "v"})),
        (f"/api/v1/{ns}/secrets", "/secrets", obj("v1", "Secret", stringData={"k": "v"})),
        (f"/api/v1/{ns}/serviceaccounts", "/serviceaccounts", obj("v1", "ServiceAccount")),
        (f"/api/v1/{ns}/pods", "/pods", obj("v1", "Pod", spec=POD_SPEC)),
        (f"/api/v1/{ns}/events", "/events", obj("v1", "Event", reason="Fuzz", message="seed", type="Normal",
                                                 involvedObject={"kind": "Pod", "name": "fuzz-seed",
                                                                 "namespace": FUZZ_NS})),
        (f"/api/v1/{ns}/resourcequotas", "/resourcequotas", obj("v1", "ResourceQuota", spec={"hard": {"pods": "100"}})),
        (f"/api/v1/{ns}/limitranges", "/limitranges",
         obj("v1", "LimitRange", spec={"limits": [{"type": "Container", "default": {"cpu": "1"}}]})),
        (f"{trainer}/clustertrainingruntimes", "trainer.kubeflow.org/clustertrainingruntimes",
         obj("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", spec=runtime_spec)),
        (f"{trainer}/{ns}/trainingruntimes", "trainer.kubeflow.org/trainingruntimes",
         obj("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", spec=runtime_spec)),
        (f"{trainer}/{ns}/trainjobs", "trainer.kubeflow.org/trainjobs",
         obj("trainer.kubeflow.org/v1alpha1", "TrainJob",
             spec={"runtimeRef": {"name": "fuzz-seed"},
                   "trainer": {"numNodes": 1, "command": ["mpirun", "hostname"]}})),
        (f"/apis/networking.k8s.io/v1/{ns}/networkpolicies", "networking.k8s.io/networkpolicies", obj(
            "networking.k8s.io/v1", "NetworkPolicy",
            spec={"podSelector": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]},
                  "policyTypes": ["Ingress", "Egress"],
                  "ingress": [{"from": [{"podSelector": {}, "namespaceSelector": {"matchLabels": {"a": "b"}}}],
                               "ports": [{"protocol": "TCP", "port": 80, "endPort": 90}, {"port": "http"}]}],
                  "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]})),
        (f"{kueue}/resourceflavors", "kueue.x-k8s.io/resourceflavors", obj("kueue.x-k8s.io/v1beta2", "ResourceFlavor")),
        (f"{kueue}/cohorts", "kueue.x-k8s.io/cohorts", obj("kueue.x-k8s.io/v1beta2", "Cohort")),
        (f"{kueue}/clusterqueues", "kueue.x-k8s.io/clusterqueues", obj(
            "kueue.x-k8s.io/v1beta2", "ClusterQueue",
            spec={"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "fuzz-seed", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]})),
        (f"{kueue}/{ns}/localqueues", "kueue.x-k8s.io/localqueues",
         obj("kueue.x-k8s.io/v1beta2", "LocalQueue", spec={"clusterQueue": "fuzz-seed"})),
        (f"{kueue}/workloadpriorityclasses", "kueue.x-k8s.io/workloadpriorityclasses",
         obj("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", value=100)),
        (f"{kueue}/{ns}/workloads", "kueue.x-k8s.io/workloads", obj(
            "kueue.x-k8s.io/v1beta2", "Workload",
            spec={"queueName": "fuzz-seed", "podSets": [{"name": "main", "count": 1,
                                                          "template": {"spec": POD_SPEC}}]})),
    ]
