"""Bare pods, pure (api/core/bare_pods.py, api/core/restarts.py): which pods are bare, what of one is refused
and why, the plan its sandbox runs, how long a DELETE gives it, and the kubelet's restarts and back-off."""

from __future__ import annotations

from typing import Any

from mpijob.api.core import bare_pods, restarts
from mpijob.api.sandbox_mode import SandboxMode


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
            "spec": {"containers": [{"name": "p", "image": "busybox", "args": ["sh", "-c", "echo hi"]}], **spec}}


def fields(p: dict[str, Any], mode: SandboxMode = SandboxMode.NAMESPACE) -> list[str]:
    return [c.field for c in bare_pods.refusals(p, mode)]


def test_a_pod_is_bare_unless_a_job_kind_owns_it() -> None:
    assert bare_pods.is_bare(pod())
    owned = pod()
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "uid": "x"}]
    assert not bare_pods.is_bare(owned)
    other = pod()
    other["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "uid": "x"}]
    assert bare_pods.is_bare(other)  # nothing here runs a ReplicaSet's pods: they run as bare pods


def test_what_kubectl_run_sends_runs_and_args_alone_are_the_command() -> None:
    p = pod(restartPolicy="Never", dnsPolicy="ClusterFirst")
    assert fields(p) == []
    plan = bare_pods.plan(p)
    (one,) = plan.pods
    assert (one.name, one.hostname, one.command, one.args) == ("p", "p", [], ["sh", "-c", "echo hi"])
    assert (plan.uid, plan.namespace, plan.ssh_auth_mount_path, plan.hostfile) == ("u-1", "ns", "", "")
    assert not one.runs_sshd and not one.is_launcher


def test_what_cannot_run_here_is_refused_field_by_field() -> None:
    no_command = pod()
    no_command["spec"]["containers"][0].pop("args")
    assert fields(no_command) == ["spec.containers[0].command"]
    two = pod()
    two["spec"]["containers"].append({"name": "side", "image": "x", "command": ["true"]})
    assert fields(two) == ["spec.containers[1]"]
    assert fields(pod(hostNetwork=True, hostPID=True)) == ["spec.hostNetwork", "spec.hostPID"]
    assert fields(pod(hostNetwork=False)) == []  # what it does anyway
    assert fields(pod(initContainers=[{"name": "i", "image": "x"}])) == ["spec.initContainers"]
    gpus = pod()
    gpus["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    assert fields(gpus) == ["spec.containers[0].resources"]
    queued = pod()
    queued["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    (cause,) = bare_pods.refusals(queued, SandboxMode.NAMESPACE)
    assert "pod integration is not served" in cause.message and "remove the label" in cause.message
    volumes = pod(volumes=[{"name": "d", "emptyDir": {}}])
    assert fields(volumes) == [] and fields(volumes, SandboxMode.PROCESS) == ["spec.volumes"]


def test_a_delete_gives_a_running_bare_pod_its_grace_period() -> None:
    running = pod(nodeName="node", terminationGracePeriodSeconds=7)
    assert bare_pods.deletion_grace(running, {}) == 7
    assert bare_pods.deletion_grace(running, {"gracePeriodSeconds": 2}) == 2
    assert bare_pods.deletion_grace(running, {"gracePeriodSeconds": 0}) == 0  # --force
    assert bare_pods.deletion_grace(pod(), {}) == 0  # not bound: nothing runs
    done = pod(nodeName="node")
    done["status"] = {"phase": "Succeeded"}
    assert bare_pods.deletion_grace(done, {}) == 0
    assert bare_pods.deletion_grace(pod(nodeName="node"), {}) == bare_pods.DEFAULT_GRACE


def test_the_restart_policy_decides_which_exits_restart() -> None:
    assert restarts.restarts("Always", 0) and restarts.restarts("Always", 1)
    assert restarts.restarts("OnFailure", 1) and not restarts.restarts("OnFailure", 0)
    assert not restarts.restarts("Never", 1)


def test_the_back_off_is_the_kubelets_at_once_then_10s_doubling_to_5_minutes() -> None:
    armed, waits = 0.0, []
    for _ in range(8):
        after = restarts.back_off(armed, ran=1)
        waits.append(after.wait)
        armed = after.armed
    assert waits == [0, 10, 20, 40, 80, 160, 300, 300]
    assert restarts.back_off(300, ran=restarts.RESET_AFTER).wait == 0  # a long run clears it
    assert [restarts.seconds(s) for s in (10, 160, 300)] == ["10s", "2m40s", "5m0s"]
    assert restarts.waiting_message(20, "c", restarts.pod_ref("ns", "p", "u")) == \
        "back-off 20s restarting failed container=c pod=p_ns(u)"
