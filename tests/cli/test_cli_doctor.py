"""`mpijob doctor`'s output and exit codes: one line per check with the fix under it, a summary, JSON with
`-o json`; exit 0 with warnings only, 1 when a check fails, 8 when the API server cannot be reached."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from cli_support import Invoke
from mpijob.client.doctor import NAMES

KUBECTL = "/usr/bin/kubectl"


def kubectl(server: Any, *args: str, input: str | None = None) -> None:
    subprocess.run([KUBECTL, "--kubeconfig", str(server.kubeconfig), *args], input=input, text=True,
                   capture_output=True, check=True, timeout=60)


def job_file(tmp_path: Path, trainer: dict[str, Any] | None = None, namespace: str | None = None) -> Path:
    meta: dict[str, Any] = {"name": "pi", **({"namespace": namespace} if namespace else {})}
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
           "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 2, **(trainer or {})}}}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def test_text_report_lists_every_check_and_exits_0_when_all_pass(mpijob: Invoke) -> None:
    r = mpijob("doctor")
    assert r.exit_code == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Checking a default TrainJob (runtime mpi-distributed") and "namespace default" in lines[0]
    rows = [line.split()[:2] for line in lines if line[:4] in ("PASS", "WARN", "FAIL", "SKIP")]
    assert rows == [["PASS", name] for name in NAMES]
    assert lines[-1] == f"{len(NAMES)} checks: {len(NAMES)} passed"


def test_a_warning_alone_exits_0_and_shows_its_fix(mpijob: Invoke, server: Any) -> None:
    ns = f"doctor-cli-{os.urandom(3).hex()}"
    kubectl(server, "create", "namespace", ns)
    ssh_only = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "ssh-only"},
                "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"ports": [{"port": 2222}]}]}}
    kubectl(server, "apply", "-n", ns, "-f", "-", input=json.dumps(ssh_only))
    r = mpijob("doctor", "-n", ns)
    assert r.exit_code == 0, r.stdout
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("WARN  network-policy"))
    assert "NetworkPolicy ssh-only lets ssh through on port 2222" in lines[at]
    assert lines[at + 1].lstrip().startswith("fix: allow every port between the job's pods")
    assert lines[-1] == f"{len(NAMES)} checks: {len(NAMES) - 1} passed, 1 warned"


def test_json_shows_warnings_and_failures_and_a_failure_exits_1(mpijob: Invoke, tmp_path: Path) -> None:
    path = job_file(tmp_path, {"numProcPerNode": 4, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}})
    r = mpijob("doctor", "-f", str(path), "-o", "json")
    assert r.exit_code == 1, r.stdout
    body = json.loads(r.stdout)
    slots = next(c for c in body["checks"] if c["name"] == "slots")
    assert slots["status"] == "WARN" and "numProcPerNode: 2" in slots["fix"]
    # the machine has no GPU: its ClusterQueue can never give 4, and no Node holds a pod asking 2
    failed = {c["name"]: c for c in body["checks"] if c["status"] == "FAIL"}
    assert list(failed) == ["quota", "nodes"], failed
    assert "nvidia.com/gpu" in failed["quota"]["finding"] and "0 nvidia.com/gpu allocatable" in failed["nodes"]["finding"]
    assert body["summary"] == {"pass": len(NAMES) - 3, "warn": 1, "fail": 2, "skip": 0}


def test_a_failure_exits_1_with_its_fix_under_it(mpijob: Invoke, server: Any, tmp_path: Path) -> None:
    ns = f"doctor-cli-{os.urandom(3).hex()}"
    kubectl(server, "create", "namespace", ns)
    kubectl(server, "label", "namespace", ns, "istio-injection=enabled")
    r = mpijob("doctor", "-n", ns)
    assert r.exit_code == 1, r.stdout
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("FAIL  istio"))
    assert lines[at + 1].lstrip().startswith('fix: add the annotation sidecar.istio.io/inject: "false"')
    assert lines[-1] == f"{len(NAMES)} checks: {len(NAMES) - 1} passed, 1 failed"
    assert "a check failed" in r.stderr


def test_json_has_every_check_and_the_summary(mpijob: Invoke, tmp_path: Path) -> None:
    r = mpijob("doctor", "-f", str(job_file(tmp_path)), "-o", "json")
    assert r.exit_code == 0, r.stdout
    body = json.loads(r.stdout)
    assert body["job"] == "pi" and body["namespace"] == "default" and body["file"].endswith("job.yaml")
    assert [c["name"] for c in body["checks"]] == list(NAMES)
    assert all(set(c) == {"name", "status", "finding", "fix"} for c in body["checks"])
    assert body["summary"] == {"pass": len(NAMES), "warn": 0, "fail": 0, "skip": 0}


def test_an_unreachable_server_exits_8_without_a_traceback(mpijob: Invoke, server: Any, tmp_path: Path) -> None:
    config = yaml.safe_load(server.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    path = tmp_path / "gone.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    r = mpijob("doctor", "--kubeconfig", str(path))
    assert r.exit_code == 8, r.stdout + r.stderr
    assert r.stdout.splitlines()[2].startswith("FAIL  api") and "Traceback" not in r.stdout + r.stderr
    assert "fix: start the local cluster (`mpijob server start`)" in r.stdout
    assert f"{len(NAMES) - 1} skipped" in r.stdout


def test_refused_credentials_exit_5(mpijob: Invoke, server: Any, tmp_path: Path) -> None:
    config = yaml.safe_load(server.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "not-a-token"
    path = tmp_path / "stale.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    r = mpijob("doctor", "--kubeconfig", str(path))
    assert r.exit_code == 5, r.stdout + r.stderr
    assert "refused the credentials" in r.stdout and "use a current kubeconfig" in r.stdout


def test_bad_input_is_refused_before_anything_is_checked(mpijob: Invoke, tmp_path: Path) -> None:
    r = mpijob("doctor", "-o", "yaml")
    assert r.exit_code == 2 and "doctor --output 'yaml' is not supported; use json" in r.stderr
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    r = mpijob("doctor", "-f", str(cm))
    assert r.exit_code == 3 and "holds no TrainJob" in r.stderr and r.stdout == ""
    r = mpijob("doctor", "-f", str(job_file(tmp_path, namespace="team-a")), "-n", "team-b")
    assert r.exit_code == 3 and "does not match the job's metadata.namespace 'team-a'" in r.stderr
