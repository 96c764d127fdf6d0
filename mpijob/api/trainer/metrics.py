"""What the observability surfaces say, pure: how long each phase of a job's start took, read from its
stored objects; and the resource metrics API's PodMetrics and NodeMetrics (metrics-server's shapes,
which `kubectl top` reads).

The phases are derived from what the store already keeps (the TrainJob's and its pods' timestamps, the
Workload's conditions, the first line of the launcher's log) when a job ends, rather than from timers
spread through the runner: one reading of "when did this start", the same after a restart.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from mpijob.api import Obj, names
from mpijob.api.core.durations import parse_time

# The phases of a job's start, in order
ADMISSION = "admission"  # TrainJob created (or its Workload requeued) → its Workload admitted
NODES_READY = "nodes_ready"  # its first pod created → every node's sshd accepts the job key (the launcher starts)
FIRST_OUTPUT = "first_output"  # the launcher started → the first line a rank printed


def _condition(obj: Obj | None, kind: str) -> Obj | None:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _seconds(value: str | None) -> float | None:
    t = parse_time(value)
    return t.timestamp() if t else None


def queued_at(workload: Obj) -> float | None:
    """When a Workload last entered its queue: created, or requeued after an eviction (Kueue's
    `QueuedWaitTime` measures from the same moment)."""
    requeued = _condition(workload, names.REQUEUED)
    return _seconds((requeued or {}).get("lastTransitionTime") or workload["metadata"].get("creationTimestamp"))


def launcher_started(pods: Iterable[Obj]) -> float | None:
    """When the job's launcher container started (its pod's `startTime`); None before it did."""
    launcher = next((p for p in pods if (p["metadata"].get("labels") or {}).get(names.LABEL_RJOB_NAME)
                     == names.LAUNCHER), None)
    return _seconds(((launcher or {}).get("status") or {}).get("startTime"))


def startup_phases(trainjob: Obj, workload: Obj | None, pods: list[Obj],
                   first_output: float | None) -> dict[str, float]:
    """Seconds each phase of the job's last start took, for the phases it went through. The launcher
    starts once every node accepts the job key (`dependsOn: node Ready`), so its start ends `nodes_ready`."""
    out: dict[str, float] = {}
    admitted = _condition(workload, names.ADMITTED)
    if workload is not None and admitted and admitted.get("status") == "True":
        requeued = _condition(workload, names.REQUEUED)
        since = _seconds((requeued or {}).get("lastTransitionTime") or trainjob["metadata"].get("creationTimestamp"))
        at = _seconds(admitted.get("lastTransitionTime"))
        if since is not None and at is not None:
            out[ADMISSION] = max(at - since, 0.0)
    started = launcher_started(pods)
    created = [t for p in pods if (t := _seconds(p["metadata"].get("creationTimestamp"))) is not None]
    if started is not None and created:
        out[NODES_READY] = max(started - min(created), 0.0)
    if started is not None and first_output is not None:
        out[FIRST_OUTPUT] = max(first_output - started, 0.0)
    return out


# -- the resource metrics API (metrics.k8s.io/v1beta1, as metrics-server serves it) ---------------------

METRICS_API_VERSION = f"{names.METRICS_GROUP}/{names.METRICS_VERSION}"


@dataclass(frozen=True)
class Usage:
    """What one container or node used, as `kubectl top` shows it: cores over the window, bytes now."""

    cpu_cores: float
    memory_bytes: int


def timestamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _usage(u: Usage) -> Obj:
    """metrics-server's quantities: nanocores and KiB (`resource.NewScaledQuantity(n, -9)`, BinarySI)."""
    return {"cpu": f"{round(u.cpu_cores * 1e9)}n", "memory": f"{u.memory_bytes // 1024}Ki"}


def pod_metrics(pod: Obj, at: float, window: float, containers: Mapping[str, Usage], gpus: list[Obj]) -> Obj:
    """A `PodMetrics`: its containers' usage over `window` seconds ending at `at`; the pod's GPUs, when
    it has any, in the `mpijob.io/gpus` annotation (the API itself has no GPU field)."""
    meta = pod["metadata"]
    out_meta: Obj = {"name": meta["name"], "namespace": meta["namespace"], "creationTimestamp": timestamp(at),
                     "labels": dict(meta.get("labels") or {})}
    if gpus:
        out_meta["annotations"] = {names.ANNOTATION_GPUS: json.dumps(gpus, separators=(",", ":"))}
    return {"kind": "PodMetrics", "apiVersion": METRICS_API_VERSION, "metadata": out_meta,
            "timestamp": timestamp(at), "window": f"{window:.3f}s",
            "containers": [{"name": name, "usage": _usage(u)} for name, u in containers.items()]}


def node_metrics(node: Obj, at: float, window: float, usage: Usage) -> Obj:
    meta = node["metadata"]
    return {"kind": "NodeMetrics", "apiVersion": METRICS_API_VERSION,
            "metadata": {"name": meta["name"], "creationTimestamp": timestamp(at),
                         "labels": dict(meta.get("labels") or {})},
            "timestamp": timestamp(at), "window": f"{window:.3f}s", "usage": _usage(usage)}


def metrics_list(kind: str, items: list[Obj]) -> Obj:
    return {"kind": f"{kind}List", "apiVersion": METRICS_API_VERSION, "metadata": {}, "items": items}


def gpus_of(metrics: Obj) -> list[Obj]:
    """The GPUs a PodMetrics lists in its `mpijob.io/gpus` annotation (none when it has none)."""
    text = ((metrics.get("metadata") or {}).get("annotations") or {}).get(names.ANNOTATION_GPUS)
    return list(json.loads(text)) if text else []
