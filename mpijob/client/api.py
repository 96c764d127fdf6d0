"""Typed access to one cluster through the official `kubernetes` client, objects as plain dicts.

Plain dicts (not the generated models) because the CLI prints objects back verbatim for `-o json`,
and TrainJobs are custom objects anyway. Every call goes through `errors.call`, so callers only ever
see `ApiError` (with the server's code, reason and causes) or `ServerUnavailable`.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client as k8s
from kubernetes.config import new_client_from_config

from mpijob.api.errors import ApiError
from mpijob.api.resources import TRAINER, Resource, for_kind
from mpijob.client.config import Target
from mpijob.client.errors import call

Obj = dict[str, Any]
V1ALPHA1 = "v1alpha1"
ROLE_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_LABEL = "jobset.sigs.k8s.io/jobset-name"
CONTAINER = "node"  # every Trainer MPI container is named `node`
REQUEST_TIMEOUT = 30.0


WAITING_ANNOTATION = "mpijob.io/waiting"  # the scheduler's human "why waiting" message on a Workload


class Cluster:
    """One connection to one cluster (a `Target`); cheap to keep for the life of a command."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.namespace = target.namespace
        conf = k8s.Configuration()
        conf.retries = 1  # a refused connection should fail fast, not after urllib3's default retries
        self.api_client = new_client_from_config(
            config_file=target.kubeconfig, context=target.context, persist_config=False, client_configuration=conf
        )
        self.url = conf.host
        self.core = k8s.CoreV1Api(self.api_client)
        self.custom = k8s.CustomObjectsApi(self.api_client)

    def close(self) -> None:
        self.api_client.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    # -- generic ---------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        """One JSON request on an API path (e.g. `/api/v1/namespaces/default/configmaps`)."""

        def send() -> Any:
            resp = self.api_client.call_api(
                path,
                method,
                query_params=[(k, v) for k, v in (query or {}).items() if v is not None],
                header_params={"Accept": "application/json", "Content-Type": content_type},
                body=body,
                auth_settings=["BearerToken"],
                _return_http_data_only=True,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
            data = resp.data
            return json.loads(data) if data else None

        return call(self.url, send)

    def create(self, obj: Obj, namespace: str | None = None, dry_run: bool = False) -> Obj:
        """POST any served kind (TrainJob, runtimes, ConfigMap, …) as `kubectl create -f` does."""
        res = resource_for(obj)
        ns = (obj.get("metadata") or {}).get("namespace") or self._ns(namespace)
        query = {"fieldValidation": "Strict", "dryRun": "All" if dry_run else None}
        return self.request("POST", collection_path(res, ns), query, obj)

    # -- TrainJobs -------------------------------------------------------------------------------

    def get_trainjob(self, name: str, namespace: str | None = None) -> Obj:
        return call(
            self.url,
            self.custom.get_namespaced_custom_object,
            TRAINER, V1ALPHA1, self._ns(namespace), "trainjobs", name,
            _request_timeout=REQUEST_TIMEOUT,
        )

    def list_trainjobs(
        self, namespace: str | None = None, label_selector: str | None = None, all_namespaces: bool = False
    ) -> list[Obj]:
        kw: dict[str, Any] = {"_request_timeout": REQUEST_TIMEOUT}
        if label_selector:
            kw["label_selector"] = label_selector
        if all_namespaces:
            out = call(self.url, self.custom.list_cluster_custom_object, TRAINER, V1ALPHA1, "trainjobs", **kw)
        else:
            out = call(
                self.url, self.custom.list_namespaced_custom_object,
                TRAINER, V1ALPHA1, self._ns(namespace), "trainjobs", **kw,
            )
        return list(out.get("items") or [])

    def delete_trainjob(self, name: str, namespace: str | None = None) -> Obj:
        return call(
            self.url,
            self.custom.delete_namespaced_custom_object,
            TRAINER, V1ALPHA1, self._ns(namespace), "trainjobs", name,
            _request_timeout=REQUEST_TIMEOUT,
        )

    # -- runtimes --------------------------------------------------------------------------------

    def list_cluster_runtimes(self) -> list[Obj]:
        out = call(
            self.url, self.custom.list_cluster_custom_object,
            TRAINER, V1ALPHA1, "clustertrainingruntimes", _request_timeout=REQUEST_TIMEOUT,
        )
        return list(out.get("items") or [])

    def list_runtimes(self, namespace: str | None = None, all_namespaces: bool = False) -> list[Obj]:
        """Namespaced TrainingRuntimes (a cluster without the CRD answers 404: treated as none)."""
        try:
            if all_namespaces:
                out = call(
                    self.url, self.custom.list_cluster_custom_object,
                    TRAINER, V1ALPHA1, "trainingruntimes", _request_timeout=REQUEST_TIMEOUT,
                )
            else:
                out = call(
                    self.url, self.custom.list_namespaced_custom_object,
                    TRAINER, V1ALPHA1, self._ns(namespace), "trainingruntimes", _request_timeout=REQUEST_TIMEOUT,
                )
        except ApiError as exc:
            if exc.code == 404:
                return []
            raise
        return list(out.get("items") or [])

    def runtime_for(self, trainjob: Obj) -> Obj | None:
        """The runtime a TrainJob references, or None when it is gone."""
        ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
        kind = ref.get("kind") or "ClusterTrainingRuntime"
        try:
            if kind == "TrainingRuntime":
                ns = (trainjob.get("metadata") or {}).get("namespace") or self.namespace
                return call(
                    self.url, self.custom.get_namespaced_custom_object,
                    TRAINER, V1ALPHA1, ns, "trainingruntimes", ref.get("name", ""), _request_timeout=REQUEST_TIMEOUT,
                )
            return call(
                self.url, self.custom.get_cluster_custom_object,
                TRAINER, V1ALPHA1, "clustertrainingruntimes", ref.get("name", ""), _request_timeout=REQUEST_TIMEOUT,
            )
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    # -- pods, logs, events ------------------------------------------------------------------------

    def list_pods(
        self,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        all_namespaces: bool = False,
    ) -> list[Obj]:
        query = {"labelSelector": label_selector, "fieldSelector": field_selector}
        path = "/api/v1/pods" if all_namespaces else f"/api/v1/namespaces/{self._ns(namespace)}/pods"
        return list((self.request("GET", path, query) or {}).get("items") or [])

    def get_pod(self, name: str, namespace: str | None = None) -> Obj:
        return self.request("GET", f"/api/v1/namespaces/{self._ns(namespace)}/pods/{name}")

    def waiting_messages(self, namespace: str | None = None, all_namespaces: bool = False) -> dict[str, str]:
        """TrainJob uid → why its Kueue Workload waits for admission (empty where it does not).

        On a cluster without Kueue this is simply empty."""
        path = ("/apis/kueue.x-k8s.io/v1beta2/workloads" if all_namespaces else
                f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace or self.namespace}/workloads")
        try:
            items = self.request("GET", path).get("items") or []
        except ApiError:
            return {}
        out = {}
        for wl in items:
            uid = (wl["metadata"].get("labels") or {}).get("kueue.x-k8s.io/job-uid")
            message = (wl["metadata"].get("annotations") or {}).get(WAITING_ANNOTATION)
            if uid and message:
                out[uid] = message
        return out

    def job_pods(self, job: str, namespace: str | None = None, role: str | None = None) -> list[Obj]:
        """The pods of one TrainJob, optionally one role (`launcher`, `node`), in name order."""
        selector = f"{JOB_LABEL}={job}" + (f",{ROLE_LABEL}={role}" if role else "")
        return sorted(self.list_pods(namespace, selector), key=lambda p: p["metadata"]["name"])

    def launcher_pod(self, job: str, namespace: str | None = None) -> Obj | None:
        pods = self.job_pods(job, namespace, "launcher")
        return pods[0] if pods else None

    def events_for(self, kind: str, name: str, namespace: str | None = None) -> list[Obj]:
        """Events about one object, oldest first (as `kubectl describe` lists them)."""
        selector = f"involvedObject.name={name},involvedObject.kind={kind}"
        out = self.request("GET", f"/api/v1/namespaces/{self._ns(namespace)}/events", {"fieldSelector": selector})
        items = list((out or {}).get("items") or [])
        return sorted(items, key=event_time)


def event_time(event: Obj) -> str:
    """The newest timestamp an Event carries (Events have three, each optional)."""
    return str(
        event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp") or ""
    )


def resource_for(obj: Obj) -> Resource:
    """The served resource of a manifest, or a 400 naming the kinds this client can create."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    res = for_kind(str(api_version or ""), str(kind or "")) if api_version and kind else None
    if res is None or res.api_version != api_version:
        raise ApiError(
            400,
            "BadRequest",
            f"apiVersion {api_version!r} kind {kind!r} is not a kind mpijob can create; use e.g. "
            f"apiVersion: {TRAINER}/{V1ALPHA1}, kind: TrainJob (or kubectl for other kinds)",
        )
    return res


def collection_path(res: Resource, namespace: str) -> str:
    """`/api/v1/namespaces/ns/configmaps`, `/apis/g/v/clustertrainingruntimes`, …"""
    base = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
    return f"{base}/namespaces/{namespace}/{res.plural}" if res.namespaced else f"{base}/{res.plural}"


def display_name(res: Resource, name: str) -> str:
    """`trainjob.trainer.kubeflow.org/pi`, `configmap/x` — the name kubectl prints for an object."""
    prefix = f"{res.singular}.{res.group}" if res.group else res.singular
    return f"{prefix}/{name}"
