"""OpenShift's SCC model, pure (api/openshift/scc.py): namespace UID ranges and their allocation, what each pod runs
as under restricted-v2, nonroot-v2 and anyuid, every refusal in OpenShift's words, who may use which SCC
through RBAC, and a whole job admitted or refused with its fix."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from mpijob.api.core import rbac, rbac_policy
from mpijob.api.core.errors import ApiError
from mpijob.api.openshift import scc
from mpijob.api.openshift.scc import ANYUID, NONROOT_V2, RESTRICTED_V2, Identity, IdRange, Ranges, Refusal
from mpijob.api.trainer.plan import PodPlan, resolve
from mpijob.api.trainer.runtimes import bundled

RANGES = Ranges(IdRange(1000660000, 10000), IdRange(1000660000, 10000))
TRAINJOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "pi", "namespace": "team-a", "uid": "0b7c5b1e-1111-2222-3333-444455556666"},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 2}}}
NOT_USABLE = 'provider "{}": Forbidden: not usable by user or serviceaccount'


def runtime(pod: dict[str, Any] | None = None, container: dict[str, Any] | None = None) -> dict[str, Any]:
    """The bundled runtime with these securityContexts on both replicatedJobs."""
    rt = copy.deepcopy(bundled()[0])
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        spec = rjob["template"]["spec"]["template"]["spec"]
        if pod is not None:
            spec["securityContext"] = dict(pod)
        if container is not None:
            spec["containers"][0]["securityContext"] = dict(container)
    return rt


def launcher(pod: dict[str, Any] | None = None, container: dict[str, Any] | None = None) -> PodPlan:
    return resolve(TRAINJOB, runtime(pod, container)).pods[-1]


# -- ranges ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("1000660000/10000", IdRange(1000660000, 10000)),
    ("1000660000/10000,1000670000/10000", IdRange(1000660000, 10000)),  # OpenShift's list: the first
    (None, None), ("", None), ("1000660000", None), ("1000660000-1000669999", None), ("1/0", None),
    ("x/10", None), ("１/10", None),  # noqa: RUF001 — a fullwidth digit, on purpose: not a digit to the parser ("12345678901/10", None), (1000660000, None),
])
def test_a_range_is_first_slash_size(text: Any, expected: IdRange | None) -> None:
    assert scc.parse_range(text) == expected


def test_a_range_shows_itself_as_the_annotation_and_the_refusal_write_it() -> None:
    block = IdRange(1000660000, 10000)
    assert (str(block), block.shown, block.last) == ("1000660000/10000", "[1000660000, 1000669999]", 1000669999)
    assert 1000660000 in block and 1000669999 in block and 1000670000 not in block and 0 not in block


def test_allocation_takes_the_lowest_free_block_and_never_one_twice() -> None:
    assert scc.allocate([]) == IdRange(1000000000, 10000)
    taken = [IdRange(1000000000, 10000), IdRange(1000020000, 10000)]
    assert scc.allocate(taken) == IdRange(1000010000, 10000)  # the gap a deleted namespace left
    assert scc.allocate([*taken, IdRange(1000010000, 10000)]) == IdRange(1000030000, 10000)
    assert scc.allocate([IdRange(1000005000, 10000)]) == IdRange(1000020000, 10000)  # overlaps two blocks
    assert scc.allocate([IdRange(5, 10), IdRange(2000000000, 10000)]) == IdRange(1000000000, 10000)  # outside
    assert scc.allocate(reversed(taken)) == scc.allocate(taken)  # the same stored namespaces, the same answer


def test_allocation_refuses_when_every_block_is_taken() -> None:
    with pytest.raises(ApiError) as info:
        scc.allocate([IdRange(1000000000, 1000000000)])
    assert info.value.code == 403 and "no UID range is left" in info.value.message


def namespace(name: str, annotations: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta}


def test_the_server_owns_a_namespaces_ranges() -> None:
    uid, groups = "openshift.io/sa.scc.uid-range", "openshift.io/sa.scc.supplemental-groups"
    others = [namespace("default", {uid: "1000000000/10000", groups: "1000000000/10000"}), namespace("old")]
    created = namespace("team-a", {uid: "0/1000", "keep": "me"})  # a client's value is replaced
    scc.own_ranges(created, None, others)
    assert created["metadata"]["annotations"] == {uid: "1000010000/10000", groups: "1000010000/10000", "keep": "me"}
    assert Ranges.of(created) == Ranges(IdRange(1000010000, 10000), IdRange(1000010000, 10000))

    changed = namespace("team-a", {"keep": "me"})  # an update that drops or changes them gets them back
    scc.own_ranges(changed, created, [])
    assert changed["metadata"]["annotations"] == created["metadata"]["annotations"]
    changed["metadata"]["annotations"][uid] = "0/1"
    scc.own_ranges(changed, created, [])
    assert changed["metadata"]["annotations"][uid] == "1000010000/10000"

    legacy = namespace("old")  # stored before namespaces had ranges: the next write gives it one
    scc.own_ranges(legacy, namespace("old"), [*others, created])
    assert legacy["metadata"]["annotations"][uid] == "1000020000/10000"
    odd = namespace("odd", ["not", "a", "map"])  # admission refuses it; nothing to own
    scc.own_ranges(odd, None, [])
    assert odd["metadata"]["annotations"] == ["not", "a", "map"]


def test_groups_default_to_the_uid_range_and_no_range_is_none() -> None:
    only_uids = namespace("x", {"openshift.io/sa.scc.uid-range": "1000660000/10000"})
    assert Ranges.of(only_uids) == RANGES
    assert Ranges.of(namespace("x")) is None and Ranges.of(None) is None


# -- one pod ---------------------------------------------------------------------------------------


def test_a_pod_that_asks_nothing_runs_as_its_namespaces_first_uid() -> None:
    assert scc.decide(launcher(), RANGES, frozenset()) == Identity(RESTRICTED_V2, 1000660000, 1000660000, 1000660000)
    # even for someone who may use anyuid: the most restrictive SCC that accepts the pod wins
    assert scc.decide(launcher(), RANGES, frozenset({ANYUID, NONROOT_V2})).scc == RESTRICTED_V2


def test_restricted_v2_accepts_ids_inside_the_range() -> None:
    pod = launcher({"fsGroup": 1000660005, "runAsGroup": 1000660009}, {"runAsUser": 1000669999})
    assert scc.decide(pod, RANGES, frozenset()) == Identity(RESTRICTED_V2, 1000669999, 1000660009, 1000660005)
    pod = launcher(container={"runAsUser": 1000660042})  # its gid: the number of its uid
    assert scc.decide(pod, RANGES, frozenset()) == Identity(RESTRICTED_V2, 1000660042, 1000660042, 1000660000)


def test_root_is_refused_in_openshifts_words() -> None:
    refusal = scc.decide(launcher(container={"runAsUser": 0}), RANGES, frozenset())
    assert isinstance(refusal, Refusal)
    assert refusal.message("pi-launcher-0-0") == (
        'pods "pi-launcher-0-0" is forbidden: unable to validate against any security context constraint: '
        "[provider restricted-v2: .containers[0].runAsUser: Invalid value: 0: must be in the ranges: "
        '[1000660000, 1000669999], provider "nonroot-v2": Forbidden: not usable by user or serviceaccount, '
        'provider "anyuid": Forbidden: not usable by user or serviceaccount]')


def test_nonroot_v2_takes_any_uid_but_root() -> None:
    upstream = launcher({"fsGroup": 1000}, {"runAsUser": 1000})  # upstream's deepspeed-distributed asks this
    refused = scc.decide(upstream, RANGES, frozenset())
    assert isinstance(refused, Refusal) and refused.errors == (
        ("provider restricted-v2: .spec.securityContext.fsGroup: Invalid value: []int64{1000}: 1000 is not an "
        "allowed group"),
        ("provider restricted-v2: .containers[0].runAsUser: Invalid value: 1000: must be in the ranges: "
        "[1000660000, 1000669999]"),
        NOT_USABLE.format(NONROOT_V2), NOT_USABLE.format(ANYUID))
    assert scc.decide(upstream, RANGES, frozenset({NONROOT_V2})) == Identity(NONROOT_V2, 1000, 1000, 1000)
    root = scc.decide(launcher(container={"runAsUser": 0}), RANGES, frozenset({NONROOT_V2}))
    assert isinstance(root, Refusal) and root.errors[1:] == (
        "provider nonroot-v2: .containers[0].runAsUser: Invalid value: 0: running with the root UID is forbidden",
        NOT_USABLE.format(ANYUID))


def test_anyuid_takes_root_and_any_groups() -> None:
    pod = launcher({"runAsUser": 0})  # pod-level
    assert scc.decide(pod, RANGES, frozenset({ANYUID})) == Identity(ANYUID, 0, 0, None)
    group_zero = launcher({"runAsGroup": 0})  # the root group is not a restricted-v2 group here
    refused = scc.decide(group_zero, RANGES, frozenset())
    assert isinstance(refused, Refusal) and refused.errors[0] == (
        "provider restricted-v2: .containers[0].runAsGroup: Invalid value: 0: must be in the ranges: "
        "[1000660000, 1000669999]")
    assert scc.decide(group_zero, RANGES, frozenset({NONROOT_V2})) == Identity(NONROOT_V2, 1000660000, 0, None)


def test_another_namespaces_uid_is_refused() -> None:
    other = scc.decide(launcher(container={"runAsUser": 1000670000}), RANGES, frozenset())
    assert isinstance(other, Refusal) and "Invalid value: 1000670000: must be in the ranges" in other.errors[0]


def test_the_refusal_names_the_container_by_its_index() -> None:
    rt = runtime(container={"runAsUser": 0})
    spec = rt["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    spec["containers"].insert(0, {"name": "sidecar", "image": "x"})
    refused = scc.decide(resolve(TRAINJOB, rt).pods[-1], RANGES, frozenset())
    assert isinstance(refused, Refusal) and ".containers[1].runAsUser" in refused.errors[0]


# -- who may use which SCC ---------------------------------------------------------------------------

ALICE = rbac.User("alice", "", ("team-a", "system:authenticated"))


def authorizer(*bindings: dict[str, Any]) -> rbac.Authorizer:
    return rbac.Authorizer([], rbac_policy.cluster_roles(), list(bindings), rbac_policy.cluster_role_bindings())


def binding(role: str, subject: dict[str, str], ns: str = "team-a") -> dict[str, Any]:
    return {"metadata": {"name": f"use-{role}", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": f"system:openshift:scc:{role}"}, "subjects": [subject]}


def test_rbac_use_of_an_scc_decides_who_may_use_it() -> None:
    robot = rbac.service_account_user("team-a", "robot")
    assert scc.usable(authorizer(), [ALICE, robot], "team-a") == frozenset()  # restricted-v2 only
    to_alice = authorizer(binding(ANYUID, {"kind": "User", "name": "alice"}))
    assert scc.usable(to_alice, [ALICE], "team-a") == {ANYUID}
    assert scc.usable(to_alice, [ALICE], "team-b") == frozenset()  # a RoleBinding grants in its namespace only
    to_robot = authorizer(binding(NONROOT_V2, {"kind": "ServiceAccount", "name": "robot", "namespace": "team-a"}))
    assert scc.usable(to_robot, [ALICE, robot], "team-a") == {NONROOT_V2}  # the pod's account holds it
    admin = rbac.User("mpijob-admin", "", ("system:masters", "system:authenticated"))
    assert scc.usable(authorizer(), [admin], "team-a") == {NONROOT_V2, ANYUID}


# -- a whole job -----------------------------------------------------------------------------------


def test_an_admitted_job_has_every_pods_ids_decided() -> None:
    plan = resolve(TRAINJOB, bundled()[0])
    admitted = scc.admit(plan, RANGES, lambda pod: frozenset(), "alice")
    assert [(p.scc, p.run_as_user, p.run_as_group, p.fs_group) for p in admitted.pods] == \
        [(RESTRICTED_V2, 1000660000, 1000660000, 1000660000)] * len(plan.pods)
    assert [p.name for p in admitted.pods] == [p.name for p in plan.pods] and plan.pods[0].scc == ""


def test_a_refused_job_names_itself_its_pod_and_the_fix() -> None:
    plan = resolve(TRAINJOB, runtime(container={"runAsUser": 0}))
    with pytest.raises(ApiError) as info:
        scc.admit(plan, RANGES, lambda pod: frozenset(), "alice")
    e = info.value
    assert (e.code, e.reason, e.name, e.group, e.kind) == (403, "Forbidden", "pi", "trainer.kubeflow.org", "trainjobs")
    assert e.message.startswith('trainjobs.trainer.kubeflow.org "pi" is forbidden: pods "pi-node-0-0" is forbidden: '
                                "unable to validate against any security context constraint: [provider restricted-v2")
    assert e.message.endswith("; leave runAsUser, runAsGroup and fsGroup unset in the runtime to run as the "
                              "namespace's UIDs, or ask a cluster admin to grant another SCC: kubectl create "
                              "rolebinding scc-anyuid --clusterrole=system:openshift:scc:anyuid --user=alice -n team-a")
    with pytest.raises(ApiError) as info:
        scc.admit(plan, RANGES, lambda pod: frozenset(), "system:serviceaccount:team-a:robot")
    assert info.value.message.endswith("--serviceaccount=team-a:robot -n team-a")
    with pytest.raises(ApiError) as info:
        scc.admit(plan, RANGES, lambda pod: frozenset(), "")  # no creator known: the pod's account
    assert info.value.message.endswith("--serviceaccount=team-a:default -n team-a")


def test_only_the_launcher_may_be_the_one_refused() -> None:
    rt = runtime()
    rt["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0][
        "securityContext"] = {"runAsUser": 0}
    with pytest.raises(ApiError) as info:
        scc.admit(resolve(TRAINJOB, rt), RANGES, lambda pod: frozenset(), "alice")
    assert 'pods "pi-launcher-0-0" is forbidden' in info.value.message
    admitted = scc.admit(resolve(TRAINJOB, rt), RANGES, lambda pod: frozenset({ANYUID}) if pod.is_launcher
                         else frozenset(), "alice")
    assert [(p.rjob, p.scc, p.run_as_user) for p in admitted.pods] == [
        ("node", RESTRICTED_V2, 1000660000), ("launcher", ANYUID, 0)]


def test_a_namespace_without_a_range_runs_nothing() -> None:
    with pytest.raises(ApiError) as info:
        scc.admit(resolve(TRAINJOB, bundled()[0]), None, lambda pod: frozenset(), "alice")
    assert info.value.code == 403 and 'namespace "team-a" has no UID range yet' in info.value.message
