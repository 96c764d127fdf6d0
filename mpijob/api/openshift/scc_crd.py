"""OpenShift's SecurityContextConstraints (`security.openshift.io/v1`) as the local cluster serves them: the
structural schema, and the checks a write passes.

Written from OpenShift's documented API (the SecurityContextConstraints reference of the OpenShift
Container Platform docs: its fields, their types and enums, which are required); the Kubernetes and
Trainer models have no such kind. An SCC is cluster-scoped and, unlike most kinds, keeps its fields at
the top level (no `spec`). Writes are checked as kube-apiserver checks a custom resource with
`fieldValidation=Strict`: types, enums and required fields, an unknown field refused.

The local cluster stores and serves SCCs so a platform bundle applies unchanged (`mpijob platform
render`), and its admission of pods tries them beside its built-in `restricted-v2`, `nonroot-v2` and
`anyuid` (`api/openshift/scc.py`, `api/openshift/scc_stored.py`). Beyond the schema, a write is checked as OpenShift's
validation checks it: every strategy has a type, and ids and ranges are whole.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema

from mpijob.api import names
from mpijob.api.core.errors import Cause
from mpijob.api.core.structural import schema_causes, strip_nulls

KIND = "SecurityContextConstraints"
_MUST, _ANY = names.SCC_MUST_RUN_AS, names.SCC_RUN_AS_ANY
_USER_STRATEGIES = (_MUST, names.SCC_MUST_RUN_AS_NON_ROOT, names.SCC_MUST_RUN_AS_RANGE, _ANY)
# each strategy field, with the types OpenShift accepts for it
STRATEGIES = {"runAsUser": _USER_STRATEGIES, "seLinuxContext": (_MUST, _ANY), "fsGroup": (_MUST, _ANY),
              "supplementalGroups": (_MUST, _ANY)}

VOLUME_TYPES = ("*", "awsElasticBlockStore", "azureDisk", "azureFile", "cephFS", "cinder", "configMap", "csi",
                "downwardAPI", "emptyDir", "ephemeral", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo",
                "glusterfs", "hostPath", "iscsi", "nfs", "none", "persistentVolumeClaim", "photonPersistentDisk",
                "portworxVolume", "projected", "quobyte", "rbd", "scaleIO", "secret", "storageos", "vsphere")
_REQUIRED = ("allowHostDirVolumePlugin", "allowHostIPC", "allowHostNetwork", "allowHostPID", "allowHostPorts",
             "allowPrivilegedContainer", "readOnlyRootFilesystem")


def _s(kind: str, description: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


def _strings(description: str) -> dict[str, Any]:
    return _s("array", description, items={"type": "string"}, nullable=True)


def _id_ranges(description: str) -> dict[str, Any]:
    return _s("array", description, nullable=True, items=_s("object", "A range of ids, inclusive.", properties={
        "min": _s("integer", "The first id.", format="int64"), "max": _s("integer", "The last id.", format="int64")}))


def _strategy(description: str, types: tuple[str, ...], **fields: Any) -> dict[str, Any]:
    return _s("object", description, nullable=True,
              properties={"type": _s("string", "The strategy.", enum=list(types)), **fields})


def _flag(description: str) -> dict[str, Any]:
    return _s("boolean", description)


@cache
def schema() -> dict[str, Any]:
    """The kind's openAPIV3Schema, as a CRD carries it (read-only: shared)."""
    props: dict[str, Any] = {
        "apiVersion": _s("string", f"The versioned schema of this object: {names.SECURITY_API_VERSION}."),
        "kind": _s("string", "SecurityContextConstraints."),
        "metadata": _s("object", "Standard object's metadata."),
        "allowHostDirVolumePlugin": _flag("Whether pods may use hostPath volumes."),
        "allowHostIPC": _flag("Whether pods may use the host's IPC namespace."),
        "allowHostNetwork": _flag("Whether pods may use the host's network namespace."),
        "allowHostPID": _flag("Whether pods may use the host's PID namespace."),
        "allowHostPorts": _flag("Whether pods may bind ports of the host."),
        "allowPrivilegedContainer": _flag("Whether containers may run privileged."),
        "allowPrivilegeEscalation": _s("boolean", "Whether a process may gain more privileges than its parent.",
                                       nullable=True),
        "defaultAllowPrivilegeEscalation": _s("boolean", "allowPrivilegeEscalation of containers that do not set it.",
                                              nullable=True),
        "readOnlyRootFilesystem": _flag("Whether containers must run with a read-only root filesystem."),
        "allowedCapabilities": _strings("Capabilities a container may add; '*' for any."),
        "defaultAddCapabilities": _strings("Capabilities added to every container unless it drops them."),
        "requiredDropCapabilities": _strings("Capabilities dropped from every container; ALL for all."),
        "allowedFlexVolumes": _s("array", "FlexVolume drivers pods may use (with volumes flexVolume).", nullable=True,
                                 items=_s("object", "A FlexVolume driver.", required=["driver"],
                                          properties={"driver": _s("string", "The driver's name.")})),
        "allowedUnsafeSysctls": _strings("Unsafe sysctls pods may set; '*' for all."),
        "forbiddenSysctls": _strings("Sysctls pods may not set."),
        "fsGroup": _strategy("The fsGroup of pods.", STRATEGIES["fsGroup"],
                             ranges=_id_ranges("The allowed groups; empty: the namespace's.")),
        "supplementalGroups": _strategy("The supplemental groups of pods.", STRATEGIES["supplementalGroups"],
                                        ranges=_id_ranges("The allowed groups; empty: the namespace's.")),
        "runAsUser": _strategy("The UID of containers.", STRATEGIES["runAsUser"],
                               uid=_s("integer", "The UID of MustRunAs.", format="int64"),
                               uidRangeMin=_s("integer", "The first UID of MustRunAsRange.", format="int64"),
                               uidRangeMax=_s("integer", "The last UID of MustRunAsRange.", format="int64")),
        "seLinuxContext": _strategy("The SELinux context of containers.", STRATEGIES["seLinuxContext"],
                                    seLinuxOptions=_s("object", "The SELinux labels of MustRunAs.", properties={
                                        k: _s("string", f"The SELinux {k}.") for k in ("level", "role", "type",
                                                                                        "user")})),
        "seccompProfiles": _strings("Seccomp profiles pods may use; the first is the default."),
        "userNamespaceLevel": _s("string", "Whether pods may share the host's user namespace.",
                                 enum=["AllowHostLevel", "RequirePodLevel"]),
        "volumes": _s("array", "Volume types pods may use; '*' for all.", nullable=True,
                      items={"type": "string", "enum": list(VOLUME_TYPES)}),
        "users": _strings("Users who may use this SCC (RBAC's `use` grants it too)."),
        "groups": _strings("Groups who may use this SCC."),
        "priority": _s("integer", "Higher is tried first; nil is lowest.", format="int32", nullable=True),
    }
    return _s("object", "SecurityContextConstraints govern what a pod may ask of its node: users, capabilities, "
                        "volumes, host namespaces. OpenShift admits a pod with the first SCC it may use that accepts "
                        "it.", properties=props, required=list(_REQUIRED))


def served() -> dict[str, Any]:
    """`{"<version>/<Kind>": openAPIV3Schema}`, the form the OpenAPI documents build from."""
    return {f"{names.SECURITY_VERSION}/{KIND}": schema()}


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items() if k not in ("description", "format", "nullable")}
    if "properties" in out:
        out["additionalProperties"] = False
    return out


@cache
def _validator() -> jsonschema.protocols.Validator:
    strict = _strict(schema())
    strict["properties"]["metadata"] = {"type": "object"}  # judged by validation._metadata_causes
    return jsonschema.Draft7Validator(strict)


def causes(obj: dict) -> list[Cause]:
    """Why an SCC would be refused, one cause per field with the fix; [] when it may be stored."""
    out: list[Cause] = []
    for err in _validator().iter_errors(strip_nulls(obj)):
        out.extend(schema_causes(err))
    if out:
        return sorted(out, key=lambda c: c.field)
    for field, types in STRATEGIES.items():  # OpenShift refuses a strategy without a type: admission needs one
        if not (obj.get(field) or {}).get("type"):
            out.append(Cause(f"{field}.type", f"Required value: one of {', '.join(types)}", "FieldValueRequired"))
    run_as = obj.get("runAsUser") or {}
    if run_as.get("type") == _MUST and run_as.get("uid") is None:
        out.append(Cause("runAsUser.uid", "Required value: MustRunAs needs the UID; set uid or use MustRunAsRange",
                         "FieldValueRequired"))
    low, high = run_as.get("uidRangeMin"), run_as.get("uidRangeMax")
    if (low is None) != (high is None):
        missing = "uidRangeMax" if high is None else "uidRangeMin"
        out.append(Cause(f"runAsUser.{missing}", "Required value: set both uidRangeMin and uidRangeMax, or neither "
                                                 "for the namespace's range", "FieldValueRequired"))
    if low is not None and high is not None and low > high:
        out.append(Cause("runAsUser.uidRangeMax", f"Invalid value: {high}: must not be below uidRangeMin ({low})"))
    for field in ("fsGroup", "supplementalGroups"):
        for i, span in enumerate((obj.get(field) or {}).get("ranges") or ()):
            where = f"{field}.ranges[{i}]"
            if span.get("min") is None or span.get("max") is None:
                out.append(Cause(where, "Required value: a range needs min and max", "FieldValueRequired"))
            elif span["min"] > span["max"]:
                low, high = span["min"], span["max"]
                out.append(Cause(f"{where}.max", f"Invalid value: {high}: must not be below min ({low})"))
    for cap in obj.get("defaultAddCapabilities") or ():
        if cap in set(obj.get("requiredDropCapabilities") or ()):
            out.append(Cause("defaultAddCapabilities", f"Invalid value: {cap!r}: capability is also required to be "
                                                       "dropped; remove it from one of the two lists"))
    return out


def warnings(obj: dict) -> list[str]:
    """What a write of an SCC is warned about: a name the local cluster's built-in SCCs hold, whose
    admission keeps using its own (`api/openshift/scc.py`)."""
    from mpijob.api.openshift.scc import BUILT_IN

    name = (obj.get("metadata") or {}).get("name")
    if name not in BUILT_IN:
        return []
    return [(f'{KIND} "{name}" is built in on the local cluster: admission uses its own {name} (docs/security.md, '
             f'"Tenant UIDs"), not this object; give yours another name')]
