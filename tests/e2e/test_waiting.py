"""Why a job waits, in one sentence with numbers, with real jobs on a server that declares 4 GPUs: the
whole job's need (2 nodes × 1 GPU need 2), what its ClusterQueue has free, its place behind a job of
higher priority, and a start estimated from the running job's own report (the upstream SDK's
`update_trainjob_status()` in a rank), then from the run time of a similar job that finished. Shown by
`mpijob get -o wide`, `mpijob describe`, the SDK, and the Workload's annotations for kubectl.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob import Client, Waiting
from mpijob.cli.main import app
from typer.testing import CliRunner

from support import condition, create, https_client, job_pods, trainjob, wait_finished, wait_for

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
# rank 0 reports 10 % with ten minutes left when REPORT=1, then holds its GPUs until the test says
HOLD = '''
import os, time
from kubeflow.trainer import update_trainjob_status
if os.environ["OMPI_COMM_WORLD_RANK"] == "0":
    if os.environ["REPORT"] == "1":
        print("reported", update_trainjob_status(progress_percent=10, estimated_remaining_seconds=600), flush=True)
    for _ in range(1800):
        if os.path.exists(os.environ["DONE"]):
            break
        time.sleep(0.1)
'''


@pytest.fixture(scope="module")
def server(servers: Any) -> Any:
    return servers.start("waiting", env={"MPIJOB_CAPACITY": f"{GPU}=4,cpu=8,memory=16Gi"})


@pytest.fixture(scope="module")
def c(server: Any) -> Iterator[httpx.Client]:
    with https_client(server.kubeconfig) as client:
        yield client


@pytest.fixture(scope="module")
def signals() -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(dir="/tmp"))  # the pods run as their namespace's user: they can look in here
    where.chmod(0o755)
    yield where
    shutil.rmtree(where)


def gpu_job(name: str, gpus: int, command: list[str], labels: dict[str, str] | None = None,
            env: dict[str, str] | None = None) -> dict:
    """2 nodes (the launcher is one) with `gpus` GPUs each, one rank per node."""
    job = trainjob(name, command, num_nodes=2, env=env)
    job["spec"]["trainer"].update(resourcesPerNode={"limits": {GPU: gpus}}, numProcPerNode=1)
    job["metadata"]["labels"] = labels or {}
    return job


def holder(name: str, signals: Path, report: bool) -> dict:
    """All 4 GPUs, until `<signals>/<name>` exists; the same job, whatever `report` says (env is not compared)."""
    return gpu_job(name, 2, ["mpirun", "python", "-c", HOLD],
                   env={"REPORT": "1" if report else "0", "DONE": str(signals / name)})


def waiting(c: httpx.Client, job: str) -> dict[str, str]:
    """The job's Workload's annotations."""
    items = c.get(f"{KUEUE}/namespaces/default/workloads").json()["items"]
    wl = next((w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job), {"metadata": {}})
    return wl["metadata"].get("annotations") or {}


def admitted_at(c: httpx.Client, job: str) -> float:
    items = c.get(f"{KUEUE}/namespaces/default/workloads").json()["items"]
    wl = next(w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job)
    stamp = next(x for x in wl["status"]["conditions"] if x["type"] == "Admitted")["lastTransitionTime"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def cli(server: Any, *args: str) -> str:
    r = CliRunner().invoke(app, list(args), env={"MPIJOB_HOME": str(server.home), "KUBECONFIG": None})
    assert r.exit_code == 0, r.output
    return r.stdout


def test_a_waiting_job_says_what_it_needs_what_is_free_its_place_and_when(c: httpx.Client, server: Any,
                                                                         signals: Path) -> None:
    r = c.post(f"{KUEUE}/workloadpriorityclasses", json={"apiVersion": "kueue.x-k8s.io/v1beta2",
                                                        "kind": "WorkloadPriorityClass",
                                                        "metadata": {"name": "urgent"}, "value": 100})
    assert r.status_code == 201, r.text
    create(c, holder("holder", signals, report=True))
    wait_for(lambda: len(job_pods(c, "holder")) == 2 or None, "holder running")
    create(c, gpu_job("waiter", 1, ["mpirun", "true"]))
    first = wait_for(lambda: waiting(c, "waiter").get("mpijob.io/waiting"), "waiter told why", timeout=60)
    assert first.startswith("needs 2 nvidia.com/gpu, 0 of 4 free in ClusterQueue cluster-queue; "), first
    create(c, gpu_job("vip", 1, ["mpirun", "true"], labels={"kueue.x-k8s.io/priority-class": "urgent"}))

    def estimated() -> dict[str, str] | None:
        said = waiting(c, "waiter")
        ok = "mpijob.io/estimated-start" in said and "(1 of higher priority)" in said.get("mpijob.io/waiting", "")
        return said if ok else None

    said = wait_for(estimated, "the holder's report and the vip in the waiter's estimate", timeout=120)
    assert said["mpijob.io/waiting"] == ("needs 2 nvidia.com/gpu, 0 of 4 free in ClusterQueue cluster-queue; "
                                         "1 job ahead (1 of higher priority)")
    reported = datetime.fromisoformat(
        c.get("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/holder").json()["status"][
            "trainerStatus"]["lastUpdatedTime"].replace("Z", "+00:00")).timestamp()
    start = datetime.fromisoformat(said["mpijob.io/estimated-start"].replace("Z", "+00:00")).timestamp()
    assert abs(start - (reported + 600)) <= 2  # when the holder said it ends; then the vip and the waiter both fit

    sentence = ("needs 2 nvidia.com/gpu, 0 of 4 free in ClusterQueue cluster-queue; 1 job ahead (1 of higher "
                "priority); estimated start in ~")
    row = next(line for line in cli(server, "get", "trainjobs", "-o", "wide").splitlines() if line.startswith("waiter "))
    assert sentence in row and row.rstrip().endswith(" min"), row
    assert f"Message:          {sentence}" in cli(server, "describe", "trainjob", "waiter")
    with Client(kubeconfig=str(server.kubeconfig)) as sdk:
        why = sdk.waiting("waiter")
        assert isinstance(why, Waiting) and why.estimated_start is not None
        assert abs(why.estimated_start.timestamp() - start) < 1 and why.sentence().startswith(sentence)
        assert sdk.waiting("holder") is None  # it runs

    (signals / "holder").touch()
    for job in ("holder", "vip", "waiter"):
        assert condition(wait_finished(c, job, timeout=120), "Complete") is not None, job
    assert "mpijob.io/waiting" not in waiting(c, "waiter")  # admitted: nothing to say any more


def test_without_a_report_a_similar_finished_job_tells_how_long(c: httpx.Client, server: Any, signals: Path) -> None:
    """`holder` finished in the test above; `again` is the same job without a report: the waiter behind it
    is expected once `again` has run as long as `holder` did."""
    took = (datetime.fromisoformat(condition(wait_finished(c, "holder"), "Complete")["lastTransitionTime"]
                                   .replace("Z", "+00:00")).timestamp() - admitted_at(c, "holder"))
    create(c, holder("again", signals, report=False))
    wait_for(lambda: len(job_pods(c, "again")) == 2 or None, "again running")
    create(c, gpu_job("next", 2, ["mpirun", "true"]))
    said = wait_for(lambda: (w := waiting(c, "next")) and "mpijob.io/estimated-start" in w and w, "next's estimate")
    start = datetime.fromisoformat(said["mpijob.io/estimated-start"].replace("Z", "+00:00")).timestamp()
    assert abs(start - (admitted_at(c, "again") + took)) <= 2, (start, took)
    assert said["mpijob.io/waiting"] == "needs 4 nvidia.com/gpu, 0 of 4 free in ClusterQueue cluster-queue; first in line"
    (signals / "again").touch()
    assert condition(wait_finished(c, "next", timeout=120), "Complete") is not None
