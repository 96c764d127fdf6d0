"""The upstream Kubeflow SDK (kubeflow 0.5.0, `TrainerClient` with a `KubernetesBackendConfig` that
points at the local cluster's kubeconfig) works against the server unchanged."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable

import yaml
from kubeflow.trainer import CustomTrainer, TrainerClient

from support import trainjob

SOURCE = "ee-sdk-src"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def sdk_train() -> None:
    # Runs on every rank. The SDK pastes this into an unquoted bash heredoc: no dollar signs here.
    import os
    import socket

    print("sdk-rank", os.environ["OMPI_COMM_WORLD_RANK"], "of", os.environ["OMPI_COMM_WORLD_SIZE"],
          "on", socket.gethostname())


def test_sdk_lists_and_inspects_a_job_created_with_kubectl(trainer: TrainerClient, kubectl: Kubectl) -> None:
    command = ["mpirun", "bash", "-c", 'echo "src rank=$OMPI_COMM_WORLD_RANK"']
    kubectl("apply", "-f", "-", input=yaml.safe_dump(trainjob(SOURCE, command, num_nodes=2)))

    runtimes = {r.name: r for r in trainer.list_runtimes()}
    assert "mpi-distributed" in runtimes
    assert runtimes["mpi-distributed"].trainer.command[0] == "mpirun"  # the SDK recognises it as MPI

    job = trainer.wait_for_job_status(SOURCE, {"Complete"}, timeout=120, polling_interval=1)
    assert job.status == "Complete" and job.num_nodes == 2
    assert job.runtime.name == "mpi-distributed"
    assert SOURCE in [j.name for j in trainer.list_jobs()]
    launcher = next(s for s in trainer.get_job(SOURCE).steps if s.name == "node-0")  # MPI: node-0 = launcher
    assert f"{SOURCE}-launcher-" in launcher.pod_name
    lines = ("\n".join(trainer.get_job_logs(SOURCE))).splitlines()
    assert sorted(line for line in lines if line.startswith("src rank=")) == ["src rank=0", "src rank=1"], lines


def test_sdk_train_with_a_custom_trainer_on_the_mpi_runtime(trainer: TrainerClient) -> None:
    name = trainer.train(runtime="mpi-distributed", trainer=CustomTrainer(func=sdk_train, num_nodes=2))
    try:
        job = trainer.wait_for_job_status(name, {"Complete"}, timeout=120, polling_interval=1)
        assert job.status == "Complete"
        logs = ("\n".join(trainer.get_job_logs(name)))
        ranks = re.findall(r"^sdk-rank (\d) of 2 on (\S+)$", logs, re.MULTILINE)
        assert sorted(r[0] for r in ranks) == ["0", "1"], logs
        assert {r[1] for r in ranks} == {f"{name}-node-0-0", f"{name}-launcher-0-0"}
    finally:
        trainer.delete_job(name)
