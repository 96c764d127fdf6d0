"""MPI Operator's `kubeflow.org/v2beta1` MPIJob applied as it is with the machine's kubectl: served with its
CRD schema and a deprecation warning, run under MPI Operator's names, its status MPI Operator's, deleted
with everything it owns. Each test uses a namespace of its own on the shared server."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from mpijob.api import names

from support import REPO, UPSTREAM, job_dirs, wait_for

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
ROLE = "training.kubeflow.org/job-role"
JOB_NAME = "training.kubeflow.org/job-name"


def _mpijob(name: str, command: list[str], workers: int = 2, **spec: object) -> str:
    """An MPIJob manifest in MPI Operator's shape (sshd workers on 2222), with a command of this machine."""
    worker = {"name": "mpi-worker", "image": "mpioperator/openmpi", "command": ["/usr/sbin/sshd"],
              "args": ["-De", "-p", "2222"]}
    launcher = {"name": "mpi-launcher", "image": "mpioperator/openmpi", "command": command}
    return yaml.safe_dump({
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name},
        "spec": {"slotsPerWorker": 1, "sshAuthMountPath": "/home/mpiuser/.ssh", **spec, "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
            "Worker": {"replicas": workers, "template": {"spec": {"containers": [worker]}}}}}})


def _conditions(kubectl: Kubectl, ns: str, job: str) -> list[dict]:
    return json.loads(kubectl("get", "mpijob", "-n", ns, job, "-o", "json").stdout)["status"].get("conditions") or []


def test_an_mpijob_runs_as_is_under_mpi_operators_names(kubectl: Kubectl, home: Path) -> None:
    ns, job = "ee-mpijob", "ranks"
    kubectl("create", "namespace", ns)
    script = 'echo "rank=$OMPI_COMM_WORLD_RANK host=$(hostname)"'
    launcher_script = (f'echo "role=$K_MPI_JOB_ROLE"; sed "s/^/hostfile: /" $OMPI_MCA_orte_default_hostfile; '
                       f"mpirun -n 2 bash -c '{script}'")
    applied = kubectl("apply", "-n", ns, "-f", "-", input=_mpijob(job, ["bash", "-c", launcher_script]))
    assert f"mpijob.kubeflow.org/{job} created" in applied.stdout
    assert f"Warning: {names.MPIJOB_DEPRECATED}" in applied.stderr, applied.stderr

    listed = kubectl("get", "mpijobs", "-n", ns).stdout.splitlines()
    assert listed[0].split() == ["NAME", "AGE"] and listed[1].split()[0] == job, listed  # the CRD has no columns

    waited = kubectl("wait", "-n", ns, "--for=condition=Succeeded", f"mpijob/{job}", "--timeout=120s", timeout=150)
    assert "condition met" in waited.stdout

    got = json.loads(kubectl("get", "mpijob", "-n", ns, job, "-o", "json").stdout)["status"]
    kinds = {c["type"]: c for c in got["conditions"]}
    # held by Kueue until its Workload was admitted (tests/e2e/test_mpijob_kueue.py), then resumed
    assert [c["type"] for c in got["conditions"]] == ["Created", "Suspended", "Running", "Succeeded"], got["conditions"]
    assert (kinds["Suspended"]["status"], kinds["Suspended"]["reason"]) == ("False", "MPIJobResumed")
    assert (kinds["Created"]["reason"], kinds["Created"]["message"]) == ("MPIJobCreated", f"MPIJob {ns}/{job} is created.")
    assert (kinds["Running"]["status"], kinds["Running"]["reason"]) == ("False", "MPIJobRunning")
    assert (kinds["Succeeded"]["status"], kinds["Succeeded"]["reason"]) == ("True", "MPIJobSucceeded")
    assert kinds["Succeeded"]["message"] == f"MPIJob {ns}/{job} successfully completed."
    assert got["replicaStatuses"]["Launcher"] == {"succeeded": 1} and got["startTime"] and got["completionTime"]

    pods = json.loads(kubectl("get", "pods", "-n", ns, "-l", f"{JOB_NAME}={job}", "-o", "json").stdout)["items"]
    by_role = {p["metadata"]["labels"][ROLE]: p for p in pods if p["metadata"]["labels"][ROLE] == "launcher"}
    workers = sorted(p["metadata"]["name"] for p in pods if p["metadata"]["labels"][ROLE] == "worker")
    assert workers == [f"{job}-worker-0", f"{job}-worker-1"], [p["metadata"]["name"] for p in pods]
    launcher = by_role["launcher"]["metadata"]["name"]
    assert re.fullmatch(rf"{job}-launcher-[{names.SUFFIX_ALPHABET}]{{5}}", launcher), launcher
    assert by_role["launcher"]["metadata"]["labels"]["training.kubeflow.org/operator-name"] == "mpi-operator"
    assert by_role["launcher"]["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"

    logs = kubectl("logs", "-n", ns, launcher).stdout  # exactly what the program printed: no rank tags
    ranks = sorted(re.findall(r"^rank=(\d) host=(\S+)$", logs, re.MULTILINE))
    assert ranks == [("0", f"{job}-worker-0"), ("1", f"{job}-worker-1")], logs
    assert logs.splitlines()[0] == "role=launcher", logs
    assert re.findall(r"^hostfile: (.*)$", logs, re.MULTILINE) == [
        f"{job}-worker-{i}.{job}.{ns}.svc slots=1" for i in range(2)], logs
    config = json.loads(kubectl("get", "configmap", "-n", ns, f"{job}-config", "-o", "json").stdout)
    assert config["data"]["hostfile"].splitlines() == [f"{job}-worker-{i}.{job}.{ns}.svc slots=1" for i in range(2)]
    assert kubectl("get", "secret", "-n", ns, f"{job}-ssh", "-o", "name").stdout.strip() == f"secret/{job}-ssh"

    [job_dir] = job_dirs(home, job, ns)
    deleted = kubectl("delete", "mpijob", "-n", ns, job, timeout=90).stdout
    assert f'mpijob.kubeflow.org "{job}" deleted' in deleted
    for kind in ("pods", "secret/ranks-ssh", "configmap/ranks-config"):
        wait_for(lambda kind=kind: not kubectl("get", kind, "-n", ns, "-o", "name", check=False).stdout.strip(),
                 f"{kind} of the job to be deleted")
    wait_for(lambda: not job_dir.exists(), f"{job_dir} to be removed")


def test_a_failing_launcher_ends_the_mpijob_failed(kubectl: Kubectl) -> None:
    ns, job = "ee-mpijob-fail", "broken"
    kubectl("create", "namespace", ns)
    kubectl("apply", "-n", ns, "-f", "-", input=_mpijob(job, ["bash", "-c", "echo about to fail; exit 3"], workers=1))
    kubectl("wait", "-n", ns, "--for=condition=Failed", f"mpijob/{job}", "--timeout=120s", timeout=150)
    kinds = {c["type"]: c for c in _conditions(kubectl, ns, job)}
    assert (kinds["Failed"]["status"], kinds["Failed"]["reason"]) == ("True", "MPIJobFailed"), kinds
    message = kinds["Failed"]["message"]
    assert message.startswith(f"{names.FAILURE_PROGRAM}: launcher pod {job}-launcher-"), message
    assert "exited with code 3: about to fail" in message, message
    assert "Succeeded" not in kinds
    status = json.loads(kubectl("get", "mpijob", "-n", ns, job, "-o", "json").stdout)["status"]
    assert status["replicaStatuses"]["Launcher"] == {"failed": 1}
    kubectl("delete", "namespace", ns, timeout=90)


def test_the_mpijob_examples_run_and_print_what_their_trainjob_forms_print(kubectl: Kubectl) -> None:
    ns = "ee-mpijob-hello"
    kubectl("create", "namespace", ns)
    example = REPO / "examples" / "mpijob" / "hello.yaml"
    job = yaml.safe_load(example.read_text())["metadata"]["name"]
    kubectl("apply", "-n", ns, "-f", str(example))
    kubectl("wait", "-n", ns, "--for=condition=Succeeded", f"mpijob/{job}", "--timeout=120s", timeout=150)
    [launcher] = kubectl("get", "pods", "-n", ns, "-l", f"{ROLE}=launcher", "-o", "name").stdout.split()
    logs = kubectl("logs", "-n", ns, launcher).stdout
    # runLauncherAsWorker: the launcher is a host too, first in the hostfile (rank 0)
    hosts = dict(re.findall(r"^rank=(\d+) size=3 node=(\S+) greeting=hello-from-mpijob$", logs, re.MULTILINE))
    assert hosts == {"0": f"{job}-launcher", "1": f"{job}-worker-0", "2": f"{job}-worker-1"}, logs
    indexes = json.loads(kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    assert sorted(p["metadata"]["labels"]["training.kubeflow.org/replica-index"] for p in indexes) == ["0", "1", "2"]
    kubectl("delete", "namespace", ns, timeout=90)


def test_kubectl_explains_the_crds_fields(kubectl: Kubectl) -> None:
    explained = kubectl("explain", "mpijob.spec").stdout
    assert "GROUP:      kubeflow.org" in explained and "VERSION:    v2beta1" in explained, explained
    assert re.search(r"^  slotsPerWorker\s+<integer>", explained, re.MULTILINE), explained
    assert re.search(r"^  mpiReplicaSpecs\s+<map\[string\]Object> -required-", explained, re.MULTILINE), explained


def test_bad_mpijobs_are_refused_naming_the_field(kubectl: Kubectl) -> None:
    typo = _mpijob("typo", ["true"]).replace("slotsPerWorker", "slotPerWorker")
    refused = kubectl("apply", "-f", "-", input=typo, check=False)
    assert refused.returncode != 0 and "slotPerWorker" in refused.stderr, refused.stderr
    retried = kubectl("apply", "-f", "-", input=_mpijob("retries", ["true"], runPolicy={"backoffLimit": 3}), check=False)
    assert retried.returncode != 0 and "spec.runPolicy.backoffLimit" in retried.stderr, retried.stderr
    assert kubectl("get", "mpijobs", "typo", "retries", check=False).returncode != 0


@pytest.mark.parametrize("example", ["example_pi.yaml", "example_pi-intel.yaml", "example_pi-mpich.yaml"])
def test_mpi_operators_own_examples_run_as_they_are(kubectl: Kubectl, roomy_queue: Callable[[str], None],
                                                    example: str) -> None:
    """`kubectl apply -f` of MPI Operator's pi examples, unchanged: each runs under its own MPI (Open MPI,
    Intel MPI, MPICH), and since its program lives in its image (`/home/mpiuser/pi`), which the local
    cluster does not pull, it ends Failed with the true cause, named by each MPI's own words."""
    ns = "ee-upstream-" + example.removeprefix("example_").removesuffix(".yaml")
    kubectl("create", "namespace", ns)
    roomy_queue(ns)  # the examples ask for 3 CPUs, more than this machine's own queue holds
    applied = kubectl("apply", "-n", ns, "-f", str(UPSTREAM / "mpi-operator" / example))
    assert "mpijob.kubeflow.org/pi created" in applied.stdout
    assert "MPIJob is deprecated; convert it to a TrainJob: mpijob convert -f" in applied.stderr
    kubectl("wait", "-n", ns, "--for=condition=Failed", "mpijob/pi", "--timeout=120s", timeout=150)
    failed = {c["type"]: c for c in _conditions(kubectl, ns, "pi")}["Failed"]
    assert failed["reason"] == "MPIJobFailed"
    assert failed["message"].startswith(f"{names.FAILURE_COMMAND_NOT_FOUND}: mpirun could not "), failed
    assert "'/home/mpiuser/pi'" in failed["message"] and "pi-worker-" in failed["message"], failed
    pods = kubectl("get", "pods", "-n", ns, "-o", "name").stdout.split()
    assert sorted(p for p in pods if "worker" in p) == ["pod/pi-worker-0", "pod/pi-worker-1"]
    assert [p for p in pods if re.fullmatch(r"pod/pi-launcher-[a-z0-9]{5}", p)], pods
    kubectl("delete", "namespace", ns, timeout=90)
