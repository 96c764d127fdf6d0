"""`mpijob doctor`'s checks against the shared local cluster, each configured into its failure in a namespace
of its own (and once into none): the verdict, the finding and the fix come from the real API answers."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.doctor import NAMES, Check, Facts, Status, default_job, diagnose

from support import add_user

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
QUEUE = "kueue.x-k8s.io/queue-name"


def doctor(kubeconfig: Path, namespace: str, job: dict[str, Any] | None = None) -> dict[str, Check]:
    """The checks by name, as `mpijob doctor` gets them."""
    with Connection(choose_cluster(kubeconfig, namespace=namespace)) as conn:
        facts = Facts(namespace, job or default_job(namespace), given=job is not None, server=conn.url)
        checks = conn.run(diagnose(facts))
    assert [c.name for c in checks] == list(NAMES)
    return {c.name: c for c in checks}


def trainjob(name: str = "pi", *, queue: str | None = None, runtime: str = "mpi-distributed", kind: str = "",
             trainer: dict[str, Any] | None = None) -> dict[str, Any]:
    ref = {"name": runtime, **({"kind": kind} if kind else {})}
    meta: dict[str, Any] = {"name": name, **({"labels": {QUEUE: queue}} if queue else {})}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
            "spec": {"runtimeRef": ref, "trainer": {"numNodes": 2, **(trainer or {})}}}


def apply(kubectl: Kubectl, namespace: str, *objects: dict[str, Any]) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(objects))


@pytest.fixture()
def ns(kubectl: Kubectl) -> str:
    name = f"doctor-{os.urandom(3).hex()}"
    kubectl("create", "namespace", name)
    return name


def local_queue(name: str, cluster_queue: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": name},
            "spec": {"clusterQueue": cluster_queue}}


def network_policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name}, "spec": spec}


def runtime_copy(kubectl: Kubectl, namespace: str, name: str, **pod_template: Any) -> None:
    """A TrainingRuntime in `namespace`: the bundled runtime, its pod templates given `pod_template`'s
    `metadata` and `spec` additions."""
    rt = json.loads(kubectl("get", "clustertrainingruntime", "mpi-distributed", "-o", "json").stdout)
    rt["kind"], rt["metadata"] = "TrainingRuntime", {"name": name}
    for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        template = rj["template"]["spec"]["template"]
        for key, extra in pod_template.items():
            template.setdefault(key, {}).update(extra)
    apply(kubectl, namespace, rt)


def failing(checks: dict[str, Check], status: Status = Status.FAIL) -> list[str]:
    return [name for name, c in checks.items() if c.status is status]


def test_a_good_job_passes_every_check(server: Any, kubectl: Kubectl, ns: str) -> None:
    # a LocalQueue of its own, and the usual pair of policies: deny everything, allow within a job
    job_pods = {"matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
    apply(kubectl, ns, local_queue("team", "cluster-queue"),
          network_policy("deny-all", {"podSelector": {}, "policyTypes": ["Ingress"]}),
          network_policy("within-job", {"podSelector": job_pods, "policyTypes": ["Ingress"],
                                        "ingress": [{"from": [{"podSelector": job_pods}]}]}))
    checks = doctor(server.kubeconfig, ns, trainjob(queue="team"))
    assert all(c.status is Status.PASS for c in checks.values()), [c for c in checks.values()
                                                                   if c.status is not Status.PASS]
    assert "LocalQueue team → ClusterQueue cluster-queue" in checks["queue"].finding
    assert "sshd on port 2222" in checks["network-policy"].finding
    assert "not needed" in checks["jobset"].finding and "runtimePatches" in checks["trainer"].finding


def test_the_default_job_passes_in_the_default_namespace(server: Any) -> None:
    checks = doctor(server.kubeconfig, "default")
    assert failing(checks) == [] and failing(checks, Status.WARN) == []
    assert "user-queue" in checks["queue"].finding


def test_istio_injection_fails_unless_the_runtime_opts_out(server: Any, kubectl: Kubectl, ns: str) -> None:
    kubectl("label", "namespace", ns, "istio-injection=enabled")
    checks = doctor(server.kubeconfig, ns, trainjob())
    assert failing(checks) == ["istio"]
    assert "node, launcher" in checks["istio"].finding and 'sidecar.istio.io/inject: "false"' in checks["istio"].fix
    runtime_copy(kubectl, ns, "no-sidecar", metadata={"annotations": {"sidecar.istio.io/inject": "false"}})
    assert doctor(server.kubeconfig, ns, trainjob(runtime="no-sidecar", kind="TrainingRuntime"))["istio"].status \
        is Status.PASS


def test_a_deny_all_policy_fails_naming_it(server: Any, kubectl: Kubectl, ns: str) -> None:
    apply(kubectl, ns, network_policy("deny-all", {"podSelector": {}, "policyTypes": ["Ingress"]}))
    check = doctor(server.kubeconfig, ns, trainjob())["network-policy"]
    assert check.status is Status.FAIL, check
    assert "NetworkPolicy deny-all" in check.finding and "port 2222" in check.finding
    # allowing the ssh port alone lets mpirun start, but not MPI's own connections
    only_ssh = {"podSelector": {}, "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": "ssh"}]}]}
    apply(kubectl, ns, network_policy("deny-all", only_ssh))
    check = doctor(server.kubeconfig, ns, trainjob())["network-policy"]
    assert check.status is Status.WARN and "ports chosen at run time" in check.finding, check


def test_a_missing_local_queue_fails(server: Any, ns: str) -> None:
    check = doctor(server.kubeconfig, ns, trainjob(queue="no-such-queue"))["queue"]
    assert check.status is Status.FAIL and "LocalQueue 'no-such-queue' does not exist" in check.finding, check


def test_a_local_queue_to_a_missing_cluster_queue_fails(server: Any, kubectl: Kubectl, ns: str) -> None:
    apply(kubectl, ns, local_queue("orphan", "no-such-cq"))
    check = doctor(server.kubeconfig, ns, trainjob(queue="orphan"))["queue"]
    assert check.status is Status.FAIL, check
    assert "ClusterQueue 'no-such-cq', which does not exist" in check.finding and "create ClusterQueue" in check.fix


def test_a_managed_namespace_needs_the_queue_label(server: Any, kubectl: Kubectl, ns: str) -> None:
    kubectl("label", "namespace", ns, "kueue.openshift.io/managed=true")
    check = doctor(server.kubeconfig, ns, trainjob())["queue"]
    assert check.status is Status.FAIL and QUEUE in check.fix, check


def test_a_job_bigger_than_the_namespace_quota_fails(server: Any, kubectl: Kubectl, ns: str) -> None:
    apply(kubectl, ns, {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "small"},
                        "spec": {"hard": {"requests.cpu": "1"}}})
    job = trainjob(trainer={"resourcesPerNode": {"requests": {"cpu": "1", "memory": "1Gi"}}})
    check = doctor(server.kubeconfig, ns, job)["quota"]
    assert check.status is Status.FAIL and "exceeded quota: small" in check.finding, check


def test_a_job_bigger_than_its_cluster_queue_fails(server: Any, kubectl: Kubectl, ns: str) -> None:
    cq = f"tiny-{ns}"
    apply(kubectl, ns, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq},
                        "spec": {"namespaceSelector": {}, "resourceGroups": [{
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu",
                                                                                  "nominalQuota": "1"}]}]}]}},
          local_queue("tiny", cq))
    try:
        job = trainjob(queue="tiny", trainer={"resourcesPerNode": {"requests": {"cpu": "1"}}})
        check = doctor(server.kubeconfig, ns, job)["quota"]
        assert check.status is Status.FAIL, check
        assert f"ClusterQueue {cq} can never provide more than 1" in check.finding and "cpu" in check.finding
    finally:
        kubectl("delete", "clusterqueue", cq, "--wait=false")


def test_a_node_selector_no_node_satisfies_fails(server: Any, kubectl: Kubectl, ns: str) -> None:
    runtime_copy(kubectl, ns, "pinned", spec={"nodeSelector": {"doctor.example/pool": "none"}})
    check = doctor(server.kubeconfig, ns, trainjob(runtime="pinned", kind="TrainingRuntime"))["nodes"]
    assert check.status is Status.FAIL, check
    assert "lacks the label(s) doctor.example/pool=none" in check.finding


def test_slots_that_differ_from_gpus_warn(server: Any, ns: str) -> None:
    job = trainjob(trainer={"numProcPerNode": 4, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}})
    check = doctor(server.kubeconfig, ns, job)["slots"]
    assert check.status is Status.WARN and "numProcPerNode 4 but 2 GPU(s)" in check.finding, check
    assert "numProcPerNode: 2" in check.fix


def test_a_user_without_create_rights_fails_and_what_they_may_not_read_warns(server: Any, kubectl: Kubectl,
                                                                            ns: str) -> None:
    user = f"viewer-{ns}"
    kubectl("create", "rolebinding", f"{user}-view", "--clusterrole=view", f"--user={user}", "-n", ns)
    checks = doctor(add_user(server.home, user), ns, trainjob())
    assert checks["api"].finding.endswith(f"as {user}")
    assert checks["can-create"].status is Status.FAIL, checks["can-create"]
    assert f"{user} may not create trainjobs.trainer.kubeflow.org in namespace {ns}" in checks["can-create"].finding
    assert "RoleBinding" in checks["can-create"].fix
    # every authenticated user reads ClusterTrainingRuntimes (as Trainer's manifests bind them), so the runtime
    # is checked; a namespace user may read neither ClusterQueues nor Nodes: each is said to be unchecked, and
    # the rest still runs
    assert checks["runtime"].status is Status.PASS, checks["runtime"]
    for name, what in (("queue", "ClusterQueue cluster-queue"), ("nodes", "the Nodes")):
        assert checks[name].status is Status.WARN, checks[name]
        assert checks[name].finding.startswith(f"could not check {what}: forbidden"), checks[name]
    assert {checks[n].status for n in ("quota", "istio", "network-policy", "slots")} == {Status.PASS}


def test_an_unreachable_server_fails_and_skips_the_rest(server: Any, tmp_path: Path) -> None:
    config = yaml.safe_load(server.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    path = tmp_path / "gone.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    checks = doctor(path, "default")
    assert checks["api"].status is Status.FAIL and "connection refused" in checks["api"].finding
    assert "mpijob server start" in checks["api"].fix
    assert {c.status for name, c in checks.items() if name != "api"} == {Status.SKIP}
