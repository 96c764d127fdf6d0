"""What a pre-flight check says (`Check`), and what the checks learn from the cluster and share (`Facts`).

A check is an operation of the client core (`mpijob.client.core.Op`): it yields the requests it needs
and returns one `Check`, so it runs on any connection and reads only the Kubernetes API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.trainer.plan import RunPlan
from mpijob.client.core import Call, Op
from mpijob.client.errors import Unreachable


class Status(StrEnum):
    PASS = "PASS"  # nothing in the way
    WARN = "WARN"  # may cost the job, or could not be checked: read the finding
    FAIL = "FAIL"  # the job will not run, or will fail, until the fix is applied
    SKIP = "SKIP"  # not checked: what it needs is missing (an earlier check said why)


@dataclass(frozen=True)
class Check:
    """One check's verdict: its `name`, a one-line `finding` and, for WARN and FAIL, the `fix`."""

    name: str
    status: Status
    finding: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}


def passed(name: str, finding: str) -> Check:
    return Check(name, Status.PASS, finding)


def warned(name: str, finding: str, fix: str) -> Check:
    return Check(name, Status.WARN, finding, fix)


def failed(name: str, finding: str, fix: str) -> Check:
    return Check(name, Status.FAIL, finding, fix)


def skipped(name: str, why: str) -> Check:
    return Check(name, Status.SKIP, why)


def could_not(name: str, exc: Exception, what: str) -> Check:
    """A read the caller may not do (or the server failed): a warning saying what stayed unchecked."""
    if isinstance(exc, ApiError) and exc.code == 403:
        return warned(name, f"could not check {what}: forbidden ({exc.message})",
                      "run doctor as a user who may read it, or ask the cluster's administrator to check it")
    detail = f"{exc.reason}: {exc.message}" if isinstance(exc, ApiError) else str(exc)
    return warned(name, f"could not check {what}: {detail}", "run doctor again; if it persists, check the cluster")


@dataclass
class Facts:
    """The job under check and what the checks found out so far, in the order they run."""

    namespace: str
    job: Obj  # the TrainJob from -f, or a default one
    given: bool  # whether the job came from a file
    server: str = ""  # the API server's URL
    user: str = ""  # who the credentials are (SelfSubjectReview), "" when the cluster will not say
    version: str = ""  # the cluster's Kubernetes version (gitVersion)
    local: bool = False  # the local mpijob cluster (it runs jobs itself: no JobSet)
    groups: dict[str, list[str]] = field(default_factory=dict)  # served API group → versions
    runtime: Obj | None = None
    plan: RunPlan | None = None  # the job resolved against its runtime, when both are known
    cluster_queue: Obj | None = None  # the ClusterQueue the job's LocalQueue points to
    local_queue: str = ""  # the job's LocalQueue, when it has one
    _namespace_obj: Obj | None = None
    _namespace_error: Exception | None = None

    @property
    def kueue_version(self) -> str | None:
        served = self.groups.get(names.KUEUE_GROUP) or []
        return next((v for v in (names.KUEUE_VERSION, names.KUEUE_V1BETA1) if v in served), None)

    def namespace_labels(self) -> Op[dict[str, str]]:
        """The namespace's labels (kube's name label included); raises what reading it raised."""
        if self._namespace_obj is None and self._namespace_error is None:
            try:
                self._namespace_obj = yield from Call("GET", f"/api/v1/namespaces/{self.namespace}")
            except (ApiError, Unreachable) as exc:
                self._namespace_error = exc
        if self._namespace_error is not None:
            raise self._namespace_error
        labels = dict(((self._namespace_obj or {}).get("metadata") or {}).get("labels") or {})
        return {names.LABEL_NAMESPACE_NAME: self.namespace, **labels}


CheckFn = Callable[[Facts], "Op[Check] | Check"]  # an operation, or a plain function where nothing is read
