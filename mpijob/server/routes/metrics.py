"""`/metrics` (Prometheus) and the resource metrics API (`metrics.k8s.io/v1beta1`), both computed per
request from the server's metrics (`mpijob.controllers.metrics`), never stored.

* `GET /metrics`: the server's registry in the exposition format the scraper asks for (Prometheus text,
  or OpenMetrics). A non-resource URL: RBAC's `nonResourceURLs` decides (the admin, the
  `metrics-reader` ClusterRole).
* `metrics.k8s.io/v1beta1` as metrics-server serves it, which `kubectl top pods|nodes` reads:
  `nodes[/NAME]`, `pods`, `namespaces/NS/pods[/NAME]`, with `labelSelector` and `fieldSelector`.
  A pod is listed once the sampler has read it twice (its CPU is a rate over the window between),
  as metrics-server lists a pod only once it has two points; GPUs ride in its `mpijob.io/gpus`
  annotation. RBAC as for any resource (`get`/`list` on `pods` or `nodes` in `metrics.k8s.io`).
"""

from __future__ import annotations

from fastapi import APIRouter
from prometheus_client.exposition import choose_encoder
from starlette.requests import Request
from starlette.responses import Response

from mpijob.api import Obj, names
from mpijob.api.core import errors
from mpijob.api.core.resources import NODES, PODS
from mpijob.api.core.selectors import matches, parse_fields, parse_labels
from mpijob.api.trainer.metrics import Usage, metrics_list, node_metrics, pod_metrics
from mpijob.server.http import ANY_METHOD, json_response, read_only
from mpijob.server.state import Cluster

GROUP, VERSION = names.METRICS_GROUP, names.METRICS_VERSION
GROUP_VERSION = f"{GROUP}/{VERSION}"

router = APIRouter()


def _cluster(request: Request) -> Cluster:
    return request.app.state.cluster


@router.get(names.METRICS_PATH)
async def prometheus(request: Request) -> Response:
    cluster = _cluster(request)
    if cluster.metrics is None:
        raise errors.ApiError(503, "ServiceUnavailable", "the server is starting; its metrics are not ready")
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    return Response(encoder(cluster.metrics.registry), media_type=content_type)


# -- metrics.k8s.io ------------------------------------------------------------------------------------


def api_group() -> Obj:
    gv = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [gv], "preferredVersion": gv}


def api_resource_list() -> Obj:
    def entry(name: str, kind: str, namespaced: bool) -> Obj:
        return {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": ["get", "list"]}

    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
            "resources": [entry("nodes", "NodeMetrics", False), entry("pods", "PodMetrics", True)]}



@router.api_route(f"/apis/{GROUP}", methods=ANY_METHOD)
async def group_doc(request: Request) -> Response:
    read_only(request, GROUP)
    return json_response(api_group())


@router.api_route(f"/apis/{GROUP_VERSION}", methods=ANY_METHOD)
async def version_doc(request: Request) -> Response:
    read_only(request, GROUP)
    return json_response(api_resource_list())


@router.api_route(f"/apis/{GROUP_VERSION}/{{rest:path}}", methods=ANY_METHOD)
async def resource_metrics(request: Request, rest: str) -> Response:
    read_only(request, GROUP)
    parts = [p for p in rest.split("/") if p]
    q = request.query_params
    labels, fields = parse_labels(q.get("labelSelector")), parse_fields(q.get("fieldSelector"))
    cluster = _cluster(request)
    if parts[:1] == ["nodes"] and len(parts) <= 2:
        found = [m for m in _nodes(cluster) if matches(m, labels, fields)]
        return _answer("NodeMetrics", "nodes", found, parts[1] if len(parts) == 2 else None)
    if parts == ["pods"]:
        return _answer("PodMetrics", "pods", [m for m in _pods(cluster, None) if matches(m, labels, fields)], None)
    if len(parts) in (3, 4) and parts[0] == "namespaces" and parts[2] == "pods":
        found = [m for m in _pods(cluster, parts[1]) if matches(m, labels, fields)]
        return _answer("PodMetrics", "pods", found, parts[3] if len(parts) == 4 else None)
    raise errors.ApiError(404, "NotFound", f"the server could not find the requested resource (/apis/{GROUP_VERSION}/"
                          f"{rest}); {GROUP} serves nodes[/NAME], pods and namespaces/NS/pods[/NAME]")


def _answer(kind: str, plural: str, found: list[Obj], name: str | None) -> Response:
    if name is None:
        return json_response(metrics_list(kind, found))
    one = next((m for m in found if m["metadata"]["name"] == name), None)
    if one is None:
        raise errors.not_found(plural, name, GROUP)
    return json_response(one)


def _nodes(cluster: Cluster) -> list[Obj]:
    metrics = cluster.metrics
    sampler = metrics.sampler if metrics is not None else None
    reading = sampler.machine if sampler is not None else None
    if metrics is None or reading is None or reading.cpu_cores is None or reading.window is None:
        return []
    node = cluster.store.try_get(NODES, "", metrics.node)
    if node is None:
        return []
    return [node_metrics(node, reading.at, reading.window, Usage(reading.cpu_cores, reading.memory))]


def _pods(cluster: Cluster, namespace: str | None) -> list[Obj]:
    sampler = cluster.metrics.sampler if cluster.metrics is not None else None
    if sampler is None:
        return []
    stored = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in cluster.store.list(PODS, namespace)[0]}
    out = []
    for key, reading in sorted(sampler.pods.items()):
        pod = stored.get(key)
        if pod is None or reading.cpu_cores is None or reading.window is None:
            continue
        gpus = [g.as_annotation() for g in sampler.gpus_of(key)]
        out.append(pod_metrics(pod, reading.at, reading.window,
                               {names.CONTAINER: Usage(reading.cpu_cores, reading.memory)}, gpus))
    return out

