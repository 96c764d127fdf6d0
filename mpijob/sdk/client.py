"""`Client`: the synchronous Python SDK, for notebooks and scripts.

It picks the cluster exactly as the CLI does (`mpijob.client.config.resolve`: `kubeconfig=`, else
`$KUBECONFIG`, else the local cluster of `$MPIJOB_HOME`, started on demand) and talks to it through
`mpijob.client.api.Cluster`. Every failure surfaces as one of the typed exceptions in
`mpijob.sdk.errors`, whose categories are the CLI's exit codes.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

from mpijob.client.api import Cluster, event_time
from mpijob.client.config import resolve
from mpijob.client.logs import read_pod, stream_pod
from mpijob.sdk import waiting
from mpijob.sdk.errors import NotFound, Timeout, translate
from mpijob.sdk.trainjob import TrainJob

Obj = dict[str, Any]
TRAINJOBS_PATH = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}"
MERGE_PATCH = "application/merge-patch+json"
JOB_LABEL = "jobset.sigs.k8s.io/jobset-name"

P = ParamSpec("P")
R = TypeVar("R")


def sdk_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Re-raise client-layer failures (`ApiError`, transport, wait timeouts) as SDK exceptions."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            mapped = translate(exc)
            if mapped is exc:
                raise
            raise mapped from exc

    return wrapper


def trainjob_object(job: TrainJob | Obj) -> Obj:
    """The TrainJob to send: a builder's `to_object()`, or a manifest dict as given."""
    return job.to_object() if isinstance(job, TrainJob) else dict(job)


def is_job_event(event: Obj, name: str, pods: set[str]) -> bool:
    """Whether an Event is about this TrainJob, one of its pods, or its Kueue Workload."""
    obj = event.get("involvedObject") or {}
    kind, oname = obj.get("kind"), str(obj.get("name") or "")
    if kind == "TrainJob":
        return oname == name
    if kind == "Pod":
        return oname in pods or oname.startswith(f"{name}-")
    if kind == "Workload":
        return oname.startswith(f"trainjob-{name}-")
    return False


class Client:
    """A connection to one cluster: `Client()` for the local one, `Client(context="prod")` for another.

    Methods take a TrainJob's name in the client's namespace (`namespace=` or the context's)."""

    @sdk_errors
    def __init__(self, context: str | None = None, namespace: str | None = None,
                 kubeconfig: str | os.PathLike[str] | None = None) -> None:
        self.target = resolve(kubeconfig, context, namespace)
        self.namespace = self.target.namespace
        self._cluster = Cluster(self.target)

    def close(self) -> None:
        self._cluster.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @sdk_errors
    def create(self, job: TrainJob | Obj) -> Obj:
        """Create a TrainJob (a `TrainJob` builder or a manifest dict); returns the stored object."""
        obj = trainjob_object(job)
        return self._cluster.create(obj, self.namespace)

    @sdk_errors
    def get(self, name: str) -> Obj:
        """The TrainJob as stored, status included; `NotFound` when it does not exist."""
        return self._cluster.get_trainjob(name, self.namespace)

    @sdk_errors
    def list(self, label_selector: str | None = None) -> list[Obj]:
        """The namespace's TrainJobs, optionally filtered by a label selector."""
        return self._cluster.list_trainjobs(self.namespace, label_selector)

    @sdk_errors
    def delete(self, name: str) -> None:
        """Delete a TrainJob; its pods, keys and workload go with it (logs stay on the local cluster)."""
        self._cluster.delete_trainjob(name, self.namespace)

    @sdk_errors
    def suspend(self, name: str) -> Obj:
        """Stop a TrainJob and free its quota (`spec.suspend=true`); returns the updated object."""
        return self._set_suspend(name, True)

    @sdk_errors
    def resume(self, name: str) -> Obj:
        """Put a suspended TrainJob back in its queue (`spec.suspend=false`)."""
        return self._set_suspend(name, False)

    def _set_suspend(self, name: str, suspend: bool) -> Obj:
        path = TRAINJOBS_PATH.format(ns=self.namespace, name=name)
        return self._cluster.request("PATCH", path, body={"spec": {"suspend": suspend}}, content_type=MERGE_PATCH)

    @sdk_errors
    def wait(self, name: str, for_: str = "Complete", timeout: float | None = 600, poll: float = waiting.DEFAULT_POLL
             ) -> Obj:
        """Block until the TrainJob is `Complete`, `Failed`, `Running` or `Finished` (either end); returns it.

        Raises `JobFailed` when it fails while waiting for Complete or Running, `Timeout` after `timeout`
        seconds (None: no limit)."""
        waiting.check_for(for_)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self._cluster.get_trainjob(name, self.namespace)
            pods = self._cluster.job_pods(name, self.namespace) if waiting.needs_pods(for_) else None
            if waiting.reached(for_, job, pods):
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise Timeout(waiting.timeout_message(name, for_, timeout or 0, job, pods), reason="Timeout",
                              trainjob=job)
            time.sleep(poll)

    @sdk_errors
    def logs(self, name: str, follow: bool = False, pod: str | None = None, rank: int | None = None,
             timeout: float | None = 600) -> Iterator[str]:
        """The lines of the launcher's log (or of `pod`) as the ranks printed them; `rank=N` keeps
        what rank N printed. `follow=True` waits for the launcher to start and streams until it ends.
        Lines come without their newline."""
        self._cluster.get_trainjob(name, self.namespace)  # NotFound now, not on the first next()
        return self._log_lines(name, follow, pod, rank, timeout)

    def _log_lines(self, name: str, follow: bool, pod: str | None, rank: int | None, timeout: float | None
                   ) -> Iterator[str]:
        try:
            target = pod or self._launcher(name, follow, timeout)
            lines = (stream_pod(self._cluster, target, self.namespace) if follow
                     else read_pod(self._cluster, target, self.namespace))
            yield from (line.text for line in lines if rank is None or line.rank == rank)
        except Exception as exc:
            mapped = translate(exc)
            if mapped is exc:
                raise
            raise mapped from exc

    def _launcher(self, name: str, follow: bool, timeout: float | None) -> str:
        if follow:
            from mpijob.client.wait import wait_for_launcher

            launcher = wait_for_launcher(self._cluster, name, self.namespace, timeout=timeout)
        else:
            launcher = self._cluster.launcher_pod(name, self.namespace)
        if launcher is None:
            raise NotFound(f"trainjob {name!r} has no launcher pod (yet); pass follow=True to wait for it",
                           code=404, reason="NotFound")
        return str(launcher["metadata"]["name"])

    @sdk_errors
    def events(self, name: str) -> list[Obj]:
        """Events about the TrainJob, its pods and its Workload, oldest first."""
        pods = {p["metadata"]["name"] for p in self._cluster.list_pods(self.namespace, f"{JOB_LABEL}={name}")}
        out = self._cluster.request("GET", f"/api/v1/namespaces/{self.namespace}/events") or {}
        return sorted((e for e in out.get("items") or [] if is_job_event(e, name, pods)), key=event_time)
