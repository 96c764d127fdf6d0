"""Kueue v1beta1 ↔ v1beta2, the field renames of Kueue's own conversion webhook.

Objects are stored in v1beta2; a request at v1beta1 has its body converted up before admission and
every object it gets back (get, list, watch, write responses) converted down. What changed:

* ClusterQueue `spec.cohort` ↔ `spec.cohortName`; v1beta1 `spec.admissionChecks: [name]` →
  `spec.admissionChecksStrategy.admissionChecks: [{name}]`; v1beta1 flavorFungibility values `Borrow`
  and `Preempt` → `MayStopSearch`; `status.pendingWorkloadsStatus` and
  `status.fairSharing.admissionFairSharingStatus` exist only in v1beta1.
* LocalQueue `status.flavorUsage` ↔ `status.flavorsUsage`; v1beta1 `status.flavors` is dropped.
* Workload `spec.priorityClassSource` + `spec.priorityClassName` ↔ `spec.priorityClassRef{group, kind,
  name}`; `status.accumulatedPastExexcutionTimeSeconds` (sic) ↔ `status.accumulatedPastExecutionTimeSeconds`.
* Cohort: `status.fairSharing.admissionFairSharingStatus` exists only in v1beta1.
"""

from __future__ import annotations

import copy

from mpijob.api import Obj
from mpijob.api.core.errors import Cause, invalid
from mpijob.api.core.resources import Resource, storage
from mpijob.api.names import (
    KUEUE_API_VERSION,
    KUEUE_GROUP,
    KUEUE_V1BETA1,
    KUEUE_VERSION,
    PRIORITY_SOURCE_KUEUE,
    PRIORITY_SOURCE_POD,
    SCHEDULING_GROUP,
)

_SOURCES = {  # v1beta1 priorityClassSource ↔ v1beta2 priorityClassRef (group, kind)
    PRIORITY_SOURCE_KUEUE: (KUEUE_GROUP, "WorkloadPriorityClass"),
    PRIORITY_SOURCE_POD: (SCHEDULING_GROUP, "PriorityClass"),
}


def is_converted(res: Resource) -> bool:
    """Whether objects of `res` differ from how they are stored (a Kueue v1beta1 request)."""
    return res.group == KUEUE_GROUP and res.version != KUEUE_VERSION


def to_storage(res: Resource, obj: Obj) -> tuple[Resource, Obj]:
    """The storage resource and `obj` in its version; a copy when converted, else `obj` itself."""
    if not is_converted(res):
        return res, obj
    return storage(res), up(obj)


def from_storage(res: Resource, obj: Obj) -> Obj:
    """A stored object as a request at `res`'s version sees it."""
    return down(obj) if is_converted(res) else obj


# fields only v1beta2 has: in a v1beta1 body they are unknown fields, not something to convert
_V1BETA2_ONLY: dict[str, dict[str, tuple[str, ...]]] = {
    "ClusterQueue": {"spec": ("cohortName", "concurrentAdmissionPolicy")},
    "LocalQueue": {"status": ("flavorsUsage",)},
    "Workload": {"spec": ("priorityClassRef", "preemptionGates"),
                 "status": ("accumulatedPastExecutionTimeSeconds", "preemptionGates")},
}
_V1BETA1_NAMES = {"cohortName": "cohort", "flavorsUsage": "flavorUsage",
                  "priorityClassRef": "priorityClassSource and priorityClassName",
                  "accumulatedPastExecutionTimeSeconds": "accumulatedPastExexcutionTimeSeconds"}


def up(obj: Obj) -> Obj:
    """A v1beta1 Kueue object as v1beta2 (a converted copy); raises 422 for fields v1beta1 does not have,
    or where v1beta1 is ambiguous."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = KUEUE_API_VERSION
    kind = out.get("kind")
    spec, status = _section(out, "spec"), _section(out, "status")
    _refuse_v1beta2_only(str(kind), out)
    if kind == "ClusterQueue":
        if spec is not None:
            _rename(spec, "cohort", "cohortName")
            checks = spec.pop("admissionChecks", None)
            if checks:
                if spec.get("admissionChecksStrategy") is not None:
                    name = (out.get("metadata") or {}).get("name", "")
                    raise invalid("ClusterQueue", str(name), [Cause(
                        "spec", "Invalid value: Either AdmissionChecks or AdmissionCheckStrategy can be set, but not "
                                "both; move the names in spec.admissionChecks into "
                                "spec.admissionChecksStrategy.admissionChecks")], KUEUE_GROUP)
                spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
            fungibility = spec.get("flavorFungibility")
            if isinstance(fungibility, dict):
                for key, old in (("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")):
                    if fungibility.get(key) == old:
                        fungibility[key] = "MayStopSearch"
        if status is not None:
            status.pop("pendingWorkloadsStatus", None)
            _drop_admission_fair_sharing(status)
    elif kind == "LocalQueue" and status is not None:
        _rename(status, "flavorUsage", "flavorsUsage")
        status.pop("flavors", None)
    elif kind == "Workload":
        if spec is not None:
            source = spec.pop("priorityClassSource", None)
            name = spec.pop("priorityClassName", None)
            if source in _SOURCES and name:
                group, ref_kind = _SOURCES[source]
                spec["priorityClassRef"] = {"group": group, "kind": ref_kind, "name": name}
        if status is not None:
            _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
    elif kind == "Cohort" and status is not None:
        _drop_admission_fair_sharing(status)
    return out


def down(obj: Obj) -> Obj:
    """A stored (v1beta2) Kueue object as v1beta1 (a converted copy)."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = f"{KUEUE_GROUP}/{KUEUE_V1BETA1}"
    kind = out.get("kind")
    spec, status = _section(out, "spec"), _section(out, "status")
    if kind == "ClusterQueue" and spec is not None:
        _rename(spec, "cohortName", "cohort")
        spec.pop("concurrentAdmissionPolicy", None)  # v1beta2 only
    elif kind == "LocalQueue" and status is not None:
        _rename(status, "flavorsUsage", "flavorUsage")
    elif kind == "Workload":
        if spec is not None:
            ref = spec.pop("priorityClassRef", None)
            if isinstance(ref, dict):
                for source, (group, ref_kind) in _SOURCES.items():
                    if ref.get("group") == group and ref.get("kind") == ref_kind:
                        spec["priorityClassSource"], spec["priorityClassName"] = source, ref.get("name")
            spec.pop("preemptionGates", None)  # v1beta2 only
        if status is not None:
            _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
            status.pop("preemptionGates", None)
    return out


def _refuse_v1beta2_only(kind: str, obj: Obj) -> None:
    causes = []
    for section, names in _V1BETA2_ONLY.get(kind, {}).items():
        for name in names:
            if name in (_section(obj, section) or {}):
                v1 = _V1BETA1_NAMES.get(name)
                fix = f"use {v1} in {KUEUE_V1BETA1}" if v1 else f"send the object to {KUEUE_API_VERSION}"
                causes.append(Cause(f"{section}.{name}", f'unknown field "{section}.{name}": it exists only in '
                                                         f"{KUEUE_API_VERSION}; {fix}"))
    if causes:
        raise invalid(kind, str((obj.get("metadata") or {}).get("name", "")), causes, KUEUE_GROUP)


def _section(obj: Obj, key: str) -> Obj | None:
    value = obj.get(key)
    return value if isinstance(value, dict) else None


def _rename(node: Obj, old: str, new: str) -> None:
    if old in node:
        value = node.pop(old)
        if value not in (None, "") and node.get(new) is None:  # Go's omitempty: "" is unset
            node[new] = value


def _drop_admission_fair_sharing(status: Obj) -> None:
    fair = status.get("fairSharing")
    if isinstance(fair, dict):
        fair.pop("admissionFairSharingStatus", None)
