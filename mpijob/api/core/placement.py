"""Does a pod fit a Node, and if not, what kube-scheduler says: its filters for node placement, pure.

A pod goes to a node only if the node passes every filter, in kube-scheduler's order (v1.32's default
plugins): the node is not cordoned (`spec.unschedulable`, unless tolerated), `spec.nodeName` names it,
its `NoSchedule` and `NoExecute` taints are tolerated, and its labels satisfy `nodeSelector` and the
required node affinity. The first filter a node fails is its reason; a pod no node takes gets the
scheduler's FitError message, the reasons counted per node, sorted, and the preemption verdict (none
of these reasons can be resolved by preempting a pod): the message `kubectl describe pod` shows.

The local cluster has one Node, the machine; the functions take any number, as the scheduler does.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mpijob.api import names

NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"  # the taint effects that keep a pod off a node
# Each filter's reason, as kube-scheduler's plugins word it (nodeunschedulable, nodename, nodeaffinity)
CORDONED = "node(s) were unschedulable"
OTHER_NODE = "node(s) didn't match the requested node name"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def _labels(node: dict) -> dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def tolerates(toleration: dict, taint: dict) -> bool:
    """core/v1's ToleratesTaint: the same effect (or none given), the same key (or none, with Exists), and
    the same value under Equal (the default operator)."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if effect and effect != taint.get("effect"):
        return False
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(pod_spec: dict, node: dict) -> dict | None:
    """The node's first NoSchedule or NoExecute taint none of the pod's tolerations tolerates."""
    tolerations = pod_spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in (NO_SCHEDULE, NO_EXECUTE) and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def requirement_matches(req: dict, values: dict[str, str]) -> bool:
    """One NodeSelectorRequirement against a node's labels (or fields): In, NotIn, Exists, DoesNotExist,
    Gt and Lt (integers), as kube's node selector reads them; an unknown operator matches nothing."""
    key, operator, wanted = req.get("key", ""), req.get("operator"), req.get("values") or []
    has, value = key in values, values.get(key)
    if operator == "In":
        return has and value in wanted
    if operator == "NotIn":
        return not has or value not in wanted
    if operator == "Exists":
        return has
    if operator == "DoesNotExist":
        return not has
    if operator in ("Gt", "Lt") and len(wanted) == 1:
        mine, bound = _int(value), _int(wanted[0])
        if mine is None or bound is None:
            return False
        return mine > bound if operator == "Gt" else mine < bound
    return False


def term_matches(term: dict, node: dict) -> bool:
    """A NodeSelectorTerm: all its label expressions and field expressions (only `metadata.name`) hold;
    a term with neither matches no node."""
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    labels = _labels(node)
    node_fields = {"metadata.name": (node.get("metadata") or {}).get("name", "")}
    return (all(requirement_matches(r, labels) for r in expressions)
            and all(r.get("key") == "metadata.name" and requirement_matches(r, node_fields) for r in fields))


def matches_affinity(pod_spec: dict, node: dict) -> bool:
    """`nodeSelector` (every label equal) and the required node affinity (any of its terms)."""
    labels = _labels(node)
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return True
    return any(term_matches(t or {}, node) for t in required.get("nodeSelectorTerms") or [])


def why_not(pod_spec: dict, node: dict) -> str | None:
    """The reason kube-scheduler's first failing filter gives for this node; None when the pod fits."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable") and not any(
            tolerates(t, {"key": names.TAINT_UNSCHEDULABLE, "effect": NO_SCHEDULE})
            for t in pod_spec.get("tolerations") or []):
        return CORDONED
    name = pod_spec.get("nodeName")
    if name and name != (node.get("metadata") or {}).get("name"):
        return OTHER_NODE
    taint = untolerated_taint(pod_spec, node)
    if taint is not None:
        return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}"
    if not matches_affinity(pod_spec, node):
        return AFFINITY
    return None


def unschedulable_message(reasons: list[str], total: int) -> str:
    """kube-scheduler's FitError: `0/N nodes are available: <count> <reason>, ....` and the preemption
    verdict; every reason here is one preempting a pod cannot resolve."""
    histogram = ", ".join(sorted(f"{count} {reason}" for reason, count in Counter(reasons).items()))
    return (f"0/{total} nodes are available: {histogram}. preemption: 0/{total} nodes are available: "
            f"{total} Preemption is not helpful for scheduling.")


def schedule(pod_spec: dict[str, Any], nodes: list[dict]) -> tuple[str | None, str]:
    """(the first node the pod fits, "") or (None, the scheduler's message)."""
    reasons = []
    for node in nodes:
        why = why_not(pod_spec, node)
        if why is None:
            return (node.get("metadata") or {}).get("name"), ""
        reasons.append(why)
    if not nodes:
        return None, "no nodes available to schedule pods"
    return None, unschedulable_message(reasons, len(nodes))
