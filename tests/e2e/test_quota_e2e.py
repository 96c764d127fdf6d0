"""Namespace quotas end to end, with the machine's kubectl and the `mpijob` command on a server that
declares 8 GPUs (`--capacity`): `kubectl describe quota` shows Used and Hard as jobs come and go, a job
past the quota is refused by `mpijob create` (exit 6) and by `kubectl apply` with kube-apiserver's
message, nothing is created, and a LimitRange's defaults count against the quota."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import kubectl_runner, wait_for

GPU = "nvidia.com/gpu"
NS = "team-quota"
MPIJOB = Path(sys.executable).parent / "mpijob"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def quota_server(servers: Any) -> Any:
    return servers.start("quota", env={"MPIJOB_CAPACITY": f"{GPU}=8,cpu=8,memory=16Gi"})


@pytest.fixture(scope="module")
def kc(quota_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return kubectl_runner(quota_server.kubeconfig, tmp_path_factory.mktemp("quota-kubectl-cache"))


def mpijob(server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["MPIJOB_HOME"] = str(server.home)
    return subprocess.run([str(MPIJOB), *args], env=env, capture_output=True, text=True, timeout=60)


def manifest(name: str, gpus: int, suspend: bool = True) -> str:
    """A 2-node TrainJob (launcher + 1 node, `gpus` each); suspended, so it waits without running."""
    return yaml.safe_dump({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "mpi-distributed"}, "suspend": suspend,
                 "trainer": {"numNodes": 2, "command": ["true"], "resourcesPerNode": {"limits": {GPU: gpus}}}},
    })


def create_quota(kc: Kubectl, ns: str, name: str, hard: dict[str, str]) -> None:
    spec = ",".join(f"{k}={v}" for k, v in hard.items())
    assert "created" in kc("create", "quota", name, "-n", ns, f"--hard={spec}").stdout


def described(kc: Kubectl, name: str) -> dict[str, tuple[str, str]]:
    """`kubectl describe quota`'s table: resource → (Used, Hard)."""
    text = kc("describe", "quota", name, "-n", NS).stdout
    assert "Name:" in text and NS in text, text
    rows = text.split("--------", 1)[1].splitlines()[1:]
    return {cols[0]: (cols[1], cols[2]) for cols in (r.split() for r in rows) if len(cols) == 3}


def shows(kc: Kubectl, name: str, want: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    def shown() -> dict[str, tuple[str, str]] | None:
        now = described(kc, name)
        return now if now == want else None

    return wait_for(shown,
                    f"kubectl describe quota {name} to show {want}", timeout=30)


def test_quota_usage_refusals_and_release_through_kubectl_and_mpijob(quota_server: Any, kc: Kubectl) -> None:
    count = "count/trainjobs.trainer.kubeflow.org"
    kc("create", "namespace", NS)
    create_quota(kc, NS, "gpus", {f"requests.{GPU}": "4", count: "3"})
    shows(kc, "gpus", {count: ("0", "3"), f"requests.{GPU}": ("0", "4")})
    got = kc("get", "quota", "-n", NS).stdout.splitlines()
    assert got[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"], got
    assert f"{count}: 0/3, requests.{GPU}: 0/4" in got[1], got

    assert "created" in kc("apply", "-n", NS, "-f", "-", input=manifest("first", 1)).stdout
    shows(kc, "gpus", {count: ("1", "3"), f"requests.{GPU}": ("2", "4")})  # launcher + node, 1 GPU each

    # over the quota through the mpijob command: exit 6, kube-apiserver's message, nothing created
    r = mpijob(quota_server, "create", "trainjob", "over", "-n", NS, "--nodes", "2", "--gpus", "2", "--", "true")
    why = (f'trainjobs.trainer.kubeflow.org "over" is forbidden: exceeded quota: gpus, requested: requests.{GPU}=4, '
           f"used: requests.{GPU}=2, limited: requests.{GPU}=4")
    assert r.returncode == 6, r.stderr
    assert why in r.stderr, r.stderr
    # and through kubectl
    refused = kc("apply", "-n", NS, "-f", "-", input=manifest("over", 2), check=False)
    assert refused.returncode == 1
    assert re.search(r"Error from server \(Forbidden\).*" + re.escape(why), refused.stderr), refused.stderr
    assert kc("get", "trainjob", "over", "-n", NS, check=False).returncode != 0
    shows(kc, "gpus", {count: ("1", "3"), f"requests.{GPU}": ("2", "4")})

    # what is left still fits
    assert "created" in kc("apply", "-n", NS, "-f", "-", input=manifest("second", 1)).stdout
    shows(kc, "gpus", {count: ("2", "3"), f"requests.{GPU}": ("4", "4")})

    # deleting a job releases its usage; the one refused before now fits
    kc("delete", "trainjob", "first", "second", "-n", NS, timeout=90)
    shows(kc, "gpus", {count: ("0", "3"), f"requests.{GPU}": ("0", "4")})
    r = mpijob(quota_server, "create", "trainjob", "over", "-n", NS, "--nodes", "2", "--gpus", "2", "--", "true")
    assert r.returncode == 0, r.stderr
    shows(kc, "gpus", {count: ("1", "3"), f"requests.{GPU}": ("4", "4")})


def test_a_finished_job_releases_its_usage_and_limit_range_defaults_count(quota_server: Any, kc: Kubectl) -> None:
    ns = "team-limits"
    kc("create", "namespace", ns)
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"},
              "spec": {"limits": [{"type": "Container", "default": {"cpu": "1", "memory": "256Mi"},
                                   "defaultRequest": {"cpu": "250m", "memory": "128Mi"}, "max": {"cpu": "2"}}]}}
    kc("apply", "-n", ns, "-f", "-", input=json.dumps(limits))
    text = kc("describe", "limitrange", "defaults", "-n", ns).stdout
    assert re.search(r"Container\s+cpu\s+-\s+2\s+250m\s+1\s+-", text), text
    listed = kc("get", "limitranges", "-n", ns).stdout.splitlines()
    assert listed[0].split() == ["NAME", "CREATED", "AT"] and re.match(r"defaults\s+\d{4}-\d\d-\d\dT", listed[1]), listed
    create_quota(kc, ns, "compute", {"requests.cpu": "1", "limits.memory": "1Gi"})

    def compute() -> dict[str, tuple[str, str]]:
        text = kc("describe", "quota", "compute", "-n", ns).stdout
        rows = text.split("--------", 1)[1].splitlines()[1:]
        return {c[0]: (c[1], c[2]) for c in (r.split() for r in rows) if len(c) == 3}

    wait_for(lambda: compute() == {"limits.memory": ("0", "1Gi"), "requests.cpu": ("0", "1")}, "the quota's status")
    def job(name: str, **per_node: str) -> str:
        trainer: dict = {"numNodes": 2, "command": ["true"]}
        if per_node:
            trainer["resourcesPerNode"] = {"limits": per_node}
        return json.dumps({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                           "metadata": {"name": name},
                           "spec": {"runtimeRef": {"name": "mpi-distributed"}, "suspend": True, "trainer": trainer}})

    kc("apply", "-n", ns, "-f", "-", input=job("quick"))  # no resources: the LimitRange's defaults count
    # two pods (launcher + node): 2 x 250m of cpu requested, 2 x 256Mi of memory limit
    wait_for(lambda: compute() == {"limits.memory": ("512Mi", "1Gi"), "requests.cpu": ("500m", "1")}, "its usage")
    kc("patch", "trainjob", "quick", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    kc("wait", "-n", ns, "--for=condition=Complete", "trainjob/quick", "--timeout=120s", timeout=150)
    wait_for(lambda: compute() == {"limits.memory": ("0", "1Gi"), "requests.cpu": ("0", "1")}, "usage released")
    pods = json.loads(kc("get", "pods", "-n", ns, "-l", "jobset.sigs.k8s.io/jobset-name=quick", "-o", "json").stdout)
    defaults = {"limits": {"cpu": "1", "memory": "256Mi"}, "requests": {"cpu": "250m", "memory": "128Mi"}}
    assert [p["spec"]["containers"][0]["resources"] for p in pods["items"]] == [defaults, defaults]  # as LimitRanger

    refused = kc("apply", "-n", ns, "-f", "-", input=job("greedy", cpu="4"), check=False)
    assert refused.returncode == 1
    assert ('trainjobs.trainer.kubeflow.org "greedy" is forbidden: maximum cpu usage per Container is 2, '
            "but limit is 4") in refused.stderr, refused.stderr
    assert kc("get", "trainjob", "greedy", "-n", ns, check=False).returncode != 0
