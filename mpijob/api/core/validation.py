"""Admission: every create/update/patch passes `admit` before it is stored.

Returns the defaulted object or raises a 422 `ApiError` with one field-level cause per problem, each
naming the field, the value and the fix — what kube-apiserver plus Trainer's webhooks would answer.
Cheap enough for every write: the schema is built once, and a write that leaves spec and metadata
untouched (a controller's status update) skips the structural pass.

It is the one place where an object's apiVersion, kind and metadata (name, namespace, labels) are
judged; the server's `admission` adds only what belongs to the request (the URL's name and namespace,
generateName, references to other objects).
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from typing import Any

from mpijob.api import kueue, names
from mpijob.api.core import netpol, volumes
from mpijob.api.core.errors import ApiError, Cause, bad_request, invalid
from mpijob.api.core.labels import is_label_value, is_qualified_name
from mpijob.api.core.resources import Resource
from mpijob.api.core.structural import prune_nulls, show
from mpijob.api.mpioperator import admission as mpijob_admission
from mpijob.api.openshift import scc_crd
from mpijob.api.trainer import bounds, patches, runtimes, schema, support, trainjob

_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
# the kinds whose annotations may bound a run's phases: a job, and the runtimes it falls back to
BOUNDED_KINDS = frozenset({"TrainJob", "ClusterTrainingRuntime", "TrainingRuntime", names.MPIJOB_KIND})


def warm() -> None:
    """Build the schemas now (≈1 s) so the first write does not pay for it; call at server start."""
    for kind in schema.kinds():
        schema._validator(kind)


def check_type(res: Resource, obj: dict) -> None:
    """The body's apiVersion and kind, when given, must be the resource's (400, as kube-apiserver's decoder
    answers); they are set when not given."""
    if not isinstance(obj, dict):
        raise bad_request(f"the body must be a JSON object (a {res.kind}), got {show(obj)}")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != res.api_version:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({res.api_version}): send it to /{'apis/' + res.group if res.group else 'api'}"
            f"/{str(api_version).rpartition('/')[2]} or change apiVersion"
        )
    if kind and kind != res.kind:
        raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({res.kind})")
    obj["apiVersion"], obj["kind"] = res.api_version, res.kind


def admit(res: Resource, obj: dict, old: dict | None = None) -> dict:
    """The defaulted copy of `obj` if it may be stored as a `res`, else raise ApiError (400 for a body of
    another type, 422 Invalid with causes)."""
    if not isinstance(obj, dict):
        raise bad_request(f"the body must be a JSON object (a {res.kind}), got {show(obj)}")
    # `null` is "unset": dropped where the schema does not say nullable, as kube-apiserver drops it
    obj = prune_nulls(obj, scc_crd.schema() if res.group == names.SECURITY_GROUP else None)
    check_type(res, obj)
    meta = obj.get("metadata")
    if res.kind == "Namespace" and not res.group:
        name_label(meta)
    name = meta.get("name", "") if isinstance(meta, dict) else ""
    causes = _metadata_causes(res, meta)
    if res.group == names.KUEUE_GROUP and res.kind in kueue.KINDS:
        if not causes:
            causes += kueue.causes(res.kind, obj, old)  # defaults `obj`: support rules read the stored form
        if not causes and support.desired_changed(obj, old):
            causes += support.check(res.kind, obj).causes
    elif res.group == names.SECURITY_GROUP:
        if not causes:
            causes += scc_crd.causes(obj)
    elif res.group == names.MPI_OPERATOR_GROUP and res.kind == names.MPIJOB_KIND:
        if not causes:
            causes += mpijob_admission.causes(obj, old)  # defaults `obj`, then schema, support rules, conversion
    elif res.kind in schema.kinds():
        unchanged = old is not None and obj.get("spec") == old.get("spec") and meta == old.get("metadata")
        if not unchanged:
            said = {c.field for c in causes}  # metadata problems are already reported, in their own words
            causes += [c for c in schema.structural_causes(res.kind, obj) if c.field not in said]
        if not causes:
            causes += _custom_causes(res, obj, old)
    elif not causes:
        causes += _core_causes(res, obj, old)
    if causes:
        raise invalid(res.kind, str(name), causes, res.group)
    return obj


def name_label(meta: Any) -> None:
    """kube's namespace strategy: every Namespace is labelled `kubernetes.io/metadata.name: <its name>`,
    whatever the client sent (selectors of NetworkPolicies and Kueue's ClusterQueues pick namespaces by it)."""
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return  # judged by _metadata_causes
    labels = meta.get("labels")
    if labels is None or isinstance(labels, dict):
        meta["labels"] = {**(labels or {}), names.LABEL_NAMESPACE_NAME: meta["name"]}


def _custom_causes(res: Resource, obj: dict, old: dict | None) -> list[Cause]:
    unsupported = support.check(res.kind, obj).causes if support.desired_changed(obj, old) else []
    if res.kind == "TrainJob":
        trainjob.default(obj)
        patches.stamp(obj, old)
        return unsupported + trainjob.causes(obj, trainjob.default(copy.deepcopy(old)) if old is not None else None)
    runtimes.default(obj)
    return unsupported + runtimes.causes(obj)


def _metadata_causes(res: Resource, meta: Any) -> list[Cause]:
    if not isinstance(meta, dict):
        return [Cause("metadata", f"Required value: {res.kind} needs metadata with a name", "FieldValueRequired")]
    out: list[Cause] = []
    name = meta.get("name")
    if not name:
        out.append(Cause("metadata.name", "Required value: name or generateName is required (lower-case "
                                          "letters, digits and '-')", "FieldValueRequired"))
    elif not isinstance(name, str):
        out.append(Cause("metadata.name", f"Invalid value: {show(name)}: must be a string"))
    elif res.kind == "TrainJob":
        out += trainjob.name_causes(name)
    elif res.group == names.RBAC_GROUP:  # kube's ValidateRBACName: any path segment (`system:openshift:scc:x`)
        if name in (".", "..") or "/" in name or "%" in name:
            out.append(Cause("metadata.name", f'Invalid value: "{name}": may not be "." or ".." and may not contain '
                                              "'/' or '%'; use letters, digits, '-', '.' and ':'"))
    else:
        label = res.kind == "Namespace"
        limit = 63 if label else 253
        pattern = names.DNS1123_LABEL if label else names.DNS1123_SUBDOMAIN
        if len(name) > limit:
            out.append(Cause("metadata.name", f'Invalid value: "{name}": must be no more than {limit} characters '
                                              f"(it has {len(name)}); use a shorter name"))
        elif not pattern.match(name):
            what = "label" if label else "subdomain"
            out.append(Cause("metadata.name", f'Invalid value: "{name}": must be a DNS-1123 {what} (a lowercase '
                                              f"RFC 1123 {what}): lower-case letters, digits, '-'"
                                              + ("" if label else " and '.'") +
                                              ", starting and ending with a letter or digit (e.g. 'my-name')"))
    ns = meta.get("namespace")
    if res.namespaced and ns and (not isinstance(ns, str) or not names.DNS1123_LABEL.match(ns) or len(ns) > 63):
        out.append(Cause("metadata.namespace", f"Invalid value: {show(ns)}: must be a DNS-1123 label (e.g. 'default')"))
    out += _map_causes(meta.get("labels"), "metadata.labels", labels=True)
    out += _map_causes(meta.get("annotations"), "metadata.annotations", labels=False)
    if res.kind in BOUNDED_KINDS:  # a run's deadlines and stall watch (api/trainer/bounds.py)
        out += bounds.causes(meta.get("annotations"))
    return out


def _map_causes(value: Any, where: str, labels: bool) -> list[Cause]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [Cause(where, f"Invalid value: {show(value)}: must be a map of string keys to string values")]
    out = []
    for key, val in value.items():
        if not isinstance(val, str):
            out.append(Cause(f"{where}.{key}", f'Invalid value: {show(val)}: must be a string; quote it ("{val}")'))
            continue
        if not labels:
            continue
        if not is_qualified_name(key):
            out.append(Cause(f"{where}.{key}", f'Invalid value: "{key}": a label key is an optional DNS '
                                               "prefix and '/' followed by at most 63 letters, digits, '-', '_' "
                                               "or '.', starting and ending with a letter or digit"))
        if not is_label_value(val):
            out.append(Cause(f"{where}.{key}", f'Invalid value: "{val}": a label value is at most 63 letters, '
                                               "digits, '-', '_' or '.', starting and ending with a letter or "
                                               "digit (or empty)"))
    return out


def _core_causes(res: Resource, obj: dict, old: dict | None) -> list[Cause]:
    if res.kind == "Secret":
        return _secret_causes(obj, old)
    if res.kind == "ConfigMap":
        return _configmap_causes(obj, old)
    if res.kind == "Pod":
        return _pod_causes(obj)
    if res.kind == "NetworkPolicy":
        return netpol.causes(obj)
    if res.kind == names.PVC_KIND:
        causes = volumes.claim_causes(obj, old)  # defaults `obj`: the rules read the stored form
        return causes + (support.check(res.kind, obj).causes if support.desired_changed(obj, old) else [])
    if (res.kind in ("RoleBinding", "ClusterRoleBinding") and old is not None
            and obj.get("roleRef") != old.get("roleRef")):
        return [Cause("roleRef", f"Invalid value: {show(obj.get('roleRef'))}: cannot change roleRef; delete the "
                                 "binding and create a new one")]  # kube's rule: a binding names one role for life
    return []


def _data_causes(data: Any, where: str, b64: bool) -> list[Cause]:
    if data is None:
        return []
    if not isinstance(data, dict):
        return [Cause(where, f"Invalid value: {show(data)}: must be a map of keys to string values")]
    out = []
    for key, val in data.items():
        if not _CONFIG_KEY.match(key) or len(key) > 253:
            out.append(Cause(f"{where}[{key}]", f'Invalid value: "{key}": a key is letters, digits, "-", "_" or '
                                                '"." (like a file name)'))
        if not isinstance(val, str):
            out.append(Cause(f"{where}[{key}]", f"Invalid value: {show(val)}: must be a string"))
        elif b64:
            try:
                base64.b64decode(val, validate=True)
            except (binascii.Error, ValueError):
                out.append(Cause(f"{where}[{key}]", "Invalid value: must be base64-encoded; encode it (or put "
                                                    "plain text under stringData)"))
    return out


def _immutable_causes(obj: dict, old: dict | None, fields: tuple[str, ...]) -> list[Cause]:
    if old is None or not old.get("immutable"):
        return []
    out = []
    if not obj.get("immutable"):
        out.append(Cause("immutable", "Invalid value: field is immutable when `immutable` is set; delete and "
                                      "re-create the object"))
    for f in fields:
        if obj.get(f) != old.get(f):
            out.append(Cause(f, "Forbidden: field is immutable when `immutable` is set; delete and re-create the "
                                "object", "FieldValueForbidden"))
    return out


def _secret_causes(obj: dict, old: dict | None) -> list[Cause]:
    out = _data_causes(obj.get("data"), "data", b64=True) + _data_causes(obj.get("stringData"), "stringData", False)
    if out:
        return out
    # kube-apiserver folds stringData into data on write
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {})
        for key, val in string_data.items():
            data[key] = base64.b64encode(val.encode()).decode()
    obj.setdefault("type", "Opaque")
    if old is not None and obj.get("type") != old.get("type", "Opaque"):
        out.append(Cause("type", f"Invalid value: {show(obj.get('type'))}: field is immutable"))
    return out + _immutable_causes(obj, old, ("data",))


def _configmap_causes(obj: dict, old: dict | None) -> list[Cause]:
    out = _data_causes(obj.get("data"), "data", b64=False) + _data_causes(obj.get("binaryData"), "binaryData", True)
    return out + _immutable_causes(obj, old, ("data", "binaryData"))


def _pod_causes(obj: dict) -> list[Cause]:
    containers = (obj.get("spec") or {}).get("containers")
    if not isinstance(containers, list) or not containers:
        return [Cause("spec.containers", "Required value: a pod needs at least one container", "FieldValueRequired")]
    out = []
    seen: set[str] = set()
    for i, c in enumerate(containers):
        name = c.get("name") if isinstance(c, dict) else None
        if not isinstance(name, str) or not names.DNS1123_LABEL.match(name):
            out.append(Cause(f"spec.containers[{i}].name", f"Invalid value: {show(name)}: must be a DNS-1123 label"))
        elif name in seen:
            out.append(Cause(f"spec.containers[{i}].name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
        seen.add(name if isinstance(name, str) else "")
    return out


__all__ = ["ApiError", "admit", "warm"]
