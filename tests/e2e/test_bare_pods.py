"""A bare pod (docs/bare-pods.md): a Pod no job owns, as `kubectl run` makes it, runs on the local cluster as a
process tree: its exit code and log, its restarts with the kubelet's back-off, its address, `kubectl exec`, a
graceful delete that leaves no process, the 422 of what cannot run here, and a server restart it runs through."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob.store.server_process import ServerInfo

from support import events_of, job_processes, kubectl_runner, pod_log, wait_for, wait_no_processes

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
PODS = "/api/v1/namespaces/default/pods"


def _pod(api: httpx.Client, name: str) -> dict[str, Any] | None:
    r = api.get(f"{PODS}/{name}")
    return r.json() if r.status_code == 200 else None


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    (status,) = pod["status"]["containerStatuses"]
    return dict(status)


def _running(api: httpx.Client, name: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        pod = _pod(api, name)
        return pod if pod and (pod.get("status") or {}).get("phase") == "Running" \
            and "running" in _container(pod)["state"] else None

    return wait_for(probe, f"pod {name} running")


@pytest.fixture()
def delete_after(kubectl: Kubectl) -> Any:
    names: list[str] = []
    yield names.append
    for name in names:
        kubectl("delete", "pod", name, "--ignore-not-found", "--grace-period=1", check=False)


def test_kubectl_run_never_ends_failed_with_its_exit_code_and_its_log(
    kubectl: Kubectl, api: httpx.Client, delete_after: Callable[[str], None]
) -> None:
    name = "ee-bare-exit"
    delete_after(name)
    created = kubectl("run", name, "--image=busybox", "--restart=Never", "--", "sh", "-c",
                      "echo hi; sleep 1; echo bye; exit 3")
    assert f"pod/{name} created" in created.stdout
    followed = kubectl("logs", "-f", name, timeout=60)  # follows until the container ends
    assert followed.stdout == "hi\nbye\n", followed
    pod = wait_for(lambda: (p := _pod(api, name)) and p["status"].get("phase") == "Failed" and p, f"{name} Failed")
    terminated = _container(pod)["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error"), terminated
    assert _container(pod)["restartCount"] == 0 and pod["spec"]["restartPolicy"] == "Never"
    assert kubectl("logs", name).stdout == "hi\nbye\n"
    assert pod["spec"]["containers"][0]["image"] == "busybox"  # recorded, not pulled
    reasons = {e["reason"]: e for e in events_of(api, name)}
    assert {"Scheduled", "Created", "Started"} <= set(reasons) and "Pulled" not in reasons, reasons
    assert reasons["Started"]["source"]["component"] == "kubelet"
    assert kubectl("get", "pod", name, "--no-headers").stdout.split()[2] == "Error"
    workloads = api.get("/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads").json()["items"]
    assert not [w for w in workloads if name in json.dumps(w["metadata"].get("ownerReferences"))]  # not queued


def test_a_bare_pod_mounts_its_volumes_where_the_sandbox_can(
    api: httpx.Client, server: ServerInfo, delete_after: Callable[[str], None]
) -> None:
    name = "ee-bare-volumes"
    delete_after(name)
    config = {"metadata": {"name": name}, "data": {"greeting": "hello from a ConfigMap"}}
    assert api.post("/api/v1/namespaces/default/configmaps", json=config).status_code == 201
    try:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
            "restartPolicy": "Never",
            "volumes": [{"name": "cfg", "configMap": {"name": name}}, {"name": "scratch", "emptyDir": {}}],
            "containers": [{"name": "main", "image": "busybox", "workingDir": "/scratch",
                            "command": ["sh", "-c", "cat /etc/cfg/greeting; echo; touch made && pwd"],
                            "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"},
                                             {"name": "scratch", "mountPath": "/scratch"}]}]}}
        r = api.post(PODS, json=pod)
        if server.sandbox_mode == "process":  # it cannot mount them: refused, saying so, rather than run without
            assert r.status_code == 422 and "spec.volumes" in r.text, r.text
            return
        assert r.status_code == 201, r.text
        done = wait_for(lambda: (p := _pod(api, name)) and p["status"].get("phase") in ("Succeeded", "Failed") and p,
                        f"{name} finished")
        assert done["status"]["phase"] == "Succeeded", (done["status"], pod_log(api, name))
        assert pod_log(api, name) == "hello from a ConfigMap\n/scratch\n"
    finally:
        api.delete(f"/api/v1/namespaces/default/configmaps/{name}")


def test_the_default_restart_policy_restarts_a_crashing_container_with_back_off(
    kubectl: Kubectl, api: httpx.Client, delete_after: Callable[[str], None]
) -> None:
    name = "ee-bare-crash"
    delete_after(name)
    kubectl("run", name, "--image=busybox", "--", "sh", "-c", "echo crash; exit 1")  # restartPolicy Always

    def backing_off() -> dict[str, Any] | None:
        pod = _pod(api, name)
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or [{}]
        waiting = statuses[0].get("state", {}).get("waiting") or {}
        return pod if waiting.get("reason") == "CrashLoopBackOff" and statuses[0]["restartCount"] >= 1 else None

    pod = wait_for(backing_off, f"{name} in CrashLoopBackOff after a restart")
    status = _container(pod)
    assert pod["spec"]["restartPolicy"] == "Always" and pod["status"]["phase"] == "Running"
    assert status["lastState"]["terminated"]["exitCode"] == 1 and not status["ready"]
    assert status["state"]["waiting"]["message"].startswith(f"back-off 10s restarting failed container={name} "
                                                            f"pod={name}_default(")
    assert "CrashLoopBackOff" in kubectl("get", "pod", name).stdout
    back_off = [e for e in events_of(api, name) if e["reason"] == "BackOff"]
    assert back_off and back_off[0]["type"] == "Warning", back_off
    # the back-off passes and the container runs again: its restart count grows
    wait_for(lambda: (p := _pod(api, name)) and _container(p)["restartCount"] >= 2, f"{name} restarted again",
             timeout=60)
    assert pod_log(api, name).count("crash\n") >= 2


def test_a_long_running_pod_has_an_address_takes_exec_and_is_stopped_gracefully_when_deleted(
    kubectl: Kubectl, api: httpx.Client, server: ServerInfo, delete_after: Callable[[str], None]
) -> None:
    name = "ee-bare-long"
    delete_after(name)
    said = Path(f"/tmp/{name}-{uuid.uuid4().hex[:8]}")  # the machine's /tmp, which every sandbox shares
    program = f"trap 'echo TERM > {said}; exit 0' TERM; echo up; while :; do sleep 0.2; done"
    kubectl("run", name, "--image=busybox", "--", "sh", "-c", program)
    try:
        pod = _running(api, name)
        status = pod["status"]
        private = server.sandbox_mode != "process"
        assert status["podIP"].startswith("10.244." if private else "127."), status
        assert status["hostIP"] and status["startTime"] and pod["spec"]["nodeName"]
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions == dict.fromkeys(("PodScheduled", "Initialized", "ContainersReady", "Ready"), "True")
        hostname = kubectl("exec", name, "--", "hostname").stdout.strip()
        assert hostname == name or not private, hostname
        if private:  # it runs as its namespace's first UID, which OpenShift's SCC admission wrote into it
            uid = kubectl("exec", name, "--", "id", "-u").stdout.strip()
            assert uid == str(pod["spec"]["containers"][0]["securityContext"]["runAsUser"]) != "0", uid
            assert pod["metadata"]["annotations"]["openshift.io/scc"] == "restricted-v2"
        token = kubectl("exec", name, "--", "sh", "-c",
                        "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace 2>/dev/null || "
                        "cat $HOME/../serviceaccount/namespace").stdout
        assert token == "default", token
        wait_for(lambda: "up" in pod_log(api, name), f"{name}'s log")
        assert job_processes(name, pods=[name]), "no process of the pod found"
        kubectl("delete", "pod", name)  # waits until it is gone
        assert _pod(api, name) is None
        assert said.read_text() == "TERM\n"  # SIGTERM first, and it ended within its grace period
        wait_no_processes(name, pods=[name])
    finally:
        said.unlink(missing_ok=True)


def test_what_cannot_run_here_is_refused_at_creation_naming_the_field_and_the_fix(
    kubectl: Kubectl, api: httpx.Client
) -> None:
    refused = kubectl("run", "ee-bare-noentry", "--image=busybox", check=False)
    assert refused.returncode != 0
    assert "spec.containers[0].command: Required value" in refused.stderr and "kubectl run NAME" in refused.stderr
    main = {"name": "main", "image": "busybox", "command": ["sleep", "1"]}
    side = {"name": "side", "image": "busybox", "command": ["true"]}
    cases: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {  # field → (labels, spec)
        "spec.containers[1]": ({}, {"containers": [main, side]}),
        "spec.initContainers": ({}, {"containers": [main], "initContainers": [side]}),
        "spec.hostNetwork": ({}, {"containers": [main], "hostNetwork": True}),
        "metadata.labels[kueue.x-k8s.io/queue-name]": ({"kueue.x-k8s.io/queue-name": "q"}, {"containers": [main]}),
    }
    for field, (labels, spec) in cases.items():
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ee-bare-refused", "labels": labels},
               "spec": spec}
        r = api.post(PODS, json=pod)
        assert r.status_code == 422, (field, r.text)
        causes = r.json()["details"]["causes"]
        assert any(c["field"] == field for c in causes), (field, causes)
        assert all(c["message"].split(": ", 1)[1] for c in causes)  # each says why, and what to do
    assert _pod(api, "ee-bare-refused") is None


def test_a_pod_that_fits_no_node_waits_unschedulable_saying_why(
    kubectl: Kubectl, api: httpx.Client, delete_after: Callable[[str], None]
) -> None:
    name = "ee-bare-unplaced"
    delete_after(name)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "nodeSelector": {"ee-bare-disk": "none-has-it"},
        "containers": [{"name": "main", "image": "busybox", "command": ["true"]}]}}
    assert api.post(PODS, json=pod).status_code == 201

    def waiting() -> dict[str, Any] | None:
        found = _pod(api, name) or {}
        return next((c for c in (found.get("status") or {}).get("conditions") or []
                     if c["type"] == "PodScheduled" and c["status"] == "False"), None)

    condition = wait_for(waiting, f"{name} Unschedulable")
    assert condition["reason"] == "Unschedulable" and "didn't match Pod's node affinity/selector" in condition["message"]
    assert (_pod(api, name) or {})["status"].get("phase", "Pending") == "Pending"
    assert [e["type"] for e in events_of(api, name) if e["reason"] == "FailedScheduling"] == ["Warning"]
    kubectl("delete", "pod", name)  # nothing runs: it goes at once
    assert _pod(api, name) is None


def test_a_bare_pod_runs_on_across_a_server_restart(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client], tmp_path: Path
) -> None:
    name = "ee-bare-restart"
    info = new_server("bare-restart")
    run = kubectl_runner(info.kubeconfig, tmp_path / "cache")
    run("run", name, "--image=busybox", "--", "sh", "-c", 'i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.2; done')
    with connect(info) as c:
        first = _running(c, name)
        wait_for(lambda: "tick 3" in pod_log(c, name), "ticks")
    os.kill(info.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(info.pid, 0)  # our child (server_process.start): reaped, so it is really gone
    assert job_processes(name, pods=[name]), "the pod died with the server"

    again = new_server("bare-restart")  # the same home
    with connect(again) as c:
        pod = _running(c, name)
        assert pod["status"]["startTime"] == first["status"]["startTime"] and _container(pod)["restartCount"] == 0
        before = pod_log(c, name).count("tick")
        assert run("exec", name, "--", "hostname").returncode == 0
        wait_for(lambda: pod_log(c, name).count("tick") > before + 2, "ticks after the restart")
        lines = [ln for ln in pod_log(c, name).splitlines() if ln.startswith("tick")]
        assert lines == [f"tick {i}" for i in range(1, len(lines) + 1)], lines  # none lost, none doubled
    run("delete", "pod", name)
    wait_no_processes(name, pods=[name])
    assert not json.loads(run("get", "pods", "-o", "json").stdout)["items"]

