"""Stored SCCs over a real store (controllers/scc.py): an SCC stored as the API stores it admits the pods
of whoever may use it (RBAC's `use`, or the SCC's own users and groups, for the creator or the pod's
ServiceAccount), and with authorization off (AlwaysAllow) every stored SCC is usable."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpijob.api.core import rbac
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CLUSTER_ROLES, ROLE_BINDINGS, SECURITY_CONTEXT_CONSTRAINTS
from mpijob.api.trainer.plan import RunPlan, resolve
from mpijob.api.trainer.runtimes import bundled
from mpijob.controllers.scc import admit
from mpijob.server import bootstrap
from mpijob.store.authorizer import MODE_ENV, index
from mpijob.store.objects import Store

ALICE = rbac.User("alice", "", ("team-a", "system:authenticated"))
BAND = {"metadata": {"name": "band"}, "allowHostDirVolumePlugin": False, "allowHostIPC": False,
        "allowHostNetwork": False, "allowHostPID": False, "allowHostPorts": False, "allowPrivilegedContainer": False,
        "readOnlyRootFilesystem": False, "runAsUser": {"type": "MustRunAsRange", "uidRangeMin": 5000,
                                                       "uidRangeMax": 5999},
        "seLinuxContext": {"type": "MustRunAs"}, "fsGroup": {"type": "RunAsAny"},
        "supplementalGroups": {"type": "RunAsAny"}}


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "cluster.db")
    bootstrap.run(s)
    s.create(SECURITY_CONTEXT_CONSTRAINTS, copy.deepcopy(BAND))
    s.create(CLUSTER_ROLES, {"metadata": {"name": "system:openshift:scc:band"},
                             "rules": [{"apiGroups": ["security.openshift.io"],
                                        "resources": ["securitycontextconstraints"], "resourceNames": ["band"],
                                        "verbs": ["use"]}]})
    index(s).invalidate()
    yield s
    s.close()


def plan(run_as_user: int | None = None) -> RunPlan:
    rt = copy.deepcopy(bundled()[0])
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        if run_as_user is not None:
            container = rjob["template"]["spec"]["template"]["spec"]["containers"][0]
            container["securityContext"] = {"runAsUser": run_as_user}
    tj = {"metadata": {"name": "pi", "namespace": "default", "uid": "u1"},
          "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 1}}}
    return resolve(tj, rt)


def grant(store: Store, subject: dict[str, str]) -> None:
    store.create(ROLE_BINDINGS, {"metadata": {"name": f"band-{subject['name']}", "namespace": "default"},
                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                             "name": "system:openshift:scc:band"}, "subjects": [subject]})
    index(store).invalidate()


def test_a_stored_scc_needs_rbacs_use(store: Store) -> None:
    with pytest.raises(ApiError) as info:
        admit(store, plan(5500), ALICE)
    assert info.value.code == 403
    assert 'provider "band": Forbidden: not usable by user or serviceaccount' in info.value.message
    assert {p.scc for p in admit(store, plan(), ALICE).pods} == {"restricted-v2"}  # not usable: not chosen
    grant(store, {"kind": "User", "name": "alice"})
    assert {(p.scc, p.run_as_user) for p in admit(store, plan(5500), ALICE).pods} == {("band", 5500)}
    assert {(p.scc, p.run_as_user) for p in admit(store, plan(), ALICE).pods} == {("band", 5000)}  # the SCC's first
    with pytest.raises(ApiError) as info:
        admit(store, plan(6000), ALICE)
    assert "provider band: .containers[0].runAsUser: Invalid value: 6000: must be in the ranges: [5000, 5999]" in \
        info.value.message


def test_the_pods_service_account_may_hold_it_through_the_sccs_own_groups(store: Store) -> None:
    band = store.get(SECURITY_CONTEXT_CONSTRAINTS, "", "band")
    store.update(SECURITY_CONTEXT_CONSTRAINTS, {**band, "groups": ["system:serviceaccounts:default"]})
    assert {p.scc for p in admit(store, plan(5500), None).pods} == {"band"}


def test_authorization_off_makes_stored_sccs_usable(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODE_ENV, "AlwaysAllow")
    assert {(p.scc, p.run_as_user) for p in admit(store, plan(5500), ALICE).pods} == {("band", 5500)}
