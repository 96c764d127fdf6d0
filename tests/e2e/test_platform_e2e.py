"""The platform bundle against real servers with the real kubectl: `mpijob platform render | kubectl apply
--dry-run=server -f -` is clean on the shared server; applied for real on a fresh one, its runtimes run jobs
(Open MPI CPU and NCCL-safe) through its queues in a namespace under its NetworkPolicy, their pods admitted
by its SCC; its SCC is stored, listed, and a bad one refused naming the field."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from mpijob.api import names
from mpijob.cli.main import app
from mpijob.store.server_process import ServerInfo
from typer.testing import CliRunner

from support import condition, create, https_client, kubectl_runner, wait_finished

MPIJOB = Path(sys.executable).parent / "mpijob"
# The warnings a dry run of the bundle may carry on the local cluster, and why each is expected:
ACCEPTED = [
    # a runtime's pod fields the local cluster records but does not need (it runs every pod on one machine)
    (r"^spec\.template\.spec\.replicatedJobs\[\d\]\..*: (no effect on one machine|not run by the local cluster"
    r"|readiness is the local cluster's|recorded on the pods, not pulled|the launcher always waits)"),
    r"^spec\.template\.spec\.successPolicy\..*: a job succeeds when its launcher does",
    # ResourceFlavor nodeLabels: every pod runs on this machine
    r"^spec\.nodeLabels\.\S+: no effect on one machine",
    # the NetworkPolicy's rules across jobs, DNS and the Trainer namespace: each job has its own network here
    r"^spec\.(ingress|egress)(\[\d\](\.(from|to)\[\d\]\.(podSelector|namespaceSelector)|\.ports)?)?: ",
    # kubectl's own, for objects the server created before (mpi-distributed, default-flavor)
    r"^resource \S+ is missing the kubectl\.kubernetes\.io/last-applied-configuration annotation",
]


def render(*args: str) -> str:
    proc = subprocess.run([str(MPIJOB), "platform", "render", *args], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def warnings(stderr: str) -> list[str]:
    return [line.removeprefix("Warning: ") for line in stderr.splitlines() if line.startswith("Warning: ")]


def test_rendered_bundle_dry_runs_cleanly_on_the_shared_server(
        kubectl: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    args = ("--team", "plat-dry", "--team", "plat-dry2", "--gpu-type", "a100", "--net-bind-service")
    render("-o", str(tmp_path), *args)
    kubectl("apply", "-f", str(tmp_path / "00-namespaces.yaml"))  # a dry run creates no namespace to put objects in
    bundle = render(*args)
    proc = kubectl("apply", "--dry-run=server", "-f", "-", input=bundle, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    applied = [line for line in proc.stdout.splitlines() if line]
    assert len(applied) == len(list(yaml.safe_load_all(bundle)))
    assert all(line.endswith("(server dry run)") for line in applied), applied
    errors = [line for line in proc.stderr.splitlines() if line and not line.startswith("Warning: ")]
    assert errors == []
    unexpected = [w for w in warnings(proc.stderr) if not any(re.search(p, w) for p in ACCEPTED)]
    assert unexpected == []
    assert kubectl("get", "scc", "mpijob-mpi", check=False).returncode != 0  # a dry run stores nothing


@pytest.fixture(scope="module")
def applied(servers: object, tmp_path_factory: pytest.TempPathFactory) -> tuple[ServerInfo, Callable[..., object]]:
    """A fresh server with the whole bundle applied for real (it replaces the server's own mpi-distributed,
    which is why it is not the shared server)."""
    info = servers.start("platform")  # type: ignore[attr-defined]
    run = kubectl_runner(info.kubeconfig, tmp_path_factory.mktemp("platform-kubectl-cache"))
    bundle = tmp_path_factory.mktemp("platform-bundle")
    render("-o", str(bundle), "--team", "plat")
    for file in sorted(bundle.iterdir()):
        run("apply", "-f", str(file), timeout=120)
    return info, run


def _logs(info: ServerInfo, name: str, namespace: str) -> str:
    r = CliRunner().invoke(app, ["logs", name, "-n", namespace], env={"MPIJOB_HOME": str(info.home),
                                                                      "KUBECONFIG": None})
    assert r.exit_code == 0, r.stderr
    return r.stdout


def test_jobs_run_on_the_rendered_runtimes_through_the_team_queue_under_the_network_policy(
        applied: tuple[ServerInfo, Callable[..., subprocess.CompletedProcess[str]]]) -> None:
    info, kubectl = applied
    assert kubectl("get", "networkpolicy", "mpijob-allow-mpi", "-n", "plat").returncode == 0
    runtime = yaml.safe_load(kubectl("get", "clustertrainingruntime", "mpi-distributed", "-o", "yaml").stdout)
    assert runtime["metadata"]["labels"][names.LABEL_PART_OF] == "mpijob"  # the rendered one, not the server's
    # Open MPI numbers a rank in OMPI_COMM_WORLD_RANK, Hydra (MPICH, Intel MPI) in PMI_RANK
    command = ["mpirun", "bash", "-c",
               "echo rank=${OMPI_COMM_WORLD_RANK:-$PMI_RANK} nccl=$NCCL_IB_DISABLE$NCCL_P2P_DISABLE"]
    jobs = {"plat-cpu": "mpi-distributed", "plat-nccl": "mpi-distributed-nccl-safe",
            "plat-ompi5": "openmpi5-distributed", "plat-mpich": "mpich-distributed",
            "plat-intel": "intel-mpi-distributed"}
    with https_client(info.kubeconfig) as c:
        for name, rt in jobs.items():
            create(c, {"apiVersion": names.TRAINER_API_VERSION, "kind": "TrainJob",
                       "metadata": {"name": name, "labels": {names.LABEL_QUEUE_NAME: "default"}},
                       "spec": {"runtimeRef": {"name": rt}, "trainer": {"numNodes": 2, "command": command}}},
                   namespace="plat")
        for name in jobs:
            job = wait_finished(c, name, namespace="plat", timeout=180)
            assert condition(job, names.COMPLETE) is not None, (name, job.get("status"))
        wl = c.get(f"/apis/{names.KUEUE_API_VERSION}/namespaces/plat/workloads").json()["items"]
        assert {w["status"]["admission"]["clusterQueue"] for w in wl} == {"plat"}  # the team's rendered queue
    pods = yaml.safe_load(kubectl("get", "pods", "-n", "plat", "-o", "yaml").stdout)["items"]
    assert pods and {p["metadata"]["annotations"][names.ANNOTATION_SCC] for p in pods} == {"mpijob-mpi"}  # stored SCC
    logs = {name: _logs(info, name, "plat") for name in jobs}
    for name in ("plat-cpu", "plat-ompi5", "plat-mpich", "plat-intel"):  # each MPI's runtime runs both ranks
        assert "rank=0 nccl=" in logs[name] and "rank=1 nccl=" in logs[name], (name, logs[name])
        assert "nccl=11" not in logs[name]
    nccl = logs["plat-nccl"]
    assert "rank=0 nccl=11" in nccl and "rank=1 nccl=11" in nccl  # the remote rank too: mpirun forwarded them


def test_the_scc_is_stored_listed_and_a_bad_one_refused_naming_the_field(
        applied: tuple[ServerInfo, Callable[..., subprocess.CompletedProcess[str]]], tmp_path: Path) -> None:
    _, kubectl = applied
    listed = kubectl("get", "securitycontextconstraints", "-o", "name").stdout.split()
    assert "securitycontextconstraints.security.openshift.io/mpijob-mpi" in listed
    stored = yaml.safe_load(kubectl("get", "scc", "mpijob-mpi", "-o", "yaml").stdout)
    assert stored["requiredDropCapabilities"] == ["ALL"] and stored["runAsUser"] == {"type": "MustRunAsRange"}
    bad = {**stored, "metadata": {"name": "bad-scc"}, "runAsUser": {"type": "Sometimes"}}
    proc = kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert proc.returncode != 0 and "runAsUser.type" in proc.stderr and "Sometimes" in proc.stderr
    assert kubectl("get", "scc", "bad-scc", check=False).returncode != 0
