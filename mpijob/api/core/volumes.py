"""Pod volumes and PersistentVolumeClaims as data (docs/volumes.md): what each mount of a pod shows, which
files a configMap, secret, downwardAPI or projected volume holds, what kube-apiserver refuses of a claim or
a pod's volumes, and what kube-scheduler says of a pod whose claim is missing or unbound. Pure.

The kubelet's part (directories, files, mounts) is `controllers/kubelet/volumes.py`; the provisioner that
binds each claim to a directory of this machine is `controllers/claims.py`.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.errors import Cause
from mpijob.api.core.quantity import parse_quantity

PVC, HOST_PATH, EMPTY_DIR = "persistentVolumeClaim", "hostPath", "emptyDir"
CONFIG_MAP, SECRET, DOWNWARD_API, PROJECTED = "configMap", "secret", "downwardAPI", "projected"
SOURCES = (PVC, HOST_PATH, EMPTY_DIR, CONFIG_MAP, SECRET, DOWNWARD_API, PROJECTED)  # what the local cluster mounts
FILE_SOURCES = (CONFIG_MAP, SECRET, DOWNWARD_API, PROJECTED)  # written by the kubelet, always mounted read-only
HOST_PATH_TYPES = ("", names.HOST_PATH_DIRECTORY_OR_CREATE, names.HOST_PATH_DIRECTORY, names.HOST_PATH_FILE_OR_CREATE,
                   names.HOST_PATH_FILE, names.HOST_PATH_SOCKET, names.HOST_PATH_CHAR_DEVICE,
                   names.HOST_PATH_BLOCK_DEVICE)
ACCESS_MODES = (names.READ_WRITE_ONCE, names.READ_ONLY_MANY, names.READ_WRITE_MANY, names.READ_WRITE_ONCE_POD)
SHORT_ACCESS_MODES = {names.READ_WRITE_ONCE: "RWO", names.READ_ONLY_MANY: "ROX", names.READ_WRITE_MANY: "RWX",
                      names.READ_WRITE_ONCE_POD: "RWOP"}  # as kubectl prints them, in this order
DEFAULT_MODE = 0o644  # a configMap, secret, downwardAPI or projected file's mode unless the volume says
DOWNWARD_FIELDS = ("metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations")
STORAGE = "storage"
FILESYSTEM = "Filesystem"  # a claim's default volumeMode, the only one the local cluster provides


PROCESS_SANDBOX = ("volumes are mounted only by the namespace and rootless sandboxes: this server's process sandbox "
                   "cannot give a pod a mount of its own (`mpijob server status` says why it runs that one); enable "
                   "user namespaces or run the server as root, or remove the volumes (docs/volumes.md)")


class VolumeError(ValueError):
    """A volume that cannot be set up, in the words kube uses for it."""


@dataclass(frozen=True)
class Mount:
    """One volumeMount of a pod's container, with the volume it mounts."""

    volume: str  # the volume's name
    kind: str  # which of SOURCES
    source: Obj  # the volume source (`{"claimName": ...}`, `{"path": ..., "type": ...}`, ...)
    path: str  # mountPath
    sub_path: str  # "" for the whole volume
    read_only: bool


def container(pod_spec: Obj) -> tuple[int, Obj]:
    """The container that runs (Trainer's `node`, else the first) and its index."""
    containers = pod_spec.get("containers") or []
    for i, c in enumerate(containers):
        if c.get("name") == names.CONTAINER:
            return i, c
    return 0, (containers[0] if containers else {})


def kind_of(volume: Obj) -> str:
    """Which source a volume has: one of SOURCES, or the name of another (unmounted) one, or ""."""
    return next((k for k in volume if k != "name" and isinstance(volume.get(k), dict)), "")


def mounts(pod_spec: Obj) -> list[Mount]:
    """The pod's mounts of its own volumes, as kube-apiserver would admit the pod; VolumeError with its
    message for a mount of a volume the pod does not have."""
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
    index, c = container(pod_spec)
    out = []
    for i, m in enumerate(c.get("volumeMounts") or []):
        volume = volumes.get(m.get("name"))
        if volume is None:
            raise VolumeError(f'spec.containers[{index}].volumeMounts[{i}].name: Not found: "{m.get("name")}"')
        kind = kind_of(volume)
        source = volume[kind]
        read_only = bool(m.get("readOnly")) or kind in FILE_SOURCES or (kind == PVC and bool(source.get("readOnly")))
        out.append(Mount(volume["name"], kind, source, m.get("mountPath", ""), m.get("subPath") or "", read_only))
    return out


def mount_paths(pod_spec: Obj) -> list[str]:
    """Where the pod's container mounts its volumes."""
    return [m["mountPath"] for m in container(pod_spec)[1].get("volumeMounts") or [] if m.get("mountPath")]


def has_volumes(pod_spec: Obj) -> bool:
    """Whether the pod asks for volumes or mounts of its own (not those the local cluster adds)."""
    return bool(pod_spec.get("volumes")) or bool(container(pod_spec)[1].get("volumeMounts"))


# -- claims, as kube-scheduler's VolumeBinding plugin sees them ------------------------------------------


def claim_names(pod_spec: Obj) -> list[str]:
    return [v[PVC].get("claimName", "") for v in pod_spec.get("volumes") or [] if isinstance(v.get(PVC), dict)]


CLAIM_WORD = names.PVC_KIND  # in every message of claim_problem, whatever its case


def claim_problem(pod_spec: Obj, claims: Mapping[str, Obj]) -> str:
    """Why kube-scheduler's VolumeBinding plugin rejects the pod ("" when its claims are all bound): a
    claim missing or being deleted, else one not bound yet."""
    unbound = False
    for name in claim_names(pod_spec):
        claim = claims.get(name)
        if claim is None:
            return f'{CLAIM_WORD.lower()} "{name}" not found'
        if claim["metadata"].get("deletionTimestamp"):
            return f'{CLAIM_WORD.lower()} "{name}" is being deleted'
        unbound = unbound or (claim.get("status") or {}).get("phase") != names.CLAIM_BOUND
    return f"pod has unbound immediate {CLAIM_WORD}s" if unbound else ""


def unschedulable_message(why: str, nodes: int) -> str:
    """kube-scheduler's FitError when a PreFilter plugin (here VolumeBinding) rejects the pod on every node."""
    return (f"0/{nodes} nodes are available: {why}. preemption: 0/{nodes} nodes are available: {nodes} Preemption "
            "is not helpful for scheduling.")


# -- the files a configMap, secret, downwardAPI or projected volume holds ---------------------------------


def _decoded(obj: Obj, secret: bool) -> dict[str, bytes]:
    if secret:
        return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    out = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
    out.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return out


def _keyed(source: Obj, kind: str, obj: Obj | None, default_mode: int) -> dict[str, tuple[bytes, int]]:
    """A configMap's or secret's files: every key, or the `items` asked for, each at its mode."""
    name = source.get("name") if kind == CONFIG_MAP else source.get("secretName", source.get("name"))
    optional = bool(source.get("optional"))
    if obj is None:
        if optional:
            return {}
        raise VolumeError(f'{kind.lower()} "{name}" not found')
    data = _decoded(obj, kind == SECRET)
    items = source.get("items")
    if not items:
        return {key: (value, default_mode) for key, value in data.items()}
    out = {}
    for item in items:
        key = item.get("key", "")
        if key not in data:
            if optional:
                continue
            word = "config" if kind == CONFIG_MAP else "secret"
            raise VolumeError(f"{kind.lower()} references non-existent {word} key: {key}")
        out[item.get("path", key)] = (data[key], item.get("mode", default_mode))
    return out


def _format_map(values: Mapping[str, str]) -> str:
    """kube's fieldpath.FormatMap: `key="value"` lines, sorted by key."""
    return "\n".join(f"{k}={json.dumps(values[k], ensure_ascii=False)}" for k in sorted(values))


def field_value(pod: Obj, path: str) -> str:
    """A downward API field of the pod (`metadata.labels`, `metadata.labels['k']`, `metadata.name`, ...)."""
    meta = pod.get("metadata") or {}
    for field in ("labels", "annotations"):
        prefix = f"metadata.{field}"
        if path == prefix:
            return _format_map(meta.get(field) or {})
        if path.startswith(prefix + "['") and path.endswith("']"):
            return (meta.get(field) or {}).get(path[len(prefix) + 2:-2], "")
    if path in DOWNWARD_FIELDS:
        return str(meta.get(path.split(".", 1)[1], ""))
    raise VolumeError(f'unsupported fieldPath: "{path}"')


def _downward(source: Obj, pod: Obj, default_mode: int) -> dict[str, tuple[bytes, int]]:
    return {item.get("path", ""): (field_value(pod, (item.get("fieldRef") or {}).get("fieldPath", "")).encode(),
                                   item.get("mode", default_mode))
            for item in source.get("items") or []}


def files(kind: str, source: Obj, objects: Mapping[tuple[str, str], Obj], pod: Obj) -> dict[str, tuple[bytes, int]]:
    """`path → (content, mode)` of a file volume of the stored `pod`, from the namespace's ConfigMaps and
    Secrets (`objects`, keyed `(kind, name)`); VolumeError with the kubelet's words when one is missing."""
    mode = source.get("defaultMode", DEFAULT_MODE)
    if kind == CONFIG_MAP:
        return _keyed(source, kind, objects.get(("ConfigMap", source.get("name", ""))), mode)
    if kind == SECRET:
        return _keyed(source, kind, objects.get(("Secret", source.get("secretName", ""))), mode)
    if kind == DOWNWARD_API:
        return _downward(source, pod, mode)
    out: dict[str, tuple[bytes, int]] = {}
    for projection in source.get("sources") or []:  # projected: each source's files, at the volume's mode
        for sub in (CONFIG_MAP, SECRET, DOWNWARD_API):
            if isinstance(projection.get(sub), dict):
                part = {**projection[sub], "defaultMode": mode}
                if sub == SECRET:
                    part["secretName"] = part.get("name", "")
                out.update(files(sub, part, objects, pod))
    return out


# -- validation: what kube-apiserver refuses -------------------------------------------------------------


def _absolute(path: Any) -> bool:
    return isinstance(path, str) and path.startswith("/")


def _sub_path_cause(value: str, where: str) -> Cause | None:
    if value.startswith("/"):
        return Cause(where, f'Invalid value: "{value}": must be a relative path')
    if ".." in value.split("/"):
        return Cause(where, f"Invalid value: \"{value}\": must not contain '..'")
    return None


def pod_causes(pod_spec: Obj, where: str, whole: bool = True) -> list[Cause]:
    """What kube-apiserver refuses of a pod template's volumes and mounts (`where` is the template's
    `spec`); `whole` is False for a runtime patch, whose mounts may name the runtime's volumes."""
    out: list[Cause] = []
    seen: set[str] = set()
    for i, volume in enumerate(pod_spec.get("volumes") or []):
        at = f"{where}.volumes[{i}]"
        name = volume.get("name")
        if name in seen:
            out.append(Cause(f"{at}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
        seen.add(name)
        kind = kind_of(volume)
        source = volume.get(kind) or {}
        if kind == HOST_PATH:
            if not _absolute(source.get("path")):
                out.append(Cause(f"{at}.hostPath.path", f"Invalid value: {json.dumps(source.get('path'))}: must be an "
                                                        "absolute path of this machine (e.g. /mnt/nfs/data)"))
            if source.get("type", "") not in HOST_PATH_TYPES:
                shown = ", ".join(f'"{t}"' for t in HOST_PATH_TYPES)
                out.append(Cause(f"{at}.hostPath.type", f'Unsupported value: "{source.get("type")}": supported values: '
                                                        f"{shown}", "FieldValueNotSupported"))
        elif kind == EMPTY_DIR and source.get("sizeLimit") is not None:
            try:
                parse_quantity(source["sizeLimit"])
            except ValueError as e:
                out.append(Cause(f"{at}.emptyDir.sizeLimit", f"Invalid value: {e}"))
        elif kind == PVC and not source.get("claimName"):
            out.append(Cause(f"{at}.persistentVolumeClaim.claimName", "Required value: name the claim",
                             "FieldValueRequired"))
        out += _file_causes(kind, source, at)
    index, c = container(pod_spec)
    paths: set[str] = set()
    for j, m in enumerate(c.get("volumeMounts") or []):
        at = f"{where}.containers[{index}].volumeMounts[{j}]"
        if whole and m.get("name") not in seen:
            out.append(Cause(f"{at}.name", f'Not found: "{m.get("name")}": name a volume of spec.volumes',
                             "FieldValueNotFound"))
        path = m.get("mountPath")
        if not _absolute(path):
            out.append(Cause(f"{at}.mountPath", f"Invalid value: {json.dumps(path)}: must be an absolute path"))
        elif path in paths:
            out.append(Cause(f"{at}.mountPath", f'Invalid value: "{path}": must be unique'))
        paths.add(path)
        if m.get("subPath") and (cause := _sub_path_cause(m["subPath"], f"{at}.subPath")):
            out.append(cause)
    return out


def _file_causes(kind: str, source: Obj, at: str) -> list[Cause]:
    """Item paths relative and inside the volume, downward fields the kubelet knows."""
    out = []
    items: list[tuple[str, Obj]] = [(f"{at}.{kind}.items[{k}]", item)
                                    for k, item in enumerate(source.get("items") or [])]
    if kind == PROJECTED:
        for s, projection in enumerate(source.get("sources") or []):
            for sub in (CONFIG_MAP, SECRET, DOWNWARD_API):
                items += [(f"{at}.projected.sources[{s}].{sub}.items[{k}]", item)
                          for k, item in enumerate((projection.get(sub) or {}).get("items") or [])]
    for item_at, item in items:
        if (cause := _sub_path_cause(str(item.get("path", "")), f"{item_at}.path")) or not item.get("path"):
            out.append(cause or Cause(f"{item_at}.path", "Required value", "FieldValueRequired"))
        field = (item.get("fieldRef") or {}).get("fieldPath")
        if field is not None and field not in DOWNWARD_FIELDS and not any(
                field.startswith(f"metadata.{f}['") and field.endswith("']") for f in ("labels", "annotations")):
            shown = ", ".join(f'"{f}"' for f in DOWNWARD_FIELDS)
            out.append(Cause(f"{item_at}.fieldRef.fieldPath", f'Unsupported value: "{field}": supported values: '
                                                              f"{shown}, metadata.labels['<key>'], "
                                                              "metadata.annotations['<key>']",
                             "FieldValueNotSupported"))
    return out


def claim_causes(claim: Obj, old: Obj | None) -> list[Cause]:
    """kube-apiserver's validation of a PersistentVolumeClaim: access modes and a storage request, and,
    on update, a spec that changes only by a larger request. Defaults `claim` as kube does: volumeMode
    Filesystem, and a new claim is Pending whatever status it was sent with."""
    spec = claim.get("spec")
    if not isinstance(spec, dict):
        return [Cause("spec", "Required value: a claim needs accessModes and resources.requests.storage",
                      "FieldValueRequired")]
    spec.setdefault("volumeMode", FILESYSTEM)
    if old is None:
        claim["status"] = {"phase": names.CLAIM_PENDING}
    out: list[Cause] = []
    modes = spec.get("accessModes") or []
    resources = spec.get("resources") or {}
    if not isinstance(modes, list) or not isinstance(resources, dict) or not isinstance(resources.get("requests") or {},
                                                                                        dict):
        return [Cause("spec", "Invalid value: accessModes must be a list and resources.requests a map, e.g. "
                              "{accessModes: [ReadWriteMany], resources: {requests: {storage: 10Gi}}}")]
    if not modes:
        out.append(Cause("spec.accessModes", "Required value: at least 1 access mode is required",
                         "FieldValueRequired"))
    shown = ", ".join(f'"{m}"' for m in sorted(ACCESS_MODES))
    out += [Cause("spec.accessModes", f'Unsupported value: "{m}": supported values: {shown}', "FieldValueNotSupported")
            for m in modes if m not in ACCESS_MODES]
    if names.READ_WRITE_ONCE_POD in modes and len(modes) > 1:
        out.append(Cause("spec.accessModes", f"Forbidden: may not use {names.READ_WRITE_ONCE_POD} with other access "
                                             "modes", "FieldValueForbidden"))
    request = (resources.get("requests") or {}).get(STORAGE)
    if request is None:
        out.append(Cause(f"spec.resources[{STORAGE}]", "Required value: request the claim's size, e.g. "
                                                       "resources.requests.storage: 10Gi", "FieldValueRequired"))
    else:
        try:
            if parse_quantity(request) <= 0:
                out.append(Cause(f"spec.resources[{STORAGE}]",
                                 f'Invalid value: "{request}": must be greater than zero'))
        except ValueError as e:
            out.append(Cause(f"spec.resources[{STORAGE}]", f"Invalid value: {e}"))
    if old is None:
        if spec.get("volumeName"):
            out.append(Cause("spec.volumeName", f'Forbidden: "{spec["volumeName"]}": PersistentVolumes are not '
                                                "served by the local cluster: its provisioner binds every claim to a "
                                                "directory of its own; remove volumeName", "FieldValueForbidden"))
        return out
    return out + _update_causes(spec, old.get("spec") or {}, (old.get("status") or {}).get("capacity") or {})


def _update_causes(spec: Obj, before: Obj, capacity: Obj) -> list[Cause]:
    """A claim's spec is immutable but for a larger storage request (kube's rule for bound claims); a
    spec sent without the volumeName the provisioner wrote keeps it."""

    def rest(s: Obj) -> Obj:
        out = copy.deepcopy(s)
        (out.get("resources") or {}).get("requests", {}).pop(STORAGE, None)
        return out

    mine = dict(spec)
    if not mine.get("volumeName") and before.get("volumeName"):
        mine["volumeName"] = before["volumeName"]
    if rest(mine) != rest(before):
        return [Cause("spec", "Forbidden: spec is immutable after creation except resources.requests and "
                              "volumeAttributesClassName for bound claims; delete and re-create the claim",
                      "FieldValueForbidden")]
    request = ((spec.get("resources") or {}).get("requests") or {}).get(STORAGE)
    held = capacity.get(STORAGE)
    try:
        if request is not None and held is not None and parse_quantity(request) < parse_quantity(held):
            return [Cause(f"spec.resources.requests.{STORAGE}", "Forbidden: field can not be less than "
                                                                "status.capacity", "FieldValueForbidden")]
    except ValueError:
        pass
    return []


def access_modes_shown(modes: list[str]) -> str:
    """kubectl's ACCESS MODES cell: the short names, in kube's order."""
    return ",".join(short for mode, short in SHORT_ACCESS_MODES.items() if mode in (modes or []))


def host_path_problem(path: str, kind: str, found: str) -> str:
    """The kubelet's hostPath type check ("" when it passes): `found` is what lies at `path` (`directory`,
    `file`, `socket`, `char`, `block`, `other`, or "" for nothing)."""
    wanted = {names.HOST_PATH_DIRECTORY: ("directory", "a directory"), names.HOST_PATH_FILE: ("file", "a file"),
              names.HOST_PATH_SOCKET: ("socket", "a socket file"),
              names.HOST_PATH_CHAR_DEVICE: ("char", "a character device"),
              names.HOST_PATH_BLOCK_DEVICE: ("block", "a block device")}
    if kind not in wanted or found == wanted[kind][0]:
        return ""
    return f"hostPath type check failed: {path} is not {wanted[kind][1]}"
