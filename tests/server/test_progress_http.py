"""Trainer's status endpoint on the API server: who may report a TrainJob's progress, and what is written.

A job's pods hold a token for Trainer's per-TrainJob audience; it opens that job's endpoint only, and
only while its pod is one of that job's. Anyone else needs RBAC's `update` on `trainjobs/status`.
(The token as the kubelet writes it, and the upstream SDK's call from a rank: tests/e2e/test_progress.py.)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from mpijob.api import names
from mpijob.api.core import tokens
from mpijob.store.home import Home

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
REPORT = {"trainerStatus": {"progressPercentage": 45, "estimatedRemainingSeconds": 120,
                            "metrics": [{"name": "loss", "value": "0.25"}],
                            "lastUpdatedTime": "2026-11-20T12:00:00.123456+00:00"}}


def _uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture()
def ns(http: httpx.Client) -> str:
    name = _uniq("progress")
    assert http.post("/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    return name


def _job(http: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 1, "command": ["true"]}}}
    r = http.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def _pod(http: httpx.Client, ns: str, job: dict[str, Any]) -> dict[str, Any]:
    """A pod owned by `job`, as the Trainer controller makes them."""
    owner = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": job["metadata"]["name"],
             "uid": job["metadata"]["uid"], "controller": True}
    body = {"metadata": {"name": _uniq(job["metadata"]["name"]), "ownerReferences": [owner]},
            "spec": {"containers": [{"name": "node", "image": "x"}]}}
    r = http.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def _status_token(http: httpx.Client, server: Any, ns: str, pod: dict[str, Any], job: str) -> str:
    """What the kubelet writes into a pod's trainer volume: its account's token for the job's audience."""
    account = http.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").json()
    key = Home(server.home).service_account_key_file.read_bytes()
    return tokens.for_pod(key, account, pod, audience=names.trainjob_status_audience(ns, job))


def _report(c: httpx.Client, ns: str, job: str, body: Any = REPORT) -> httpx.Response:
    return c.post(f"{TRAINER}/namespaces/{ns}/trainjobs/{job}/status", json=body)


def _trainer_status(http: httpx.Client, ns: str, job: str) -> Any:
    return http.get(f"{TRAINER}/namespaces/{ns}/trainjobs/{job}").json().get("status", {}).get("trainerStatus")


def test_a_pod_of_the_job_reports_with_its_status_token(http: httpx.Client, server: Any, ns: str,
                                                        connect: Callable[..., httpx.Client]) -> None:
    job = _job(http, ns, "pi")
    pod = _pod(http, ns, job)
    with connect(token=_status_token(http, server, ns, pod, "pi")) as rank:
        r = _report(rank, ns, "pi")
        assert r.status_code == 200, r.text
        written = {**REPORT["trainerStatus"], "lastUpdatedTime": "2026-11-20T12:00:00Z"}  # metav1.Time's form
        assert r.json() == {"trainerStatus": written}
        assert _trainer_status(http, ns, "pi") == written
        # the next report replaces the last one; a request without trainerStatus writes nothing
        assert _report(rank, ns, "pi", {"trainerStatus": {"progressPercentage": 90,
                                                          "lastUpdatedTime": "2026-11-20T12:05:00Z"}}).status_code == 200
        assert _report(rank, ns, "pi", {}).json() == {"trainerStatus": None}
        assert _trainer_status(http, ns, "pi") == {"progressPercentage": 90, "lastUpdatedTime": "2026-11-20T12:05:00Z"}
        # the token opens this endpoint and nothing else
        assert rank.get("/version").status_code == 401
        assert rank.get(f"{TRAINER}/namespaces/{ns}/trainjobs/pi").status_code == 401
        _job(http, ns, "other")
        assert _report(rank, ns, "other").status_code == 401
        # once its pod is gone, so is the token
        assert http.delete(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}").status_code == 200
        assert _report(rank, ns, "pi").status_code == 401


def test_a_status_token_of_another_jobs_pod_is_refused(http: httpx.Client, server: Any, ns: str,
                                                       connect: Callable[..., httpx.Client]) -> None:
    _job(http, ns, "pi")
    stranger = _pod(http, ns, _job(http, ns, "stranger"))
    with connect(token=_status_token(http, server, ns, stranger, "pi")) as c:
        r = _report(c, ns, "pi")
    assert r.status_code == 403, r.text
    assert f"is not a pod of TrainJob {ns}/pi" in r.json()["message"]
    assert _trainer_status(http, ns, "pi") is None


def test_anyone_else_needs_update_on_trainjobs_status(http: httpx.Client, server: Any, ns: str,
                                                       connect: Callable[..., httpx.Client]) -> None:
    _job(http, ns, "pi")
    account = http.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").json()
    key = Home(server.home).service_account_key_file.read_bytes()
    with connect(token=tokens.issue(key, tokens.Claims(ns, "default", account["metadata"]["uid"]))) as robot:
        r = _report(robot, ns, "pi")
        assert r.status_code == 403
        assert r.json()["message"] == (
            f'trainjobs.trainer.kubeflow.org "pi" is forbidden: User "system:serviceaccount:{ns}:default" cannot '
            f'update resource "trainjobs/status" in API group "trainer.kubeflow.org" in the namespace "{ns}"')
        role = {"metadata": {"name": "reporter"}, "rules": [{"apiGroups": ["trainer.kubeflow.org"],
                                                             "resources": ["trainjobs/status"], "verbs": ["update"]}]}
        assert http.post(f"{RBAC}/namespaces/{ns}/roles", json=role).status_code == 201
        binding = {"metadata": {"name": "reporter"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reporter"},
                   "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]}
        assert http.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=binding).status_code == 201
        assert _report(robot, ns, "pi").status_code == 200
    assert _trainer_status(http, ns, "pi")["progressPercentage"] == 45


def test_a_report_the_crd_would_refuse_is_a_422_and_writes_nothing(http: httpx.Client, ns: str) -> None:
    _job(http, ns, "pi")
    r = _report(http, ns, "pi", {"trainerStatus": {"progressPercentage": 150, "lastUpdatedTime": "2026-11-20T12:00:00Z"}})
    assert r.status_code == 422 and r.json()["reason"] == "Invalid"
    assert r.json()["message"] == (
        'TrainJob.trainer.kubeflow.org "pi" is invalid: status.trainerStatus.progressPercentage: Invalid value: 150: '
        "status.trainerStatus.progressPercentage in body should be less than or equal to 100")
    metrics = [{"name": "", "value": "1"}] + [{"name": "m", "value": "1"}] * 256
    r = _report(http, ns, "pi", {"trainerStatus": {"metrics": metrics}})
    causes = {c["field"]: c["message"] for c in r.json()["details"]["causes"]}
    assert set(causes) == {"status.trainerStatus", "status.trainerStatus.metrics",
                           "status.trainerStatus.metrics[0].name"}, causes
    assert "lastUpdatedTime is required" in causes["status.trainerStatus"]
    assert _trainer_status(http, ns, "pi") is None


def test_missing_job_oversized_report_and_the_rest_of_the_status_subresource(http: httpx.Client, ns: str) -> None:
    r = _report(http, ns, "ghost")
    assert r.status_code == 404 and r.json()["message"] == 'trainjobs.trainer.kubeflow.org "ghost" not found'
    _job(http, ns, "pi")
    big = {"trainerStatus": {"lastUpdatedTime": "2026-11-20T12:00:00Z", "padding": "x" * names.TRAINER_STATUS_MAX_BODY}}
    r = _report(http, ns, "pi", big)
    assert r.status_code == 413 and r.json()["reason"] == "RequestEntityTooLarge"
    # GET, PUT and PATCH of the status subresource are kube-apiserver's, as before
    got = http.get(f"{TRAINER}/namespaces/{ns}/trainjobs/pi/status")
    assert got.status_code == 200 and got.json()["metadata"]["name"] == "pi"
    r = http.patch(f"{TRAINER}/namespaces/{ns}/trainjobs/pi/status", json={"status": {"trainerStatus": {
        "progressPercentage": 7, "lastUpdatedTime": "2026-11-20T12:00:00Z"}}},
        headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert _trainer_status(http, ns, "pi")["progressPercentage"] == 7
