"""Admission of an MPIJob: the CRD's defaults and schema, MPI Operator's own validation, the local cluster's
verdict on each field (`mpijob.api.trainer.support`), and whether it can run here (it converts to a TrainJob).

What an MPIJob runs as is its TrainJob form (`convert`), so a job that would not convert is refused at
the door with the converter's words, rather than stored and failed later.
"""

from __future__ import annotations

import copy
from typing import Any

from mpijob.api import names
from mpijob.api.core.errors import ApiError, Cause
from mpijob.api.core.structural import show
from mpijob.api.mpioperator import schema
from mpijob.api.trainer import support

REPLICA_TYPES = (names.REPLICA_LAUNCHER, names.REPLICA_WORKER)


def default(obj: dict[str, Any]) -> dict[str, Any]:
    """The CRD's `default`s, filled in where the parent object is present (as kube-apiserver defaults a
    custom resource); `obj` itself, changed in place."""

    def fill(node: Any, sch: dict[str, Any]) -> None:
        if not isinstance(node, dict):
            return
        for key, sub in (sch.get("properties") or {}).items():
            if key not in node and "default" in sub:
                node[key] = copy.deepcopy(sub["default"])
            if key in node:
                fill(node[key], sub)

    fill(obj.get("spec"), schema.served()[f"{names.MPI_OPERATOR_VERSION}/{names.MPIJOB_KIND}"]["properties"]["spec"])
    return obj


def _replica_causes(obj: dict[str, Any]) -> list[Cause]:
    """MPI Operator's validation of the replica specs: a Launcher of one replica, a Worker, nothing else."""
    specs = (obj.get("spec") or {}).get("mpiReplicaSpecs") or {}
    out = [Cause(f"spec.mpiReplicaSpecs.{key}", f'Unsupported value: "{key}": supported values: '
                                                f'"{names.REPLICA_LAUNCHER}", "{names.REPLICA_WORKER}"',
                 "FieldValueNotSupported") for key in specs if key not in REPLICA_TYPES]
    launcher = specs.get(names.REPLICA_LAUNCHER)
    where = f"spec.mpiReplicaSpecs.{names.REPLICA_LAUNCHER}"
    if launcher is None:
        out.append(Cause(where, "Required value: an MPIJob needs a Launcher, the pod that runs mpirun",
                         "FieldValueRequired"))
    elif launcher.get("replicas", 1) != 1:
        out.append(Cause(f"{where}.replicas", f"Invalid value: {show(launcher.get('replicas'))}: must be 1"))
    for key in REPLICA_TYPES:
        containers = ((((specs.get(key) or {}).get("template") or {}).get("spec")) or {}).get("containers")
        if key in specs and not containers:
            out.append(Cause(f"spec.mpiReplicaSpecs.{key}.template.spec.containers",
                             "Required value: a pod needs at least one container", "FieldValueRequired"))
    return out


def causes(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[Cause]:
    """Default `obj` (an MPIJob) in place and return its problems; [] when it may be stored. A status-only
    write of a stored job is not judged again."""
    default(obj)
    if old is not None and obj.get("spec") == old.get("spec") and obj.get("metadata") == old.get("metadata"):
        return []
    found = schema.structural_causes(obj) or _replica_causes(obj)
    if found:
        return found
    if support.desired_changed(obj, old):
        found = support.check(names.MPIJOB_KIND, obj).causes
    return found or runnable_causes(obj)


def runnable_causes(obj: dict[str, Any]) -> list[Cause]:
    """What the converter refuses in the job: it runs as its TrainJob form or not at all."""
    from mpijob.api.mpioperator.convert import convert

    candidate = {**obj, "metadata": {"namespace": "default", **(obj.get("metadata") or {})}}
    try:
        convert(candidate, always_runtime=True)
    except ApiError as e:
        return list(e.causes) or [Cause("spec", e.message)]
    return []
