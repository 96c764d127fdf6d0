"""The create-only review APIs and mpijob's users API, served beside the generic resource routes.

* `authorization.k8s.io/v1` `SelfSubjectAccessReview` ("may I?", `kubectl auth can-i`) and
  `SelfSubjectRulesReview` ("what may I do in this namespace?", `kubectl auth can-i --list`), and
  `authentication.k8s.io/v1` `SelfSubjectReview` (`kubectl auth whoami`): answered from the caller's
  identity and the same authorizer that judges requests, never stored.
* `mpijob.io/v1alpha1` `users` (cluster-scoped; the admin's, through RBAC like any resource): list, get,
  create (the answer carries the new token in `status.token`, the only time it is ever shown; only its
  hash is kept) and delete (its tokens stop working at the next request).
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from mpijob.api import Obj, names
from mpijob.api.core import errors, rbac
from mpijob.server import auth, authz, protobuf
from mpijob.server.http import json_response, read_object, success_status
from mpijob.server.routes.paths import not_found_path
from mpijob.store.objects import now

router = APIRouter()

# kubectl's typed clients (`auth can-i`, `auth whoami`) POST these as protobuf: their wire format
# (k8s.io/api/authorization/v1 and authentication/v1 generated.proto), for `mpijob.server.protobuf`.
_RESOURCE_ATTRIBUTES = {1: ("namespace", "str"), 2: ("verb", "str"), 3: ("group", "str"), 4: ("version", "str"),
                        5: ("resource", "str"), 6: ("subresource", "str"), 7: ("name", "str")}
_NON_RESOURCE_ATTRIBUTES = {1: ("path", "str"), 2: ("verb", "str")}
protobuf.SCHEMAS.update({
    "SelfSubjectAccessReview": {1: ("metadata", protobuf.OBJECT_META), 2: ("spec", {
        1: ("resourceAttributes", _RESOURCE_ATTRIBUTES), 2: ("nonResourceAttributes", _NON_RESOURCE_ATTRIBUTES)})},
    "SelfSubjectRulesReview": {1: ("metadata", protobuf.OBJECT_META), 2: ("spec", {1: ("namespace", "str")})},
    "SelfSubjectReview": {1: ("metadata", protobuf.OBJECT_META)},
})
# ... and `kubectl create role|clusterrole|rolebinding|clusterrolebinding` the RBAC kinds (rbac/v1 generated.proto)
_POLICY_RULE = {1: ("verbs", "strs"), 2: ("apiGroups", "strs"), 3: ("resources", "strs"), 4: ("resourceNames", "strs"),
                5: ("nonResourceURLs", "strs")}
_SUBJECT = {1: ("kind", "str"), 2: ("apiGroup", "str"), 3: ("name", "str"), 4: ("namespace", "str")}
_ROLE_REF = {1: ("apiGroup", "str"), 2: ("kind", "str"), 3: ("name", "str")}
_LABEL_SELECTOR = {1: ("matchLabels", "map"), 2: ("matchExpressions", [{1: ("key", "str"), 2: ("operator", "str"),
                                                                        3: ("values", "strs")}])}
protobuf.SCHEMAS.update({
    "Role": {1: ("metadata", protobuf.OBJECT_META), 2: ("rules", [_POLICY_RULE])},
    "ClusterRole": {1: ("metadata", protobuf.OBJECT_META), 2: ("rules", [_POLICY_RULE]),
                    3: ("aggregationRule", {1: ("clusterRoleSelectors", [_LABEL_SELECTOR])})},
    "RoleBinding": {1: ("metadata", protobuf.OBJECT_META), 2: ("subjects", [_SUBJECT]), 3: ("roleRef", _ROLE_REF)},
    "ClusterRoleBinding": {1: ("metadata", protobuf.OBJECT_META), 2: ("subjects", [_SUBJECT]),
                           3: ("roleRef", _ROLE_REF)},
})
AUTHZ = f"/apis/{names.AUTHORIZATION_GROUP}/{names.AUTHORIZATION_VERSION}"
AUTHN = f"/apis/{names.AUTHENTICATION_GROUP}/{names.AUTHORIZATION_VERSION}"
USERS = f"/apis/{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}/users"
USERS_API_VERSION = f"{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}"
USERS_RESOURCE = f"users.{names.MPIJOB_GROUP}"


def _review(obj: Obj, api_version: str, kind: str) -> Obj:
    if obj.get("kind") not in (None, kind) or obj.get("apiVersion") not in (None, api_version):
        raise errors.bad_request(f"the body must be a {kind} of {api_version}")
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise errors.invalid(kind, "", [errors.Cause("spec", "Invalid value: must be an object")],
                             names.AUTHORIZATION_GROUP)
    meta = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    return {"kind": kind, "apiVersion": api_version, "metadata": {**meta, "creationTimestamp": None},
            "spec": spec or {}}


def _authorizer(request: Request) -> rbac.Authorizer:
    return authz.index(request.app.state.cluster.store).authorizer()


@router.post(f"{AUTHZ}/selfsubjectaccessreviews")
async def access_review(request: Request) -> Response:
    review = _review(await read_object(request), f"{names.AUTHORIZATION_GROUP}/{names.AUTHORIZATION_VERSION}",
                     "SelfSubjectAccessReview")
    spec, user = review["spec"], authz.user_of(request.scope)
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if isinstance(res, dict) == isinstance(non, dict):
        raise errors.invalid("SelfSubjectAccessReview", "", [errors.Cause(
            "spec.resourceAttributes", "Invalid value: exactly one of nonResourceAttributes or resourceAttributes "
            "must be specified")], names.AUTHORIZATION_GROUP)
    if isinstance(res, dict):
        attrs = rbac.Attributes(user, str(res.get("verb") or ""), True, api_group=str(res.get("group") or ""),
                                api_version=str(res.get("version") or ""), resource=str(res.get("resource") or ""),
                                subresource=str(res.get("subresource") or ""),
                                namespace=str(res.get("namespace") or ""), name=str(res.get("name") or ""))
    else:
        assert isinstance(non, dict)
        attrs = rbac.Attributes(user, str(non.get("verb") or ""), False, path=str(non.get("path") or ""))
    decision = _authorizer(request).authorize(attrs) if authz.enabled() else rbac.Decision(True)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return json_response({**review, "status": status}, 201)


@router.post(f"{AUTHZ}/selfsubjectrulesreviews")
async def rules_review(request: Request) -> Response:
    review = _review(await read_object(request), f"{names.AUTHORIZATION_GROUP}/{names.AUTHORIZATION_VERSION}",
                     "SelfSubjectRulesReview")
    namespace = str(review["spec"].get("namespace") or "")
    resource, non_resource, error = _authorizer(request).rules_for(authz.user_of(request.scope), namespace)
    status: Obj = {"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": bool(error)}
    if error:
        status["evaluationError"] = error
    return json_response({**review, "status": status}, 201)


@router.post(f"{AUTHN}/selfsubjectreviews")
async def whoami(request: Request) -> Response:
    review = _review(await read_object(request), f"{names.AUTHENTICATION_GROUP}/{names.AUTHORIZATION_VERSION}",
                     "SelfSubjectReview")
    user = authz.user_of(request.scope)
    info: Obj = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    review.pop("spec", None)
    return json_response({**review, "status": {"userInfo": info}}, 201)


# -- users -----------------------------------------------------------------------------------------------


def _tokens(request: Request) -> auth.TokenFile:
    return auth.token_file(request.app.state.cluster.home.tokens)


def user_object(user: rbac.User, token: str = "") -> Obj:
    obj: Obj = {"apiVersion": USERS_API_VERSION, "kind": "User",
                "metadata": {"name": user.name, "uid": user.uid},
                "spec": {"groups": [g for g in user.groups if g != names.SYSTEM_AUTHENTICATED]}}
    if token:
        obj["status"] = {"token": token}
    return obj


def _find(request: Request, name: str) -> rbac.User:
    user = _tokens(request).user(name)
    if user is None:
        raise errors.not_found("users", name, names.MPIJOB_GROUP)
    return user


@router.get(USERS)
async def list_users(request: Request) -> Response:
    seen: dict[str, rbac.User] = {}
    for user in _tokens(request).users():
        seen.setdefault(user.name, user)
    items = [user_object(u) for u in sorted(seen.values(), key=lambda u: u.name)]
    return json_response({"apiVersion": USERS_API_VERSION, "kind": "UserList",
                          "metadata": {"resourceVersion": ""}, "items": items})


@router.get(f"{USERS}/{{name}}")
async def get_user(request: Request, name: str) -> Response:
    return json_response(user_object(_find(request, name)))


def _check_user(obj: Any) -> rbac.User:
    if not isinstance(obj, dict) or obj.get("kind") not in (None, "User") or obj.get("apiVersion") not in (
            None, USERS_API_VERSION):
        raise errors.bad_request(f"the body must be a User of {USERS_API_VERSION}")
    meta = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name")
    causes = []
    if not isinstance(name, str) or not names.DNS1123_SUBDOMAIN.match(name) or len(name) > 253:
        causes.append(errors.Cause("metadata.name", f"Invalid value: {name!r}: a user name is lower-case letters, "
                                                    "digits, '-' and '.', starting and ending with a letter or digit"))
    elif name == auth.ADMIN_USER:
        causes.append(errors.Cause("metadata.name", f'Invalid value: "{name}": reserved for the cluster itself'))
    spec = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    groups = spec.get("groups") or []
    if not isinstance(groups, list) or not all(isinstance(g, str) and g and "," not in g for g in groups):
        causes.append(errors.Cause("spec.groups", "Invalid value: a list of group names (no commas)"))
        groups = []
    if causes:
        raise errors.invalid("User", str(name or ""), causes, names.MPIJOB_GROUP)
    unique = tuple(dict.fromkeys(g for g in groups if g != names.SYSTEM_AUTHENTICATED))
    return rbac.User(str(name), str(uuid.uuid4()), (*unique, names.SYSTEM_AUTHENTICATED))


@router.post(USERS)
async def create_user(request: Request) -> Response:
    user = _check_user(await read_object(request))
    tokens = _tokens(request)
    if any(u.name == user.name for u in tokens.users()):
        raise errors.already_exists("users", user.name, names.MPIJOB_GROUP)
    if request.query_params.get("dryRun"):
        return json_response(user_object(user), 201)
    token = tokens.add(user)
    obj = user_object(user, token)
    obj["metadata"]["creationTimestamp"] = now()
    return json_response(obj, 201)


@router.delete(f"{USERS}/{{name}}")
async def delete_user(request: Request, name: str) -> Response:
    user = _find(request, name)
    if name == auth.ADMIN_USER:
        raise errors.forbidden(f'{USERS_RESOURCE} "{name}" is forbidden: the cluster admin cannot be removed '
                               f"(its kubeconfig is the way in)")
    _tokens(request).remove(name)
    return json_response(success_status(name, names.MPIJOB_GROUP, "users", user.uid))


@router.api_route(USERS, methods=["PUT", "PATCH", "DELETE"])
@router.api_route(f"{USERS}/{{name}}", methods=["PUT", "PATCH", "POST"])
async def users_other(request: Request) -> Response:
    raise errors.method_not_allowed(f"the server does not allow {request.method} on {USERS_RESOURCE}: users are "
                                    "created and removed (`mpijob user add|remove`)")


@router.api_route(f"{USERS}/{{name}}/{{rest:path}}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
async def users_unknown(request: Request) -> Response:
    raise not_found_path(request.url.path)
