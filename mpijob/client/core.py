"""The client's core, with no I/O: what to ask the API server and what its answers mean.

An operation is a generator (`Op`) that yields the `Call`s it needs (and the `Sleep`s between polls)
and returns its result; a connection runs it (`mpijob.client.connection`: `Connection` with
`httpx.Client`, `AsyncConnection` with `httpx.AsyncClient`). So every path, request, answer,
launcher decision and polling loop is written once and the sync SDK, the async SDK and the CLI all
run the same code — the shape of httpx's own `BaseClient`, one step further. A failed call is thrown
back into the operation at its `yield`, so an operation handles an `ApiError` (`runtime_for`'s 404)
with a plain `try`.

    job = yield from get_trainjob("default", "pi")        # inside an operation
    job = connection.run(get_trainjob("default", "pi"))   # at the top
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CLUSTER_TRAINING_RUNTIMES, TRAINING_RUNTIMES, TRAINJOBS, Resource, for_kind
from mpijob.client.errors import decode_status

T = TypeVar("T")
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
REQUEST_TIMEOUT = 30.0  # seconds for one request (a followed log stream waits for lines without limit)


@dataclass(frozen=True)
class Call:
    """One request on an API path. `yield from call` (inside an operation) is its decoded answer:
    the JSON document, or the body's bytes when `raw`."""

    method: str
    path: str
    query: Mapping[str, Any] | None = None
    body: Any = None
    content_type: str = JSON
    accept: str = JSON
    headers: Mapping[str, str] = field(default_factory=dict)
    raw: bool = False

    def __iter__(self) -> Generator[Call, Any, Any]:
        return (yield self)

    def params(self) -> list[tuple[str, str]]:
        """The query string's pairs (None values left out, booleans as Kubernetes spells them)."""
        return [(k, ("true" if v else "false") if isinstance(v, bool) else str(v))
                for k, v in (self.query or {}).items() if v is not None]

    def content(self) -> bytes | None:
        return None if self.body is None else json.dumps(self.body).encode()

    def header_map(self) -> dict[str, str]:
        out = {"Accept": self.accept, **self.headers}
        if self.body is not None:
            out["Content-Type"] = self.content_type
        return out

    def answer(self, status: int, phrase: str, content: bytes) -> Any:
        """The decoded answer to this call, or the server's `ApiError`."""
        if status >= 400:
            raise decode_status(status, phrase, content)
        if self.raw:
            return content
        return json.loads(content) if content else None


@dataclass(frozen=True)
class Sleep:
    """A pause between two polls: `yield from Sleep(0.25)`."""

    seconds: float

    def __iter__(self) -> Generator[Sleep, Any, None]:
        yield self


Step = Call | Sleep
Op = Generator[Step, Any, T]


# -- paths and resources ---------------------------------------------------------------------------


def collection_path(res: Resource, namespace: str | None = None) -> str:
    """`/api/v1/namespaces/ns/configmaps`, `/apis/g/v/clustertrainingruntimes`, `/api/v1/pods` (all namespaces)."""
    base = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
    return f"{base}/namespaces/{namespace}/{res.plural}" if res.namespaced and namespace else f"{base}/{res.plural}"


def object_path(res: Resource, name: str, namespace: str | None = None) -> str:
    return f"{collection_path(res, namespace)}/{name}"


def pods_path(namespace: str | None = None) -> str:
    return f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"


def resource_for(obj: Obj) -> Resource:
    """The served resource of a manifest, or a 400 naming the kinds this client can create."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    res = for_kind(str(api_version or ""), str(kind or "")) if api_version and kind else None
    if res is None or res.api_version != api_version:
        raise ApiError(
            400, "BadRequest",
            f"apiVersion {api_version!r} kind {kind!r} is not a kind mpijob can create; use e.g. "
            f"apiVersion: {names.TRAINER_API_VERSION}, kind: TrainJob (or kubectl for other kinds)",
        )
    return res


def display_name(res: Resource, name: str) -> str:
    """`trainjob.trainer.kubeflow.org/pi`, `configmap/x` — the name kubectl prints for an object."""
    prefix = f"{res.singular}.{res.group}" if res.group else res.singular
    return f"{prefix}/{name}"


def event_time(event: Obj) -> str:
    """The newest timestamp an Event carries (Events have three, each optional)."""
    return str(
        event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp") or ""
    )


def items(answer: Any) -> list[Obj]:
    """A list answer's items."""
    return list((answer or {}).get("items") or [])


# -- TrainJobs ---------------------------------------------------------------------------------------


def create(obj: Obj, namespace: str, dry_run: bool = False) -> Op[Obj]:
    """POST any served kind (TrainJob, runtimes, ConfigMap, …) as `kubectl create -f` does."""
    res = resource_for(obj)
    ns = (obj.get("metadata") or {}).get("namespace") or namespace
    query = {"fieldValidation": "Strict", "dryRun": "All" if dry_run else None}
    return (yield from Call("POST", collection_path(res, ns), query, obj))


def get_trainjob(namespace: str, name: str) -> Op[Obj]:
    return (yield from Call("GET", object_path(TRAINJOBS, name, namespace)))


def list_trainjobs(namespace: str, label_selector: str | None = None, all_namespaces: bool = False) -> Op[list[Obj]]:
    path = collection_path(TRAINJOBS, None if all_namespaces else namespace)
    return items((yield from Call("GET", path, {"labelSelector": label_selector or None})))


def delete_trainjob(namespace: str, name: str) -> Op[Obj]:
    return (yield from Call("DELETE", object_path(TRAINJOBS, name, namespace)))


def set_suspend(namespace: str, name: str, suspend: bool) -> Op[Obj]:
    """Merge-patch `spec.suspend`, exactly what `kubectl patch --type=merge` sends."""
    body = {"spec": {"suspend": suspend}}
    return (yield from Call("PATCH", object_path(TRAINJOBS, name, namespace), body=body, content_type=MERGE_PATCH))


# -- runtimes ----------------------------------------------------------------------------------------


def list_cluster_runtimes() -> Op[list[Obj]]:
    return items((yield from Call("GET", collection_path(CLUSTER_TRAINING_RUNTIMES))))


def list_runtimes(namespace: str, all_namespaces: bool = False) -> Op[list[Obj]]:
    """Namespaced TrainingRuntimes (a cluster without the CRD answers 404: treated as none)."""
    try:
        return items((yield from Call("GET", collection_path(TRAINING_RUNTIMES,
                                                             None if all_namespaces else namespace))))
    except ApiError as exc:
        if exc.code == 404:
            return []
        raise


def runtime_for(trainjob: Obj, namespace: str) -> Op[Obj | None]:
    """The runtime a TrainJob references, or None when it is gone."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    if (ref.get("kind") or CLUSTER_TRAINING_RUNTIMES.kind) == TRAINING_RUNTIMES.kind:
        path = object_path(TRAINING_RUNTIMES, ref.get("name", ""),
                           (trainjob.get("metadata") or {}).get("namespace") or namespace)
    else:
        path = object_path(CLUSTER_TRAINING_RUNTIMES, ref.get("name", ""))
    try:
        return (yield from Call("GET", path))
    except ApiError as exc:
        if exc.code == 404:
            return None
        raise


# -- pods and events ---------------------------------------------------------------------------------


def list_pods(namespace: str, label_selector: str | None = None, field_selector: str | None = None,
              all_namespaces: bool = False) -> Op[list[Obj]]:
    query = {"labelSelector": label_selector, "fieldSelector": field_selector}
    return items((yield from Call("GET", pods_path(None if all_namespaces else namespace), query)))


def get_pod(namespace: str, name: str) -> Op[Obj]:
    return (yield from Call("GET", f"{pods_path(namespace)}/{name}"))


def job_pods(namespace: str, job: str, role: str | None = None) -> Op[list[Obj]]:
    """The pods of one TrainJob, optionally one role (`launcher`, `node`), in name order."""
    selector = f"{names.LABEL_JOBSET_NAME}={job}" + (f",{names.LABEL_RJOB_NAME}={role}" if role else "")
    return sorted((yield from list_pods(namespace, selector)), key=lambda p: p["metadata"]["name"])


def pod_metrics(namespace: str, label_selector: str | None = None) -> Op[list[Obj]]:
    """What pods use now: their PodMetrics (`metrics.k8s.io`, what `kubectl top pods` reads)."""
    path = f"/apis/{names.METRICS_GROUP}/{names.METRICS_VERSION}/namespaces/{namespace}/pods"
    return items((yield from Call("GET", path, {"labelSelector": label_selector})))


def login_ticket() -> Op[Obj]:
    """A one-time login ticket for the dashboard, for the user these credentials are: `{ticket, path}`."""
    return (yield from Call("POST", f"{names.DASHBOARD_API}/tickets"))


def events_for(namespace: str, kind: str, name: str) -> Op[list[Obj]]:
    """Events about one object, oldest first (as `kubectl describe` lists them)."""
    selector = f"involvedObject.name={name},involvedObject.kind={kind}"
    found = items((yield from Call("GET", f"/api/v1/namespaces/{namespace}/events", {"fieldSelector": selector})))
    return sorted(found, key=event_time)


def is_job_event(event: Obj, name: str, pods: set[str]) -> bool:
    """Whether an Event is about this TrainJob, one of its pods, or its Kueue Workload."""
    obj = event.get("involvedObject") or {}
    kind, oname = obj.get("kind"), str(obj.get("name") or "")
    if kind == TRAINJOBS.kind:
        return oname == name
    if kind == "Pod":
        return oname in pods or oname.startswith(f"{name}-")
    if kind == "Workload":
        return oname.startswith(f"trainjob-{name}-")
    return False


def job_events(namespace: str, name: str) -> Op[list[Obj]]:
    """Events about the TrainJob, its pods and its Workload, oldest first."""
    pods = {p["metadata"]["name"] for p in (yield from job_pods(namespace, name))}
    found = items((yield from Call("GET", f"/api/v1/namespaces/{namespace}/events")))
    return sorted((e for e in found if is_job_event(e, name, pods)), key=event_time)
