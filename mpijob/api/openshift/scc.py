"""Which Unix identity a pod runs as, decided as OpenShift's SecurityContextConstraints admission decides
it; pure (docs/security.md, "Tenant UIDs").

Pods of every tenant are processes of one machine, so the Unix UID is what keeps one tenant's files,
keys and homes from another's. As on OpenShift, every namespace owns a block of UIDs, written on it as
`openshift.io/sa.scc.uid-range: <first>/<size>` (blocks of 10000 from 1000000000, one per namespace,
never two namespaces in one block) and the same block of groups
(`openshift.io/sa.scc.supplemental-groups`). A pod is tried against three SCCs in order of preference,
and the first that accepts it decides its ids:

* `restricted-v2`, usable by everyone: runAsUser MustRunAsRange (unset → the range's first UID, set →
  inside the range), fsGroup MustRunAs (unset → the first group, set → inside), and runAsGroup, when
  set, inside the groups (OpenShift leaves it free; here group ids open files on a shared disk);
* `nonroot-v2`: any UID but 0, any groups;
* `anyuid`: any UID, root included, any groups.

The last two are usable by whoever RBAC lets `use` them (verb `use` on `securitycontextconstraints` in
`security.openshift.io`, resourceNames the SCC, as the ClusterRoles `system:openshift:scc:<name>`
grant), the requesting user or the pod's ServiceAccount. SCCs stored through the API join them in
OpenShift's order, priority first (`candidates`; what a stored one decides: `api/openshift/scc_stored.py`). A pod
no SCC accepts is refused with OpenShift's words.

Where the local cluster decides what OpenShift leaves to the image: a pod that sets no runAsUser runs
as its namespace's first UID whichever SCC admits it (there is no image `USER` here, and nobody runs
as root unasked), and a pod that sets no runAsGroup runs with the group numbered as its UID, not
OpenShift's group 0 (group root on a shared machine reads whatever root's group may).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from mpijob.api import Obj, names
from mpijob.api.core import rbac
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import PODS, TRAINJOBS
from mpijob.api.openshift import scc_stored
from mpijob.api.trainer.plan import PodPlan, RunPlan
from mpijob.api.trainer.render import service_account_name

RANGE_BASE = 1_000_000_000  # OpenShift's default allocation: 1000000000-1999999999, blocks of 10000
BLOCK_SIZE = 10_000
BLOCKS = 100_000
RESTRICTED_V2, NONROOT_V2, ANYUID = "restricted-v2", "nonroot-v2", "anyuid"
PREFERENCE = (RESTRICTED_V2, NONROOT_V2, ANYUID)
GRANTED = (NONROOT_V2, ANYUID)  # restricted-v2 is everyone's; these need RBAC's `use`
USE = "use"
# The built-ins in the fields that place an SCC in admission's order (`scc_stored.points`), as OpenShift
# defines them. None has a priority here (OpenShift gives anyuid 10): the most restrictive comes first.
_VOLUMES = ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"]
BUILT_IN: dict[str, Obj] = {
    RESTRICTED_V2: {"volumes": _VOLUMES, "allowedCapabilities": ["NET_BIND_SERVICE"],
                    "requiredDropCapabilities": ["ALL"], "runAsUser": {"type": names.SCC_MUST_RUN_AS_RANGE},
                    "seLinuxContext": {"type": names.SCC_MUST_RUN_AS}},
    NONROOT_V2: {"volumes": _VOLUMES, "allowedCapabilities": ["NET_BIND_SERVICE"], "requiredDropCapabilities": ["ALL"],
                 "runAsUser": {"type": names.SCC_MUST_RUN_AS_NON_ROOT},
                 "seLinuxContext": {"type": names.SCC_MUST_RUN_AS}},
    ANYUID: {"volumes": _VOLUMES, "requiredDropCapabilities": ["MKNOD"], "runAsUser": {"type": names.SCC_RUN_AS_ANY},
             "seLinuxContext": {"type": names.SCC_MUST_RUN_AS}},
}
_RANGE = re.compile(r"[0-9]{1,10}/[0-9]{1,10}")


@dataclass(frozen=True)
class IdRange:
    """A block of ids: `first` and the `size - 1` after it."""

    first: int
    size: int

    @property
    def last(self) -> int:
        return self.first + self.size - 1

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and self.first <= value <= self.last

    def __str__(self) -> str:
        """The annotation's format."""
        return f"{self.first}/{self.size}"

    @property
    def shown(self) -> str:
        """As an SCC refusal writes it."""
        return f"[{self.first}, {self.last}]"


def parse_range(text: object) -> IdRange | None:
    """`<first>/<size>`, OpenShift's format (the first of a comma-separated list); None if it is not one."""
    if not isinstance(text, str) or not _RANGE.fullmatch(text.split(",")[0].strip()):
        return None
    first, size = (int(part) for part in text.split(",")[0].strip().split("/"))
    return IdRange(first, size) if size else None


@dataclass(frozen=True)
class Ranges:
    """A namespace's UIDs and groups."""

    uids: IdRange
    groups: IdRange

    @classmethod
    def of(cls, namespace: Obj | None) -> Ranges | None:
        """From the Namespace's annotations (the groups default to the UIDs, as OpenShift's do); None
        when it has no UID range."""
        annotations = ((namespace or {}).get("metadata") or {}).get("annotations") or {}
        uids = parse_range(annotations.get(names.ANNOTATION_UID_RANGE))
        if uids is None:
            return None
        return cls(uids, parse_range(annotations.get(names.ANNOTATION_SUPPLEMENTAL_GROUPS)) or uids)


def allocate(taken: Iterable[IdRange]) -> IdRange:
    """The lowest block that overlaps none of `taken` (what the stored namespaces hold): the same answer
    for the same namespaces, before and after a restart, and never one block for two namespaces."""
    blocked: set[int] = set()
    end = RANGE_BASE + BLOCKS * BLOCK_SIZE - 1
    for r in taken:
        lo, hi = max(r.first, RANGE_BASE), min(r.last, end)
        if lo <= hi:
            blocked.update(range((lo - RANGE_BASE) // BLOCK_SIZE, (hi - RANGE_BASE) // BLOCK_SIZE + 1))
    free = next((k for k in range(BLOCKS) if k not in blocked), None)
    if free is None:
        raise ApiError(403, "Forbidden", f"no UID range is left: all {BLOCKS} blocks of {BLOCK_SIZE} from "
                       f"{RANGE_BASE} belong to namespaces; delete unused namespaces", group="", kind="namespaces")
    return IdRange(RANGE_BASE + free * BLOCK_SIZE, BLOCK_SIZE)


def own_ranges(namespace: Obj, old: Obj | None, others: Iterable[Obj]) -> None:
    """Set a namespace's range annotations, in place: they belong to the server. A new namespace gets the
    lowest free block of `others` (the stored namespaces) whatever a client sent; an update keeps the
    stored value (restored silently, as the requester annotation of a TrainJob is)."""
    meta = namespace["metadata"]
    annotations = {} if meta.get("annotations") is None else meta["annotations"]
    if not isinstance(annotations, dict):
        return  # not a map: admission refuses the object
    kept = Ranges.of(old)
    if kept is None:
        block = allocate(r.uids for o in others if (r := Ranges.of(o)) is not None)
        kept = Ranges(block, block)
    annotations[names.ANNOTATION_UID_RANGE] = str(kept.uids)
    annotations[names.ANNOTATION_SUPPLEMENTAL_GROUPS] = str(kept.groups)
    meta["annotations"] = annotations


# -- one pod --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """What an admitted pod runs as, and the SCC that admitted it."""

    scc: str
    run_as_user: int
    run_as_group: int
    fs_group: int | None  # a supplementary group of every process of the pod


@dataclass(frozen=True)
class Refusal:
    """Every SCC's objection to a pod, in OpenShift's words and order."""

    errors: tuple[str, ...]

    def message(self, pod: str) -> str:
        return (f'pods "{pod}" is forbidden: unable to validate against any security context constraint: '
                f"[{', '.join(self.errors)}]")


def _container_index(pod_spec: dict) -> int:
    containers = pod_spec.get("containers") or []
    return next((i for i, c in enumerate(containers) if c.get("name") == names.CONTAINER), 0)


def _try(scc: str, pod: PodPlan, ranges: Ranges) -> Identity | list[str]:
    """One SCC's verdict on a pod: the ids it would run with, or its objections (paths as OpenShift's)."""
    uid = ranges.uids.first if pod.run_as_user is None else pod.run_as_user
    gid = uid if pod.run_as_group is None else pod.run_as_group
    container = f"provider {scc}: .containers[{_container_index(pod.pod_spec)}]"
    errors: list[str] = []
    fs_group = pod.fs_group
    if scc == RESTRICTED_V2:
        fs_group = ranges.groups.first if fs_group is None else fs_group
        if fs_group not in ranges.groups:
            errors.append(f"provider {scc}: .spec.securityContext.fsGroup: Invalid value: []int64{{{fs_group}}}: "
                          f"{fs_group} is not an allowed group")
        if uid not in ranges.uids:
            errors.append(f"{container}.runAsUser: Invalid value: {uid}: must be in the ranges: {ranges.uids.shown}")
        if pod.run_as_group is not None and gid not in ranges.groups:
            errors.append(f"{container}.runAsGroup: Invalid value: {gid}: must be in the ranges: {ranges.groups.shown}")
    elif scc == NONROOT_V2 and uid == 0:
        errors.append(f"{container}.runAsUser: Invalid value: 0: running with the root UID is forbidden")
    return errors or Identity(scc, uid, gid, fs_group)


def _try_stored(scc: Obj, pod: PodPlan, ranges: Ranges) -> Identity | list[str]:
    name = scc["metadata"]["name"]
    found = scc_stored.ids(scc, pod, ranges, f"provider {name}: .containers[{_container_index(pod.pod_spec)}]")
    return found if isinstance(found, list) else Identity(name, *found)


def _stored_name(scc: Obj) -> str:
    return str((scc.get("metadata") or {}).get("name") or "")


def candidates(stored: Iterable[Obj] = ()) -> list[tuple[str, Obj | None]]:
    """Every SCC admission tries, in OpenShift's order (priority, restrictiveness, name): the name, and the
    stored SCC or None for a built-in. A stored SCC named as a built-in is not one of them: the built-in
    is (`scc_crd.warnings` says so when it is written)."""
    tried: list[tuple[str, Obj | None, Obj]] = [(name, None, BUILT_IN[name]) for name in PREFERENCE]
    tried += [(_stored_name(o), o, o) for o in stored if _stored_name(o) not in BUILT_IN]
    return [(name, obj) for name, obj, shape in sorted(tried, key=lambda t: scc_stored.order_key(t[0], t[2]))]


def decide(pod: PodPlan, ranges: Ranges, usable: Collection[str], stored: Sequence[Obj] = ()) -> Identity | Refusal:
    """The ids of the first SCC (of `candidates`) the pod may use and that accepts it; else a Refusal
    holding every SCC's objection. `usable` names the SCCs besides `restricted-v2` the pod may use."""
    errors: list[str] = []
    for scc, obj in candidates(stored):
        if scc != RESTRICTED_V2 and scc not in usable:
            errors.append(f'provider "{scc}": Forbidden: not usable by user or serviceaccount')
            continue
        found = _try(scc, pod, ranges) if obj is None else _try_stored(obj, pod, ranges)
        if isinstance(found, Identity):
            return found
        errors += found
    return Refusal(tuple(errors))


def usable(authorizer: rbac.Authorizer, subjects: Iterable[rbac.User], namespace: str,
           stored: Sequence[Obj] = ()) -> frozenset[str]:
    """The SCCs besides `restricted-v2` any of `subjects` may use in `namespace` (OpenShift asks for the
    requesting user and for the pod's ServiceAccount): RBAC's `use` of it, or, for a stored SCC, its own
    `users` and `groups` naming them."""
    people = list(subjects)

    def allowed(scc: str) -> bool:
        return any(authorizer.authorize(rbac.Attributes(
            user, USE, True, api_group=names.SECURITY_GROUP, resource=names.SCC_RESOURCE, namespace=namespace,
            name=scc)).allowed for user in people)

    mine = {o for o in GRANTED if allowed(o)}
    mine |= {_stored_name(o) for o in stored if _stored_name(o) not in BUILT_IN and (
        any(scc_stored.names_subject(o, user) for user in people) or allowed(_stored_name(o)))}
    return frozenset(mine)


# -- a whole job ----------------------------------------------------------------------------------


def admit(plan: RunPlan, ranges: Ranges | None, usable_by: Callable[[PodPlan], Collection[str]],
          requester: str, stored: Sequence[Obj] = ()) -> RunPlan:
    """The plan with every pod's ids decided, as OpenShift writes them into a pod it admits; a 403 naming
    the TrainJob, the first pod no SCC accepts (launcher or node) and the fix otherwise. `usable_by`
    gives the SCCs a pod may use (`usable`); `requester` (who asked for the job) is named in the fix;
    `stored` are the SCCs stored through the API."""
    if ranges is None:
        raise _forbidden(plan, f'namespace "{plan.namespace}" has no UID range yet '
                               f"({names.ANNOTATION_UID_RANGE}); the server gives one to every namespace at start")
    pods = []
    for pod in plan.pods:
        found = decide(pod, ranges, usable_by(pod), stored)
        if isinstance(found, Refusal):
            raise _forbidden(plan, f"{found.message(pod.hostname)}; {_fix(plan, pod, requester)}")
        pods.append(dataclasses.replace(pod, run_as_user=found.run_as_user, run_as_group=found.run_as_group,
                                        fs_group=found.fs_group, scc=found.scc))
    return dataclasses.replace(plan, pods=pods)


def admit_pod(plan: RunPlan, ranges: Ranges | None, usable_by: Callable[[PodPlan], Collection[str]],
              requester: str, stored: Sequence[Obj] = ()) -> RunPlan:
    """`admit` for a bare pod (a plan of one pod, `api/core/bare_pods.plan`): its refusal is the pod's own, as
    OpenShift refuses a pod, with the fix."""
    (pod,) = plan.pods
    if ranges is None:
        raise ApiError(403, "Forbidden", f'pods "{pod.name}" is forbidden: namespace "{plan.namespace}" has no UID '
                       f"range yet ({names.ANNOTATION_UID_RANGE})", pod.name, "", PODS.plural)
    found = decide(pod, ranges, usable_by(pod), stored)
    if isinstance(found, Refusal):
        raise ApiError(403, "Forbidden", f"{found.message(pod.name)}; {_fix(plan, pod, requester, 'the pod')}",
                       pod.name, "", PODS.plural)
    return dataclasses.replace(plan, pods=[dataclasses.replace(
        pod, run_as_user=found.run_as_user, run_as_group=found.run_as_group, fs_group=found.fs_group, scc=found.scc)])


def _fix(plan: RunPlan, pod: PodPlan, requester: str, where: str = "the runtime") -> str:
    prefix = names.SERVICE_ACCOUNT_USER_PREFIX
    if requester.startswith(prefix):
        subject = f"--serviceaccount={requester[len(prefix):]}"
    elif requester:
        subject = f"--user={requester}"
    else:
        subject = f"--serviceaccount={plan.namespace}:{service_account_name(pod.pod_spec)}"
    return (f"leave runAsUser, runAsGroup and fsGroup unset in {where} to run as the namespace's UIDs, or "
            f"ask a cluster admin to grant another SCC: kubectl create rolebinding scc-{ANYUID} "
            f"--clusterrole={names.SCC_ROLE_PREFIX}{ANYUID} {subject} -n {plan.namespace}")


def _forbidden(plan: RunPlan, why: str) -> ApiError:
    return ApiError(403, "Forbidden", f'{TRAINJOBS.group_resource} "{plan.job}" is forbidden: {why}', plan.job,
                    names.TRAINER_GROUP, TRAINJOBS.plural)
