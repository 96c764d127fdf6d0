"""`networking.k8s.io/v1` NetworkPolicy served as kube-apiserver serves it: discovery, the machine's real
kubectl (apply, get, describe, delete), kube's refusals, and the `Warning`s saying where the local network
(every TrainJob in a network of its own) does something else than a policy asks."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import yaml
from mpijob.api.core.netpol import NOT_ENFORCED

NETPOL = "/apis/networking.k8s.io/v1"
JOBSET = "jobset.sigs.k8s.io/jobset-name"
NOT_HONOURED = ("is not honoured: the local cluster gives every TrainJob its own network; pods reach only their own "
                "job's pods and the API server")


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _manifest(name: str, spec: dict[str, Any]) -> str:
    return yaml.safe_dump({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                           "metadata": {"name": name}, "spec": spec})


def _warnings(stderr: str) -> list[str]:
    return [line.removeprefix("Warning: ") for line in stderr.splitlines() if line.startswith("Warning: ")]


def test_discovery_serves_the_kind_with_its_short_name(http: httpx.Client, kubectl: Callable[..., Any]) -> None:
    groups = {g["name"]: g for g in http.get("/apis").json()["groups"]}
    assert groups["networking.k8s.io"]["preferredVersion"]["groupVersion"] == "networking.k8s.io/v1"
    by_name = {r["name"]: r for r in http.get(NETPOL).json()["resources"]}
    entry = by_name["networkpolicies"]
    assert (entry["kind"], entry["namespaced"], entry["shortNames"]) == ("NetworkPolicy", True, ["netpol"])
    assert {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"} == set(entry["verbs"])
    line = next(x for x in kubectl("api-resources", "--no-headers").stdout.splitlines() if x.startswith("networkp"))
    assert line.split() == ["networkpolicies", "netpol", "networking.k8s.io/v1", "true", "NetworkPolicy"]
    explained = " ".join(kubectl("explain", "netpol.spec.ingress.from.ipBlock").stdout.split())
    assert "IPBlock describes a particular CIDR" in explained and "cidr <string> -required-" in explained


def test_kubectl_apply_get_describe_and_delete(kubectl: Callable[..., Any]) -> None:
    name = _name("np")
    spec = {"podSelector": {"matchLabels": {JOBSET: "pi"}}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {JOBSET: "pi"}}}],
                         "ports": [{"protocol": "TCP", "port": 2222}]}]}
    created = kubectl("apply", "-f", "-", input=_manifest(name, spec))
    assert created.stdout.strip() == f"networkpolicy.networking.k8s.io/{name} created"
    assert kubectl("apply", "-f", "-", input=_manifest(name, spec)).stdout.strip().endswith(" unchanged")
    spec["ingress"][0]["ports"] = [{"protocol": "UDP", "port": 4000, "endPort": 4010}]  # kube's lists are atomic
    assert kubectl("apply", "-f", "-", input=_manifest(name, spec)).stdout.strip().endswith(" configured")
    stored = json.loads(kubectl("get", "netpol", name, "-o", "json").stdout)
    assert stored["spec"]["ingress"][0]["ports"] == [{"protocol": "UDP", "port": 4000, "endPort": 4010}]

    table = kubectl("get", "netpol").stdout.splitlines()
    assert table[0].split() == ["NAME", "POD-SELECTOR", "AGE"]
    row = next(line.split() for line in table[1:] if line.startswith(name))
    assert row[1] == f"{JOBSET}=pi"
    described = kubectl("describe", "netpol", name).stdout
    assert f"PodSelector:     {JOBSET}=pi" in described
    assert "Allowing ingress traffic:" in described and "To Port Range: 4000-4010/UDP" in described
    assert "Not affecting egress traffic" in described

    deleted = kubectl("delete", "netpol", name)
    assert deleted.stdout.strip() == f'networkpolicy.networking.k8s.io "{name}" deleted'
    gone = kubectl("get", "netpol", name, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_an_empty_selector_shows_none_and_delete_all_empties_the_namespace(kubectl: Callable[..., Any]) -> None:
    ns = _name("np-all")
    kubectl("create", "namespace", ns)
    for i in range(2):
        kubectl("apply", "-n", ns, "-f", "-", input=_manifest(f"deny-{i}", {"podSelector": {}}))
    rows = [line.split() for line in kubectl("get", "netpol", "-n", ns, "--no-headers").stdout.splitlines()]
    assert [r[:2] for r in rows] == [["deny-0", "<none>"], ["deny-1", "<none>"]]
    kubectl("delete", "netpol", "--all", "-n", ns)
    assert kubectl("get", "netpol", "-n", ns, "-o", "name").stdout == ""
    kubectl("delete", "namespace", ns)


def test_kubectl_prints_each_difference_as_a_warning_and_none_for_what_is_honoured(
        kubectl: Callable[..., Any]) -> None:
    same_namespace = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                      "ingress": [{"from": [{"podSelector": {}}]}],
                      "egress": [{"to": [{"namespaceSelector": {}}], "ports": [{"protocol": "TCP", "port": 53}]}]}
    name = _name("np")
    proc = kubectl("apply", "-f", "-", input=_manifest(name, same_namespace))
    assert proc.stdout.strip() == f"networkpolicy.networking.k8s.io/{name} created"
    assert _warnings(proc.stderr) == [
        f"spec.ingress[0].from[0].podSelector: traffic from other TrainJobs' pods {NOT_HONOURED}",
        f"spec.egress[0].to[0].namespaceSelector: traffic to other namespaces {NOT_HONOURED}",
        ("spec.egress[0].ports: ports are not enforced inside a job's network: a job's pods reach each other on any "
        "port"),
        ("spec.egress: the API server stays reachable at 10.96.0.1:443: the local cluster lets every pod reach it, "
        "whatever its policies say"),
    ]
    kubectl("delete", "netpol", name)
    job = {"matchLabels": {JOBSET: "pi"}}
    for honoured in ({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
                     {"podSelector": job, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": job}]}]}):
        name = _name("np")
        proc = kubectl("apply", "-f", "-", input=_manifest(name, honoured))
        assert proc.stdout.strip().endswith(" created") and "Warning" not in proc.stderr, proc.stderr
        kubectl("delete", "netpol", name)


def test_kubes_refusals_name_each_field_and_store_nothing(kubectl: Callable[..., Any], http: httpx.Client) -> None:
    name = _name("bad")
    spec = {"podSelector": {"matchExpressions": [{"key": JOBSET, "operator": "Equals", "values": ["pi"]}]},
            "policyTypes": ["Ingress", "Sideways"],
            "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}],
                         "ports": [{"protocol": "ICMP", "port": 80}]}]}
    proc = kubectl("apply", "-f", "-", input=_manifest(name, spec), check=False)
    assert proc.returncode != 0
    assert f'The NetworkPolicy "{name}" is invalid:' in proc.stderr
    for line in (('* spec.podSelector.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector '
                 "operator; use In, NotIn, Exists or DoesNotExist"),
                 '* spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"',
                 ('* spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", '
                 '"SCTP"'),
                 ('* spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "192.168.0.0/16": must be a strict '
                 "subset of `cidr` (10.0.0.0/8)")):
        assert line in proc.stderr, proc.stderr
    typo = kubectl("apply", "-f", "-", input=_manifest(name, {"podSelectr": {}}), check=False)
    assert typo.returncode != 0 and 'strict decoding error: unknown field "spec.podSelectr"' in typo.stderr
    assert http.get(f"{NETPOL}/namespaces/default/networkpolicies/{name}").status_code == 404


def test_writes_over_http_carry_the_warnings_and_keep_kubes_stored_form(http: httpx.Client) -> None:
    name = _name("np")
    base = f"{NETPOL}/namespaces/default/networkpolicies"
    body = {"metadata": {"name": name}, "spec": {"ingress": [{}]}}
    created = http.post(base, json=body)
    assert created.status_code == 201, created.text
    assert created.json()["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]}
    assert created.headers.get_list("warning") == [
        f'299 - "spec.ingress[0]: traffic from any source {NOT_HONOURED}"']
    labelled = http.patch(f"{base}/{name}", json={"metadata": {"labels": {"a": "b"}}},
                          headers={"Content-Type": "application/merge-patch+json"})
    assert labelled.status_code == 200 and "warning" not in labelled.headers  # the policy did not change
    narrowed = http.patch(f"{base}/{name}", json={"spec": {"ingress": [{"ports": [{"port": 80}]}, {}]}},
                          headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert narrowed.status_code == 200, narrowed.text
    assert narrowed.json()["spec"]["ingress"] == [{"ports": [{"port": 80, "protocol": "TCP"}]}, {}]
    assert len(narrowed.headers.get_list("warning")) == 3  # two open rules, and the ports of the first
    refused = http.put(f"{base}/{name}", json={**narrowed.json(), "spec": {"policyTypes": ["ingress"]}})
    assert refused.status_code == 422 and refused.json()["details"]["causes"] == [
        {"reason": "FieldValueNotSupported", "field": "spec.policyTypes[0]",
         "message": 'Unsupported value: "ingress": supported values: "Ingress", "Egress"'}]
    gone = http.delete(f"{base}/{name}")
    assert gone.status_code == 200 and gone.json()["kind"] == "Status" and gone.json()["status"] == "Success"


def test_in_the_process_sandbox_every_policy_is_warned_that_nothing_is_enforced(
        new_server: Callable[..., Any], connect: Callable[..., httpx.Client]) -> None:
    info = new_server("netpol-process", controllers=True, env={"MPIJOB_SANDBOX": "process"})
    with connect(info=info) as client:
        made = client.post(f"{NETPOL}/namespaces/default/networkpolicies",
                           json={"metadata": {"name": "deny"}, "spec": {"podSelector": {}}})
    assert made.status_code == 201, made.text
    assert made.headers.get_list("warning") == [f'299 - "{NOT_ENFORCED}"']
