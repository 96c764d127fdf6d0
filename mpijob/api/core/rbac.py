"""RBAC evaluated as kube-apiserver evaluates it, pure: what a request asks for and whether it may.

* `request_attributes` is kube's `RequestInfoFactory`: the verb (`get`/`list`/`watch`/`create`/...,
  `deletecollection`), API group, resource, subresource, namespace and name of a resource request, or
  the path and lower-cased method of a non-resource one (`/version`, `/api`, `/metrics`).
* `Authorizer` is the RBAC authorizer (`plugin/pkg/auth/authorizer/rbac`) over one snapshot of the Roles,
  ClusterRoles, RoleBindings and ClusterRoleBindings, indexed once by subject so that a request costs a
  few dictionary look-ups whatever the number of bindings: ClusterRoleBindings apply everywhere, a
  RoleBinding (to a Role, or to a ClusterRole scoped to its namespace) only in its namespace; rules are
  a union; `*` matches any verb, group, resource; `*/status` any resource's status; `resourceNames`
  narrow a rule to names; a non-resource URL matches exactly or by a trailing `*`. `system:masters` is
  always allowed (kube's privileged-group authorizer).
* `aggregate` is the ClusterRole aggregation controller: a ClusterRole with an `aggregationRule` has the
  rules of every ClusterRole its label selectors match.
* `forbidden` words a denial exactly as kube-apiserver's `responsewriters.Forbidden` does.
* `covers` is kube's escalation check (`validation.Covers`): may an owner of these rules grant those?
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CONNECT_SUBRESOURCES

API_PREFIXES = frozenset({"api", "apis"})
SPECIAL_VERBS = frozenset({"proxy", "watch"})
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "deletecollection", "patch", "update")
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class User:
    """An authenticated identity: kube's `user.Info`."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    """The identity of a ServiceAccount's token, with the groups kube gives it."""
    return User(f"{names.SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{name}", uid,
                (names.SERVICE_ACCOUNTS_GROUP, f"{names.SERVICE_ACCOUNTS_GROUP}:{namespace}",
                 names.SYSTEM_AUTHENTICATED))


def token_hash(token: str) -> str:
    """How a bearer token is stored: `sha256:<hex>` (a token is 256 random bits: no salt needed)."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


# -- what a request asks for -------------------------------------------------------------------------


@dataclass(frozen=True)
class Attributes:
    """kube's `authorizer.Attributes` of one request."""

    user: User
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def request_attributes(user: User, method: str, path: str, query: str = "") -> Attributes:
    """kube-apiserver's RequestInfoFactory.NewRequestInfo, for an authenticated user."""
    parts = [p for p in path.strip("/").split("/") if p]
    non_resource = Attributes(user, method.lower(), False, path=path)
    if len(parts) < 3 or parts[0] not in API_PREFIXES:
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in SPECIAL_VERBS:
        if len(parts) < 2:
            return non_resource
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        q = parse_qs(query) if query else {}
        verb = "watch" if (q.get("watch") or [""])[-1] in ("true", "1") else "list"
        selector = (q.get("fieldSelector") or [""])[-1]
        exact = _exact_name(selector)
        if exact:
            name = exact
    if not name and verb == "delete":
        verb = "deletecollection"
    if subresource in CONNECT_SUBRESOURCES and resource == "pods":  # a WebSocket's GET too: kube asks `create`
        verb = "create"
    return Attributes(user, verb, True, path, group, version, resource, subresource, namespace, name)


def _exact_name(selector: str) -> str:
    """`metadata.name=x` (or `==`) in a field selector: kube authorizes the list as one of that name."""
    for term in selector.split(","):
        key, op, value = term.partition("==") if "==" in term else term.partition("=")
        if op and not key.endswith("!") and key.strip() == "metadata.name" and value.strip() and "/" not in value:
            return value.strip()
    return ""


# -- rules ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One PolicyRule, compiled for matching."""

    verbs: frozenset[str]
    groups: frozenset[str]
    resources: frozenset[str]
    names: frozenset[str]
    urls: tuple[str, ...]

    @classmethod
    def of(cls, rule: Mapping[str, Any]) -> Rule:
        def strs(key: str) -> list[str]:
            value = rule.get(key) or []
            return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

        return cls(frozenset(strs("verbs")), frozenset(strs("apiGroups")), frozenset(strs("resources")),
                   frozenset(strs("resourceNames")), tuple(strs("nonResourceURLs")))

    def allows(self, a: Attributes) -> bool:
        """kube's RuleAllows."""
        if not ("*" in self.verbs or a.verb in self.verbs):
            return False
        if not a.resource_request:
            return any(u in ("*", a.path) or (u.endswith("*") and a.path.startswith(u[:-1])) for u in self.urls)
        if not ("*" in self.groups or a.api_group in self.groups):
            return False
        combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        if not ("*" in self.resources or combined in self.resources
                or (a.subresource and f"*/{a.subresource}" in self.resources)):
            return False
        return not self.names or a.name in self.names


def _rules(obj: Obj) -> tuple[Rule, ...]:
    rules = obj.get("rules") or []
    return tuple(Rule.of(r) for r in rules if isinstance(r, dict)) if isinstance(rules, list) else ()


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A `metav1.LabelSelector` (matchLabels and matchExpressions); an empty one matches everything."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def aggregate(cluster_roles: Iterable[Obj]) -> dict[str, list[Obj]]:
    """The ClusterRole aggregation controller: name → the rules an aggregated ClusterRole has (the union,
    without duplicates, of the rules of the ClusterRoles its selectors match, in name order, through
    aggregated ones too). Only ClusterRoles with an `aggregationRule` are in the answer."""
    roles = {r["metadata"]["name"]: r for r in cluster_roles if isinstance(r.get("metadata"), dict)}
    done: dict[str, list[Obj]] = {}

    def effective(name: str, stack: tuple[str, ...]) -> list[Obj]:
        role = roles[name]
        rule = role.get("aggregationRule")
        if not isinstance(rule, dict):
            return [r for r in role.get("rules") or [] if isinstance(r, dict)]
        if name in done:
            return done[name]
        out: list[Obj] = []
        for selector in rule.get("clusterRoleSelectors") or []:
            if not isinstance(selector, dict):
                continue
            for other in sorted(roles):
                if other == name or other in stack:
                    continue
                if selector_matches(selector, roles[other]["metadata"].get("labels") or {}):
                    for r in effective(other, (*stack, name)):
                        if r not in out:
                            out.append(r)
        done[name] = out
        return out

    return {name: effective(name, ()) for name, role in roles.items() if isinstance(role.get("aggregationRule"), dict)}


# -- the authorizer -----------------------------------------------------------------------------------

SubjectKey = tuple[str, str]  # ("User", name) or ("Group", name); a ServiceAccount is its User name


@dataclass(frozen=True)
class Grant:
    """The rules one binding gives one subject, and how kube describes it in an `allowed by` reason."""

    rules: tuple[Rule, ...]
    source: str
    error: str = ""  # the binding names a role that does not exist


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def _subject_keys(subject: Mapping[str, Any], binding_namespace: str) -> tuple[SubjectKey, str] | None:
    kind, name = subject.get("kind"), subject.get("name")
    if not isinstance(name, str) or not name:
        return None
    if kind == "User":
        return ("User", name), f'User "{name}"'
    if kind == "Group":
        return ("Group", name), f'Group "{name}"'
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        if not ns:
            return None
        return ("User", f"{names.SERVICE_ACCOUNT_USER_PREFIX}{ns}:{name}"), f'ServiceAccount "{name}/{ns}"'
    return None


@dataclass
class Authorizer:
    """RBAC over one snapshot of the four kinds (each a list of objects as stored)."""

    roles: list[Obj] = field(default_factory=list)
    cluster_roles: list[Obj] = field(default_factory=list)
    role_bindings: list[Obj] = field(default_factory=list)
    cluster_role_bindings: list[Obj] = field(default_factory=list)

    def __post_init__(self) -> None:
        aggregated = aggregate(self.cluster_roles)
        self._cluster_rules: dict[str, tuple[Rule, ...]] = {}
        for role in self.cluster_roles:
            name = role["metadata"]["name"]
            self._cluster_rules[name] = (tuple(Rule.of(r) for r in aggregated[name]) if name in aggregated
                                         else _rules(role))
        self._role_rules = {(r["metadata"].get("namespace", ""), r["metadata"]["name"]): _rules(r) for r in self.roles}
        self._cluster: dict[SubjectKey, list[Grant]] = {}
        self._namespaced: dict[tuple[str, SubjectKey], list[Grant]] = {}
        for b in self.cluster_role_bindings:
            ref = b.get("roleRef") or {}
            rules, error = self._ref(ref, "")
            for subject in b.get("subjects") or []:
                found = _subject_keys(subject, "") if isinstance(subject, dict) else None
                if found:
                    source = (f'ClusterRoleBinding "{b["metadata"]["name"]}" of {ref.get("kind")} '
                              f'"{ref.get("name")}" to {found[1]}')
                    self._cluster.setdefault(found[0], []).append(Grant(rules, source, error))
        for b in self.role_bindings:
            ns = b["metadata"].get("namespace", "")
            ref = b.get("roleRef") or {}
            rules, error = self._ref(ref, ns)
            for subject in b.get("subjects") or []:
                found = _subject_keys(subject, ns) if isinstance(subject, dict) else None
                if found:
                    source = (f'RoleBinding "{b["metadata"]["name"]}/{ns}" of {ref.get("kind")} '
                              f'"{ref.get("name")}" to {found[1]}')
                    self._namespaced.setdefault((ns, found[0]), []).append(Grant(rules, source, error))

    def _ref(self, ref: Mapping[str, Any], namespace: str) -> tuple[tuple[Rule, ...], str]:
        name = str(ref.get("name") or "")
        if ref.get("kind") == "ClusterRole":
            if name in self._cluster_rules:
                return self._cluster_rules[name], ""
            return (), f'clusterrole.{names.RBAC_GROUP} "{name}" not found'
        if ref.get("kind") == "Role" and namespace:
            if (namespace, name) in self._role_rules:
                return self._role_rules[(namespace, name)], ""
            return (), f'role.{names.RBAC_GROUP} "{name}" not found'
        return (), f'unknown roleRef kind {ref.get("kind")!r}'

    def _grants(self, user: User, namespace: str) -> Iterable[Grant]:
        keys: list[SubjectKey] = [("User", user.name), *(("Group", g) for g in user.groups)]
        for key in keys:
            yield from self._cluster.get(key, ())
        if namespace:
            for key in keys:
                yield from self._namespaced.get((namespace, key), ())

    def authorize(self, a: Attributes) -> Decision:
        if names.SYSTEM_MASTERS in a.user.groups:
            return Decision(True)
        errors: list[str] = []
        for grant in self._grants(a.user, a.namespace if a.resource_request else ""):
            if grant.error:
                errors.append(grant.error)
            for rule in grant.rules:
                if rule.allows(a):
                    return Decision(True, f"RBAC: allowed by {grant.source}")
        if not errors:
            return Decision(False)
        joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return Decision(False, f"RBAC: {joined}")

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[Obj], str]:
        """SelfSubjectRulesReview's answer: (resourceRules, nonResourceRules, evaluationError)."""
        resource: list[Obj] = []
        non_resource: list[Obj] = []
        errors: list[str] = []
        for grant in self._grants(user, namespace):
            if grant.error:
                errors.append(grant.error)
            for r in grant.rules:
                if r.urls:
                    item: Obj = {"verbs": sorted(r.verbs), "nonResourceURLs": list(r.urls)}
                    if item not in non_resource:
                        non_resource.append(item)
                if r.resources or r.groups:
                    item = {"verbs": sorted(r.verbs), "apiGroups": sorted(r.groups), "resources": sorted(r.resources)}
                    if r.names:
                        item["resourceNames"] = sorted(r.names)
                    if item not in resource:
                        resource.append(item)
        return resource, non_resource, ", ".join(errors)

    def rules_of(self, kind: str, name: str, namespace: str = "") -> tuple[Rule, ...] | None:
        """The effective rules of a Role or ClusterRole (None when it does not exist)."""
        if kind == "ClusterRole":
            return self._cluster_rules.get(name)
        return self._role_rules.get((namespace, name))

    def user_rules(self, user: User, namespace: str) -> tuple[Rule, ...]:
        """Every rule the user holds in `namespace` (cluster-wide ones too): the owner side of `covers`."""
        if names.SYSTEM_MASTERS in user.groups:
            return (Rule(frozenset("*"), frozenset("*"), frozenset("*"), frozenset(), ("*",)),)
        return tuple(r for g in self._grants(user, namespace) for r in g.rules)


# -- escalation (kube's validation.Covers) -------------------------------------------------------------


def _covers_one(owner: Rule, verb: str, group: str, resource: str, name: str, url: str) -> bool:
    if not ("*" in owner.verbs or verb in owner.verbs):
        return False
    if url:
        return any(u in ("*", url) or (u.endswith("*") and url.startswith(u[:-1])) for u in owner.urls)
    if not ("*" in owner.groups or group in owner.groups):
        return False
    sub = resource.split("/", 1)[1] if "/" in resource else ""
    if not ("*" in owner.resources or resource in owner.resources or (sub and f"*/{sub}" in owner.resources)):
        return False
    return not owner.names or (bool(name) and name in owner.names)


def covers(owner: Iterable[Rule], servant: Iterable[Rule]) -> list[Rule]:
    """The servant rules (broken down to one verb, group, resource, name or URL each) that no owner rule
    covers: empty when granting `servant` escalates nothing."""
    owned = list(owner)
    missing: list[Rule] = []
    for rule in servant:
        atoms: list[tuple[str, str, str, str, str]] = []
        for verb in rule.verbs:
            for url in rule.urls:
                atoms.append((verb, "", "", "", url))
            for group in rule.groups:
                for resource in rule.resources:
                    for name in rule.names or {""}:
                        atoms.append((verb, group, resource, name, ""))
        for verb, group, resource, name, url in atoms:
            if not any(_covers_one(o, verb, group, resource, name, url) for o in owned):
                missing.append(Rule(frozenset({verb}), frozenset({group}) if not url else frozenset(),
                                    frozenset({resource}) if resource else frozenset(),
                                    frozenset({name}) if name else frozenset(), (url,) if url else ()))
    return missing


def describe_rule(r: Rule) -> str:
    """A rule as kube prints it in an escalation refusal (`{APIGroups:["x"], Resources:["y"], Verbs:["z"]}`)."""
    def q(values: Iterable[str]) -> str:
        return "[" + " ".join(f'"{v}"' for v in sorted(values)) + "]"

    parts = []
    if r.urls:
        parts.append(f"NonResourceURLs:{q(r.urls)}")
    else:
        parts.append(f"APIGroups:{q(r.groups)}")
        parts.append(f"Resources:{q(r.resources)}")
        if r.names:
            parts.append(f"ResourceNames:{q(r.names)}")
    parts.append(f"Verbs:{q(r.verbs)}")
    return "{" + ", ".join(parts) + "}"


# -- the denial ---------------------------------------------------------------------------------------


def forbidden_message(a: Attributes) -> str:
    """kube-apiserver's `forbiddenMessage`."""
    if not a.resource_request:
        return f'User "{a.user.name}" cannot {a.verb} path "{a.path}"'
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    if a.namespace:
        return (f'User "{a.user.name}" cannot {a.verb} resource "{resource}" in API group "{a.api_group}" '
                f'in the namespace "{a.namespace}"')
    return (f'User "{a.user.name}" cannot {a.verb} resource "{resource}" in API group "{a.api_group}" '
            'at the cluster scope')


def forbidden(a: Attributes, reason: str = "") -> ApiError:
    """The 403 Status kube-apiserver answers a denied request with (`NewForbidden` of the request's
    group-resource and name)."""
    msg = forbidden_message(a)
    if reason:
        msg = f"{msg}: {reason}"
    resource = a.resource if a.resource_request else ""
    qualified = f"{resource}.{a.api_group}" if resource and a.api_group else resource
    if not qualified:
        message = f"forbidden: {msg}"
    elif not a.name:
        message = f"{qualified} is forbidden: {msg}"
    else:
        message = f'{qualified} "{a.name}" is forbidden: {msg}'
    return ApiError(403, "Forbidden", message, a.name, a.api_group, resource)
