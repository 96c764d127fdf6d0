"""SCC admission over a real store (controllers/scc.py): the namespace's range from its annotations, who may
use which SCC from the stored RBAC objects (the job's creator or the pod's ServiceAccount), authorization
off (AlwaysAllow) allowing every SCC, and who a TrainJob's creator is now (store/users.py)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpijob.api.core import rbac
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import NAMESPACES, ROLE_BINDINGS
from mpijob.api.trainer.plan import RunPlan, resolve
from mpijob.api.trainer.runtimes import bundled
from mpijob.controllers.scc import admit
from mpijob.server import bootstrap
from mpijob.store.authorizer import MODE_ENV, index
from mpijob.store.objects import Store
from mpijob.store.users import identity, token_file

ALICE = rbac.User("alice", "", ("team-a", "system:authenticated"))


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "cluster.db")
    bootstrap.run(s)  # the default roles, and `default` with the first range
    yield s
    s.close()


def plan(run_as_user: int | None = None, namespace: str = "default", account: str = "") -> RunPlan:
    rt = copy.deepcopy(bundled()[0])
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        spec = rjob["template"]["spec"]["template"]["spec"]
        if run_as_user is not None:
            spec["containers"][0]["securityContext"] = {"runAsUser": run_as_user}
        if account:
            spec["serviceAccountName"] = account
    tj = {"metadata": {"name": "pi", "namespace": namespace, "uid": "u1"},
          "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 1}}}
    return resolve(tj, rt)


def grant(store: Store, scc: str, subject: dict[str, str]) -> None:
    store.create(ROLE_BINDINGS, {"metadata": {"name": f"scc-{scc}", "namespace": "default"},
                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                             "name": f"system:openshift:scc:{scc}"}, "subjects": [subject]})
    index(store).invalidate()  # as the server does around every RBAC write


def test_pods_run_as_their_namespaces_range(store: Store) -> None:
    admitted = admit(store, plan(), ALICE)
    assert {(p.scc, p.run_as_user, p.fs_group) for p in admitted.pods} == {("restricted-v2", 1000000000, 1000000000)}


def test_root_needs_the_creators_or_the_accounts_grant(store: Store) -> None:
    with pytest.raises(ApiError) as info:
        admit(store, plan(0), ALICE)
    assert info.value.code == 403 and "--user=alice -n default" in info.value.message
    grant(store, "anyuid", {"kind": "ServiceAccount", "name": "robot", "namespace": "default"})
    with pytest.raises(ApiError):
        admit(store, plan(0), ALICE)  # the default account's pods: not the robot's
    assert {p.scc for p in admit(store, plan(0, account="robot"), ALICE).pods} == {"anyuid"}
    grant(store, "nonroot-v2", {"kind": "User", "name": "alice"})
    assert {(p.scc, p.run_as_user) for p in admit(store, plan(1000), ALICE).pods} == {("nonroot-v2", 1000)}
    with pytest.raises(ApiError):
        admit(store, plan(1000), None)  # no creator known: only the pod's account counts


def test_authorization_off_allows_every_scc(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODE_ENV, "AlwaysAllow")
    assert {(p.scc, p.run_as_user) for p in admit(store, plan(0), ALICE).pods} == {("anyuid", 0)}
    assert {p.scc for p in admit(store, plan(), ALICE).pods} == {"restricted-v2"}  # still the most restrictive


def test_a_namespace_without_a_range_runs_nothing(store: Store) -> None:
    store.create(NAMESPACES, {"metadata": {"name": "bare"}})  # not through the API, not restarted since
    with pytest.raises(ApiError) as info:
        admit(store, plan(namespace="bare"), ALICE)
    assert 'namespace "bare" has no UID range yet' in info.value.message


def test_the_creator_is_who_the_registry_says_now(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    token_file(tokens).add(rbac.User("alice", "a1", ("team-a",)))
    assert identity(tokens, "alice") == rbac.User("alice", "a1", ("team-a", "system:authenticated"))
    assert identity(tokens, "system:serviceaccount:team-a:robot") == rbac.service_account_user("team-a", "robot")
    assert identity(tokens, "gone") == rbac.User("gone")  # removed since: what bindings to the name grant
