"""Stored SCCs in OpenShift's admission, pure (api/openshift/scc_stored.py, api/openshift/scc.py): OpenShift's order (priority,
then restrictiveness, then name) with the built-ins among them, who may use a stored SCC (its own users
and groups, or RBAC's `use`), what it makes of a pod's ids, and its refusals in OpenShift's words."""

from __future__ import annotations

import copy
from typing import Any

from mpijob.api.core import rbac, rbac_policy
from mpijob.api.openshift import scc, scc_crd, scc_stored
from mpijob.api.openshift.scc import ANYUID, NONROOT_V2, RESTRICTED_V2, Identity, IdRange, Ranges, Refusal
from mpijob.api.platform.options import Options
from mpijob.api.platform.scc import constraints
from mpijob.api.trainer.plan import PodPlan, resolve
from mpijob.api.trainer.runtimes import bundled

RANGES = Ranges(IdRange(1000660000, 10000), IdRange(1000660000, 10000))
TRAINJOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "pi", "namespace": "team-a", "uid": "0b7c5b1e-1111-2222-3333-444455556666"},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 2}}}
ALICE = rbac.User("alice", "", ("team-a", "system:authenticated"))
NOT_USABLE = 'provider "{}": Forbidden: not usable by user or serviceaccount'


def launcher(pod: dict[str, Any] | None = None, container: dict[str, Any] | None = None) -> PodPlan:
    rt = copy.deepcopy(bundled()[0])
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        spec = rjob["template"]["spec"]["template"]["spec"]
        if pod is not None:
            spec["securityContext"] = dict(pod)
        if container is not None:
            spec["containers"][0]["securityContext"] = dict(container)
    return resolve(TRAINJOB, rt).pods[-1]


def stored(name: str, run_as: dict[str, Any], fs_group: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    """An SCC as a client would store it: nothing privileged, only its id strategies set."""
    return {"apiVersion": "security.openshift.io/v1", "kind": "SecurityContextConstraints", "metadata": {"name": name},
            "allowHostDirVolumePlugin": False, "allowHostIPC": False, "allowHostNetwork": False, "allowHostPID": False,
            "allowHostPorts": False, "allowPrivilegedContainer": False, "readOnlyRootFilesystem": False,
            "runAsUser": run_as, "seLinuxContext": {"type": "MustRunAs"},
            "fsGroup": fs_group or {"type": "RunAsAny"}, "supplementalGroups": {"type": "RunAsAny"}, **more}


BAND = stored("band", {"type": "MustRunAsRange", "uidRangeMin": 5000, "uidRangeMax": 5999})


# -- the order -----------------------------------------------------------------------------------------


def test_the_built_ins_keep_their_order_among_themselves() -> None:
    assert [name for name, _ in scc.candidates()] == [RESTRICTED_V2, NONROOT_V2, ANYUID]


def test_restrictiveness_is_openshifts_points() -> None:
    assert scc_stored.points(scc.BUILT_IN[RESTRICTED_V2]) == 100_000 + 20_000 + 10_000 + 2010  # volumes, ids, caps
    assert scc_stored.points(scc.BUILT_IN[ANYUID]) == 100_000 + 40_000 + 10_000 + 4950
    privileged = stored("privileged", {"type": "RunAsAny"}, allowPrivilegedContainer=True, allowHostNetwork=True,
                        allowHostPorts=True, volumes=["*"], allowedCapabilities=["*"],
                        seLinuxContext={"type": "RunAsAny"})
    assert scc_stored.points(privileged) == 1_600_000 + 800_000 + 400_000 + 200_000 + 80_000 + 9000
    bundle = constraints(Options())  # `mpijob platform render`'s: as restrictive as restricted-v2, minus a cap
    assert scc_stored.points(bundle) == scc_stored.points(scc.BUILT_IN[RESTRICTED_V2]) - 10


def test_priority_first_then_restrictiveness_then_name() -> None:
    loose = stored("loose", {"type": "RunAsAny"}, priority=5)
    tie_b = stored("tie-b", {"type": "MustRunAs", "uid": 7000})
    tie_a = stored("tie-a", {"type": "MustRunAs", "uid": 7001})
    order = [name for name, _ in scc.candidates([BAND, loose, tie_b, tie_a])]
    assert order == ["loose", "tie-a", "tie-b", "band", RESTRICTED_V2, NONROOT_V2, ANYUID]
    everyone = frozenset(order)
    assert scc.decide(launcher(), RANGES, everyone, [BAND, loose]).scc == "loose"  # priority beats restriction
    assert scc.decide(launcher(), RANGES, everyone, [BAND]) == Identity("band", 5000, 5000, None)  # its first UID


def test_a_stored_scc_named_as_a_built_in_is_not_tried_and_is_warned() -> None:
    fake = stored(ANYUID, {"type": "MustRunAs", "uid": 0}, priority=100)
    assert [name for name, obj in scc.candidates([fake]) if obj is not None] == []
    assert scc_crd.warnings(fake) == [
        ('SecurityContextConstraints "anyuid" is built in on the local cluster: admission uses its own anyuid '
        "(docs/security.md, \"Tenant UIDs\"), not this object; give yours another name")]
    assert scc_crd.warnings(BAND) == []


# -- one pod -------------------------------------------------------------------------------------------


def test_an_scc_allowing_a_uid_range_admits_a_pod_inside_it() -> None:
    pod = launcher(container={"runAsUser": 5500})
    assert scc.decide(pod, RANGES, frozenset({"band"}), [BAND]) == Identity("band", 5500, 5500, None)


def test_an_scc_refuses_what_it_forbids_in_openshifts_words() -> None:
    refused = scc.decide(launcher(container={"runAsUser": 7000}), RANGES, frozenset({"band"}), [BAND])
    assert isinstance(refused, Refusal)
    assert refused.errors == (
        "provider band: .containers[0].runAsUser: Invalid value: 7000: must be in the ranges: [5000, 5999]",
        ("provider restricted-v2: .containers[0].runAsUser: Invalid value: 7000: must be in the ranges: "
        "[1000660000, 1000669999]"), NOT_USABLE.format(NONROOT_V2), NOT_USABLE.format(ANYUID))
    assert refused.message("pi-launcher-0-0").startswith(
        'pods "pi-launcher-0-0" is forbidden: unable to validate against any security context constraint: '
        "[provider band: .containers[0].runAsUser: Invalid value: 7000")


def test_an_scc_the_pod_may_not_use_is_said_so_and_skipped() -> None:
    refused = scc.decide(launcher(container={"runAsUser": 5500}), RANGES, frozenset(), [BAND])
    assert isinstance(refused, Refusal) and refused.errors[0] == NOT_USABLE.format("band")


def test_each_run_as_user_strategy() -> None:
    exact = stored("exact", {"type": "MustRunAs", "uid": 4242})
    assert scc.decide(launcher(), RANGES, frozenset({"exact"}), [exact]) == Identity("exact", 4242, 4242, None)
    other = scc.decide(launcher(container={"runAsUser": 4243}), RANGES, frozenset({"exact"}), [exact])
    assert isinstance(other, Refusal) and other.errors[0] == (
        "provider exact: .containers[0].runAsUser: Invalid value: 4243: must be: 4242")
    nonroot = stored("no-root", {"type": "MustRunAsNonRoot"}, priority=1)
    root = scc.decide(launcher(container={"runAsUser": 0}), RANGES, frozenset({"no-root"}), [nonroot])
    assert isinstance(root, Refusal) and root.errors[0] == (
        "provider no-root: .containers[0].runAsUser: Invalid value: 0: running with the root UID is forbidden")
    # a pod naming no UID runs as its namespace's first under the strategies that name none, as under the built-ins
    assert scc.decide(launcher(), RANGES, frozenset({"no-root"}), [nonroot]) == \
        Identity("no-root", 1000660000, 1000660000, None)
    own = stored("own-range", {"type": "MustRunAsRange"})  # no bounds: the namespace's range
    assert scc.decide(launcher(), RANGES, frozenset({"own-range"}), [own]).run_as_user == 1000660000


def test_fs_group_must_run_as_keeps_fs_group_and_run_as_group_in_its_ranges() -> None:
    groups = stored("groups", {"type": "MustRunAs", "uid": 5000},
                    {"type": "MustRunAs", "ranges": [{"min": 6000, "max": 6009}]})
    assert scc.decide(launcher({"runAsGroup": 6005}), RANGES, frozenset({"groups"}), [groups]) == \
        Identity("groups", 5000, 6005, 6000)
    refused = scc.decide(launcher({"fsGroup": 0, "runAsGroup": 0}), RANGES, frozenset({"groups"}), [groups])
    assert isinstance(refused, Refusal) and refused.errors[:2] == (
        "provider groups: .spec.securityContext.fsGroup: Invalid value: []int64{0}: 0 is not an allowed group",
        "provider groups: .containers[0].runAsGroup: Invalid value: 0: must be in the ranges: [6000, 6009]")
    namespace_groups = stored("ns-groups", {"type": "MustRunAs", "uid": 5000}, {"type": "MustRunAs"})
    assert scc.decide(launcher(), RANGES, frozenset({"ns-groups"}), [namespace_groups]).fs_group == 1000660000


# -- who may use it --------------------------------------------------------------------------------------


def authorizer(*bindings: dict[str, Any], roles: tuple[dict[str, Any], ...] = ()) -> rbac.Authorizer:
    return rbac.Authorizer([], [*rbac_policy.cluster_roles(), *roles], list(bindings),
                           rbac_policy.cluster_role_bindings())


def test_an_scc_is_usable_by_its_users_and_groups_or_rbacs_use() -> None:
    robot = rbac.service_account_user("team-a", "robot")
    assert scc.usable(authorizer(), [ALICE, robot], "team-a", [BAND]) == frozenset()
    assert scc.usable(authorizer(), [ALICE], "team-a", [{**BAND, "users": ["alice"]}]) == {"band"}
    assert scc.usable(authorizer(), [robot], "team-a", [{**BAND, "groups": ["system:serviceaccounts:team-a"]}]) == \
        {"band"}
    assert scc.usable(authorizer(), [ALICE], "team-a", [{**BAND, "users": ["bob"], "groups": ["team-b"]}]) == set()
    role = {"metadata": {"name": "use-band"}, "rules": [{"apiGroups": ["security.openshift.io"],
                                                         "resources": ["securitycontextconstraints"],
                                                         "resourceNames": ["band"], "verbs": ["use"]}]}
    binding = {"metadata": {"name": "use-band", "namespace": "team-a"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "use-band"},
               "subjects": [{"kind": "User", "name": "alice"}]}
    assert scc.usable(authorizer(binding, roles=(role,)), [ALICE], "team-a", [BAND]) == {"band"}
    assert scc.usable(authorizer(binding, roles=(role,)), [ALICE], "team-b", [BAND]) == set()  # its namespace only


def test_a_whole_job_is_admitted_by_a_stored_scc_and_the_pods_say_which() -> None:
    plan = resolve(TRAINJOB, bundled()[0])
    admitted = scc.admit(plan, RANGES, lambda pod: frozenset({"band"}), "alice", [BAND])
    assert {(p.scc, p.run_as_user) for p in admitted.pods} == {("band", 5000)}
    assert {p.scc for p in scc.admit(plan, RANGES, lambda pod: frozenset(), "alice", [BAND]).pods} == {RESTRICTED_V2}


# -- validation --------------------------------------------------------------------------------------------


def test_every_strategy_needs_a_type_and_a_range_both_bounds() -> None:
    bare = stored("bare", {"uidRangeMin": 5})
    del bare["fsGroup"]
    fields = {c.field: c.message for c in scc_crd.causes(bare)}
    assert set(fields) == {"runAsUser.type", "fsGroup.type", "runAsUser.uidRangeMax"}
    assert fields["fsGroup.type"].startswith("Required value: one of MustRunAs, RunAsAny")
    assert scc_crd.causes(stored("bad-groups", {"type": "RunAsAny"},
                                 {"type": "MustRunAs", "ranges": [{"min": 9, "max": 1}]}))[0].field == \
        "fsGroup.ranges[0].max"
    assert scc_crd.causes(BAND) == [] and scc_crd.causes(constraints(Options())) == []
