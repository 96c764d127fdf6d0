"""spec.runtimePatches on the local cluster: a TrainJob patches its runtime (pod labels and annotations,
nodeSelector, the pods' user) and its pods show it and run with it; what the local cluster cannot do
is refused with a 422 naming the field, as are the patches Trainer's webhook refuses."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from mpijob.api import names

from support import TRAINER, by_role, condition, job_pods, launcher_of, pod_log, trainjob, wait_finished

NS = "rp-e2e"
POD = "trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def namespace(api: httpx.Client) -> Iterator[int]:
    """A namespace of the module's own; its first UID (what its pods may run as)."""
    r = api.post("/api/v1/namespaces", json={"metadata": {"name": NS}})
    assert r.status_code in (201, 409), r.text
    ns = api.get(f"/api/v1/namespaces/{NS}").json()
    yield int(ns["metadata"]["annotations"][names.ANNOTATION_UID_RANGE].split("/")[0])
    api.delete(f"/api/v1/namespaces/{NS}")


def patched(name: str, command: list[str], pods: dict[str, dict], meta: dict | None = None) -> dict:
    """A TrainJob whose one patch entry gives each named replicatedJob's pods `pods[rjob]` (and `meta`)."""
    job = trainjob(name, command, num_nodes=2)
    rjobs = [{"name": rjob, "template": {"spec": {"template": {"spec": spec, **({"metadata": meta} if meta else {})}}}}
             for rjob, spec in pods.items()]
    job["spec"]["runtimePatches"] = [{"manager": "example.com/e2e",
                                      "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": rjobs}}}}]
    return job


def test_patched_labels_annotations_placement_and_ids_reach_the_pods(api: httpx.Client, kubectl: Kubectl,
                                                                      namespace: int) -> None:
    uid = namespace
    spec = {"nodeSelector": {names.LABEL_OS: "linux"}, "securityContext": {"runAsUser": uid}}
    meta = {"labels": {"team": "ml"}, "annotations": {"example.com/note": "patched"}}
    job = patched("rp-run", ["mpirun", "bash", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK uid $(id -u)"'],
                  {"node": spec, "launcher": spec}, meta)
    r = api.post(f"{TRAINER}/namespaces/{NS}/trainjobs", json=job)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["runtimePatches"][0]["time"].endswith("Z")  # Trainer's webhook stamps each entry
    done = wait_finished(api, "rp-run", NS)
    assert condition(done, "Complete"), done.get("status")
    pods = job_pods(api, "rp-run", NS)
    assert len(pods) == 2
    node_name = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout
    for pod in pods:
        assert pod["metadata"]["labels"]["team"] == "ml"
        assert pod["metadata"]["annotations"]["example.com/note"] == "patched"
        assert pod["spec"]["nodeSelector"] == {names.LABEL_OS: "linux"}
        assert pod["spec"]["nodeName"] == node_name  # bound by the scheduler to the machine's Node
    log = pod_log(api, launcher_of(pods)["metadata"]["name"], NS)
    assert f"rank 0 uid {uid}" in log and f"rank 1 uid {uid}" in log, log
    shown = kubectl("get", "pods", "-n", NS, "-l", "team=ml", "-o", "name").stdout.split()
    assert sorted(shown) == sorted(f"pod/{p['metadata']['name']}" for p in pods)
    assert by_role(pods, "node")[0]["spec"]["securityContext"]["runAsUser"] == uid


@pytest.mark.parametrize("pod,field,words", [
    ({"volumes": [{"name": "d", "nfs": {"server": "nas", "path": "/x"}}]}, f"spec.runtimePatches[0].{POD}.volumes[0]",
     "use a hostPath volume"),
    ({"containers": [{"name": "node", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
     "spec.runtimePatches", 'volumeMounts[0].name: Not found: "d"'),
    ({"initContainers": [{"name": "fetch"}]}, f"spec.runtimePatches[0].{POD}.initContainers", "init containers"),
    ({"containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}]},
     f"spec.runtimePatches[0].{POD}.containers[0].env", "spec.trainer.env"),
])
def test_refused_patch_fields_get_a_422_naming_the_field(api: httpx.Client, namespace: int, pod: dict, field: str,
                                                         words: str) -> None:
    r = api.post(f"{TRAINER}/namespaces/{NS}/trainjobs", json=patched("rp-refused", ["mpirun", "true"], {"node": pod}))
    assert r.status_code == 422, r.text
    causes = r.json()["details"]["causes"]
    assert any(c["field"] == field and words in c["message"] for c in causes), causes
    assert api.get(f"{TRAINER}/namespaces/{NS}/trainjobs/rp-refused").status_code == 404  # nothing created


def test_kubectl_shows_the_refusal_of_a_patch_for_a_job_the_runtime_lacks(kubectl: Kubectl, namespace: int,
                                                                          tmp_path: Path) -> None:
    job = patched("rp-worker", ["mpirun", "true"], {"worker": {"nodeSelector": {"a": "b"}}})
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    out = kubectl("apply", "-n", NS, "-f", str(path), check=False)
    assert out.returncode != 0
    assert "replicatedJobs[0].name" in out.stderr and "doesn't exist in the runtime job template" in out.stderr, \
        out.stderr
