"""Identities and RBAC over HTTP against a real server: users and their tokens, the personas, kube's
denials, the review APIs, namespaces and their cascade, ServiceAccount tokens."""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob.api.core import tokens
from mpijob.store.home import Home

USERS = "/apis/mpijob.io/v1alpha1/users"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture()
def admin(http: httpx.Client) -> httpx.Client:
    return http




def namespace(admin: httpx.Client) -> str:
    ns = uniq("team")
    assert admin.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    return ns


def bind(admin: httpx.Client, user: str, role: str, ns: str | None = None, kind: str = "ClusterRole") -> None:
    body = {"metadata": {"name": uniq("b")}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind,
                                                          "name": role},
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}
    path = f"{RBAC}/namespaces/{ns}/rolebindings" if ns else f"{RBAC}/clusterrolebindings"
    resp = admin.post(path, json=body)
    assert resp.status_code == 201, resp.text


def trainjob(name: str, dry: bool = True) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 1, "command": ["true"]}}}


def forbidden(resp: httpx.Response, message: str | None = None) -> dict[str, Any]:
    assert resp.status_code == 403, resp.text
    body = resp.json()
    assert body["kind"] == "Status" and body["reason"] == "Forbidden"
    if message is not None:
        assert body["message"] == message
    return body


# -- identities ----------------------------------------------------------------------------------------------


def test_users_are_created_with_a_token_shown_once_and_stored_hashed(admin: httpx.Client, server: Any,
                                                                     new_user: Callable[..., httpx.Client]) -> None:
    alice = new_user(groups=["team-a"])
    token = alice.headers["Authorization"].split()[1]
    text = (server.home / "tokens.csv").read_text()
    assert token not in text
    rows = {row[1]: row for row in csv.reader(io.StringIO(text))}
    assert rows[alice.user][0].startswith("sha256:") and rows[alice.user][3] == "team-a,system:authenticated"
    got = admin.get(f"{USERS}/{alice.user}").json()
    assert got["spec"]["groups"] == ["team-a"] and "status" not in got
    listed = {u["metadata"]["name"]: u for u in admin.get(USERS).json()["items"]}
    assert {"mpijob-admin", alice.user} <= set(listed) and "status" not in listed[alice.user]
    assert admin.post(USERS, json={"metadata": {"name": alice.user}}).status_code == 409
    assert admin.post(USERS, json={"metadata": {"name": "Not_Valid"}}).status_code == 422
    assert admin.delete(f"{USERS}/mpijob-admin").status_code == 403
    who = alice.post(WHOAMI, json={}).json()["status"]["userInfo"]
    assert who["username"] == alice.user and who["groups"] == ["team-a", "system:authenticated"]


def test_removing_a_user_revokes_its_token_at_the_next_request(admin: httpx.Client,
                                                                new_user: Callable[..., httpx.Client]) -> None:
    bob = new_user()
    assert bob.get("/version").status_code == 200
    assert admin.delete(f"{USERS}/{bob.user}").status_code == 200
    assert bob.get("/version").status_code == 401
    assert admin.get(f"{USERS}/{bob.user}").status_code == 404


def test_only_the_admin_manages_users(new_user: Callable[..., httpx.Client]) -> None:
    alice = new_user()
    forbidden(alice.get(USERS), f'users.mpijob.io is forbidden: User "{alice.user}" cannot list resource "users" '
                                'in API group "mpijob.io" at the cluster scope')
    forbidden(alice.post(USERS, json={"metadata": {"name": "mallory"}}))


def test_an_old_plaintext_token_file_is_read_once_and_rewritten_hashed(
        new_server: Callable[..., Any], connect: Callable[..., httpx.Client], tmp_path: Path) -> None:
    home = tmp_path / "legacy"
    home.mkdir()
    (home / "tokens.csv").write_text('oldadmintoken,mpijob-admin,mpijob-admin,"system:masters,system:authenticated"\n'
                                     "carols-token,carol,carol,\n")
    info = new_server("legacy", controllers=False, home=home)
    text = (home / "tokens.csv").read_text()
    assert "oldadmintoken" not in text and "carols-token" not in text and text.count("sha256:") == 2
    assert json.loads(info.kubeconfig.read_text())["users"][0]["user"]["token"] == "oldadmintoken"
    with connect(info=info) as adm, connect(info=info, token="carols-token") as carol:
        assert adm.get("/api/v1/namespaces").status_code == 200
        assert carol.get("/version").status_code == 200
        forbidden(carol.get("/api/v1/namespaces"))


# -- the personas ----------------------------------------------------------------------------------------------


def test_data_scientist_runs_trainjobs_in_their_namespace_only(admin: httpx.Client,
                                                                new_user: Callable[..., httpx.Client]) -> None:
    ns, other = namespace(admin), namespace(admin)
    ds = new_user()
    bind(admin, ds.user, "edit", ns)
    job = uniq("tj")
    assert ds.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=trainjob(job)).status_code == 201
    assert ds.get(f"{TRAINER}/namespaces/{ns}/trainjobs/{job}").status_code == 200
    assert ds.get(f"{TRAINER}/namespaces/{ns}/trainjobs/{job}/status").status_code == 200
    assert ds.get(f"/api/v1/namespaces/{ns}/pods").status_code == 200
    forbidden(ds.post(f"{TRAINER}/namespaces/{other}/trainjobs", json=trainjob(job)),
              f'trainjobs.trainer.kubeflow.org is forbidden: User "{ds.user}" cannot create resource "trainjobs" in '
              f'API group "trainer.kubeflow.org" in the namespace "{other}"')
    forbidden(ds.get(f"{TRAINER}/trainjobs"))  # all namespaces
    forbidden(ds.get(f"{TRAINER}/namespaces/{other}/trainjobs", params={"watch": "true"}),
              f'trainjobs.trainer.kubeflow.org is forbidden: User "{ds.user}" cannot watch resource "trainjobs" in '
              f'API group "trainer.kubeflow.org" in the namespace "{other}"')
    forbidden(ds.get(f"/api/v1/namespaces/{other}/pods/x/log"),
              f'pods "x" is forbidden: User "{ds.user}" cannot get resource "pods/log" in API group "" in the '
              f'namespace "{other}"')
    forbidden(ds.put(f"{TRAINER}/namespaces/{ns}/trainjobs/{job}/status", json={}))  # status is the controller's
    forbidden(ds.post(f"{TRAINER}/namespaces/{ns}/trainingruntimes", json={}))
    forbidden(ds.post(f"{RBAC}/namespaces/{ns}/rolebindings", json={}))
    forbidden(ds.get("/metrics"), f'forbidden: User "{ds.user}" cannot get path "/metrics"')
    assert ds.delete(f"{TRAINER}/namespaces/{ns}/trainjobs/{job}").status_code == 200


def test_viewer_reads_and_changes_nothing(admin: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    ns = namespace(admin)
    job = uniq("tj")
    assert admin.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=trainjob(job)).status_code == 201
    viewer = new_user()
    bind(admin, viewer.user, "view", ns)
    assert viewer.get(f"{TRAINER}/namespaces/{ns}/trainjobs").json()["items"][0]["metadata"]["name"] == job
    with viewer.stream("GET", f"{TRAINER}/namespaces/{ns}/trainjobs",
                       params={"watch": "true", "timeoutSeconds": "1"}) as resp:
        assert resp.status_code == 200
    assert viewer.get(f"{KUEUE}/namespaces/{ns}/localqueues").status_code == 200
    for resp in (viewer.delete(f"{TRAINER}/namespaces/{ns}/trainjobs/{job}"),
                 viewer.patch(f"{TRAINER}/namespaces/{ns}/trainjobs/{job}", json={"spec": {"suspend": True}},
                              headers={"Content-Type": "application/merge-patch+json"}),
                 viewer.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=trainjob(uniq("tj"))),
                 viewer.get(f"/api/v1/namespaces/{ns}/secrets"),
                 viewer.delete(f"{TRAINER}/namespaces/{ns}/trainjobs")):
        forbidden(resp)


def test_project_admin_owns_training_runtimes_and_bindings_in_one_namespace(
        admin: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    ns, other = namespace(admin), namespace(admin)
    padmin, member = new_user(), new_user()
    bind(admin, padmin.user, "admin", ns)
    runtime = admin.get(f"{TRAINER}/clustertrainingruntimes/mpi-distributed").json()
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
            "metadata": {"name": "team-mpi"}, "spec": runtime["spec"]}
    assert padmin.post(f"{TRAINER}/namespaces/{ns}/trainingruntimes", json=body).status_code == 201
    forbidden(padmin.post(f"{TRAINER}/namespaces/{other}/trainingruntimes", json=body))
    forbidden(padmin.post(f"{TRAINER}/clustertrainingruntimes", json={**body, "kind": "ClusterTrainingRuntime"}))
    forbidden(padmin.get(f"{KUEUE}/clusterqueues"))
    # the project admin grants a member `edit` in their namespace, and the member can then submit
    forbidden(member.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=trainjob(uniq("tj"))))
    bind(padmin, member.user, "edit", ns)
    assert member.post(f"{TRAINER}/namespaces/{ns}/trainjobs", json=trainjob(uniq("tj"))).status_code == 201
    assert padmin.get(f"/api/v1/namespaces/{ns}").status_code == 200  # its own namespace, as in kube
    forbidden(padmin.delete(f"/api/v1/namespaces/{ns}"))


def test_no_one_grants_what_they_do_not_hold(admin: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    """kube's escalation check: a project admin may bind `edit` in their namespace, not `cluster-admin`,
    and may not write a Role with rules they lack, unless allowed to `bind`/`escalate`."""
    ns = namespace(admin)
    padmin, member = new_user(), new_user()
    bind(admin, padmin.user, "admin", ns)
    body = {"metadata": {"name": uniq("b")}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                          "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "User", "name": member.user, "apiGroup": "rbac.authorization.k8s.io"}]}
    refused = forbidden(padmin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=body))
    assert refused["message"].startswith(f'rolebindings.rbac.authorization.k8s.io "{body["metadata"]["name"]}" is '
                                         f'forbidden: user "{padmin.user}" (groups=["system:authenticated"]) is '
                                         f"attempting to grant RBAC permissions not currently held:\n{{APIGroups:"), \
        refused["message"]
    assert admin.get(f"{RBAC}/namespaces/{ns}/rolebindings/{body['metadata']['name']}").status_code == 404
    role = {"metadata": {"name": uniq("r")}, "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}
    forbidden(padmin.post(f"{RBAC}/namespaces/{ns}/roles", json=role))
    role["rules"] = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]  # held: allowed
    assert padmin.post(f"{RBAC}/namespaces/{ns}/roles", json=role).status_code == 201
    # `bind` on cluster-admin, granted by someone who holds it, lifts the check for that role only
    granter = {"metadata": {"name": uniq("binder")}, "rules": [{
        "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"],
        "resourceNames": ["cluster-admin"]}]}
    assert admin.post(f"{RBAC}/clusterroles", json=granter).status_code == 201
    bind(admin, padmin.user, granter["metadata"]["name"], ns)
    assert padmin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=body).status_code == 201


def test_platform_admin_manages_cluster_runtimes_and_queues(admin: httpx.Client,
                                                            new_user: Callable[..., httpx.Client]) -> None:
    platform = new_user(groups=["platform-admins"])
    role = uniq("clustertrainingruntime-admin")
    assert admin.post(f"{RBAC}/clusterroles", json={"metadata": {"name": role}, "rules": [
        {"apiGroups": ["trainer.kubeflow.org"], "resources": ["clustertrainingruntimes"], "verbs": ["*"]}]}
    ).status_code == 201
    for r in (role, "kueue-batch-admin-role"):
        assert admin.post(f"{RBAC}/clusterrolebindings", json={
            "metadata": {"name": uniq("platform")}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                                "kind": "ClusterRole", "name": r},
            "subjects": [{"kind": "Group", "name": "platform-admins", "apiGroup": "rbac.authorization.k8s.io"}]}
        ).status_code == 201
    flavor = uniq("flavor")
    assert platform.post(f"{KUEUE}/resourceflavors", json={"apiVersion": "kueue.x-k8s.io/v1beta2",
                                                           "kind": "ResourceFlavor",
                                                           "metadata": {"name": flavor}}).status_code == 201
    assert platform.get(f"{KUEUE}/clusterqueues").status_code == 200
    runtime = platform.get(f"{TRAINER}/clustertrainingruntimes/mpi-distributed").json()
    copy = {"apiVersion": runtime["apiVersion"], "kind": runtime["kind"], "metadata": {"name": uniq("ctr")},
            "spec": runtime["spec"]}
    assert platform.post(f"{TRAINER}/clustertrainingruntimes", json=copy).status_code == 201
    forbidden(platform.get("/api/v1/namespaces/default/secrets"))
    forbidden(platform.post(f"{RBAC}/clusterrolebindings", json={}))


# -- kube's machinery ----------------------------------------------------------------------------------------


def test_reviews_answer_what_the_authorizer_decides(admin: httpx.Client, new_user: Callable[..., httpx.Client]) -> None:
    ns = namespace(admin)
    ds = new_user()
    bind(admin, ds.user, "edit", ns)

    def can(verb: str, resource: str, group: str = "", namespace: str = ns, sub: str = "") -> dict[str, Any]:
        resp = ds.post(SSAR, json={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                                   "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "group": group,
                                                                   "namespace": namespace, "subresource": sub}}})
        assert resp.status_code == 201
        return resp.json()["status"]  # type: ignore[no-any-return]

    allowed = can("create", "trainjobs", "trainer.kubeflow.org")
    assert allowed["allowed"] and allowed["reason"].startswith("RBAC: allowed by RoleBinding")
    assert not can("create", "trainjobs", "trainer.kubeflow.org", "default")["allowed"]
    assert can("get", "pods", sub="log")["allowed"] and not can("update", "trainjobs", "trainer.kubeflow.org",
                                                                 sub="status")["allowed"]
    non = ds.post(SSAR, json={"spec": {"nonResourceAttributes": {"verb": "get", "path": "/version"}}}).json()
    assert non["status"]["allowed"]
    rules = ds.post(SSRR, json={"spec": {"namespace": ns}}).json()["status"]
    assert any("trainjobs" in r["resources"] and "create" in r["verbs"] for r in rules["resourceRules"])
    none = ds.post(SSRR, json={"spec": {"namespace": "default"}}).json()["status"]
    assert not any("trainjobs" in r["resources"] for r in none["resourceRules"])


def test_aggregated_roles_follow_new_labelled_cluster_roles_at_once(admin: httpx.Client,
                                                                    new_user: Callable[..., httpx.Client]) -> None:
    ns = namespace(admin)
    viewer = new_user()
    bind(admin, viewer.user, "view", ns)
    forbidden(viewer.get(f"/api/v1/namespaces/{ns}/secrets"))
    extra = uniq("secrets-to-view")
    assert admin.post(f"{RBAC}/clusterroles", json={
        "metadata": {"name": extra, "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]}).status_code == 201
    view = admin.get(f"{RBAC}/clusterroles/view").json()
    assert {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]} in view["rules"]
    assert viewer.get(f"/api/v1/namespaces/{ns}/secrets").status_code == 200
    assert admin.delete(f"{RBAC}/clusterroles/{extra}").status_code == 200
    forbidden(viewer.get(f"/api/v1/namespaces/{ns}/secrets"))
    assert {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]} not in \
        admin.get(f"{RBAC}/clusterroles/view").json()["rules"]


def test_default_cluster_roles_exist_with_upstreams_labels(admin: httpx.Client) -> None:
    roles = {r["metadata"]["name"]: r for r in admin.get(f"{RBAC}/clusterroles").json()["items"]}
    assert {"cluster-admin", "admin", "edit", "view", "kueue-batch-admin-role", "kueue-batch-user-role",
            "kubeflow-trainer-admin", "kubeflow-trainer-edit", "kubeflow-trainer-view", "system:discovery",
            "system:basic-user"} <= set(roles)
    assert roles["edit"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert roles["admin"]["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]
    assert any("trainjobs" in r.get("resources", []) for r in roles["admin"]["rules"])
    bindings = {b["metadata"]["name"] for b in admin.get(f"{RBAC}/clusterrolebindings").json()["items"]}
    assert {"cluster-admin", "system:discovery", "system:basic-user", "system:public-info-viewer"} <= bindings


def test_namespaces_get_a_default_service_account_and_deletion_cascades(
        admin: httpx.Client, server: Any, new_user: Callable[..., httpx.Client]) -> None:
    ns = namespace(admin)
    sa = admin.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default")
    assert sa.status_code == 200
    root_ca = admin.get(f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt")  # kube's root-ca-cert-publisher
    assert root_ca.status_code == 200
    assert root_ca.json()["data"] == {"ca.crt": (server.home / "tls" / "ca.crt").read_text()}
    assert admin.get("/api/v1/namespaces/default/configmaps/kube-root-ca.crt").status_code == 200  # bootstrap's too
    user = new_user()
    bind(admin, user.user, "edit", ns)
    assert admin.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "c"}}).status_code == 201
    assert user.get(f"/api/v1/namespaces/{ns}/configmaps").status_code == 200
    assert admin.delete(f"/api/v1/namespaces/{ns}").status_code == 200
    for path in (f"/api/v1/namespaces/{ns}/configmaps/c", f"/api/v1/namespaces/{ns}/serviceaccounts/default",
                 f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"):
        assert admin.get(path).status_code == 404
    assert admin.get(f"{RBAC}/namespaces/{ns}/rolebindings").json()["items"] == []
    # re-created, the namespace does not bring back the old binding
    assert admin.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    forbidden(user.get(f"/api/v1/namespaces/{ns}/configmaps"))


def test_service_account_tokens_authenticate_and_get_nothing_by_default(
        admin: httpx.Client, server: Any, connect: Callable[..., httpx.Client]) -> None:
    ns = namespace(admin)
    sa = admin.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").json()
    key = Home(server.home).service_account_key_file.read_bytes()
    token = tokens.issue(key, tokens.Claims(ns, "default", sa["metadata"]["uid"]))
    with connect(token=token) as robot:
        who = robot.post(WHOAMI, json={}).json()["status"]["userInfo"]
        assert who["username"] == f"system:serviceaccount:{ns}:default"
        assert who["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
        forbidden(robot.get(f"/api/v1/namespaces/{ns}/pods"),
                  f'pods is forbidden: User "system:serviceaccount:{ns}:default" cannot list resource "pods" in API '
                  f'group "" in the namespace "{ns}"')
        admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json={
            "metadata": {"name": "robot"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                       "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]})
        assert robot.get(f"/api/v1/namespaces/{ns}/pods").status_code == 200
        assert admin.delete(f"/api/v1/namespaces/{ns}/serviceaccounts/default").status_code == 200
        assert robot.get("/version").status_code == 401  # its account is gone: so is the token
    with connect(token=tokens.issue(b"x" * 32, tokens.Claims(ns, "default", ""))) as forged:
        assert forged.get("/version").status_code == 401


def test_a_bindings_role_cannot_be_changed(admin: httpx.Client) -> None:
    """kube's rule: a binding's roleRef is fixed for life (its subjects may change), so a grant read once stays
    what it says; the fix is a new binding."""
    ns = namespace(admin)
    name = uniq("b")
    body = {"metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                     "name": "view"},
            "subjects": [{"kind": "User", "name": "someone", "apiGroup": "rbac.authorization.k8s.io"}]}
    url = f"{RBAC}/namespaces/{ns}/rolebindings/{name}"
    assert admin.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=body).status_code == 201
    r = admin.patch(url, json={"roleRef": {**body["roleRef"], "name": "edit"}},
                    headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "roleRef", r.text
    assert "cannot change roleRef" in r.json()["message"]
    assert admin.get(url).json()["roleRef"]["name"] == "view"
    another = {"kind": "User", "name": "another", "apiGroup": "rbac.authorization.k8s.io"}
    r = admin.patch(url, json={"subjects": [another]}, headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200 and admin.get(url).json()["subjects"][0]["name"] == "another"
