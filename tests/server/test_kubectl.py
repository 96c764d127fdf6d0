"""The machine's real kubectl (1.32 via its dispatcher) against the server, unchanged."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid

import yaml

from support import UPSTREAM as _ROOT

UPSTREAM = _ROOT / "trainer"


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def configmap_yaml(name: str, value: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{app: kt}}\ndata:\n  k: '{value}'\n"


def trainjob_yaml(name: str, nodes: int = 2) -> str:
    return yaml.safe_dump({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "mpi-distributed"},
                 "trainer": {"numNodes": nodes, "command": ["mpirun", "hostname"]}},
    })


def test_version_and_api_resources(kubectl) -> None:  # type: ignore[no-untyped-def]
    out = kubectl("version", "-o", "json").stdout
    assert json.loads(out)["serverVersion"]["minor"] == "32"
    resources = kubectl("api-resources", "--no-headers").stdout
    assert "trainjobs" in resources and "clustertrainingruntimes" in resources and "configmaps" in resources


def test_apply_then_reapply_patches(kubectl) -> None:  # type: ignore[no-untyped-def]
    name = uid("cm")
    first = kubectl("apply", "-f", "-", input=configmap_yaml(name, "1"))
    assert f"configmap/{name} created" in first.stdout
    same = kubectl("apply", "-f", "-", input=configmap_yaml(name, "1"))
    assert f"configmap/{name} unchanged" in same.stdout
    changed = kubectl("apply", "-f", "-", input=configmap_yaml(name, "2"))
    assert f"configmap/{name} configured" in changed.stdout
    obj = json.loads(kubectl("get", "configmap", name, "-o", "json").stdout)
    assert obj["data"] == {"k": "2"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in obj["metadata"]["annotations"]


def test_trainjob_apply_get_table_yaml_describe_delete(kubectl) -> None:  # type: ignore[no-untyped-def]
    name = uid("tj")
    assert f"trainjob.trainer.kubeflow.org/{name} created" in kubectl("apply", "-f", "-", input=trainjob_yaml(name)).stdout
    configured = kubectl("apply", "-f", "-", input=trainjob_yaml(name).replace("hostname", "date"), check=False)
    # the trainer is immutable: kubectl prints the server's field-level cause
    assert configured.returncode != 0 and "spec.trainer" in configured.stderr
    table = kubectl("get", "trainjobs").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "AGE"]
    assert any(line.split()[0] == name for line in table[1:])
    doc = yaml.safe_load(kubectl("get", "trainjob", name, "-o", "yaml").stdout)
    assert doc["kind"] == "TrainJob" and doc["spec"]["trainer"]["numNodes"] == 2
    described = kubectl("describe", "trainjob", name).stdout
    assert f"Name:         {name}" in described and "Num Nodes:  2" in described
    deleted = kubectl("delete", "trainjob", name, timeout=30)
    assert f'trainjob.trainer.kubeflow.org "{name}" deleted' in deleted.stdout
    assert kubectl("get", "trainjob", name, check=False).returncode != 0


def test_invalid_trainjob_prints_causes(kubectl) -> None:  # type: ignore[no-untyped-def]
    bad = kubectl("apply", "-f", "-", input=trainjob_yaml(uid("bad"), nodes=0), check=False)
    assert bad.returncode != 0
    assert "is invalid" in bad.stderr and "numNodes" in bad.stderr


def test_upstream_runtime_applies_unchanged(kubectl) -> None:  # type: ignore[no-untyped-def]
    path = UPSTREAM / "runtime_deepspeed_distributed.yaml"
    kubectl("apply", "-f", str(path))
    again = kubectl("apply", "-f", str(path))
    assert "unchanged" in again.stdout
    names = kubectl("get", "clustertrainingruntimes", "-o", "name").stdout.split()
    assert "clustertrainingruntime.trainer.kubeflow.org/deepspeed-distributed" in names


def test_server_side_apply_and_dry_run(kubectl) -> None:  # type: ignore[no-untyped-def]
    name = uid("ssa")
    dry = kubectl("apply", "--dry-run=server", "-f", "-", input=configmap_yaml(name, "x"))
    assert "server dry run" in dry.stdout
    assert kubectl("get", "cm", name, check=False).returncode != 0
    out = kubectl("apply", "--server-side", "-f", "-", input=configmap_yaml(name, "x"))
    assert f"configmap/{name} serverside-applied" in out.stdout
    assert json.loads(kubectl("get", "cm", name, "-o", "json").stdout)["data"] == {"k": "x"}


def test_get_pods_with_selector_and_wide(kubectl, http) -> None:  # type: ignore[no-untyped-def]
    job = uid("job")
    for role in ("launcher", "node"):
        pod = {"metadata": {"name": f"{job}-{role}-0-0", "labels": {"jobset.sigs.k8s.io/jobset-name": job,
                                                                    "jobset.sigs.k8s.io/replicatedjob-name": role}},
               "spec": {"containers": [{"name": "node", "image": "busybox"}], "nodeName": "localhost"}}
        assert http.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
    out = kubectl("get", "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={job},"
                  "jobset.sigs.k8s.io/replicatedjob-name in (launcher)").stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [line.split()[:3] for line in out[1:]] == [[f"{job}-launcher-0-0", "0/1", "Pending"]]
    wide = kubectl("get", "pods", "-o", "wide", "-l", f"jobset.sigs.k8s.io/jobset-name={job}").stdout.splitlines()
    assert wide[0].split()[5:7] == ["IP", "NODE"] and len(wide) == 3 and "localhost" in wide[1]


def test_delete_waits_and_wait_for_delete(kubectl) -> None:  # type: ignore[no-untyped-def]
    name = uid("gone")
    kubectl("apply", "-f", "-", input=configmap_yaml(name, "1"))
    result: dict[str, subprocess.CompletedProcess[str]] = {}
    t = threading.Thread(target=lambda: result.setdefault("w", kubectl("wait", "--for=delete", f"cm/{name}",
                                                                       "--timeout=30s", check=False, timeout=40)))
    t.start()
    time.sleep(1)  # let the wait reach its watch; the outcome does not depend on this
    kubectl("delete", "cm", name)
    t.join(45)
    assert result["w"].returncode == 0, result["w"].stderr
    assert "condition met" in result["w"].stdout or "deleted" in result["w"].stdout


def test_get_watch_streams_events(kubectl) -> None:  # type: ignore[no-untyped-def]
    name = uid("watched")
    out: dict[str, subprocess.CompletedProcess[str]] = {}
    t = threading.Thread(target=lambda: out.setdefault("w", kubectl(
        "get", "cm", "-w", "--output-watch-events", "--request-timeout=4s", "-l", "app=kt-watch", check=False,
        timeout=20)))
    t.start()
    time.sleep(1.5)
    kubectl("apply", "-f", "-", input=configmap_yaml(name, "1").replace("app: kt", "app: kt-watch"))
    kubectl("delete", "cm", name)
    t.join(25)
    lines = [line.split()[:2] for line in out["w"].stdout.splitlines()]
    assert ["ADDED", name] in lines and ["DELETED", name] in lines


def test_describe_configmap_and_events(kubectl, http) -> None:  # type: ignore[no-untyped-def]
    name = uid("desc")
    kubectl("apply", "-f", "-", input=configmap_yaml(name, "v"))
    obj = http.get(f"/api/v1/namespaces/default/configmaps/{name}").json()
    event = {"metadata": {"name": f"{name}.1"}, "type": "Normal", "reason": "Tested", "message": "hello from test",
             "involvedObject": {"kind": "ConfigMap", "name": name, "namespace": "default",
                                "uid": obj["metadata"]["uid"], "apiVersion": "v1"},
             "firstTimestamp": obj["metadata"]["creationTimestamp"], "lastTimestamp": obj["metadata"]["creationTimestamp"],
             "count": 1, "source": {"component": "test"}}
    assert http.post("/api/v1/namespaces/default/events", json=event).status_code == 201
    described = kubectl("describe", "configmap", name).stdout
    assert f"Name:         {name}" in described and "Tested" in described and "hello from test" in described
    events = kubectl("get", "events", "--field-selector", f"involvedObject.name={name}").stdout.splitlines()
    assert events[0].split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"]
    assert f"configmap/{name}" in events[1]


def test_logs(kubectl, http, server) -> None:  # type: ignore[no-untyped-def]
    from mpijob.store.logs import LogStore

    pod = uid("logpod")
    body = {"metadata": {"name": pod}, "spec": {"containers": [{"name": "node", "image": "busybox"}]}}
    assert http.post("/api/v1/namespaces/default/pods", json=body).status_code == 201
    w = LogStore(server.home / "logs").writer("default", pod, "node")
    w.write(b"alpha\nbeta\n")
    w.close()
    assert kubectl("logs", pod).stdout == "alpha\nbeta\n"
    assert kubectl("logs", pod, "--tail=1", "-c", "node").stdout == "beta\n"
    status = {"status": {"phase": "Succeeded", "containerStatuses": [{"name": "node", "ready": False,
              "restartCount": 0, "image": "busybox", "imageID": "", "state": {"terminated": {"exitCode": 0}}}]}}
    http.patch(f"/api/v1/namespaces/default/pods/{pod}/status", content=json.dumps(status),
               headers={"Content-Type": "application/merge-patch+json"})
    followed = kubectl("logs", "-f", pod, timeout=30)  # returns because the container terminated
    assert followed.stdout == "alpha\nbeta\n"


def test_unauthorized_kubectl(kubectl, server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = yaml.safe_load(server.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "wrong"
    bad = tmp_path / "kubeconfig"
    bad.write_text(yaml.safe_dump(config))
    proc = subprocess.run(["/usr/bin/kubectl", "--kubeconfig", str(bad), "--cache-dir", str(tmp_path / "c"),
                           "get", "cm"], capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and "You must be logged in to the server" in proc.stderr


def test_typed_creates_send_protobuf(kubectl) -> None:  # type: ignore[no-untyped-def]
    ns = uid("team")
    assert f"namespace/{ns} created" in kubectl("create", "namespace", ns).stdout
    kubectl("create", "configmap", "settings", "-n", ns, "--from-literal=mode=fast", "--from-literal=empty=")
    kubectl("create", "secret", "generic", "creds", "-n", ns, "--from-literal=password=hunter2")
    cm = json.loads(kubectl("get", "configmap", "settings", "-n", ns, "-o", "json").stdout)
    assert cm["data"] == {"mode": "fast", "empty": ""} and "generateName" not in cm["metadata"]
    secret = json.loads(kubectl("get", "secret", "creds", "-n", ns, "-o", "json").stdout)
    assert secret["type"] == "Opaque" and secret["data"] == {"password": "aHVudGVyMg=="}
    kubectl("create", "serviceaccount", "trainer", "-n", ns)
    assert json.loads(kubectl("get", "sa", "trainer", "-n", ns, "-o", "json").stdout)["metadata"]["name"] == "trainer"
    kubectl("create", "quota", "gpus", "-n", ns, "--hard=requests.nvidia.com/gpu=4,count/trainjobs.trainer.kubeflow.org=2")
    quota = json.loads(kubectl("get", "quota", "gpus", "-n", ns, "-o", "json").stdout)
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "4", "count/trainjobs.trainer.kubeflow.org": "2"}
    kubectl("delete", "namespace", ns)
    assert kubectl("get", "configmap", "settings", "-n", ns, check=False).returncode != 0
