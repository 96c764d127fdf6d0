"""The reference workloads of examples/ run on the local cluster as they are shipped: the mpi4py
collectives with their checks on 3 nodes, and the digits classifier (allreduced gradients, its program in
a ConfigMap) reaching its stated accuracy on 2 nodes and, preempted by a higher-priority job, writing a
checkpoint on SIGTERM to its claim and resuming from it once re-admitted."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from support import (
    TRAINER,
    condition,
    create,
    events_of,
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
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


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


@pytest.fixture(scope="module")
def digits_code(api: httpx.Client, namespace: str) -> str:
    """The ConfigMap the digits job mounts its program from, made as its README says."""
    code = {"metadata": {"name": "digits-code"}, "data": {"train.py": (EXAMPLES / "digits" / "train.py").read_text()}}
    r = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=code)
    assert r.status_code == 201, r.text
    return "digits-code"


def digits_job(name: str, claim: str, env: dict[str, str]) -> dict:
    """examples/digits/digits.yaml's TrainJob, renamed, its claim renamed, `env` added to its trainer.env."""
    job = documents(EXAMPLES / "digits" / "digits.yaml")[1]
    job["metadata"]["name"] = name
    trainer = job["spec"]["trainer"]
    given = {e["name"]: e["value"] for e in trainer["env"]} | env
    trainer["env"] = [{"name": k, "value": v} for k, v in given.items()]
    for rjob in job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = claim
    return job


def follow(c: httpx.Client, pod: str, namespace: str) -> Callable[[], str]:
    """Follow a pod's log from now until its container ends; the returned call waits for that and gives
    the whole log (a pod deleted with its job takes its log with it, as in Kubernetes)."""
    chunks: list[str] = []

    def read() -> None:
        url = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
        with c.stream("GET", url, params={"follow": "true"}, timeout=None) as r:
            chunks.extend(r.iter_text())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def whole() -> str:
        reader.join(timeout=120)
        assert not reader.is_alive(), f"{pod}'s log did not end"
        return "".join(chunks)
    return whole


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


def test_digits_reaches_stated_accuracy_on_two_nodes(api: httpx.Client, namespace: str, digits_code: str) -> None:
    make_claim(api, "digits-acc")
    create(api, digits_job("digits-acc", "digits-acc", {}), namespace)
    done = wait_finished(api, "digits-acc", namespace, timeout=240)
    log = launcher_log(api, "digits-acc")
    assert condition(done, "Complete"), log
    assert final_accuracy(log) >= 0.95, log
    assert "2 ranks" in log and "checkpoint: epoch 30 -> /checkpoints/digits.npz" in log, log


def preempting_queue(c: httpx.Client, namespace: str) -> None:
    """LocalQueue `preempt` on a ClusterQueue of one CPU that preempts lower priorities, and the
    WorkloadPriorityClasses `examples-low` and `examples-high`."""
    cq = {"metadata": {"name": "examples-preempt"}, "spec": {
        "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}}
    assert c.post(f"{KUEUE}/clusterqueues", json=cq).status_code == 201
    lq = {"metadata": {"name": "preempt"}, "spec": {"clusterQueue": "examples-preempt"}}
    assert c.post(f"{KUEUE}/namespaces/{namespace}/localqueues", json=lq).status_code == 201
    for name, value in (("examples-low", 10), ("examples-high", 1000)):
        r = c.post(f"{KUEUE}/workloadpriorityclasses", json={"metadata": {"name": name}, "value": value})
        assert r.status_code in (201, 409), r.text


def queued(job: dict, priority: str) -> dict:
    """`job` in queue `preempt` at `priority`, half a CPU per pod: its launcher and node fill the queue."""
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "preempt", "kueue.x-k8s.io/priority-class": priority}
    job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "500m"}}
    return job


def test_digits_preempted_checkpoints_on_sigterm_and_resumes(api: httpx.Client, namespace: str,
                                                             digits_code: str) -> None:
    name = "digits-resume"
    preempting_queue(api, namespace)
    make_claim(api, name)
    create(api, queued(digits_job(name, name, {"EPOCH_SLEEP": "1"}), "examples-low"), namespace)
    first = wait_launcher(api, name, namespace)
    first_log = follow(api, first, namespace)
    wait_log(api, first, lambda text: "checkpoint: epoch 2 " in text, namespace)
    high = queued(documents(EXAMPLES / "pi.yaml")[0], "examples-high")
    high["spec"]["trainer"]["numNodes"] = 2
    create(api, high, namespace)

    # The preempted job's ranks were told (SIGTERM), finished their epoch and wrote a checkpoint.
    stopped = re.search(r"SIGTERM: stopped after epoch (\d+), checkpoint written", first_log())
    assert stopped, first_log()
    reasons = {e["reason"]: e["message"] for e in events_of(api, name, namespace)}
    assert "Preempted" in reasons, reasons
    assert condition(wait_finished(api, "pi", namespace, timeout=180), "Complete")

    # Re-admitted, it starts again from that checkpoint and still reaches the accuracy.
    done = wait_finished(api, name, namespace, timeout=300)
    log = launcher_log(api, name)
    assert condition(done, "Complete"), log
    assert f"resumed from epoch {stopped.group(1)}" in log, log
    assert final_accuracy(log) >= 0.95, log
    api.delete(f"{TRAINER}/namespaces/{namespace}/trainjobs/pi")
    api.delete(f"{KUEUE}/clusterqueues/examples-preempt")


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


def test_torch_ddp_reaches_its_accuracy_on_two_nodes(api: httpx.Client, namespace: str) -> None:
    imported = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True)
    assert imported.returncode == 0, ("torch is missing from the server's environment (make test installs "
                                      f"mpijob[examples]): {imported.stderr}")
    code = {"metadata": {"name": "torch-ddp-code"}, "data": {"train.py": (EXAMPLES / "torch-ddp" / "train.py").read_text()}}
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=code).status_code == 201
    create(api, documents(EXAMPLES / "torch-ddp" / "torch-ddp.yaml")[0], namespace)
    done = wait_finished(api, "torch-ddp", namespace, timeout=300)
    log = launcher_log(api, "torch-ddp")
    assert condition(done, "Complete"), log
    found = re.search(r"torch ddp: test accuracy (\d\.\d+) on 2 ranks", log)
    assert found and float(found.group(1)) >= 0.9, log
