"""Stored SecurityContextConstraints in pod admission, as OpenShift uses them; pure (docs/security.md,
"Tenant UIDs").

An SCC stored through the API joins the built-in ones of `api/openshift/scc.py` in one list, in OpenShift's order:
the higher `priority` first (unset counts as 0), then the more restrictive (OpenShift's points, `points`),
then by name. The first the pod may use and that accepts it admits the pod. A pod may use a stored SCC
when its creator or its ServiceAccount is named in the SCC's `users`, belongs to one of its `groups`, or
holds RBAC's `use` on it.

What a stored SCC decides here is the ids: `runAsUser`, `fsGroup`, and runAsGroup, which, as the
built-in `restricted-v2` keeps it, stays inside the groups of an SCC whose fsGroup is `MustRunAs`. Its
other fields (privilege, host namespaces and ports, volumes, capabilities, SELinux) only place it in the
order: a pod here asks for none of what they govern.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpijob.api import Obj, names
from mpijob.api.core import rbac
from mpijob.api.trainer.plan import PodPlan

if TYPE_CHECKING:
    from mpijob.api.openshift.scc import Ranges

# OpenShift's weights: each class of freedom outweighs every combination of the ones below it
_PRIVILEGED, _HOST_PORTS, _HOST_NETWORK, _HOST_VOLUMES, _OTHER_VOLUMES = 1_600_000, 800_000, 400_000, 200_000, 100_000
_STRATEGY: dict[str | None, int] = {names.SCC_RUN_AS_ANY: 40_000, names.SCC_MUST_RUN_AS_NON_ROOT: 30_000,
             names.SCC_MUST_RUN_AS_RANGE: 20_000, names.SCC_MUST_RUN_AS: 10_000}  # runAsUser and seLinuxContext
_PLAIN_VOLUMES = frozenset({"configMap", "downwardAPI", "emptyDir", "none", "projected", "secret"})
_ANY = ("*", "ALL")

IdSpan = tuple[int, int]  # first and last, inclusive


def points(scc: Obj) -> int:
    """How much an SCC allows, OpenShift's way: the lower, the more restrictive."""
    total = _PRIVILEGED if scc.get("allowPrivilegedContainer") else 0
    total += _HOST_PORTS if scc.get("allowHostPorts") else 0
    total += _HOST_NETWORK if scc.get("allowHostNetwork") else 0
    volumes = set(scc.get("volumes") or ())
    if volumes & {"*", "hostPath"}:
        total += _HOST_VOLUMES
    elif volumes - _PLAIN_VOLUMES:
        total += _OTHER_VOLUMES
    for strategy in ("seLinuxContext", "runAsUser"):
        total += _STRATEGY.get((scc.get(strategy) or {}).get("type"), 0)
    return total + _capability_points(scc)


def _capability_points(scc: Obj) -> int:
    """Capabilities added by default and allowed cost, required drops earn; always within 0–9999."""
    def caps(key: str) -> list[str]:
        return [str(c).upper() for c in scc.get(key) or ()]

    allowed, dropped = caps("allowedCapabilities"), caps("requiredDropCapabilities")
    total = 5000 + 300 * len(caps("defaultAddCapabilities"))
    total += 4000 if any(c in _ANY for c in allowed) else 10 * len(allowed)
    total += -3000 if "ALL" in dropped else -50 * len(dropped)
    return min(max(total, 0), 9999)


def order_key(name: str, scc: Obj) -> tuple[int, int, str]:
    """Where an SCC stands in admission's list: priority, then restrictiveness, then name."""
    return -int(scc.get("priority") or 0), points(scc), name


def names_subject(scc: Obj, subject: rbac.User) -> bool:
    """Whether the SCC's own `users` or `groups` name the subject (RBAC's `use` is asked apart)."""
    return subject.name in (scc.get("users") or ()) or bool(set(subject.groups) & set(scc.get("groups") or ()))


def _shown(spans: list[IdSpan]) -> str:
    return ", ".join(f"[{first}, {last}]" for first, last in spans)


def _inside(value: int, spans: list[IdSpan]) -> bool:
    return any(first <= value <= last for first, last in spans)


def ids(scc: Obj, pod: PodPlan, ranges: Ranges, container: str) -> tuple[int, int, int | None] | list[str]:
    """The (uid, gid, fsGroup) a stored SCC gives the pod, or its objections in OpenShift's words
    (`container` is the prefix naming the pod's container). A pod that names no UID gets the SCC's
    (MustRunAs, MustRunAsRange) or, under the others, its namespace's first UID, as under the built-ins."""
    name = scc["metadata"]["name"]
    errors: list[str] = []
    fs = scc.get("fsGroup") or {}
    fs_group = pod.fs_group
    groups: list[IdSpan] = []
    if fs.get("type") == names.SCC_MUST_RUN_AS:
        groups = [(r["min"], r["max"]) for r in fs.get("ranges") or ()] or [(ranges.groups.first, ranges.groups.last)]
        fs_group = groups[0][0] if fs_group is None else fs_group
        if not _inside(fs_group, groups):
            errors.append(f"provider {name}: .spec.securityContext.fsGroup: Invalid value: []int64{{{fs_group}}}: "
                          f"{fs_group} is not an allowed group")
    run_as = scc.get("runAsUser") or {}
    kind, uid = run_as.get("type"), pod.run_as_user
    if kind == names.SCC_MUST_RUN_AS:
        uid = run_as["uid"] if uid is None else uid
        if uid != run_as["uid"]:
            errors.append(f"{container}.runAsUser: Invalid value: {uid}: must be: {run_as['uid']}")
    elif kind == names.SCC_MUST_RUN_AS_RANGE:
        low, high = run_as.get("uidRangeMin"), run_as.get("uidRangeMax")
        span = (ranges.uids.first, ranges.uids.last) if low is None or high is None else (low, high)
        uid = span[0] if uid is None else uid
        if not _inside(uid, [span]):
            errors.append(f"{container}.runAsUser: Invalid value: {uid}: must be in the ranges: {_shown([span])}")
    else:
        uid = ranges.uids.first if uid is None else uid
        if kind == names.SCC_MUST_RUN_AS_NON_ROOT and uid == 0:
            errors.append(f"{container}.runAsUser: Invalid value: 0: running with the root UID is forbidden")
    gid = uid if pod.run_as_group is None else pod.run_as_group
    if pod.run_as_group is not None and groups and not _inside(gid, groups):
        errors.append(f"{container}.runAsGroup: Invalid value: {gid}: must be in the ranges: {_shown(groups)}")
    return errors or (uid, gid, fs_group)
