"""Every namespace owns a block of UIDs, as OpenShift's namespace controller gives one (api/openshift/scc.py): set by
the server when the namespace is created (over the real API) or found without one at start (bootstrap),
never chosen or changed by a client, never one block for two namespaces; and a TrainJob whose pods
would run as root is refused at admission until an admin grants its creator `anyuid`."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob.api.core.resources import NAMESPACES
from mpijob.api.trainer.runtimes import bundled
from mpijob.server import bootstrap
from mpijob.store.objects import Store

UID_RANGE = "openshift.io/sa.scc.uid-range"
GROUPS = "openshift.io/sa.scc.supplemental-groups"
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
MERGE = {"Content-Type": "application/merge-patch+json"}


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def annotations(http: httpx.Client, ns: str) -> dict[str, str]:
    r = http.get(f"/api/v1/namespaces/{ns}")
    assert r.status_code == 200, r.text
    return r.json()["metadata"].get("annotations") or {}


def test_each_namespace_gets_a_block_of_its_own(http: httpx.Client) -> None:
    assert annotations(http, "default")[UID_RANGE] == "1000000000/10000"  # the first namespace of every cluster
    made = [uniq("ranges") for _ in range(3)]
    for ns in made:
        assert http.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    items = http.get("/api/v1/namespaces").json()["items"]
    ranges = [i["metadata"]["annotations"][UID_RANGE] for i in items]
    assert len(set(ranges)) == len(items), ranges  # no block twice
    for ns in made:
        got = annotations(http, ns)
        first, size = got[UID_RANGE].split("/")
        assert got[GROUPS] == got[UID_RANGE] and size == "10000" and int(first) % 10000 == 0


def test_a_client_cannot_choose_or_change_a_range(http: httpx.Client) -> None:
    ns = uniq("ranges")
    sent = {"metadata": {"name": ns, "annotations": {UID_RANGE: "0/10000", GROUPS: "0/10000", "team": "a"}}}
    created = http.post("/api/v1/namespaces", json=sent)
    assert created.status_code == 201, created.text
    mine = created.json()["metadata"]["annotations"]
    assert mine[UID_RANGE] != "0/10000" and mine[GROUPS] == mine[UID_RANGE] and mine["team"] == "a"
    patched = http.patch(f"/api/v1/namespaces/{ns}", headers=MERGE,
                         json={"metadata": {"annotations": {UID_RANGE: "0/10000", GROUPS: None, "team": "b"}}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["annotations"] == {**mine, "team": "b"}  # restored silently
    body = patched.json()
    body["metadata"]["annotations"] = {}
    replaced = http.put(f"/api/v1/namespaces/{ns}", json=body)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["metadata"]["annotations"] == {UID_RANGE: mine[UID_RANGE], GROUPS: mine[GROUPS]}


def test_start_gives_ranges_to_namespaces_stored_without_one(tmp_path: Path) -> None:
    """An older home's namespaces, oldest first, around one that has a range already; a restart changes
    nothing."""
    store = Store(tmp_path / "cluster.db")
    try:
        for name, when in (("old-b", "2025-01-02T00:00:00Z"), ("old-a", "2025-01-01T00:00:00Z")):
            store.create(NAMESPACES, {"metadata": {"name": name, "creationTimestamp": when}})
        store.create(NAMESPACES, {"metadata": {"name": "has-one", "annotations": {UID_RANGE: "1000010000/10000"}}})
        bootstrap.run(store)
        got = {n["metadata"]["name"]: n["metadata"]["annotations"][UID_RANGE] for n in store.list(NAMESPACES, None)[0]}
        assert got["has-one"] == "1000010000/10000"  # kept; the others, and default, kube-system and
        assert sorted(got.values()) == [f"{1000000000 + k * 10000}/10000" for k in range(6)]  # kubeflow-system
        bootstrap.run(store)
        assert {n["metadata"]["name"]: n["metadata"]["annotations"][UID_RANGE]
                for n in store.list(NAMESPACES, None)[0]} == got
    finally:
        store.close()


# -- TrainJob admission -------------------------------------------------------------------------------


@pytest.fixture()
def tenant(http: httpx.Client, connect: Callable[..., httpx.Client]) -> Iterator[dict[str, Any]]:
    """A project admin (`admin` in a namespace of their own), and a ClusterTrainingRuntime whose pods ask for
    root."""
    name, ns, runtime = uniq("u"), uniq("team"), uniq("root")
    made = http.post("/apis/mpijob.io/v1alpha1/users", json={"metadata": {"name": name}})
    assert made.status_code == 201, made.text
    assert http.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    binding = {"metadata": {"name": "admin"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                          "kind": "ClusterRole", "name": "admin"},
               "subjects": [{"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}]}
    assert http.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", json=binding).status_code == 201
    rt = copy.deepcopy(bundled()[0])
    rt["metadata"]["name"] = runtime
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"runAsUser": 0}
    assert http.post(f"{TRAINER}/clustertrainingruntimes", json=rt).status_code == 201
    with connect(token=made.json()["status"]["token"]) as client:
        yield {"user": name, "ns": ns, "runtime": runtime, "client": client}
    http.delete(f"{TRAINER}/clustertrainingruntimes/{runtime}")


def _trainjob(name: str, runtime: str) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": 1, "command": ["true"]}}}


def test_root_is_refused_until_an_admin_grants_anyuid(http: httpx.Client, tenant: dict[str, Any]) -> None:
    me, ns = tenant["client"], tenant["ns"]
    jobs = f"{TRAINER}/namespaces/{ns}/trainjobs"
    refused = me.post(jobs, json=_trainjob("as-root", tenant["runtime"]))
    assert refused.status_code == 403, refused.text
    status = refused.json()
    assert status["reason"] == "Forbidden" and status["details"] == {
        "name": "as-root", "group": "trainer.kubeflow.org", "kind": "trainjobs"}
    first = annotations(http, ns)[UID_RANGE].split("/")[0]
    assert status["message"].startswith(
        'trainjobs.trainer.kubeflow.org "as-root" is forbidden: pods "as-root-node-0-0" is forbidden: unable to '
        "validate against any security context constraint: [provider restricted-v2: .containers[0].runAsUser: "
        f"Invalid value: 0: must be in the ranges: [{first}, {int(first) + 9999}], provider \"nonroot-v2\": "
        'Forbidden: not usable by user or serviceaccount, provider "anyuid": Forbidden: not usable by user or '
        "serviceaccount]; ")
    assert f"--clusterrole=system:openshift:scc:anyuid --user={tenant['user']} -n {ns}" in status["message"]
    assert me.get(f"{jobs}/as-root").status_code == 404  # nothing created
    # the same job without root is admitted; the admin (system:masters) may run the root one
    plain = _trainjob("plain", "mpi-distributed")
    plain["spec"]["suspend"] = True
    assert me.post(jobs, json=plain).status_code == 201
    by_admin = _trainjob("admins", tenant["runtime"])
    by_admin["spec"]["suspend"] = True
    assert http.post(jobs, json=by_admin).status_code == 201

    grant = {"metadata": {"name": "scc-anyuid"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                             "kind": "ClusterRole", "name": "system:openshift:scc:anyuid"},
             "subjects": [{"kind": "User", "name": tenant["user"], "apiGroup": "rbac.authorization.k8s.io"}]}
    # a project admin may write RoleBindings, but not this one: they do not hold `use` themself
    escalation = me.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", json=grant)
    assert escalation.status_code == 403 and "attempting to grant RBAC permissions not currently held" in \
        escalation.json()["message"] and "securitycontextconstraints" in escalation.json()["message"]
    assert http.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", json=grant).status_code == 201
    job = _trainjob("as-root", tenant["runtime"])
    job["spec"]["suspend"] = True
    admitted = me.post(jobs, json=job)
    assert admitted.status_code == 201, admitted.text
