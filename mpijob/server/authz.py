"""Authorization of every request, as kube-apiserver's RBAC authorizer does it (`mpijob.api.core.rbac`).

`Authorize` runs after authentication on every request but the health probes: it reads the request's
attributes from its method, path and query (kube's RequestInfo: resource requests, subresources such
as `pods/log`, `trainjobs/status`, Kueue's `pendingworkloads`, and non-resource paths such as `/version`,
`/openapi/v2`, `/metrics`), asks the authorizer and answers a denial with kube-apiserver's 403 Status.
A progress report (`mpijob.server.routes.progress`) is asked as `update` on `trainjobs/status`, or,
made with a job's status token, allowed when the token's pod is one of that job's.

The authorizer is an index of the RBAC objects (`mpijob.store.authorizer`, which the controllers share),
built from the store when first needed and again only after a write to Roles, ClusterRoles, their
bindings or a namespace deletion (which takes a namespace's RoleBindings with it): such a request marks
the index stale before it runs and again before its answer is sent, so the next request is judged by
the new rules. Writes to ClusterRoles also re-run the aggregation controller, so an aggregated
ClusterRole shows the rules it has.

`MPIJOB_AUTHORIZATION_MODE=AlwaysAllow` turns authorization off (kube's `--authorization-mode`), for
comparisons such as `bench/rbac.py`.
"""

from __future__ import annotations

import logging
from typing import Any

from mpijob.api import Obj
from mpijob.api.core import rbac
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CLUSTER_ROLES
from mpijob.api.names import RBAC_GROUP, SYSTEM_MASTERS
from mpijob.server.auth import OPEN_PATHS
from mpijob.server.http import SERVED, status_response
from mpijob.server.routes import dashboard, progress
from mpijob.store.authorizer import enabled, index
from mpijob.store.objects import Store

log = logging.getLogger(__name__)

RBAC_RESOURCES = frozenset({"roles", "clusterroles", "rolebindings", "clusterrolebindings"})
READ_ONLY = frozenset({"get", "list", "watch"})


def changes_rbac(a: rbac.Attributes) -> bool:
    """Whether a request may change what the authorizer knows."""
    if not a.resource_request or a.verb in READ_ONLY:
        return False
    if a.api_group == RBAC_GROUP and a.resource in RBAC_RESOURCES:
        return True
    return a.api_group == "" and a.resource == "namespaces" and a.verb in ("delete", "deletecollection")


def reconcile_aggregation(store: Store) -> None:
    """The ClusterRole aggregation controller: write each aggregated ClusterRole's rules when they changed."""
    roles = store.list(CLUSTER_ROLES, None)[0]
    for name, rules in rbac.aggregate(roles).items():
        role = next(r for r in roles if r["metadata"]["name"] == name)
        if (role.get("rules") or []) != rules:
            store.update(CLUSTER_ROLES, {**role, "rules": rules})


def user_of(scope: Any) -> rbac.User:
    user = scope.get("user")
    if isinstance(user, rbac.User):
        return user
    return rbac.User(str(getattr(user, "name", "") or ""), str(getattr(user, "uid", "") or ""),
                     tuple(getattr(user, "groups", ()) or ()))


class Authorize:
    """ASGI middleware, inside authentication: RBAC on every request (see the module doc)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.enabled = enabled()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in SERVED or scope["path"] in OPEN_PATHS or "user" not in scope or dashboard.is_dashboard(
                scope["path"]):  # the dashboard's own API authorizes each answer
            await self.app(scope, receive, send)
            return
        attrs = rbac.request_attributes(user_of(scope), scope["method"], scope["path"],
                                        scope.get("query_string", b"").decode("latin-1"))
        report = progress.target(scope["method"], scope["path"])
        if report is not None:
            attrs = progress.update_attributes(attrs)
        scope["authz.attributes"] = attrs
        cluster = getattr(scope["app"].state, "cluster", None)
        if cluster is None:
            await self.app(scope, receive, send)
            return
        idx = index(cluster.store)
        if self.enabled:
            if report is not None and progress.STATUS_POD in scope:  # a job's status token: its pod decides
                decision = progress.authorize(cluster.store, *report, scope[progress.STATUS_POD])
            else:
                decision = idx.authorizer().authorize(attrs)
            if not decision.allowed:
                await status_response(rbac.forbidden(attrs, decision.reason))(scope, receive, send)
                return
        if not changes_rbac(attrs):
            await self.app(scope, receive, send)
            return
        idx.invalidate()
        clusterroles = attrs.resource == "clusterroles"

        async def send_after_change(message: Obj) -> None:
            if message["type"] == "http.response.start":
                if clusterroles and message.get("status", 500) < 300:
                    reconcile_aggregation(cluster.store)
                idx.invalidate()
            await send(message)

        await self.app(scope, receive, send_after_change)


# -- escalation (kube's RBAC storage strategy: ConfirmNoEscalation) -----------------------------------


def check_escalation(store: Store, scope: Any, res: Any, obj: Obj) -> None:
    """Refuse a Role/ClusterRole or a binding that would grant rules its writer does not hold.

    RBAC alone would let anyone allowed to write RoleBindings in a namespace (a project admin) bind
    `cluster-admin` there, or write a Role with every verb: kube refuses both unless the writer
    already holds every rule granted, or may `escalate` (roles) or `bind` (the referenced role)."""
    if res.group != RBAC_GROUP or not enabled() or "user" not in scope:
        return
    user = user_of(scope)
    authorizer = index(store).authorizer()
    if SYSTEM_MASTERS in user.groups:
        return
    meta = obj.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")

    def may(verb: str, resource: str, target: str) -> bool:
        attrs = rbac.Attributes(user, verb, True, api_group=RBAC_GROUP, resource=resource, namespace=namespace,
                                name=target)
        return authorizer.authorize(attrs).allowed

    if res.plural in ("roles", "clusterroles"):
        if may("escalate", res.plural, name):
            return
        wanted = [rbac.Rule.of(r) for r in obj.get("rules") or [] if isinstance(r, dict)]
        if obj.get("aggregationRule") is not None:  # it takes the rules of roles yet to be written
            wanted.append(rbac.Rule(frozenset("*"), frozenset("*"), frozenset("*"), frozenset(), ("*",)))
    else:
        ref = obj.get("roleRef") or {}
        kind, target = str(ref.get("kind") or ""), str(ref.get("name") or "")
        if may("bind", "clusterroles" if kind == "ClusterRole" else "roles", target):
            return
        wanted = list(authorizer.rules_of(kind, target, namespace) or ())
    missing = rbac.covers(authorizer.user_rules(user, namespace), wanted)
    if missing:
        groups = " ".join(f'"{g}"' for g in user.groups)
        rules = "\n".join(rbac.describe_rule(r) for r in missing)
        raise ApiError(403, "Forbidden", f'{res.plural}.{RBAC_GROUP} "{name}" is forbidden: user "{user.name}" '
                       f"(groups=[{groups}]) is attempting to grant RBAC permissions not currently held:\n{rules}",
                       name, RBAC_GROUP, res.plural)
