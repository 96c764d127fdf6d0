"""A tenant, as a data scientist is on a Trainer + Kueue cluster: a user made by `mpijob user add` with `edit`
in a namespace of its own runs the README's upstream-SDK example unchanged, and may see why a job waits
(its Workload, its LocalQueue's pending workloads)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import CustomTrainer, TrainerClient
from kubernetes import client as k8s_client

from support import add_user, kubectl_runner

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def pi() -> None:  # the README's, on every rank; the SDK pastes it into a bash heredoc: no dollar signs
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    n, rank, size = 300_000, comm.Get_rank(), comm.Get_size()
    part = sum(4.0 / (1.0 + ((i + 0.5) / n) ** 2) for i in range(rank, n, size)) / n
    total = comm.reduce(part, op=MPI.SUM, root=0)
    if rank == 0:
        print(f"pi ~= {total:.6f} on {size} ranks")


@pytest.fixture(scope="module")
def tenant(home: Path, kubectl: Kubectl) -> dict[str, object]:
    user, ns = f"ee-sdk-tenant-{os.urandom(2).hex()}", f"ee-sdk-tenant-{os.urandom(2).hex()}"
    kubectl("create", "namespace", ns)
    kubectl("create", "rolebinding", f"{user}-edit", "--clusterrole=edit", f"--user={user}", "-n", ns)
    return {"user": user, "ns": ns, "kubeconfig": add_user(home, user)}


@pytest.fixture(scope="module")
def trainer(tenant: dict[str, object]) -> Iterator[TrainerClient]:
    previous = k8s_client.Configuration.get_default_copy()  # load_kube_config replaces the global default
    try:
        yield TrainerClient(KubernetesBackendConfig(config_file=str(tenant["kubeconfig"]),
                                                    namespace=str(tenant["ns"])))
    finally:
        k8s_client.Configuration.set_default(previous)


def test_a_tenant_runs_the_readmes_sdk_example(trainer: TrainerClient) -> None:
    assert "mpi-distributed" in {r.name for r in trainer.list_runtimes()}  # cluster runtimes: every user's
    job = trainer.train(runtime="mpi-distributed", trainer=CustomTrainer(func=pi, num_nodes=2))
    try:
        done = trainer.wait_for_job_status(job, {"Complete"}, timeout=120, polling_interval=1)
        assert done.status == "Complete"
        assert "pi ~= 3.141593 on 2 ranks" in "\n".join(trainer.get_job_logs(job))
    finally:
        trainer.delete_job(job)


def test_a_tenant_sees_why_a_job_waits(tenant: dict[str, object], tmp_path: Path) -> None:
    mine = kubectl_runner(Path(str(tenant["kubeconfig"])), tmp_path / "cache")
    ns = str(tenant["ns"])
    assert mine("get", "configmap", "kubeflow-trainer-public", "-n", "kubeflow-system").returncode == 0
    assert mine("get", "workloads", "-n", ns).returncode == 0
    pending = mine("get", "--raw", f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/"
                   "user-queue/pendingworkloads")
    assert json.loads(pending.stdout)["kind"] == "PendingWorkloadsSummary"
    # and nothing beyond: another namespace's Workloads, or a ClusterQueue's pending list, stay the admin's
    assert mine("get", "workloads", "-n", "default", check=False).returncode != 0
    denied = mine("get", "--raw", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/default/pendingworkloads",
                  check=False)
    assert "forbidden" in denied.stderr.lower(), denied
