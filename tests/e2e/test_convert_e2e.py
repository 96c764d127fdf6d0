"""`mpijob convert -f MPIJOB | kubectl apply -f -`, as a user migrating from MPI Operator runs it: every
upstream example's objects pass the server's admission (real kubectl, `--dry-run=server`), and the
repository's two MPIJob examples run to Complete and print what their TrainJob twins print."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml

from support import JOBSET, REPO, RJOB, UPSTREAM

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
MPIJOB = Path(sys.executable).parent / "mpijob"
EXAMPLES = sorted((UPSTREAM / "mpi-operator").glob("example_*.yaml"))
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def converted(path: Path) -> str:
    """What `mpijob convert -f PATH` prints on stdout (the report, on stderr, is checked elsewhere)."""
    p = subprocess.run([str(MPIJOB), "convert", "-f", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith("MPIJob "), p.stderr
    return p.stdout


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_upstream_example_is_admitted(kubectl: Kubectl, api: httpx.Client, roomy_queue: Callable[[str], None],
                                            path: Path) -> None:
    ns = "ee-conv-up-" + path.stem.removeprefix("example_").replace("_", "-")
    kubectl("create", "namespace", ns)
    roomy_queue(ns)
    out = converted(path)
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["TrainingRuntime", "TrainJob"]
    name = docs[1]["metadata"]["name"]
    # The TrainJob's admission looks its runtime up, which a dry run of both would not have stored.
    created = kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(docs[0]))
    assert f"trainingruntime.trainer.kubeflow.org/{name} created" in created.stdout
    # Intel's and MPICH's launchers give only args (their image's entrypoint runs them); admitted all the same
    dry = kubectl("apply", "--dry-run=server", "-n", ns, "-f", "-", input=out, check=False)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"trainjob.trainer.kubeflow.org/{name} created (server dry run)" in dry.stdout
    assert kubectl("get", "trainjobs", "-n", ns, "-o", "name").stdout == ""  # a dry run stores nothing
    kubectl("delete", "trainingruntime", "-n", ns, name)


def run_converted(kubectl: Kubectl, example: str, ns: str) -> tuple[str, str]:
    """Convert, apply, wait for Complete; the job's name and its launcher's log."""
    path = REPO / "examples" / "mpijob" / example
    job = yaml.safe_load(path.read_text())["metadata"]["name"]
    kubectl("create", "namespace", ns)
    applied = kubectl("apply", "-n", ns, "-f", "-", input=converted(path)).stdout
    assert f"trainjob.trainer.kubeflow.org/{job} created" in applied, applied
    waited = kubectl("wait", "-n", ns, "--for=condition=Complete", f"trainjob/{job}", "--timeout=240s", timeout=260)
    assert "condition met" in waited.stdout
    launcher = kubectl("get", "pods", "-n", ns, "-l", f"{JOBSET}={job},{RJOB}=launcher", "-o", "name").stdout.split()
    assert len(launcher) == 1, launcher
    return job, kubectl("logs", "-n", ns, launcher[0]).stdout


def test_hello_mpijob_runs_on_the_bundled_runtime(kubectl: Kubectl) -> None:
    ns = "ee-conv-hello"
    job, log = run_converted(kubectl, "hello.yaml", ns)
    assert "trainingruntime" not in kubectl("get", "trainingruntimes", "-n", ns, "-o", "name").stdout
    ranks = re.findall(rf"^rank=(\d+) size=3 node=({job}-\S+) greeting=hello-from-mpijob$", log, re.MULTILINE)
    assert sorted(int(r) for r, _ in ranks) == [0, 1, 2], log
    assert {node for _, node in ranks} == {f"{job}-node-0-0", f"{job}-node-0-1", f"{job}-launcher-0-0"}, log
    kubectl("delete", "trainjob", "-n", ns, job, timeout=90)


def test_pi_mpijob_runs_on_its_own_runtime(kubectl: Kubectl) -> None:
    ns = "ee-conv-pi"
    job, log = run_converted(kubectl, "pi.yaml", ns)
    runtime = yaml.safe_load(kubectl("get", "trainingruntime", "-n", ns, job, "-o", "yaml").stdout)
    assert runtime["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] is False
    ranks = re.findall(rf"^rank (\d) of 4 on ({job}-node-0-\d): partial sum", log, re.MULTILINE)
    assert sorted(int(r) for r, _ in ranks) == [0, 1, 2, 3], log  # four workers; the launcher runs no rank
    (pi,) = re.findall(r"^pi ~= (3\.14159\d+)  error = \S+  \(3000000 intervals, 4 ranks\)$", log, re.MULTILINE)
    assert abs(float(pi) - 3.141592653589793) < 1e-9
    kubectl("delete", "trainjob", "-n", ns, job, timeout=90)
    kubectl("delete", "trainingruntime", "-n", ns, job)
