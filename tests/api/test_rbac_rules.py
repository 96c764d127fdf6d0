"""The RBAC authorizer, pure: kube's request attributes, rule matching, aggregation, denial wording."""

from __future__ import annotations

from typing import Any

import pytest
from mpijob.api.core import rbac, rbac_policy, tokens
from mpijob.api.core.rbac import Attributes, Authorizer, Rule, User, request_attributes

ALICE = User("alice", "u1", ("team-a", "system:authenticated"))
RBAC_V1 = "rbac.authorization.k8s.io"


def binding(kind: str, name: str, role_kind: str, role: str, subjects: list[dict[str, Any]], ns: str = "") -> dict:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"kind": kind, "metadata": meta, "roleRef": {"apiGroup": RBAC_V1, "kind": role_kind, "name": role},
            "subjects": subjects}


def role(kind: str, name: str, rules: list[dict], ns: str = "", labels: dict | None = None, agg: list | None = None):
    meta = {"name": name, **({"namespace": ns} if ns else {}), "labels": labels or {}}
    out = {"kind": kind, "metadata": meta, "rules": rules}
    if agg is not None:
        out["aggregationRule"] = {"clusterRoleSelectors": agg}
    return out


def defaults(**extra: list) -> Authorizer:
    return Authorizer(extra.get("roles", []), rbac_policy.cluster_roles() + extra.get("cluster_roles", []),
                      extra.get("role_bindings", []), rbac_policy.cluster_role_bindings() + extra.get("crbs", []))


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    ("GET", "/api/v1/namespaces/ns/pods", "", ("list", "", "pods", "", "ns", "")),
    ("GET", "/api/v1/namespaces/ns/pods", "watch=true", ("watch", "", "pods", "", "ns", "")),
    ("GET", "/api/v1/watch/namespaces/ns/pods", "", ("watch", "", "pods", "", "ns", "")),
    ("GET", "/api/v1/namespaces/ns/pods/p/log", "", ("get", "", "pods", "log", "ns", "p")),
    # a session's WebSocket opens with a GET, which kube authorizes as `create` (KEP-4006)
    ("GET", "/api/v1/namespaces/ns/pods/p/exec", "command=sh", ("create", "", "pods", "exec", "ns", "p")),
    ("POST", "/api/v1/namespaces/ns/pods/p/attach", "", ("create", "", "pods", "attach", "ns", "p")),
    ("GET", "/api/v1/namespaces/ns/pods/p/portforward", "", ("create", "", "pods", "portforward", "ns", "p")),
    ("PUT", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/status", "",
     ("update", "trainer.kubeflow.org", "trainjobs", "status", "ns", "j")),
    ("DELETE", "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/localqueues", "",
     ("deletecollection", "kueue.x-k8s.io", "localqueues", "", "ns", "")),
    ("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", "fieldSelector=metadata.name%3Dcq",
     ("list", "kueue.x-k8s.io", "clusterqueues", "", "", "cq")),
    ("GET", "/api/v1/namespaces/ns", "", ("get", "", "namespaces", "", "ns", "ns")),
    ("PUT", "/api/v1/namespaces/ns/status", "", ("update", "", "namespaces", "status", "ns", "ns")),
    ("POST", "/api/v1/namespaces", "", ("create", "", "namespaces", "", "", "")),
    ("GET", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads", "",
     ("get", "visibility.kueue.x-k8s.io", "clusterqueues", "pendingworkloads", "", "cq")),
])
def test_request_attributes_are_kubes_request_info(method: str, path: str, query: str, expected: tuple) -> None:
    a = request_attributes(ALICE, method, path, query)
    assert a.resource_request
    assert (a.verb, a.api_group, a.resource, a.subresource, a.namespace, a.name) == expected


@pytest.mark.parametrize("path", ["/version", "/api", "/api/v1", "/apis", "/apis/trainer.kubeflow.org",
                                  "/apis/trainer.kubeflow.org/v1alpha1", "/openapi/v2", "/metrics"])
def test_discovery_and_other_paths_are_non_resource_requests(path: str) -> None:
    a = request_attributes(ALICE, "GET", path)
    assert not a.resource_request and a.verb == "get" and a.path == path


def test_every_authenticated_user_may_discover_but_nothing_more() -> None:
    auth = defaults()
    for path in ("/version", "/api", "/apis/kueue.x-k8s.io/v1beta2", "/openapi/v3/apis/x", "/healthz"):
        assert auth.authorize(request_attributes(ALICE, "GET", path)).allowed, path
    assert not auth.authorize(request_attributes(ALICE, "GET", "/metrics")).allowed
    assert not auth.authorize(request_attributes(ALICE, "GET", "/api/v1/namespaces/default/pods")).allowed
    review = Attributes(ALICE, "create", True, api_group="authorization.k8s.io", resource="selfsubjectaccessreviews")
    assert auth.authorize(review).allowed


def test_system_masters_is_always_allowed() -> None:
    admin = User("root", groups=("system:masters",))
    assert Authorizer().authorize(request_attributes(admin, "DELETE", "/api/v1/namespaces/x")).allowed


def test_default_roles_aggregate_trainer_and_kueue_as_upstream_ships_them() -> None:
    agg = rbac.aggregate(rbac_policy.cluster_roles())
    def grants(name: str, group: str, resource: str, verb: str) -> bool:
        return any(Rule.of(r).allows(Attributes(ALICE, verb, True, api_group=group, resource=resource, namespace="n"))
                   for r in agg[name])
    assert grants("view", "trainer.kubeflow.org", "trainjobs", "list")
    assert not grants("view", "trainer.kubeflow.org", "trainjobs", "create")
    assert grants("edit", "trainer.kubeflow.org", "trainjobs", "create")
    assert grants("edit", "", "pods", "list") and grants("edit", "", "secrets", "create")  # edit ⊇ view
    assert not grants("edit", "trainer.kubeflow.org", "trainingruntimes", "create")
    assert grants("admin", "trainer.kubeflow.org", "trainingruntimes", "create")
    assert grants("admin", "rbac.authorization.k8s.io", "rolebindings", "create")
    assert grants("admin", "kueue.x-k8s.io", "localqueues", "list") and grants("view", "kueue.x-k8s.io", "localqueues", "get")
    assert grants("kueue-batch-admin-role", "kueue.x-k8s.io", "clusterqueues", "create")
    assert grants("kueue-batch-user-role", "trainer.kubeflow.org", "trainjobs", "create")
    assert not grants("kueue-batch-user-role", "kueue.x-k8s.io", "clusterqueues", "create")


def test_rolebinding_to_a_clusterrole_is_scoped_to_its_namespace() -> None:
    rb = binding("RoleBinding", "a-edit", "ClusterRole", "edit",
                 [{"kind": "User", "name": "alice", "apiGroup": RBAC_V1}], "team-a")
    auth = defaults(role_bindings=[rb])
    create = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{}/trainjobs"
    allowed = auth.authorize(request_attributes(ALICE, "POST", create.format("team-a")))
    assert allowed.allowed
    assert allowed.reason == 'RBAC: allowed by RoleBinding "a-edit/team-a" of ClusterRole "edit" to User "alice"'
    assert not auth.authorize(request_attributes(ALICE, "POST", create.format("team-b"))).allowed
    assert not auth.authorize(request_attributes(ALICE, "GET", "/apis/trainer.kubeflow.org/v1alpha1/trainjobs")).allowed


def test_groups_service_accounts_resource_names_and_subresources() -> None:
    r = role("Role", "one-cm", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"],
                                 "resourceNames": ["mine"]},
                                {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}], "ns")
    rb = binding("RoleBinding", "b", "Role", "one-cm", [{"kind": "Group", "name": "team-a"},
                                                        {"kind": "ServiceAccount", "name": "robot"}], "ns")
    auth = Authorizer([r], [], [rb], [])
    assert auth.authorize(request_attributes(ALICE, "GET", "/api/v1/namespaces/ns/configmaps/mine")).allowed
    assert not auth.authorize(request_attributes(ALICE, "GET", "/api/v1/namespaces/ns/configmaps/other")).allowed
    assert not auth.authorize(request_attributes(ALICE, "GET", "/api/v1/namespaces/ns/configmaps")).allowed
    assert auth.authorize(request_attributes(ALICE, "GET", "/api/v1/namespaces/ns/configmaps",
                                             "fieldSelector=metadata.name=mine")).allowed
    assert auth.authorize(request_attributes(ALICE, "GET",
                                             "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/status")).allowed
    robot = rbac.service_account_user("ns", "robot")
    assert robot.name == "system:serviceaccount:ns:robot"
    assert robot.groups == ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")
    assert auth.authorize(request_attributes(robot, "GET", "/api/v1/namespaces/ns/configmaps/mine")).allowed
    assert not auth.authorize(request_attributes(rbac.service_account_user("other", "robot"), "GET",
                                                 "/api/v1/namespaces/ns/configmaps/mine")).allowed


def test_service_accounts_get_nothing_by_default() -> None:
    robot = rbac.service_account_user("team-a", "default")
    auth = defaults()
    for path in ("/api/v1/namespaces/team-a/pods", "/api/v1/namespaces/team-a/secrets/x",
                 "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs"):
        assert not auth.authorize(request_attributes(robot, "GET", path)).allowed


def test_a_binding_to_a_missing_role_says_so_in_the_denial() -> None:
    rb = binding("ClusterRoleBinding", "x", "ClusterRole", "nope", [{"kind": "User", "name": "alice"}])
    decision = Authorizer([], [], [], [rb]).authorize(request_attributes(ALICE, "GET", "/api/v1/namespaces"))
    assert not decision.allowed
    assert decision.reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found'


def test_aggregation_follows_selectors_through_aggregated_roles() -> None:
    roles = [role("ClusterRole", "top", [], agg=[{"matchLabels": {"to-top": "true"}}]),
             role("ClusterRole", "mid", [], labels={"to-top": "true"}, agg=[{"matchExpressions": [
                 {"key": "to-mid", "operator": "Exists"}]}]),
             role("ClusterRole", "leaf", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
                  labels={"to-mid": "x"})]
    agg = rbac.aggregate(roles)
    assert agg["top"] == agg["mid"] == roles[2]["rules"]
    assert "leaf" not in agg


@pytest.mark.parametrize(("method", "path", "message"), [
    ("POST", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-b/trainjobs",
     ('trainjobs.trainer.kubeflow.org is forbidden: User "alice" cannot create resource "trainjobs" in API group '
     '"trainer.kubeflow.org" in the namespace "team-b"')),
    ("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq",
     ('clusterqueues.kueue.x-k8s.io "cq" is forbidden: User "alice" cannot get resource "clusterqueues" in API group '
     '"kueue.x-k8s.io" at the cluster scope')),
    ("GET", "/api/v1/namespaces/team-b/pods/p/log",
     'pods "p" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "team-b"'),
    ("GET", "/metrics", 'forbidden: User "alice" cannot get path "/metrics"'),
])
def test_denials_are_worded_as_kube_apiserver_words_them(method: str, path: str, message: str) -> None:
    err = rbac.forbidden(request_attributes(ALICE, method, path))
    assert (err.code, err.reason, err.message) == (403, "Forbidden", message)


def test_rules_review_lists_what_a_user_may_do_in_a_namespace() -> None:
    rb = binding("RoleBinding", "v", "ClusterRole", "view", [{"kind": "User", "name": "alice"}], "team-a")
    resource, non_resource, error = defaults(role_bindings=[rb]).rules_for(ALICE, "team-a")
    assert not error
    assert {"verbs": ["get", "list", "watch"], "apiGroups": ["trainer.kubeflow.org"],
            "resources": ["clustertrainingruntimes", "trainingruntimes", "trainjobs"]} in resource
    assert any("/api/*" in r["nonResourceURLs"] for r in non_resource)
    assert not any("create" in r["verbs"] and "trainjobs" in r["resources"] for r in resource)


def test_covers_is_kubes_escalation_check() -> None:
    owner = [Rule.of({"apiGroups": [""], "resources": ["pods", "configmaps"], "verbs": ["get", "list"]})]
    assert rbac.covers(owner, [Rule.of({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]})]) == []
    missing = rbac.covers(owner, [Rule.of({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})])
    assert [rbac.describe_rule(r) for r in missing] == ['{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}']
    assert rbac.covers([Rule.of({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})],
                       [Rule.of({"apiGroups": ["x"], "resources": ["y"], "verbs": ["z"]})]) == []


def test_tokens_are_stored_as_hashes_and_service_account_tokens_verify() -> None:
    assert rbac.token_hash("abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    key = b"k" * 32
    claims = tokens.Claims("team-a", "default", "uid-1", "pod-1", "puid")
    token = tokens.issue(key, claims)
    assert tokens.verify(key, token) == claims
    assert tokens.verify(b"other" * 8, token) is None
    assert tokens.verify(key, token[:-2] + "xx") is None
    assert tokens.verify(key, tokens.issue(key, claims, seconds=-10)) is None
