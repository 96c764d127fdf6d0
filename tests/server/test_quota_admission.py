"""Namespace quotas at admission, over real HTTPS (controllers off, so nothing but admission acts): a
TrainJob that would take its namespace past a ResourceQuota, or whose pods break a LimitRange, is
refused with kube-apiserver's 403 before anything is stored; usage is every unfinished job's whole plan
and is released when a job finishes or is deleted; two concurrent creates cannot both pass."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import httpx
import pytest
from mpijob import Client, TrainJob
from mpijob.client.errors import Category, category, decode_status
from mpijob.sdk.errors import QuotaExceeded
from mpijob.store.server_process import ServerInfo

from support import ca_context

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
GPU = "nvidia.com/gpu"
COUNT = "count/trainjobs.trainer.kubeflow.org"


@pytest.fixture()
def ns(http: httpx.Client) -> Iterator[str]:
    """A fresh namespace of its own for each test: quotas are per namespace."""
    name = f"quota-{uuid.uuid4().hex[:6]}"
    r = http.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert r.status_code == 201, r.text
    yield name


def job(name: str, gpus: int | None = None, num_nodes: int = 2, **resources: object) -> dict:
    """A TrainJob on mpi-distributed; its plan has num_nodes pods (launcher + nodes), max 2 for 1 node."""
    trainer: dict = {"numNodes": num_nodes, "command": ["true"]}
    limits = {**({GPU: gpus} if gpus else {}), **resources}
    if limits:
        trainer["resourcesPerNode"] = {"limits": limits}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": trainer}}


def create(http: httpx.Client, ns: str, body: dict, **params: str) -> httpx.Response:
    return http.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=body, params=params)


def put_quota(http: httpx.Client, ns: str, name: str, hard: dict) -> None:
    body = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard}}
    r = http.post(f"/api/v1/namespaces/{ns}/resourcequotas", json=body)
    assert r.status_code == 201, r.text


def put_limits(http: httpx.Client, ns: str, *items: dict) -> None:
    body = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"}, "spec": {"limits": list(items)}}
    r = http.post(f"/api/v1/namespaces/{ns}/limitranges", json=body)
    assert r.status_code == 201, r.text


def refused(r: httpx.Response, name: str, why: str) -> None:
    """The 403 kube-apiserver's admission sends, and nothing stored."""
    assert r.status_code == 403, r.text
    status = r.json()
    assert status["kind"] == "Status" and status["reason"] == "Forbidden" and status["code"] == 403
    assert status["message"] == f'trainjobs.trainer.kubeflow.org "{name}" is forbidden: {why}'
    assert status["details"] == {"name": name, "group": "trainer.kubeflow.org", "kind": "trainjobs"}


def finish(http: httpx.Client, ns: str, name: str) -> None:
    """Mark a job Complete through its status subresource, as the Trainer controller would."""
    tj = http.get(f"{TRAINER}/namespaces/{ns}/trainjobs/{name}").json()
    tj["status"] = {"conditions": [{"type": "Complete", "status": "True", "reason": "AllJobsCompleted",
                                    "message": "done", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}
    r = http.put(f"{TRAINER}/namespaces/{ns}/trainjobs/{name}/status", json=tj)
    assert r.status_code == 200, r.text


def test_a_job_past_the_gpu_quota_is_refused_naming_quota_requested_used_and_limited(http, ns):
    put_quota(http, ns, "gpus", {f"requests.{GPU}": "8"})
    assert create(http, ns, job("small", gpus=2)).status_code == 201  # 2 pods x 2 = 4 GPUs
    r = create(http, ns, job("big", gpus=4))  # launcher + node, 4 GPUs each: 8 more
    refused(r, "big", f"exceeded quota: gpus, requested: requests.{GPU}=8, used: requests.{GPU}=4, "
                      f"limited: requests.{GPU}=8")
    assert http.get(f"{TRAINER}/namespaces/{ns}/trainjobs/big").status_code == 404
    err = decode_status(r.status_code, r.reason_phrase, r.content)
    assert category(err) == Category.QUOTA == 6  # the CLI's exit code, the SDK's QuotaExceeded
    refused(create(http, ns, job("big", gpus=4), dryRun="All"), "big", r.json()["message"].split(": ", 1)[1])
    assert create(http, ns, job("fits", gpus=2)).status_code == 201  # exactly full is allowed


def test_the_whole_plan_counts_launcher_and_every_node(http, ns):
    put_quota(http, ns, "pods", {"pods": "4", f"requests.{GPU}": "100"})
    refused(create(http, ns, job("five", gpus=1, num_nodes=5)), "five",
            "exceeded quota: pods, requested: pods=5, used: pods=0, limited: pods=4")
    assert create(http, ns, job("four", gpus=1, num_nodes=4)).status_code == 201


def test_usage_is_released_when_a_job_finishes_or_is_deleted(http, ns):
    put_quota(http, ns, "gpus", {f"requests.{GPU}": "8"})
    assert create(http, ns, job("first", gpus=4)).status_code == 201
    assert create(http, ns, job("second", gpus=4)).status_code == 403
    finish(http, ns, "first")
    assert create(http, ns, job("second", gpus=4)).status_code == 201
    assert create(http, ns, job("third", gpus=4)).status_code == 403
    assert http.delete(f"{TRAINER}/namespaces/{ns}/trainjobs/second").status_code == 200
    assert create(http, ns, job("third", gpus=4)).status_code == 201


def test_the_trainjob_count_counts_every_stored_job_finished_or_not(http, ns):
    put_quota(http, ns, "jobs", {COUNT: "1"})
    assert create(http, ns, job("one")).status_code == 201
    finish(http, ns, "one")
    refused(create(http, ns, job("two")), "two",
            f"exceeded quota: jobs, requested: {COUNT}=1, used: {COUNT}=1, limited: {COUNT}=1")


def test_a_quota_without_a_key_the_job_uses_does_not_constrain(http, ns):
    put_quota(http, ns, "objects", {"services": "0", "count/configmaps": "0", f"requests.{GPU}": "0"})
    assert create(http, ns, job("no-gpus")).status_code == 201
    assert create(http, ns, job("gpus", gpus=1)).status_code == 403


def test_another_namespaces_quota_does_not_apply(http, ns):
    put_quota(http, ns, "none", {f"requests.{GPU}": "0"})
    other = f"quota-other-{uuid.uuid4().hex[:6]}"
    assert http.post("/api/v1/namespaces", json={"metadata": {"name": other}}).status_code == 201
    assert create(http, other, job("elsewhere", gpus=4)).status_code == 201


def test_a_cpu_quota_needs_requests_which_limit_range_defaults_provide(http, ns):
    put_quota(http, ns, "compute", {"requests.cpu": "4", "limits.memory": "8Gi"})
    bare = create(http, ns, job("bare"))
    refused(bare, "bare", "failed quota: compute: must specify limits.memory for: node; requests.cpu for: node")
    # the job must change, not wait: kube's plain Forbidden (exit 5), not the quota category (exit 6)
    assert category(decode_status(bare.status_code, bare.reason_phrase, bare.content)) == Category.FORBIDDEN
    put_limits(http, ns, {"type": "Container", "default": {"cpu": "1", "memory": "2Gi"},
                          "defaultRequest": {"cpu": "500m"}})
    assert create(http, ns, job("defaulted", num_nodes=4)).status_code == 201  # 4 x 500m = 2 cpus, 8Gi
    refused(create(http, ns, job("more", num_nodes=2)), "more",
            "exceeded quota: compute, requested: limits.memory=4Gi, used: limits.memory=8Gi, "
            "limited: limits.memory=8Gi")


def test_limit_range_max_and_min_refuse_a_job_with_limit_rangers_message(http, ns):
    put_limits(http, ns, {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}})
    refused(create(http, ns, job("greedy", cpu="4")), "greedy", "maximum cpu usage per Container is 2, but limit is 4")
    refused(create(http, ns, job("both", cpu="4", memory="1Mi")), "both",
            "[minimum memory usage per Container is 64Mi, but request is 1Mi, "
            "maximum cpu usage per Container is 2, but limit is 4]")
    assert create(http, ns, job("modest", cpu="2")).status_code == 201  # memory request ← min (defaulted)


def test_two_concurrent_creates_cannot_both_pass(server: ServerInfo, http, ns):
    put_quota(http, ns, "one-job", {f"requests.{GPU}": "4"})

    async def race() -> list[int]:
        async with httpx.AsyncClient(base_url=server.url, headers=dict(http.headers), verify=ca_context(server.kubeconfig)) as c:
            answers = await asyncio.gather(*(c.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=job(f"racer-{i}", gpus=2))
                                             for i in range(8)))
        return sorted(a.status_code for a in answers)

    assert asyncio.run(race()) == [201] + [403] * 7
    listed = http.get(f"{TRAINER}/namespaces/{ns}/trainjobs").json()["items"]
    assert len(listed) == 1


def test_the_sdk_raises_quota_exceeded(server: ServerInfo, http, ns):
    put_quota(http, ns, "gpus", {f"requests.{GPU}": "2"})
    with Client(kubeconfig=str(server.kubeconfig), namespace=ns) as c, pytest.raises(QuotaExceeded) as err:
        c.create(TrainJob(name="sdk-over", num_nodes=2, resources_per_node={GPU: 2}, command=["true"]))
    assert err.value.exit_code == 6 and err.value.code == 403
    assert err.value.message == (f'trainjobs.trainer.kubeflow.org "sdk-over" is forbidden: exceeded quota: gpus, '
                                 f"requested: requests.{GPU}=4, used: requests.{GPU}=0, limited: requests.{GPU}=2")
