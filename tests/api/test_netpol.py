"""NetworkPolicy: kube-apiserver's defaults and refusals, and the warnings that say where the local
network (every TrainJob in a network of its own) does something else than a policy asks."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from mpijob.api.core import netpol
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import NETWORK_POLICIES
from mpijob.api.core.selectors import format_label_selector
from mpijob.api.core.tables import table
from mpijob.api.core.validation import admit
from mpijob.api.names import LABEL_JOBSET_NAME, LABEL_RJOB_NAME

API_SERVER = ("10.96.0.1", 443)
JOB = {"matchLabels": {LABEL_JOBSET_NAME: "pi"}}
DEFAULT_DENY = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
WITHIN_JOB = {"podSelector": JOB, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": JOB}]}]}


def _policy(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "p", "namespace": "team-a"}, "spec": spec}


def _admitted(spec: Any) -> dict[str, Any]:
    return admit(NETWORK_POLICIES, _policy(spec))


def _warnings(spec: Any) -> list[str]:
    return netpol.warnings(_admitted(spec), API_SERVER, shared_network=False)


def _refusal(spec: Any) -> dict[str, str]:
    with pytest.raises(ApiError) as err:
        _admitted(spec)
    assert err.value.code == 422 and err.value.reason == "Invalid"
    return {c.field: c.message for c in err.value.causes}


# -- defaults, as kube-apiserver stores a policy -------------------------------------------------------


def test_defaults_are_kubes() -> None:
    stored = _admitted({"egress": [{"ports": [{"port": 53}]}]})["spec"]
    assert stored == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                      "egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}]}
    assert _admitted(None)["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}  # kube: deny all ingress
    given = _admitted({"podSelector": JOB, "policyTypes": ["Egress"], "ingress": [{}]})["spec"]
    assert given["policyTypes"] == ["Egress"] and given["podSelector"] == JOB


# -- refusals: kube's rules, each naming the field, the value and the fix ------------------------------


@pytest.mark.parametrize(("spec", "field", "words"), [
    ({"podSelector": {"matchLabels": {"bad key!": "x"}}}, "spec.podSelector.matchLabels", '"bad key!": a label key'),
    ({"podSelector": {"matchLabels": {"app": "-x"}}}, "spec.podSelector.matchLabels", '"-x": a label value'),
    ({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}},
     "spec.podSelector.matchExpressions[0].operator", '"Equals": not a valid selector operator; use In, NotIn'),
    ({"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     "spec.podSelector.matchExpressions[0].values", "Required value: must be specified when `operator` is 'In'"),
    ({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]}},
     "spec.podSelector.matchExpressions[0].values", "may not be specified when `operator` is 'Exists'"),
    ({"podSelector": []}, "spec.podSelector", "must be a label selector"),
    ({"policyTypes": ["Ingress", "Sideways"]}, "spec.policyTypes[1]",
     'Unsupported value: "Sideways": supported values: "Ingress", "Egress"'),
    ({"policyTypes": ["Ingress", "Egress", "Ingress"]}, "spec.policyTypes", "may not specify more than two"),
    ({"ingress": [{"ports": [{"protocol": "ICMP"}]}]}, "spec.ingress[0].ports[0].protocol",
     'Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"'),
    ({"ingress": [{"ports": [{"port": 70000}]}]}, "spec.ingress[0].ports[0].port",
     "70000: must be between 1 and 65535, inclusive"),
    ({"ingress": [{"ports": [{"port": 90, "endPort": 80}]}]}, "spec.ingress[0].ports[0].endPort",
     "80: must be greater than or equal to `port` (90)"),
    ({"egress": [{"ports": [{"endPort": 80}]}]}, "spec.egress[0].ports[0].endPort",
     "may not be specified when `port` is not specified; set port"),
    ({"egress": [{"ports": [{"port": "ssh", "endPort": 80}]}]}, "spec.egress[0].ports[0].endPort",
     "may not be specified when `port` is non-numeric"),
    ({"egress": [{"ports": [{"port": "80"}]}]}, "spec.egress[0].ports[0].port",
     '"80": must contain at least one letter (a-z); give a port number as a number'),
    ({"egress": [{"ports": [{"port": "a-much-too-long-port"}]}]}, "spec.egress[0].ports[0].port",
     "must be no more than 15 characters"),
    ({"egress": [{"ports": [{"port": True}]}]}, "spec.egress[0].ports[0].port", "must be a port number"),
    ({"ingress": [{"from": [{}]}]}, "spec.ingress[0].from[0]", "Required value: must specify a peer"),
    ({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]}, "spec.ingress[0].from[0]",
     "Forbidden: may not specify both ipBlock and another peer"),
    ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0/8"}}]}]}, "spec.egress[0].to[0].ipBlock.cidr",
     '"10.0.0/8": must be a valid CIDR value, (e.g. 10.9.8.0/24'),
    ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.1"}}]}]}, "spec.egress[0].to[0].ipBlock.cidr",
     "must be a valid CIDR value"),
    ({"egress": [{"to": [{"ipBlock": {}}]}]}, "spec.egress[0].to[0].ipBlock.cidr", "Required value"),
    ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}]}]},
     "spec.egress[0].to[0].ipBlock.except[0]", '"192.168.0.0/16": must be a strict subset of `cidr` (10.0.0.0/8)'),
    ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]}}]}]},
     "spec.egress[0].to[0].ipBlock.except[0]", "must be a strict subset"),
    ({"ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": 5}}}]}]},
     "spec.ingress[0].from[0].namespaceSelector.matchLabels", "5: a label value"),
    ({"ingress": "all"}, "spec.ingress", 'must be a list of rules (objects with ports and from)'),
    ({"egress": [{"to": {"podSelector": {}}}]}, "spec.egress[0].to", "must be a list of peers"),
    ("open", "spec", "must be an object with podSelector"),
])
def test_kubes_refusals_name_the_field_the_value_and_the_fix(spec: Any, field: str, words: str) -> None:
    causes = _refusal(spec)
    assert field in causes, causes
    assert words in causes[field], causes[field]


def test_every_problem_is_named_at_once() -> None:
    causes = _refusal({"policyTypes": ["Sideways"], "ingress": [{"ports": [{"protocol": "ICMP", "port": 0}]}]})
    assert set(causes) == {"spec.policyTypes[0]", "spec.ingress[0].ports[0].protocol", "spec.ingress[0].ports[0].port"}


def test_valid_shapes_pass() -> None:
    _admitted({"podSelector": {"matchExpressions": [{"key": LABEL_JOBSET_NAME, "operator": "Exists"}]},
               "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": JOB}],
                            "ports": [{"protocol": "SCTP", "port": 80, "endPort": 90}, {"port": "ssh"}]}],
               "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.5/8", "except": ["10.1.0.0/16"]}},
                                  {"ipBlock": {"cidr": "2001:db8::/64"}}]}]})


# -- warnings: where the local network differs ---------------------------------------------------------

NOT_HONOURED = ("is not honoured: the local cluster gives every TrainJob its own network; pods reach only their own "
                "job's pods and the API server")


@pytest.mark.parametrize("spec", [
    DEFAULT_DENY,
    {"podSelector": {}, "policyTypes": ["Ingress"]},
    {"podSelector": JOB, "policyTypes": ["Egress"]},
    WITHIN_JOB,
    {"podSelector": {"matchExpressions": [{"key": LABEL_JOBSET_NAME, "operator": "In", "values": ["pi"]}]},
     "ingress": [{"from": [{"podSelector": JOB}]}]},
    {**WITHIN_JOB, "policyTypes": ["Ingress", "Egress"],  # egress to the job and to the API server alone
     "egress": [{"to": [{"podSelector": JOB}]}, {"to": [{"ipBlock": {"cidr": "10.96.0.1/32"}}],
                                                  "ports": [{"port": 443}]}]},
])
def test_what_the_local_network_does_anyway_gets_no_warning(spec: dict[str, Any]) -> None:
    assert _warnings(spec) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]},
     [f"spec.ingress[0].from[0].podSelector: traffic from other TrainJobs' pods {NOT_HONOURED}"]),
    ({"podSelector": JOB, "ingress": [{"from": [{"podSelector": {"matchLabels": {LABEL_JOBSET_NAME: "other"}}}]}]},
     [f"spec.ingress[0].from[0].podSelector: traffic from other TrainJobs' pods {NOT_HONOURED}"]),
    ({"podSelector": {}, "ingress": [{"from": [{"podSelector": JOB}]}]},  # every pod, from pi's
     [f"spec.ingress[0].from[0].podSelector: traffic from other TrainJobs' pods {NOT_HONOURED}"]),
    ({"podSelector": JOB, "ingress": [{"from": [{"podSelector": {"matchLabels": {LABEL_RJOB_NAME: "node"}}}]}]},
     [f"spec.ingress[0].from[0].podSelector: traffic from other TrainJobs' pods {NOT_HONOURED}"]),
    ({"podSelector": JOB, "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": JOB}]}]},
     [f"spec.ingress[0].from[0].namespaceSelector: traffic from other namespaces {NOT_HONOURED}"]),
    ({"podSelector": JOB, "ingress": [{}]}, [f"spec.ingress[0]: traffic from any source {NOT_HONOURED}"]),
    ({"podSelector": JOB, "ingress": [{"from": [{"ipBlock": {"cidr": "192.168.0.0/16"}}]}]},
     [f"spec.ingress[0].from[0].ipBlock: traffic from 192.168.0.0/16 {NOT_HONOURED}"]),
    ({"podSelector": JOB, "policyTypes": ["Egress"], "egress": [{}]},
     [f"spec.egress[0]: traffic to any destination {NOT_HONOURED}"]),
    ({"podSelector": JOB, "ingress": [{"from": [{"podSelector": JOB}], "ports": [{"port": 2222}]}]},
     [("spec.ingress[0].ports: ports are not enforced inside a job's network: a job's pods reach each other on "
      "any port")]),
    ({"podSelector": JOB, "ingress": [{"from": [{"podSelector": {"matchLabels": {
        LABEL_JOBSET_NAME: "pi", LABEL_RJOB_NAME: "launcher"}}}]}]},
     [(f"spec.ingress[0].from[0].podSelector: labels besides {LABEL_JOBSET_NAME} are not enforced inside a job's "
      "network: a job's pods reach each other on any port")]),
    ({"podSelector": JOB, "policyTypes": ["Egress"], "egress": [{"to": [{"podSelector": JOB}]}]},
     [("spec.egress: the API server stays reachable at 10.96.0.1:443: the local cluster lets every pod reach it, "
      "whatever its policies say")]),
])
def test_each_difference_is_one_warning_naming_the_field(spec: dict[str, Any], expected: list[str]) -> None:
    assert _warnings(spec) == expected


def test_a_rule_open_to_all_on_one_port_gets_both_warnings() -> None:
    warned = _warnings({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 443}]}]})
    assert [w.split(":")[0] for w in warned] == ["spec.egress[0]", "spec.egress[0].ports"]  # it reaches the API


@pytest.mark.parametrize(("block", "reaches"), [
    ({"cidr": "10.96.0.0/12"}, True),
    ({"cidr": "10.96.0.0/12", "except": ["10.96.0.0/24"]}, False),
    ({"cidr": "192.168.0.0/16"}, False),
    ({"cidr": "2001:db8::/64"}, False),
])
def test_egress_that_misses_the_api_server_says_it_stays_reachable(block: dict[str, Any], reaches: bool) -> None:
    warned = _warnings({"podSelector": {}, "policyTypes": ["Egress"],
                        "egress": [{"to": [{"ipBlock": block}], "ports": [{"port": 443}]}]})
    assert any(w.startswith("spec.egress: the API server stays reachable") for w in warned) is not reaches
    assert any(w.startswith("spec.egress[0].to[0].ipBlock: traffic to") for w in warned)  # the rest of the block


@pytest.mark.parametrize("ports", [[{"port": 80}], [{"port": 443, "protocol": "UDP"}], [{"port": "https"}],
                                   [{"port": 400, "endPort": 442}]])
def test_ports_that_miss_the_api_servers_miss_it(ports: list[dict[str, Any]]) -> None:
    warned = _warnings({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": ports}]})
    assert any(w.startswith("spec.egress: the API server stays reachable") for w in warned)
    assert not any(w.startswith("spec.egress: ") for w in _warnings(
        {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 400, "endPort": 500}]}]}))


def test_rules_of_a_direction_the_policy_does_not_name_are_ignored_as_kube_ignores_them() -> None:
    assert _warnings({"podSelector": JOB, "policyTypes": ["Ingress"], "egress": [{}]}) == []


def test_the_process_sandbox_enforces_nothing_and_says_so_once() -> None:
    for spec in (DEFAULT_DENY, WITHIN_JOB, {"podSelector": {}, "ingress": [{}, {}]}):
        policy = _admitted(copy.deepcopy(spec))
        assert netpol.warnings(policy, API_SERVER, shared_network=True) == [netpol.NOT_ENFORCED]
    assert "process sandbox" in netpol.NOT_ENFORCED and "root" in netpol.NOT_ENFORCED


def test_the_pod_selector_column_is_written_as_kubectl_writes_selectors() -> None:
    selector = {"matchLabels": {"b": "1", LABEL_JOBSET_NAME: "pi"},
                "matchExpressions": [{"key": "c", "operator": "In", "values": ["y", "x"]},
                                     {"key": "a", "operator": "DoesNotExist"}, {"key": "d", "operator": "Exists"},
                                     {"key": "e", "operator": "NotIn", "values": ["z"]}]}
    rows = table(NETWORK_POLICIES, [_admitted({"podSelector": selector}), _admitted({})], "1",
                 now=datetime.now(UTC))
    assert [c["name"] for c in rows["columnDefinitions"]] == ["Name", "Pod-Selector", "Age"]
    assert [r["cells"][1] for r in rows["rows"]] == [f"!a,b=1,c in (x,y),d,e notin (z),{LABEL_JOBSET_NAME}=pi",
                                                    "<none>"]
    assert format_label_selector({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}) == "<error>"
