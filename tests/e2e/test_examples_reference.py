"""The reference workloads of examples/ run on the local cluster as they are shipped: the mpi4py
collectives with their checks on 3 nodes, and the digits classifier (allreduced gradients) reaching its
stated accuracy on 2 nodes and resuming from its checkpoint on a claim after a suspension."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from e2e_support import (
    TRAINER,
    condition,
    create,
    job_pods,
    launcher_of,
    pod_log,
    wait_finished,
    wait_for,
    wait_launcher,
    wait_log,
)

NS = "examples-ref-e2e"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MERGE = {"Content-Type": "application/merge-patch+json"}
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
PVCS = f"/api/v1/namespaces/{NS}/persistentvolumeclaims"


@pytest.fixture(scope="module")
def namespace(api: httpx.Client) -> Iterator[str]:
    r = api.post("/api/v1/namespaces", json={"metadata": {"name": NS}})
    assert r.status_code in (201, 409), r.text
    yield NS
    api.delete(f"/api/v1/namespaces/{NS}")


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def launcher_log(c: httpx.Client, name: str) -> str:
    return pod_log(c, launcher_of(job_pods(c, name, NS))["metadata"]["name"], NS)


def digits_job(name: str, claim: str, env: dict[str, str]) -> dict:
    """examples/digits/digits.yaml's TrainJob, renamed, its claim renamed, train.py at this checkout's path."""
    job = documents(EXAMPLES / "digits" / "digits.yaml")[1]
    job["metadata"]["name"] = name
    trainer = job["spec"]["trainer"]
    trainer["command"] = ["mpirun", "python", str(EXAMPLES / "digits" / "train.py")]
    given = {e["name"]: e["value"] for e in trainer["env"]} | env
    trainer["env"] = [{"name": k, "value": v} for k, v in given.items()]
    for rjob in job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = claim
    return job


def make_claim(c: httpx.Client, name: str) -> None:
    obj = documents(EXAMPLES / "digits" / "digits.yaml")[0]
    obj["metadata"]["name"] = name
    r = c.post(PVCS, json=obj)
    assert r.status_code == 201, r.text
    wait_for(lambda: (c.get(f"{PVCS}/{name}").json().get("status") or {}).get("phase") == "Bound",
             f"claim {name} to be Bound")


def final_accuracy(log: str) -> float:
    found = re.search(r"final test accuracy (\d\.\d+)", log)
    assert found, log
    return float(found.group(1))


def test_collectives_on_three_nodes(api: httpx.Client, namespace: str) -> None:
    job = documents(EXAMPLES / "collectives" / "collectives.yaml")[0]
    assert job["spec"]["trainer"]["numNodes"] == 3
    create(api, job, namespace)
    done = wait_finished(api, "collectives", namespace, timeout=180)
    log = launcher_log(api, "collectives")
    assert condition(done, "Complete"), log
    assert "collectives ok: bcast scatter reduce allreduce gather allgather checked on 3 ranks (6 per rank)" in log


def test_digits_reaches_stated_accuracy_on_two_nodes(api: httpx.Client, namespace: str) -> None:
    make_claim(api, "digits-acc")
    create(api, digits_job("digits-acc", "digits-acc", {}), namespace)
    done = wait_finished(api, "digits-acc", namespace, timeout=240)
    log = launcher_log(api, "digits-acc")
    assert condition(done, "Complete"), log
    assert final_accuracy(log) >= 0.95, log
    assert "2 ranks" in log and "checkpoint: epoch 30 -> /checkpoints/digits.npz" in log, log


def test_digits_resumes_from_checkpoint_after_suspension(api: httpx.Client, namespace: str) -> None:
    name = "digits-resume"
    make_claim(api, name)
    create(api, digits_job(name, name, {"EPOCH_SLEEP": "1"}), namespace)
    first = wait_launcher(api, name, namespace)
    wait_log(api, first, lambda text: "checkpoint: epoch 2 " in text, namespace)
    r = api.patch(f"{TRAINER}/namespaces/{namespace}/trainjobs/{name}", json={"spec": {"suspend": True}},
                  headers=MERGE)
    assert r.status_code == 200, r.text
    wait_for(lambda: not job_pods(api, name, namespace), f"{name}'s pods to go after suspension", timeout=120)
    r = api.patch(f"{TRAINER}/namespaces/{namespace}/trainjobs/{name}", json={"spec": {"suspend": False}},
                  headers=MERGE)
    assert r.status_code == 200, r.text
    done = wait_finished(api, name, namespace, timeout=300)
    log = launcher_log(api, name)
    assert condition(done, "Complete"), log
    resumed = re.search(r"resumed from epoch (\d+)", log)
    assert resumed and int(resumed.group(1)) >= 2, log
    assert final_accuracy(log) >= 0.95, log


KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
DRY = "examples-ref-dry"


@pytest.fixture(scope="module")
def reference_namespace(api: httpx.Client) -> Iterator[str]:
    """What the reference jobs name, made first: their namespace, the GPU runtime (from
    `mpijob platform render`, when the server lacks it) and a LocalQueue `reference` on a ClusterQueue
    large enough for 16 nodes of 8 GPUs."""
    render = subprocess.run([str(Path(sys.executable).with_name("mpijob")), "platform", "render", "--gpus-per-node", "8"],
                            capture_output=True, text=True, check=True)
    runtime = next(d for d in yaml.safe_load_all(render.stdout)
                   if d and d["kind"] == "ClusterTrainingRuntime" and d["metadata"]["name"] == "mpi-distributed-gpu")
    r = api.post(f"{TRAINER}/clustertrainingruntimes", json=runtime)
    assert r.status_code in (201, 409), r.text
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": DRY}}).status_code in (201, 409)
    quotas = [{"name": "cpu", "nominalQuota": 1024}, {"name": "memory", "nominalQuota": "8Ti"},
              {"name": "nvidia.com/gpu", "nominalQuota": 256}]
    cq = {"metadata": {"name": "examples-ref"}, "spec": {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [{"name": "default-flavor", "resources": quotas}]}]}}
    assert api.post(f"{KUEUE}/clusterqueues", json=cq).status_code == 201
    lq = {"metadata": {"name": "reference", "namespace": DRY}, "spec": {"clusterQueue": "examples-ref"}}
    assert api.post(f"{KUEUE}/namespaces/{DRY}/localqueues", json=lq).status_code == 201
    yield DRY
    api.delete(f"/api/v1/namespaces/{DRY}")
    api.delete(f"{KUEUE}/clusterqueues/examples-ref")


@pytest.mark.parametrize("nodes", [2, 8, 16])
def test_reference_architecture_passes_server_dry_run(api: httpx.Client, kubectl: Kubectl, reference_namespace: str,
                                                      nodes: int) -> None:
    path = EXAMPLES / "reference" / f"train-{nodes}-nodes.yaml"
    claim, job = documents(path)
    assert job["spec"]["trainer"]["numNodes"] == nodes and job["spec"]["trainer"]["numProcPerNode"] == 8
    assert job["spec"]["runtimeRef"]["name"] == "mpi-distributed-gpu"
    out = kubectl("apply", "--dry-run=server", "-n", reference_namespace, "-f", str(path))
    assert f"trainjob.trainer.kubeflow.org/reference-{nodes}-nodes created (server dry run)" in out.stdout, out
    assert f"persistentvolumeclaim/{claim['metadata']['name']} created (server dry run)" in out.stdout, out
    # A dry run creates nothing.
    assert api.get(f"{TRAINER}/namespaces/{reference_namespace}/trainjobs/reference-{nodes}-nodes").status_code == 404


def torch_installed() -> bool:
    """Whether the server's environment (this one: pods use it) can import torch."""
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


def test_torch_ddp_runs_or_documents_its_install(api: httpx.Client, kubectl: Kubectl, namespace: str) -> None:
    path = EXAMPLES / "torch-ddp" / "torch-ddp.yaml"
    job = documents(path)[0]
    job["spec"]["trainer"]["command"] = ["mpirun", "python", str(EXAMPLES / "torch-ddp" / "train.py")]
    if torch_installed():
        create(api, job, namespace)
        done = wait_finished(api, "torch-ddp", namespace, timeout=300)
        log = launcher_log(api, "torch-ddp")
        assert condition(done, "Complete"), log
        found = re.search(r"torch ddp: test accuracy (\d\.\d+) on 2 ranks", log)
        assert found and float(found.group(1)) >= 0.9, log
        return
    readme = (EXAMPLES / "torch-ddp" / "README.md").read_text()
    assert "pip install torch" in readme
    out = kubectl("apply", "--dry-run=server", "-n", namespace, "-f", str(path))
    assert "trainjob.trainer.kubeflow.org/torch-ddp created (server dry run)" in out.stdout, out
