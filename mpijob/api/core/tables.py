"""`meta.k8s.io/v1 Table` renderings: the columns `kubectl get` prints for each kind.

kube-apiserver renders tables server-side (kubectl asks with `Accept: ...;as=Table`), so the column
choice lives here, pure: the same cells back kubectl, the CLI and the dashboard.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.durations import age
from mpijob.api.core.resources import Resource
from mpijob.api.core.selectors import format_label_selector
from mpijob.api.core.volumes import access_modes_shown

Column = tuple[str, str, str, int, Callable[[Obj, datetime], Any]]  # name, type, format, priority, cell

_NAME_DESC = "Name must be unique within a namespace."
_AGE_DESC = "CreationTimestamp is a timestamp representing the server time when this object was created."


def _name(o: Obj, _: datetime) -> str:
    return o.get("metadata", {}).get("name", "")


def _age(o: Obj, now: datetime) -> str:
    return age(o.get("metadata", {}).get("creationTimestamp"), now)


NAME: Column = ("Name", "string", "name", 0, _name)
AGE: Column = ("Age", "string", "", 0, _age)


def _trainjob_state(o: Obj, _: datetime) -> str:
    conditions = (o.get("status") or {}).get("conditions") or []
    return conditions[-1].get("type", "") if conditions else ""


def _container_statuses(o: Obj) -> list[Obj]:
    return (o.get("status") or {}).get("containerStatuses") or []


def _pod_ready(o: Obj, _: datetime) -> str:
    containers = (o.get("spec") or {}).get("containers") or []
    ready = sum(1 for c in _container_statuses(o) if c.get("ready"))
    return f"{ready}/{len(containers)}"


def _pod_status(o: Obj, _: datetime) -> str:
    """kubectl's pod STATUS: the reason of a waiting/terminated container beats the phase."""
    meta, status = o.get("metadata", {}), o.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    for c in _container_statuses(o):
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            term = state["terminated"] or {}
            if term.get("reason"):
                reason = term["reason"]
            elif term.get("signal"):
                reason = f"Signal:{term['signal']}"
            else:
                reason = f"ExitCode:{term.get('exitCode', 0)}"
    if meta.get("deletionTimestamp"):
        reason = "Terminating"
    return reason


def _pod_restarts(o: Obj, _: datetime) -> int:
    return sum(int(c.get("restartCount") or 0) for c in _container_statuses(o))


def _pod_ip(o: Obj, _: datetime) -> str:
    return (o.get("status") or {}).get("podIP") or "<none>"


def _pod_node(o: Obj, _: datetime) -> str:
    return (o.get("spec") or {}).get("nodeName") or "<none>"


def _none(_: Obj, __: datetime) -> str:
    return "<none>"


def _data_count(o: Obj, _: datetime) -> int:
    return len(o.get("data") or {}) + len(o.get("binaryData") or o.get("stringData") or {})


def _secret_type(o: Obj, _: datetime) -> str:
    return o.get("type") or "Opaque"


def _event_last_seen(o: Obj, now: datetime) -> str:
    last = o.get("lastTimestamp") or o.get("eventTime") or o.get("firstTimestamp")
    return age(last, now)


def _event_object(o: Obj, _: datetime) -> str:
    inv = o.get("involvedObject") or {}
    return f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}"


def _field(*path: str) -> Callable[[Obj, datetime], Any]:
    def cell(o: Obj, _: datetime) -> Any:
        value: Any = o
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        return "" if value is None else value

    return cell


def _phase(o: Obj, _: datetime) -> str:
    return (o.get("status") or {}).get("phase") or "Active"


COLUMNS: dict[str, list[Column]] = {
    "trainjobs": [NAME, ("State", "string", "", 0, _trainjob_state), AGE],
    "pods": [
        NAME,
        ("Ready", "string", "", 0, _pod_ready),
        ("Status", "string", "", 0, _pod_status),
        ("Restarts", "string", "", 0, _pod_restarts),
        AGE,
        ("IP", "string", "", 1, _pod_ip),
        ("Node", "string", "", 1, _pod_node),
        ("Nominated Node", "string", "", 1, _none),
        ("Readiness Gates", "string", "", 1, _none),
    ],
    "secrets": [NAME, ("Type", "string", "", 0, _secret_type), ("Data", "string", "", 0, _data_count), AGE],
    "configmaps": [NAME, ("Data", "string", "", 0, _data_count), AGE],
    "namespaces": [NAME, ("Status", "string", "", 0, _phase), AGE],
    "events": [
        ("Last Seen", "string", "", 0, _event_last_seen),
        ("Type", "string", "", 0, _field("type")),
        ("Reason", "string", "", 0, _field("reason")),
        ("Object", "string", "", 0, _event_object),
        ("Message", "string", "", 0, _field("message")),
        ("Subobject", "string", "", 1, _field("involvedObject", "fieldPath")),
        ("Source", "string", "", 1, _field("source", "component")),
        ("First Seen", "string", "", 1, lambda o, now: age(o.get("firstTimestamp"), now)),
        ("Count", "string", "", 1, _field("count")),
        ("Name", "string", "name", 1, _name),
    ],
}


def _condition_status(kind: str) -> Callable[[Obj, datetime], Any]:
    """`.status.conditions[?(@.type==kind)].status`, as a CRD printer column reads it."""
    def cell(o: Obj, _: datetime) -> str:
        for c in (o.get("status") or {}).get("conditions") or []:
            if isinstance(c, dict) and c.get("type") == kind:
                return str(c.get("status", ""))
        return ""

    return cell


def _cohort(o: Obj, _: datetime) -> str:
    spec = o.get("spec") or {}
    return spec.get("cohortName") or spec.get("cohort") or ""  # v1beta2 / v1beta1


# Kueue kinds: the CRDs' additionalPrinterColumns (the same at v1beta1 and v1beta2)
COLUMNS.update({
    "clusterqueues": [
        NAME,
        ("Cohort", "string", "", 0, _cohort),
        ("Strategy", "string", "", 1, _field("spec", "queueingStrategy")),
        ("Pending Workloads", "integer", "", 0, _field("status", "pendingWorkloads")),
        ("Admitted Workloads", "integer", "", 1, _field("status", "admittedWorkloads")),
    ],
    "localqueues": [
        NAME,
        ("ClusterQueue", "string", "", 0, _field("spec", "clusterQueue")),
        ("Pending Workloads", "integer", "", 0, _field("status", "pendingWorkloads")),
        ("Admitted Workloads", "integer", "", 0, _field("status", "admittedWorkloads")),
    ],
    "workloads": [
        NAME,
        ("Queue", "string", "", 0, _field("spec", "queueName")),
        ("Reserved in", "string", "", 0, _field("status", "admission", "clusterQueue")),
        ("Admitted", "string", "", 0, _condition_status("Admitted")),
        ("Finished", "string", "", 0, _condition_status("Finished")),
        AGE,
    ],
    "workloadpriorityclasses": [NAME, ("Value", "integer", "", 0, _field("value"))],
})


def _quota_column(limits: bool) -> Callable[[Obj, datetime], str]:
    """kubectl's ResourceQuota REQUEST or LIMIT cell: `key: used/hard, ...` from the status, sorted by key,
    the `limits.*` keys in LIMIT and every other key in REQUEST."""
    def cell(o: Obj, _: datetime) -> str:
        status = o.get("status") or {}
        hard, used = status.get("hard") or {}, status.get("used") or {}
        keys = [k for k in sorted(hard) if (k.split(".")[0] == "limits" and "." in k) == limits]
        return ", ".join(f"{k}: {used.get(k, '0')}/{hard[k]}" for k in keys)

    return cell


# Core kinds of namespace quotas (kubernetes pkg/printers/internalversion/printers.go)
COLUMNS.update({
    "resourcequotas": [NAME, AGE, ("Request", "string", "", 0, _quota_column(False)),
                       ("Limit", "string", "", 0, _quota_column(True))],
    "limitranges": [NAME, ("Created At", "date", "", 0, _field("metadata", "creationTimestamp"))],
})


def _pod_selector(o: Obj, _: datetime) -> str:
    """kubectl's POD-SELECTOR: the selector as `metav1.FormatLabelSelector` writes it (`<none>` when empty)."""
    selector = (o.get("spec") or {}).get("podSelector") or {}
    return format_label_selector(selector) or "<none>"


def _claim_status(o: Obj, _: datetime) -> str:
    """kubectl's STATUS of a claim: its phase, `Terminating` once deleted."""
    if (o.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return (o.get("status") or {}).get("phase") or ""


def _claim_bound(cell: Callable[[Obj], str]) -> Callable[[Obj, datetime], str]:
    """A cell kubectl fills only once the claim names its volume (CAPACITY, ACCESS MODES)."""
    return lambda o, _: cell(o) if (o.get("spec") or {}).get("volumeName") else ""


def _claim_class(o: Obj, _: datetime) -> str:
    return (o.get("spec") or {}).get("storageClassName") or ""


def _unset(*path: str) -> Callable[[Obj, datetime], str]:
    inner = _field(*path)
    return lambda o, now: inner(o, now) or "<unset>"


# kubernetes pkg/printers/internalversion/printers.go, printPersistentVolumeClaim
COLUMNS["persistentvolumeclaims"] = [
    NAME, ("Status", "string", "", 0, _claim_status), ("Volume", "string", "", 0, _field("spec", "volumeName")),
    ("Capacity", "string", "", 0, _claim_bound(lambda o: str(((o.get("status") or {}).get("capacity") or {})
                                                              .get("storage", "")))),
    ("Access Modes", "string", "", 0, _claim_bound(lambda o: access_modes_shown((o.get("status") or {})
                                                                                .get("accessModes") or []))),
    ("StorageClass", "string", "", 0, _claim_class),
    ("VolumeAttributesClass", "string", "", 0, _unset("spec", "volumeAttributesClassName")), AGE,
    ("VolumeMode", "string", "", 1, _unset("spec", "volumeMode")),
]

COLUMNS["networkpolicies"] = [NAME, ("Pod-Selector", "string", "", 0, _pod_selector), AGE]


def _node_status(o: Obj, now: datetime) -> str:
    """kubectl's node STATUS: `Ready` or `NotReady` from the Ready condition."""
    return "Ready" if _condition_status("Ready")(o, now) == "True" else "NotReady"


def _node_roles(o: Obj, _: datetime) -> str:
    """kubectl's ROLES: the `node-role.kubernetes.io/<role>` labels."""
    prefix = names.LABEL_CONTROL_PLANE.rpartition("/")[0] + "/"
    roles = sorted(k[len(prefix):] for k in (o.get("metadata") or {}).get("labels") or {} if k.startswith(prefix))
    return ",".join(roles) or "<none>"


COLUMNS["nodes"] = [
    NAME, ("Status", "string", "", 0, _node_status), ("Roles", "string", "", 0, _node_roles), AGE,
    ("Version", "string", "", 0, _field("status", "nodeInfo", "kubeletVersion")),
    ("Internal-IP", "string", "", 1, lambda o, _: next((a.get("address", "") for a in
                                                         (o.get("status") or {}).get("addresses") or []
                                                         if a.get("type") == "InternalIP"), "")),
    ("OS-Image", "string", "", 1, _field("status", "nodeInfo", "osImage")),
    ("Kernel-Version", "string", "", 1, _field("status", "nodeInfo", "kernelVersion")),
]


def columns_for(res: Resource) -> list[Column]:
    """Kinds without a specific layout (runtimes, ...) show Name and Age."""
    return COLUMNS.get(res.plural, [NAME, AGE])


def column_definitions(res: Resource) -> list[Obj]:
    defs = []
    for name, typ, fmt, priority, _ in columns_for(res):
        desc = _NAME_DESC if name == "Name" else _AGE_DESC if name == "Age" else name
        defs.append({"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority})
    return defs


def row(res: Resource, obj: Obj, now: datetime, include_object: str = "Metadata") -> Obj:
    cells = [cell(obj, now) for *_, cell in columns_for(res)]
    return {"cells": cells, "object": row_object(obj, include_object)}


def row_object(obj: Obj, include_object: str = "Metadata") -> Obj | None:
    """`includeObject`: `Object` (whole), `Metadata` (PartialObjectMetadata, kubectl's default), `None`."""
    if include_object == "Object":
        return obj
    if include_object == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": names.META_API_VERSION, "metadata": obj.get("metadata", {})}


def table(
    res: Resource,
    items: list[Obj],
    resource_version: str,
    *,
    include_object: str = "Metadata",
    now: datetime | None = None,
) -> Obj:
    """A `Table` of `items` with this kind's columns; priority > 0 columns show only with `-o wide`."""
    now = now or datetime.now(UTC)
    return {
        "kind": "Table",
        "apiVersion": names.META_API_VERSION,
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": column_definitions(res),
        "rows": [row(res, o, now, include_object) for o in items],
    }
