"""Placement of a pod on a Node: kube-scheduler's node filters and its FitError message."""

from __future__ import annotations

import pytest
from mpijob.api import names
from mpijob.api.core.placement import schedule, why_not

NODE = {"metadata": {"name": "box", "labels": {"kubernetes.io/hostname": "box", "disk": "ssd", "cores": "16"}},
        "spec": {}}
AFFINITY_MESSAGE = ("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: "
                    "0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def node(labels: dict | None = None, taints: list | None = None, unschedulable: bool = False) -> dict:
    out = {"metadata": {"name": "box", "labels": {**NODE["metadata"]["labels"], **(labels or {})}}, "spec": {}}
    if taints:
        out["spec"]["taints"] = taints
    if unschedulable:
        out["spec"]["unschedulable"] = True
    return out


def required(*expressions: dict, fields: list | None = None) -> dict:
    term: dict = {"matchExpressions": list(expressions)}
    if fields:
        term["matchFields"] = fields
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}}


def test_a_pod_asking_nothing_fits_and_is_bound_to_the_node():
    assert schedule({}, [node()]) == ("box", "")


def test_a_node_selector_the_node_lacks_gets_the_schedulers_message():
    assert schedule({"nodeSelector": {"disk": "ssd"}}, [node()]) == ("box", "")
    assert schedule({"nodeSelector": {"disk": "nvme"}}, [node()]) == (None, AFFINITY_MESSAGE)
    assert schedule({"nodeSelector": {"gpu": "a100"}}, [node()]) == (None, AFFINITY_MESSAGE)


@pytest.mark.parametrize("expression,fits", [
    ({"key": "disk", "operator": "In", "values": ["ssd", "nvme"]}, True),
    ({"key": "disk", "operator": "In", "values": ["nvme"]}, False),
    ({"key": "disk", "operator": "NotIn", "values": ["nvme"]}, True),
    ({"key": "absent", "operator": "NotIn", "values": ["x"]}, True),
    ({"key": "disk", "operator": "NotIn", "values": ["ssd"]}, False),
    ({"key": "disk", "operator": "Exists"}, True),
    ({"key": "gpu", "operator": "Exists"}, False),
    ({"key": "gpu", "operator": "DoesNotExist"}, True),
    ({"key": "disk", "operator": "DoesNotExist"}, False),
    ({"key": "cores", "operator": "Gt", "values": ["8"]}, True),
    ({"key": "cores", "operator": "Gt", "values": ["16"]}, False),
    ({"key": "cores", "operator": "Lt", "values": ["32"]}, True),
    ({"key": "disk", "operator": "Lt", "values": ["32"]}, False),  # not an integer: no match
])
def test_required_node_affinity_operators(expression, fits):
    assert (why_not(required(expression), node()) is None) == fits


def test_terms_are_ored_and_expressions_anded():
    both = required({"key": "disk", "operator": "Exists"}, {"key": "gpu", "operator": "Exists"})
    assert why_not(both, node()) is not None
    terms = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]}}}}
    assert why_not(terms, node()) is None
    empty = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{}]}}}}
    assert why_not(empty, node()) is not None  # a term with nothing in it matches no node


def test_match_fields_names_the_node():
    assert why_not(required(fields=[{"key": "metadata.name", "operator": "In", "values": ["box"]}]), node()) is None
    assert why_not(required(fields=[{"key": "metadata.name", "operator": "In", "values": ["other"]}]), node()) \
        == "node(s) didn't match Pod's node affinity/selector"


def test_node_name_must_be_the_node():
    assert schedule({"nodeName": "box"}, [node()]) == ("box", "")
    assert schedule({"nodeName": "gpu-7"}, [node()])[1].startswith(
        "0/1 nodes are available: 1 node(s) didn't match the requested node name.")


def test_an_untolerated_taint_is_named_with_its_key_and_value():
    tainted = node(taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}])
    assert schedule({}, [tainted]) == (None, ("0/1 nodes are available: 1 node(s) had untolerated taint "
                                             "{dedicated: ml}. preemption: 0/1 nodes are available: 1 "
                                             "Preemption is not helpful for scheduling."))
    assert why_not({}, node(taints=[{"key": "maintenance", "effect": "NoExecute"}])) == \
        "node(s) had untolerated taint {maintenance: }"
    assert why_not({}, node(taints=[{"key": "soft", "effect": "PreferNoSchedule"}])) is None


@pytest.mark.parametrize("toleration,tolerated", [
    ({"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}, True),
    ({"key": "dedicated", "value": "ml"}, True),  # Equal is the default operator; no effect: any effect
    ({"key": "dedicated", "operator": "Exists"}, True),
    ({"operator": "Exists"}, True),  # no key with Exists: every taint
    ({"key": "dedicated", "value": "web"}, False),
    ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "other", "operator": "Exists"}, False),
])
def test_tolerations(toleration, tolerated):
    tainted = node(taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}])
    assert (why_not({"tolerations": [toleration]}, tainted) is None) == tolerated


def test_taints_come_before_affinity_as_the_scheduler_filters():
    tainted = node(taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}])
    assert why_not({"nodeSelector": {"disk": "nvme"}}, tainted) == "node(s) had untolerated taint {dedicated: ml}"


def test_a_cordoned_node_takes_only_pods_that_tolerate_it():
    cordoned = node(unschedulable=True)
    assert why_not({}, cordoned) == "node(s) were unschedulable"
    assert why_not({"tolerations": [{"key": names.TAINT_UNSCHEDULABLE, "operator": "Exists",
                                     "effect": "NoSchedule"}]}, cordoned) is None


def test_reasons_are_counted_per_node_and_sorted():
    other = {"metadata": {"name": "b", "labels": {}}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}
    message = schedule({"nodeSelector": {"disk": "nvme"}}, [node(), other, node()])[1]
    assert message == ("0/3 nodes are available: 1 node(s) had untolerated taint {k: }, 2 node(s) didn't match "
                       "Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not "
                       "helpful for scheduling.")
