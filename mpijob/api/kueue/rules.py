"""The rules a schema cannot say: Kueue's validating webhooks and CEL rules, on structurally valid objects.

Messages keep Kueue's wording (`must match the name in coveredResources`, `must be nil when cohort is
empty`, ...) and add the fix, so an administrator who knows Kueue recognises them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.errors import Cause
from mpijob.api.core.labels import is_qualified_name
from mpijob.api.core.quantity import parse_quantity
from mpijob.api.core.selectors import selector_causes
from mpijob.api.core.structural import show

_QUALIFIED_HELP = ("must be a qualified name: an optional DNS prefix and '/', then at most 63 letters, digits, "
                   "'-', '_' or '.', starting and ending with a letter or digit (e.g. 'nvidia.com/gpu')")


def causes(kind: str, obj: Obj, old: Obj | None) -> list[Cause]:
    """Kueue's semantic checks for `kind`; `old` is the stored object on update."""
    check = _RULES.get(kind)
    return check(obj, old) if check else []


def _spec(obj: Obj | None) -> Obj:
    return (obj or {}).get("spec") or {}


# --- ClusterQueue / Cohort ---------------------------------------------------------------------

def _cluster_queue(obj: Obj, _: Obj | None) -> list[Cause]:
    spec = _spec(obj)
    out = _resource_groups(spec.get("resourceGroups") or [], bool(spec.get("cohortName")), "cohort")
    out += selector_causes(spec.get("namespaceSelector"), "spec.namespaceSelector")
    pre = spec.get("preemption") or {}
    if pre.get("reclaimWithinCohort") == "Never" and (pre.get("borrowWithinCohort") or {}).get("policy",
                                                                                               "Never") != "Never":
        out.append(Cause("spec.preemption", "Invalid value: reclaimWithinCohort=Never and "
                                            "borrowWithinCohort.Policy!=Never; set reclaimWithinCohort to "
                                            "LowerPriority or Any, or borrowWithinCohort.policy to Never"))
    fungibility = spec.get("flavorFungibility") or {}
    if fungibility.get("preference") is not None and (fungibility.get("whenCanBorrow"),
                                                       fungibility.get("whenCanPreempt")) != ("TryNextFlavor",) * 2:
        out.append(Cause("spec.flavorFungibility", "Invalid value: preference can only be set when both "
                                                   "whenCanBorrow and whenCanPreempt are TryNextFlavor; set both or "
                                                   "remove preference"))
    return out + _admission_checks(spec) + _weight(spec)


def _admission_checks(spec: Obj) -> list[Cause]:
    """A check is listed once (the CRD's list-map key) and only on flavors the queue has (Kueue's webhook)."""
    flavors = [f["name"] for g in spec.get("resourceGroups") or [] for f in g.get("flavors") or []]
    out: list[Cause] = []
    seen: set[str] = set()
    for i, check in enumerate((spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []):
        where = f"spec.admissionChecksStrategy.admissionChecks[{i}]"
        if check["name"] in seen:
            out.append(Cause(where, f'Duplicate value: {{"name":{show(check["name"])}}}: an AdmissionCheck may be '
                                    "listed once; merge the two entries", "FieldValueDuplicate"))
        seen.add(check["name"])
        for j, flavor in enumerate(check.get("onFlavors") or []):
            if flavor not in flavors:
                supported = ", ".join(show(f) for f in flavors) or "none (the queue lists no flavors)"
                out.append(Cause(f"{where}.onFlavors[{j}]", f"Unsupported value: {show(flavor)}: supported values: "
                                                            f"{supported}", "FieldValueNotSupported"))
    return out


def _cohort(obj: Obj, _: Obj | None) -> list[Cause]:
    spec = _spec(obj)
    out = _resource_groups(spec.get("resourceGroups") or [], bool(spec.get("parentName")), "parent")
    name = (obj.get("metadata") or {}).get("name")
    if name and spec.get("parentName") == name:
        out.append(Cause("spec.parentName", f'Invalid value: "{name}": a cohort cannot be its own parent; '
                                            "name another cohort or remove parentName"))
    return out + _weight(spec)


def _weight(spec: Obj) -> list[Cause]:
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is not None and parse_quantity(weight) < 0:
        return [Cause("spec.fairSharing.weight", f"Invalid value: {show(weight)}: must be greater than or equal "
                                                 "to 0 (0 means the queue only gets what nobody else wants)")]
    return []


def _resource_groups(groups: list[Obj], has_parent: bool, parent_word: str) -> list[Cause]:
    out: list[Cause] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for i, group in enumerate(groups):
        where = f"spec.resourceGroups[{i}]"
        covered = group.get("coveredResources") or []
        for j, name in enumerate(covered):
            if not is_qualified_name(name):
                out.append(Cause(f"{where}.coveredResources[{j}]", f"Invalid value: {show(name)}: {_QUALIFIED_HELP}"))
            if name in seen_resources:
                out.append(Cause(f"{where}.coveredResources[{j}]",
                                 f"Duplicate value: {show(name)}: a resource may be covered by one resource group "
                                 "only; remove it here or from the other group", "FieldValueDuplicate"))
            seen_resources.add(name)
        for j, flavor in enumerate(group.get("flavors") or []):
            fwhere = f"{where}.flavors[{j}]"
            if flavor["name"] in seen_flavors:
                out.append(Cause(f"{fwhere}.name", f"Duplicate value: {show(flavor['name'])}: a flavor may appear "
                                                   "once in a queue; merge the two entries", "FieldValueDuplicate"))
            seen_flavors.add(flavor["name"])
            out += _flavor_quotas(flavor, covered, has_parent, parent_word, fwhere)
    return out


def _flavor_quotas(flavor: Obj, covered: list[str], has_parent: bool, parent_word: str, where: str) -> list[Cause]:
    resources = flavor["resources"]
    out: list[Cause] = []
    if len(resources) != len(covered):
        out.append(Cause(f"{where}.resources", f"Invalid value: {len(resources)} resources: flavors must have the "
                                               f"same number of resources as the coveredResources ({len(covered)}: "
                                               f"{', '.join(covered)}); list one quota per covered resource, in order"))
    for k, quota in enumerate(resources[: len(covered)]):
        qwhere = f"{where}.resources[{k}]"
        if quota["name"] != covered[k]:
            out.append(Cause(f"{qwhere}.name", f"Invalid value: {show(quota['name'])}: must match the name in "
                                               f"coveredResources ({show(covered[k])} at position {k})"))
        nominal = parse_quantity(quota["nominalQuota"])
        for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
            value = quota.get(key)
            if value is None:
                continue
            if parse_quantity(value) < 0:
                out.append(Cause(f"{qwhere}.{key}", f"Invalid value: {show(value)}: must be greater than or equal "
                                                    "to 0"))
            if key != "nominalQuota" and not has_parent:
                parent_field = "cohortName" if parent_word == "cohort" else "parentName"
                out.append(Cause(f"{qwhere}.{key}", f"Invalid value: {show(value)}: must be nil when {parent_word} "
                                                    f"is empty; set spec.{parent_field} or remove {key}"))
            if key == "lendingLimit" and parse_quantity(value) > nominal:
                given = show(quota["nominalQuota"])
                out.append(Cause(f"{qwhere}.lendingLimit", f"Invalid value: {show(value)}: must be less than or "
                                                           f"equal to the nominalQuota ({given})"))
    return out


# --- LocalQueue, ResourceFlavor ----------------------------------------------------------------

def _local_queue(obj: Obj, old: Obj | None) -> list[Cause]:
    before, after = _spec(old).get("clusterQueue"), _spec(obj).get("clusterQueue")
    if old is not None and before is not None and after != before:
        return [Cause("spec.clusterQueue", f"Invalid value: {show(after)}: field is immutable (was {show(before)}); "
                                           "delete the LocalQueue and create it again to point it elsewhere")]
    return []


def _resource_flavor(obj: Obj, old: Obj | None) -> list[Cause]:
    spec, out = _spec(obj), []
    labels = spec.get("nodeLabels") or {}
    out += selector_causes({"matchLabels": labels}, "spec.nodeLabels") if labels else []
    out = [Cause("spec.nodeLabels", c.message, c.reason) for c in out]
    if spec.get("topologyName") and not labels:
        out.append(Cause("spec", "Invalid value: at least one nodeLabel is required when topology is set; add "
                                 "spec.nodeLabels or remove spec.topologyName"))
    before = _spec(old).get("topologyName")
    if old is not None and before and spec.get("topologyName") != before:
        out.append(Cause("spec", f"Invalid value: topologyName is immutable when topologyName is set (was "
                                 f"{show(before)})"))
    return out + _tolerations(spec.get("tolerations") or [])


def _tolerations(tolerations: list[Obj]) -> list[Cause]:
    """The CRD's CEL rules on a flavor's tolerations (enums are the schema's)."""
    out = []
    for i, t in enumerate(tolerations):
        where, exists = f"spec.tolerations[{i}]", t.get("operator") == "Exists"
        if not t.get("key") and not exists:
            out.append(Cause(where, "Invalid value: operator must be Exists when 'key' is empty, which means 'match "
                                    "all values and all keys'; set a key or operator: Exists"))
        if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
            out.append(Cause(where, "Invalid value: effect must be 'NoExecute' when 'tolerationSeconds' is set; set "
                                    "effect: NoExecute or remove tolerationSeconds"))
        if exists and t.get("value") is not None:
            out.append(Cause(where, "Invalid value: a value must be empty when 'operator' is 'Exists'; remove value"))
    return out


# --- Workload ----------------------------------------------------------------------------------

def _workload(obj: Obj, _: Obj | None) -> list[Cause]:
    spec, out = _spec(obj), []
    seen: set[str] = set()
    for i, pod_set in enumerate(spec.get("podSets") or []):
        where = f"spec.podSets[{i}]"
        name = pod_set.get("name", "main")
        if name in seen:
            out.append(Cause(f"{where}.name", f"Duplicate value: {show(name)}: pod set names must be unique",
                             "FieldValueDuplicate"))
        seen.add(name)
        if pod_set.get("minCount") is not None and pod_set["minCount"] > pod_set.get("count", 1):
            out.append(Cause(f"{where}.minCount", f"Invalid value: {pod_set['minCount']}: minCount should be "
                                                  f"positive and less or equal to count ({pod_set.get('count', 1)})"))
        out += _requests(pod_set.get("template") or {}, f"{where}.template")
    ref = spec.get("priorityClassRef")
    if ref is not None:
        pairs = {names.KUEUE_GROUP: "WorkloadPriorityClass", names.SCHEDULING_GROUP: "PriorityClass"}
        if pairs[ref["group"]] != ref["kind"]:
            out.append(Cause("spec.priorityClassRef.kind", f"Invalid value: {show(ref['kind'])}: only the "
                                                           f"{pairs[ref['group']]} kind is allowed for the "
                                                           f"{ref['group']} group"))
        if spec.get("priority") is None:
            out.append(Cause("spec.priority", "Required value: priority should not be nil when priorityClassRef is "
                                              "set; set it to the priority class's value", "FieldValueRequired"))
    return out


def _requests(template: Any, where: str) -> list[Cause]:
    """Container requests/limits must be non-negative quantities: the scheduler sums them."""
    tspec = template.get("spec") if isinstance(template, dict) else None
    containers = tspec.get("containers") if isinstance(tspec, dict) else None
    out: list[Cause] = []
    for i, c in enumerate(containers if isinstance(containers, list) else []):
        resources = c.get("resources") if isinstance(c, dict) else None
        for key in ("requests", "limits"):
            amounts = resources.get(key) if isinstance(resources, dict) else None
            for res, qty in (amounts.items() if isinstance(amounts, dict) else ()):
                field = f"{where}.spec.containers[{i}].resources.{key}[{res}]"
                try:
                    bad = parse_quantity(qty) < 0 or isinstance(qty, bool)
                except ValueError:
                    bad = True
                if bad:
                    out.append(Cause(field, f"Invalid value: {show(qty)}: must be a non-negative quantity such as "
                                            '1, "500m" or "4Gi"'))
    return out


_RULES: dict[str, Callable[[Obj, Obj | None], list[Cause]]] = {
    "ClusterQueue": _cluster_queue,
    "Cohort": _cohort,
    "LocalQueue": _local_queue,
    "ResourceFlavor": _resource_flavor,
    "Workload": _workload,
}
