"""Namespace quotas: kube-apiserver's LimitRanger and ResourceQuota admission plugins, applied to a whole
TrainJob (launcher + every node of its run plan) instead of one pod at a time. Pure: no I/O.

What happens to a pod on a cluster, in this order, happens here to each pod of the plan:

1. the API's pod defaulting: a container's limit with no request of the same resource becomes its
   request (`SetDefaults_Pod`);
2. LimitRanger: a `Container` item's `default` fills the limits a container lacks and `defaultRequest`
   the requests (`defaultRequest` defaults to `default`, which defaults to `max`; an unset
   `defaultRequest` to `min`: `SetDefaults_LimitRangeItem`); then `min`, `max` and
   `maxLimitRequestRatio` of `Container` and `Pod` items are checked, with LimitRanger's messages;
3. ResourceQuota: a quota tracking cpu or memory requires every container to state them (`failed
   quota: q: must specify ...`), and the usage (`pods`, `requests.*`, `limits.*`, `cpu`, `memory`,
   `requests.<extended resource>`, plus the TrainJob itself for `count/trainjobs.trainer.kubeflow.org`)
   added to what the namespace already uses must stay within every quota's `hard`, or the request is
   refused with the plugin's message (`exceeded quota: q, requested: ..., used: ..., limited: ...`).

Amounts are integers in base units (`mpijob.api.core.quantity.to_base_units`: cpu in millicores, memory in
bytes, everything else in whole units), keyed by quota key; they are printed back as Kubernetes prints
a quantity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mpijob.api import names
from mpijob.api.core.quantity import format_quantity, parse_quantity, to_base_units
from mpijob.api.core.resources import TRAINJOBS

Usage = dict[str, int]  # quota key → amount in base units
Resources = dict[str, Any]  # a container's ResourceRequirements: {"requests": {...}, "limits": {...}}

COUNT_TRAINJOBS = f"{names.QUOTA_COUNT}{TRAINJOBS.group_resource}"
REQ, LIM = names.QUOTA_REQUESTS, names.QUOTA_LIMITS
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_HUGEPAGES = "hugepages-"
# The pod evaluator's own keys (pkg/quota/v1/evaluator/core/pods.go podResources, less count/pods,
# which counts stored Pod objects: the local cluster does not admit pods one by one).
POD_KEYS = frozenset([names.QUOTA_PODS, *_COMPUTE, *(REQ + r for r in _COMPUTE), *(LIM + r for r in _COMPUTE)])
# "it was a mistake, but if a quota tracks cpu or memory related resources, the incoming pod is required
# to have those values set" (the same file's validationSet)
MUST_SPECIFY = frozenset(["cpu", "memory", REQ + "cpu", REQ + "memory", LIM + "cpu", LIM + "memory"])


# -- quantities of a quota key -------------------------------------------------------------------------


def base_resource(key: str) -> str:
    """The resource a quota key counts (`requests.memory` → `memory`), for its base unit."""
    for prefix in (REQ, LIM):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def amount(key: str, quantity: object) -> int:
    """`quantity` of quota key `key` in base units; ValueError if it is not a quantity."""
    return to_base_units(base_resource(key), quantity)


def show(key: str, value: int) -> str:
    """An amount of `key` as Kubernetes prints the quantity (`4`, `1500m`, `16Gi`)."""
    return format_quantity(base_resource(key), value)


def resource_list(key_values: Mapping[str, object]) -> Usage:
    """A ResourceList (`spec.hard`, a container's requests) in base units; values that are not
    quantities are left out (validation refuses them on the way in)."""
    out: Usage = {}
    for key, value in (key_values or {}).items():
        try:
            out[key] = amount(key, value)
        except (ValueError, TypeError):
            continue
    return out


def pretty(usage: Mapping[str, int]) -> str:
    """The plugin's prettyPrint: `key=quantity` sorted by key, comma-separated."""
    return ",".join(f"{k}={show(k, usage[k])}" for k in sorted(usage))


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """An extended resource a container may request (`nvidia.com/gpu`): IsExtendedResourceName."""
    return not _native(name) and not name.startswith(REQ)


def tracked(key: str) -> bool:
    """Whether a TrainJob's usage is counted against quota key `key` (the pod evaluator's
    MatchingResources, plus the TrainJob object count). Other keys do not constrain a TrainJob."""
    return (key in POD_KEYS or key == COUNT_TRAINJOBS or key.startswith((_HUGEPAGES, REQ + _HUGEPAGES))
            or (key.startswith(REQ) and not _native(key)))


# -- LimitRange defaults and checks ---------------------------------------------------------------------


def _items(limit_ranges: Iterable[Mapping[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The LimitRanges' items of type `kind`, with the API's defaults applied to Container items."""
    out = []
    for lr in limit_ranges:
        for item in ((lr.get("spec") or {}).get("limits") or []):
            if not isinstance(item, dict) or item.get("type") != kind:
                continue
            item = {k: dict(item.get(k) or {}) for k in ("default", "defaultRequest", "max", "min",
                                                           "maxLimitRequestRatio")}
            if kind == names.LIMIT_TYPE_CONTAINER:  # SetDefaults_LimitRangeItem
                item["default"] = {**item["max"], **item["default"]}
                item["defaultRequest"] = {**item["min"], **item["default"], **item["defaultRequest"]}
            out.append(item)
    return out


def defaulted(resources: Mapping[str, Any] | None, limit_ranges: Iterable[Mapping[str, Any]] = ()) -> Resources:
    """A container's resources as a pod would be stored with them: requests defaulted from its own
    limits, then the LimitRanges' `default` and `defaultRequest` for what it still lacks (each
    LimitRange in turn, as LimitRanger mutates the pod once per LimitRange)."""
    resources = resources or {}
    limits = dict(resources.get("limits") or {})
    requests = {**limits, **(resources.get("requests") or {})}
    for item in _items(limit_ranges, names.LIMIT_TYPE_CONTAINER):
        limits = {**item["default"], **limits}
        requests = {**item["defaultRequest"], **requests}
    out = {k: v for k, v in resources.items() if k not in ("limits", "requests")}
    if limits:
        out["limits"] = limits
    if requests:
        out["requests"] = requests
    return out


def _violations(kind: str, minimum: Mapping, maximum: Mapping, ratio: Mapping,
                requests: Usage, limits: Usage) -> list[str]:
    """LimitRanger's minConstraint, maxConstraint and limitRequestRatioConstraint for one container or pod."""
    out = []
    for name in sorted(minimum):
        if (enforced := _value(name, minimum[name])) is None:
            continue
        said = show(name, enforced)
        if name not in requests:
            out.append(f"minimum {name} usage per {kind} is {said}.  No request is specified")
        elif requests[name] < enforced:
            out.append(f"minimum {name} usage per {kind} is {said}, but request is {show(name, requests[name])}")
        elif name in limits and limits[name] < enforced:
            out.append(f"minimum {name} usage per {kind} is {said}, but limit is {show(name, limits[name])}")
    for name in sorted(maximum):
        if (enforced := _value(name, maximum[name])) is None:
            continue
        said = show(name, enforced)
        if name not in limits:
            out.append(f"maximum {name} usage per {kind} is {said}.  No limit is specified")
        elif limits[name] > enforced:
            out.append(f"maximum {name} usage per {kind} is {said}, but limit is {show(name, limits[name])}")
        elif name in requests and requests[name] > enforced:
            out.append(f"maximum {name} usage per {kind} is {said}, but request is {show(name, requests[name])}")
    for name in sorted(ratio):
        try:
            enforced_ratio = parse_quantity(ratio[name])
        except ValueError:
            continue
        said = format_quantity("cpu", math.ceil(enforced_ratio * 1000))  # a Quantity's String(): 1500m, 2
        if not requests.get(name):
            out.append(f"{name} max limit to request ratio per {kind} is {said}, but no request is specified "
                       "or request is 0")
        elif not limits.get(name):
            out.append(f"{name} max limit to request ratio per {kind} is {said}, but no limit is specified or "
                       "limit is 0")
        elif limits[name] > enforced_ratio * requests[name]:
            out.append(f"{name} max limit to request ratio per {kind} is {said}, but provided ratio is "
                       f"{limits[name] / requests[name]:f}")
    return out


def _value(name: str, quantity: object) -> int | None:
    try:
        return amount(name, quantity)
    except (ValueError, TypeError):
        return None


def limit_violations(pods: Iterable[Mapping[str, Any]], limit_ranges: Iterable[Mapping[str, Any]]) -> list[str]:
    """LimitRanger's refusals of the pods (each a container's defaulted resources; the local cluster runs
    one container per pod, so a `Pod` item judges the same amounts as a `Container` one), each message
    once, in order."""
    limit_ranges = list(limit_ranges)
    items = [(kind, item) for kind in (names.LIMIT_TYPE_CONTAINER, names.LIMIT_TYPE_POD)
             for item in _items(limit_ranges, kind)]
    out: list[str] = []
    for resources in pods:
        requests, limits = resource_list(resources.get("requests") or {}), resource_list(resources.get("limits") or {})
        for kind, item in items:
            for message in _violations(kind, item["min"], item["max"], item["maxLimitRequestRatio"], requests, limits):
                if message not in out:
                    out.append(message)
    return out


def aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as it is, several in brackets."""
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


# -- usage ----------------------------------------------------------------------------------------------


def pod_usage(resources: Mapping[str, Any]) -> Usage:
    """What one pod (one container, already `defaulted`) counts against a quota: podComputeUsageHelper."""
    requests = resource_list(resources.get("requests") or {})
    limits = resource_list(resources.get("limits") or {})
    out: Usage = {names.QUOTA_PODS: 1}
    for name in _COMPUTE:
        if name in requests:
            out[name] = out[REQ + name] = requests[name]
        if name in limits:
            out[LIM + name] = limits[name]
    for name, value in requests.items():
        if name.startswith(_HUGEPAGES):
            out[name] = out[REQ + name] = value
        elif is_extended(name):
            out[REQ + name] = value
    return out


def add(*usages: Mapping[str, int]) -> Usage:
    out: Usage = {}
    for usage in usages:
        for key, value in usage.items():
            out[key] = out.get(key, 0) + value
    return out


def job_usage(pods: Iterable[Mapping[str, Any]], running: bool = True) -> Usage:
    """A TrainJob's usage: the TrainJob itself, and, while it has not finished, every pod of its plan."""
    return add({COUNT_TRAINJOBS: 1}, *(pod_usage(p) for p in pods if running))


# -- ResourceQuota --------------------------------------------------------------------------------------


def scoped(resource_quota: Mapping[str, Any]) -> bool:
    """A quota with scopes or a scopeSelector: not evaluated by the local cluster (docs/security.md)."""
    spec = resource_quota.get("spec") or {}
    return bool(spec.get("scopes") or spec.get("scopeSelector"))


def hard(resource_quota: Mapping[str, Any]) -> Usage:
    return resource_list((resource_quota.get("spec") or {}).get("hard") or {})


def constrains(resource_quota: Mapping[str, Any]) -> bool:
    """Whether the quota has a key a TrainJob counts against (a quota with none does not constrain)."""
    return not scoped(resource_quota) and any(tracked(k) for k in hard(resource_quota))


def status(resource_quota: Mapping[str, Any], used: Mapping[str, int]) -> dict[str, Any]:
    """The quota's status as the quota controller writes it: `hard` as specified (each quantity in its
    canonical form), `used` for each
    key the local cluster counts (0 when nothing uses it)."""
    limits = hard(resource_quota)
    spec_hard = {k: show(k, limits[k]) if k in limits else v
                 for k, v in ((resource_quota.get("spec") or {}).get("hard") or {}).items()}
    if scoped(resource_quota):
        return {"hard": spec_hard}
    return {"hard": spec_hard, "used": {k: show(k, used.get(k, 0)) for k in sorted(limits) if tracked(k)}}


def check(quotas: Iterable[Mapping[str, Any]], used: Mapping[str, int],
          pods: Sequence[Mapping[str, Any]], bare: str = "") -> str | None:
    """Why the quotas refuse a new TrainJob whose plan has `pods` (each a container's defaulted
    resources, named `node` as every MPI container is) when the namespace already uses `used`; None
    if they admit it. The first quota that refuses is named, as the ResourceQuota plugin does. `bare`: the
    one pod is a bare pod's (no TrainJob is counted), whose container has this name."""
    quotas = [q for q in quotas if constrains(q)]
    for q in quotas:  # Constraints, before any usage is counted
        required = sorted(k for k in hard(q) if k in MUST_SPECIFY)
        missing = [k for k in required if any(k not in pod_usage(p) for p in pods)]
        if missing:
            said = "; ".join(f"{k} for: {bare or names.CONTAINER}" for k in missing)
            return f"failed quota: {q['metadata']['name']}: must specify {said}"
    whole = add(*(pod_usage(p) for p in pods)) if bare else job_usage(pods)
    requested = {k: v for k, v in whole.items() if v}
    for q in quotas:
        limits = hard(q)
        asked = {k: v for k, v in requested.items() if k in limits and tracked(k)}
        exceeded = sorted(k for k, v in asked.items() if used.get(k, 0) + v > limits[k])
        if exceeded:
            return (f"exceeded quota: {q['metadata']['name']}, "
                    f"requested: {pretty({k: asked[k] for k in exceeded})}, "
                    f"used: {pretty({k: used.get(k, 0) for k in exceeded})}, "
                    f"limited: {pretty({k: limits[k] for k in exceeded})}")
    return None
