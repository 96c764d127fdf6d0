"""Generate mpijob/server/openapi/kueue_schemas.json from the upstream Kueue CRDs, so the server can
serve Kueue's real schemas (with upstream's descriptions) without the CRD YAML at run time.

    .venv/bin/python tools/gen_openapi_data.py           # rewrite the file
    .venv/bin/python tools/gen_openapi_data.py --check   # exit 1 if it is not current

Input: `../shared/upstream/kueue/*.yaml` (CRDs copied unchanged from kubernetes-sigs/kueue; the
upstream folder is `$MPIJOB_UPSTREAM` when set, as for the tests). Output:
`spec.versions[].schema.openAPIV3Schema` of every Kueue kind and version the server serves
(`mpijob.api.core.resources.ALL`), unchanged except that subtrees repeated across kinds and versions (a
Workload's pod template, v1beta1 beside v1beta2) are stored once in `shared` and referenced as
`{"$shared": index}`; `mpijob.server.openapi.definitions` expands them. Deterministic, one schema or
shared entry per line, so a regeneration diffs readably.

Also `mpijob/server/openapi/builtin_schemas.json`: the built-in kinds outside the core group
(`rbac.authorization.k8s.io/v1` Roles and bindings, `networking.k8s.io/v1` NetworkPolicy), which the
Kubernetes models of `kubeflow_trainer_api` lack, from the `kubernetes` package's generated models
(`openapi_types`, `attribute_map`, each property's description, required where its setter refuses
None), named as kube-apiserver names them (`io.k8s.api.rbac.v1.Role`,
`io.k8s.api.networking.v1.NetworkPolicy`); the types' own descriptions, which those models do not
carry, are upstream's (`k8s.io/api/<group>/v1/types.go`, in `BUILTIN_GROUPS`).

And `mpijob/api/mpioperator/mpijob_schema.json`: MPI Operator's MPIJob (`kubeflow.org/v2beta1`) from its
CRD (`../shared/upstream/mpi-operator/kubeflow.org_mpijobs.yaml`), in the Kueue file's form; it lives in
the api layer because admission checks MPIJobs against it, and the server serves it from there.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling tools module, however this is loaded
from committed import write_or_check

UPSTREAM = Path(os.environ.get("MPIJOB_UPSTREAM") or REPO.parent / "shared" / "upstream") / "kueue"
OUTPUT = REPO / "mpijob" / "server" / "openapi" / "kueue_schemas.json"
BUILTIN_OUTPUT = REPO / "mpijob" / "server" / "openapi" / "builtin_schemas.json"
MPI_OPERATOR_UPSTREAM = UPSTREAM.parent / "mpi-operator"
MPI_OPERATOR_OUTPUT = REPO / "mpijob" / "api" / "mpioperator" / "mpijob_schema.json"
COMMAND = ".venv/bin/python tools/gen_openapi_data.py"
MIN_SHARED = 300  # characters: smaller repeated subtrees are cheaper inline than as a reference


def _key(node: Any) -> str:
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


def served_schemas(upstream: Path = UPSTREAM, group: str = "") -> dict[str, Any]:
    """`{"<version>/<Kind>": openAPIV3Schema}` for every served kind and version of `group` (Kueue's by
    default) whose CRD is in `upstream`, in served order."""
    from mpijob.api.core.resources import ALL
    from mpijob.api.names import KUEUE_GROUP

    group = group or KUEUE_GROUP
    crds: dict[str, dict[str, Any]] = {}
    for path in sorted(upstream.glob("*.yaml")):
        crd = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 — a SafeLoader
        if crd.get("kind") == "CustomResourceDefinition" and crd["spec"]["group"] == group:
            crds[crd["spec"]["names"]["kind"]] = crd
    out: dict[str, Any] = {}
    for r in ALL:
        if r.group != group:
            continue
        crd = crds.get(r.kind)
        versions = {v["name"]: v for v in (crd or {}).get("spec", {}).get("versions", [])}
        if r.version not in versions:
            raise SystemExit(f"{upstream}: no CRD for {r.kind} {r.group}/{r.version}")
        out[f"{r.version}/{r.kind}"] = versions[r.version]["schema"]["openAPIV3Schema"]
    return out


def factor(schemas: dict[str, Any]) -> dict[str, Any]:
    """Store each subtree that occurs more than once (and is not tiny) once, in `shared`."""
    counts: Counter[str] = Counter()

    def count(node: Any) -> None:
        if isinstance(node, dict):
            key = _key(node)
            if len(key) >= MIN_SHARED:
                counts[key] += 1
            for v in node.values():
                count(v)
        elif isinstance(node, list):
            for v in node:
                count(v)

    for schema in schemas.values():
        count(schema)
    index: dict[str, int] = {}
    shared: list[Any] = []

    def rewrite(node: Any) -> Any:
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        if not isinstance(node, dict):
            return node
        key = _key(node) if len(node) else ""
        if counts.get(key, 0) > 1:
            if key not in index:
                index[key] = len(shared)
                shared.append(None)  # reserve the slot: nested shared subtrees get later indexes
                shared[index[key]] = {k: rewrite(v) for k, v in node.items()}
            return {"$shared": index[key]}
        return {k: rewrite(v) for k, v in node.items()}

    return _inline_single_uses({name: rewrite(s) for name, s in schemas.items()}, shared)


def _inline_single_uses(schemas: dict[str, Any], shared: list[Any]) -> dict[str, Any]:
    """Put back inline the entries referenced once (a subtree repeated only inside a shared parent)."""
    uses: Counter[int] = Counter()

    def scan(node: Any) -> None:
        if isinstance(node, dict):
            if "$shared" in node:
                uses[node["$shared"]] += 1
            for v in node.values():
                scan(v)
        elif isinstance(node, list):
            for v in node:
                scan(v)

    scan(schemas)
    scan(shared)
    keep = [i for i in range(len(shared)) if uses[i] > 1]
    renumber = {old: new for new, old in enumerate(keep)}

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$shared" in node:
            i = node["$shared"]
            return {"$shared": renumber[i]} if i in renumber else fix(shared[i])
        return {k: fix(v) for k, v in node.items()}

    return {"schemas": fix(schemas), "shared": [fix(shared[i]) for i in keep]}


def render(upstream: Path = UPSTREAM, group: str = "", source: str = "kubernetes-sigs/kueue CRDs") -> str:
    data = factor(served_schemas(upstream, group))

    def line(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    schemas = ",\n".join(f"{line(k)}:{line(v)}" for k, v in data["schemas"].items())
    shared = ",\n".join(line(v) for v in data["shared"])
    where = f"../shared/upstream/{upstream.name}"
    return (f'{{"source":{line(f"{source} ({where}), by " + COMMAND)},\n'
            f'"schemas":{{\n{schemas}}},\n"shared":[\n{shared}]}}\n')


# -- Built-in kinds outside the core group (RBAC, NetworkPolicy), from the kubernetes package's models ---

META_PACKAGE = "io.k8s.apimachinery.pkg.apis.meta.v1"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


class BuiltinGroup(NamedTuple):
    """One API group kube-apiserver compiles in: its kinds, and the description of every type of its own
    beneath them (from upstream's `types.go`: the Python models leave out the type comments)."""

    package: str  # the OpenAPI package kube-apiserver names its types under
    kinds: tuple[str, ...]
    descriptions: dict[str, str]


# k8s.io/api/rbac/v1/types.go
RBAC = BuiltinGroup("io.k8s.api.rbac.v1", ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"), {
    "Role": "Role is a namespaced, logical grouping of PolicyRules that can be referenced as a unit by a "
            "RoleBinding.",
    "ClusterRole": "ClusterRole is a cluster level, logical grouping of PolicyRules that can be referenced as a "
                   "unit by a RoleBinding or ClusterRoleBinding.",
    "RoleBinding": "RoleBinding references a role, but does not contain it.  It can reference a Role in the same "
                   "namespace or a ClusterRole in the global namespace. It adds who information via Subjects and "
                   "namespace information by which namespace it exists in.  RoleBindings in a given namespace only "
                   "have effect in that namespace.",
    "ClusterRoleBinding": "ClusterRoleBinding references a ClusterRole, but not contain it.  It can reference a "
                          "ClusterRole in the global namespace, and adds who information via Subject.",
    "PolicyRule": "PolicyRule holds information that describes a policy rule, but does not contain information "
                  "about who the rule applies to or which namespace the rule applies to.",
    "AggregationRule": "AggregationRule describes how to locate ClusterRoles to aggregate into the ClusterRole",
    "RoleRef": "RoleRef contains information that points to the role being used",
    "Subject": "Subject contains a reference to the object or user identities a role binding applies to.  This "
               "can either hold a direct API object reference, or a value for non-objects such as user and group "
               "names.",
})
# k8s.io/api/networking/v1/types.go
NETWORKING = BuiltinGroup("io.k8s.api.networking.v1", ("NetworkPolicy",), {
    "NetworkPolicy": "NetworkPolicy describes what network traffic is allowed for a set of Pods",
    "NetworkPolicySpec": "NetworkPolicySpec provides the specification of a NetworkPolicy",
    "NetworkPolicyIngressRule": "NetworkPolicyIngressRule describes a particular set of traffic that is allowed to "
                                "the pods matched by a NetworkPolicySpec's podSelector. The traffic must match both "
                                "ports and from.",
    "NetworkPolicyEgressRule": "NetworkPolicyEgressRule describes a particular set of traffic that is allowed out of "
                               "pods matched by a NetworkPolicySpec's podSelector. The traffic must match both ports "
                               "and to. This type is beta-level in 1.8",
    "NetworkPolicyPeer": "NetworkPolicyPeer describes a peer to allow traffic to/from. Only certain combinations of "
                         "fields are allowed",
    "NetworkPolicyPort": "NetworkPolicyPort describes a port to allow traffic on",
    "IPBlock": 'IPBlock describes a particular CIDR (Ex. "192.168.1.0/24","2001:db8::/64") that is allowed to the '
               "pods matched by a NetworkPolicySpec's podSelector. The except entry describes CIDRs that should not "
               "be included within this rule.",
})
BUILTIN_GROUPS = (RBAC, NETWORKING)
# The models type kube's custom-marshalled fields `object`: which type each one is.
_OBJECT_FIELDS = {("V1NetworkPolicyPort", "port"): INT_OR_STRING}
_SCALAR_TYPES = {"str": {"type": "string"}, "bool": {"type": "boolean"}, "int": {"type": "integer", "format": "int32"},
                 "datetime": {"type": "string", "format": "date-time"}}


def _short(cls_name: str) -> str:
    """`V1PolicyRule`, `RbacV1Subject` → the type's own name."""
    return cls_name.removeprefix("RbacV1").removeprefix("V1")


def _model_def_name(cls_name: str) -> str:
    """`V1PolicyRule` → `io.k8s.api.rbac.v1.PolicyRule`; the meta types (`V1ObjectMeta`) → apimachinery's."""
    short = _short(cls_name)
    owner = next((g for g in BUILTIN_GROUPS if short in g.descriptions), None)
    return f"{owner.package}.{short}" if owner else f"{META_PACKAGE}.{short}"


def _property_description(model: Any, attr: str) -> str:
    doc = getattr(model, attr).__doc__ or ""
    paragraphs = [p.strip() for p in doc.split("\n\n")]
    text = paragraphs[1] if len(paragraphs) > 1 else ""
    return " ".join(text.replace("# noqa: E501", "").split()) if not text.startswith(":return:") else ""


def _field_type(openapi_type: str, deps: list[str], where: tuple[str, str]) -> dict[str, Any]:
    if openapi_type.startswith("list["):
        return {"type": "array", "items": _field_type(openapi_type[5:-1], deps, where)}
    if openapi_type.startswith("dict("):
        return {"type": "object", "additionalProperties": _field_type(openapi_type[5:-1].split(", ", 1)[1], deps,
                                                                      where)}
    if openapi_type in _SCALAR_TYPES:
        return dict(_SCALAR_TYPES[openapi_type])
    if openapi_type == "object":
        if where not in _OBJECT_FIELDS:
            raise SystemExit(f"{where[0]}.{where[1]} is typed `object`: name its type in _OBJECT_FIELDS")
        return {"$ref": "#/definitions/" + _OBJECT_FIELDS[where]}
    deps.append(openapi_type)
    return {"$ref": "#/definitions/" + _model_def_name(openapi_type)}


def builtin_schemas(group: BuiltinGroup) -> dict[str, Any]:
    """`{definition name: schema}` of the group's kinds and the group's types beneath them (the meta types
    they reference, ObjectMeta and LabelSelector, and IntOrString are the core kinds' own)."""
    import inspect

    from kubernetes.client import models

    from mpijob.api.core.resources import ALL

    served = {r.kind: r for r in ALL if r.builtin}
    out: dict[str, Any] = {}
    todo = [f"V1{kind}" for kind in group.kinds]
    while todo:
        cls_name = todo.pop(0)
        name = _model_def_name(cls_name)
        if name in out or not name.startswith(group.package + "."):
            continue
        model = getattr(models, cls_name)
        deps: list[str] = []
        props: dict[str, Any] = {}
        required: list[str] = []
        for attr, openapi_type in model.openapi_types.items():
            key = model.attribute_map[attr]
            schema = _field_type(openapi_type, deps, (cls_name, attr))
            description = _property_description(model, attr)
            if description:
                schema["description"] = description
            props[key] = schema
            if f"and {attr} is None:" in inspect.getsource(getattr(model, attr).fset):
                required.append(key)
        short = _short(cls_name)
        schema = {"description": group.descriptions[short], "type": "object", "properties": props}
        if required:
            schema["required"] = required
        if short in group.kinds:
            r = served[short]
            schema["x-kubernetes-group-version-kind"] = [{"group": r.group, "version": r.version, "kind": short}]
        out[name] = schema
        todo.extend(deps)
    return out


def render_builtin() -> str:
    def line(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    defs = {name: s for group in BUILTIN_GROUPS for name, s in builtin_schemas(group).items()}
    body = ",\n".join(f"{line(k)}:{line(v)}" for k, v in sorted(defs.items()))
    return (f'{{"source":{line("kubernetes package models (openapi_types), by " + COMMAND)},\n'
            f'"definitions":{{\n{body}}}}}\n')


def main(argv: list[str]) -> int:
    """Write the file (no arguments) or, with `--check`, report whether it is current: 0 yes, 1 no, 2 usage."""
    known = argv in ([], ["--check"])
    if known and not UPSTREAM.is_dir():
        print(f"{UPSTREAM} not found: the upstream CRDs live in the shared folder beside the repository",
              file=sys.stderr)
        return 2
    if not known:
        return write_or_check({}, argv, COMMAND)
    from mpijob.api.names import MPI_OPERATOR_GROUP

    mpijob = render(MPI_OPERATOR_UPSTREAM, MPI_OPERATOR_GROUP, "kubeflow/mpi-operator CRD")
    return write_or_check({OUTPUT: render(), BUILTIN_OUTPUT: render_builtin(), MPI_OPERATOR_OUTPUT: mpijob}, argv,
                          COMMAND)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
