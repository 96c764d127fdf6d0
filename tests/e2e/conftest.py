"""Fixtures for end-to-end tests, against the session's shared server (controllers on).

`connect` and `kubectl` are redefined here on purpose: the session-scoped ones in tests/conftest.py
bind to whichever `server` first asks for them, and tests/server overrides `server` with a server
without controllers; if e2e asked first, tests/server would get ours. Tests that must kill or restart
a server start their own with `new_server` (tests/conftest.py).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import TrainerClient
from kubernetes import client as k8s_client
from mpijob.store.server_process import ServerInfo

from support import https_client, kubectl_runner


@pytest.fixture(scope="session")
def connect(server: ServerInfo) -> Callable[..., httpx.Client]:
    """`connect(info=None)`: a new client (close it) to `info`, default the shared server."""

    def make(info: ServerInfo | None = None, timeout: float = 60) -> httpx.Client:
        return https_client((info or server).kubeconfig, timeout)

    return make


@pytest.fixture(scope="session")
def kubectl(server: ServerInfo, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The machine's kubectl against the shared server: `kubectl("get", "pods", check=False)`."""
    return kubectl_runner(server.kubeconfig, tmp_path_factory.mktemp("e2e-kubectl-cache"))


@pytest.fixture(scope="session")
def api(connect: Callable[..., httpx.Client]) -> Iterator[httpx.Client]:
    """One client to the shared server (admin token), for the whole session."""
    with connect() as c:
        yield c


@pytest.fixture(scope="session")
def home(server: ServerInfo) -> Path:
    """`$MPIJOB_HOME` of the shared server."""
    return server.home


@pytest.fixture(scope="module")
def trainer(server: ServerInfo) -> Iterator[TrainerClient]:
    """The upstream Kubeflow SDK, unchanged, against the shared server."""
    previous = k8s_client.Configuration.get_default_copy()  # load_kube_config replaces the global default
    try:
        yield TrainerClient(KubernetesBackendConfig(config_file=str(server.kubeconfig), namespace="default"))
    finally:
        k8s_client.Configuration.set_default(previous)


@pytest.fixture(scope="session")
def roomy_queue(api: httpx.Client) -> Iterator[Callable[[str], None]]:
    """`roomy_queue(namespace)`: the namespace's `user-queue` (where an unlabelled job goes) points to a
    ClusterQueue as large as MPI Operator's examples ask (up to 5 CPUs and 2 GPUs): the machine's own queue
    could never admit them, and the server refuses such a job up front (Kueue's never-fits check)."""
    kueue, name, gpu = "kueue.x-k8s.io/v1beta2", "ee-roomy", "nvidia.com/gpu"
    quotas = [{"name": "cpu", "nominalQuota": 64}, {"name": "memory", "nominalQuota": "256Gi"},
              {"name": gpu, "nominalQuota": 8}]
    cq = {"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": name},
          "spec": {"namespaceSelector": {}, "resourceGroups": [{
              "coveredResources": ["cpu", "memory", gpu], "flavors": [{"name": "default-flavor", "resources": quotas}]}]}}
    r = api.post(f"/apis/{kueue}/clusterqueues", json=cq)
    assert r.status_code == 201, r.text

    def point(namespace: str) -> None:
        lq = {"apiVersion": kueue, "kind": "LocalQueue", "metadata": {"name": "user-queue", "namespace": namespace},
              "spec": {"clusterQueue": name}}
        r = api.post(f"/apis/{kueue}/namespaces/{namespace}/localqueues", json=lq)
        assert r.status_code == 201, r.text

    yield point
    api.delete(f"/apis/{kueue}/clusterqueues/{name}")
