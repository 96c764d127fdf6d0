"""The pure parts of `mpijob doctor`'s checks that the local cluster cannot be configured into: an older
Trainer (TrainJob with podTemplateOverrides, no runtimePatches) read from its served OpenAPI v3 schema,
and a real cluster's JobSet; and `netpol.blocking`, the policy evaluation the network check relies on."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from mpijob.api.core import netpol
from mpijob.client.doctor import Facts, Status, cluster, default_job

from support import UPSTREAM

CRD = yaml.safe_load((UPSTREAM / "trainer" / "trainer.kubeflow.org_trainjobs.yaml").read_text())
JOB = {"jobset.sigs.k8s.io/jobset-name": "pi", "jobset.sigs.k8s.io/replicatedjob-name": "node"}


def openapi(older: bool) -> dict[str, Any]:
    """Trainer's TrainJob schema as kube-apiserver serves a CRD's in OpenAPI v3; `older`: as before 2.2."""
    schema = copy.deepcopy(CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    schema["x-kubernetes-group-version-kind"] = [{"group": "trainer.kubeflow.org", "kind": "TrainJob",
                                                  "version": "v1alpha1"}]
    spec = schema["properties"]["spec"]["properties"]
    assert "runtimePatches" in spec
    if older:
        spec["podTemplateOverrides"] = spec.pop("runtimePatches")
    return {"components": {"schemas": {"org.kubeflow.trainer.v1alpha1.TrainJob": schema}}}


def trainer_check(doc: dict[str, Any], kueue: bool) -> Any:
    facts = Facts("default", default_job("default"), given=False)
    facts.groups = {"trainer.kubeflow.org": ["v1alpha1"], **({"kueue.x-k8s.io": ["v1beta2"]} if kueue else {})}
    op = cluster.trainer(facts)
    call = next(op)
    assert call.path == "/openapi/v3/apis/trainer.kubeflow.org/v1alpha1"
    try:
        op.send(doc)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the trainer check asked for more than the schema")


def test_trainer_before_2_2_fails_with_kueue_and_warns_without() -> None:
    assert trainer_check(openapi(older=False), kueue=True).status is Status.PASS
    with_kueue = trainer_check(openapi(older=True), kueue=True)
    assert with_kueue.status is Status.FAIL and "upgrade Trainer to ≥ 2.2" in with_kueue.fix
    assert "podTemplateOverrides" in with_kueue.finding
    assert trainer_check(openapi(older=True), kueue=False).status is Status.WARN


def test_a_real_cluster_needs_jobset() -> None:
    facts = Facts("default", default_job("default"), given=False)
    assert cluster.jobset(facts).status is Status.FAIL
    facts.groups = {"jobset.x-k8s.io": ["v1alpha2"]}
    assert cluster.jobset(facts).status is Status.PASS


def policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def test_blocking_follows_kube_semantics() -> None:
    ns = {"kubernetes.io/metadata.name": "team"}
    deny = policy("deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    assert netpol.blocking([], JOB, JOB, ns, 2222) == []
    assert netpol.blocking([deny], JOB, JOB, ns, 2222) == ["deny"]
    same_job = {"matchLabels": {"jobset.sigs.k8s.io/jobset-name": "pi"}}
    allow = policy("allow", {"podSelector": same_job, "policyTypes": ["Ingress"],
                             "ingress": [{"from": [{"podSelector": same_job}]}]})
    assert netpol.blocking([deny, allow], JOB, JOB, ns, 2222) == []
    ssh_only = policy("ssh", {"podSelector": {}, "policyTypes": ["Ingress"],
                              "ingress": [{"ports": [{"port": "ssh", "protocol": "TCP"}]}]})
    assert netpol.blocking([ssh_only], JOB, JOB, ns, 2222, {"ssh": 2222}) == []
    assert netpol.blocking([ssh_only], JOB, JOB, ns, None, {"ssh": 2222}) == ["ssh"]
    other_ns = policy("other", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "elsewhere"}}}]}]})
    assert netpol.blocking([other_ns], JOB, JOB, ns, 2222) == ["other"]
    egress = policy("egress", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]})
    assert netpol.blocking([egress], JOB, JOB, ns, 2222) == ["egress"]
