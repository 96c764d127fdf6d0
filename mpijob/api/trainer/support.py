"""What the local cluster does with each field of a TrainJob, a (Cluster)TrainingRuntime and the Kueue kinds.

Rule: nothing accepted is silently ignored. Every field is *honoured* as Trainer, JobSet, Kueue and the
kubelet honour it, *warned* (accepted, with a `Warning` header naming it, as kube-apiserver warns, for
what is harmless on one machine: pod affinity, image pulls), or *refused* with a 422 that names it
and says why (what would change the job's outcome, or what Kueue admits, if it were dropped: volumes,
hooks, flavor fungibility, hierarchical cohorts). A TrainJob's runtime patch is judged field by field
with the verdict of the same field of a runtime.

A refused field may list `honoured` values: the ones that ask for what the local cluster does anyway
(Kueue's defaults, such as `whenCanBorrow: MayStopSearch`), so that a stored object, defaults filled in,
can be sent back unchanged. Kueue objects are checked in their stored (v1beta2) form after defaulting;
every refused Kueue field has the same name in v1beta1, so a v1beta1 client reads its own field name.

Paths are written as `kubectl explain` walks them, with `[]` after a list: `spec.trainer.env[].name`.
A rule covers its field and everything below it unless a longer rule says otherwise; a field no rule
covers is refused. `tests/api/test_field_inventory.py` walks the served schemas and checks that every
field path has a rule and that each verdict holds. The tables are `support_rules.py`; this module walks an
object against them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mpijob.api.core import volumes
from mpijob.api.core.errors import Cause
from mpijob.api.names import CONTAINER, LAUNCHER, LOCAL_STORAGE_CLASS, MPIJOB_KIND, NODE, PVC_KIND
from mpijob.api.trainer.support_rules import HONOURED, NOT_RUN, PATCHED, REFUSED, RULES, UNCOUNTED, Rule

_MPI_REPLICAS = re.compile(r"^spec\.mpiReplicaSpecs\.[^.]+")


def desired_changed(obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """Whether a write changes what the user asks for (all but metadata and status: a WorkloadPriorityClass
    has no spec). Only such writes are checked, so a controller's status update of an object stored
    before a rule existed still passes."""
    if old is None:
        return True
    return any(obj.get(k) != old.get(k) for k in {*obj, *old} - {"metadata", "status", "apiVersion", "kind"})


def rule_for(kind: str, path: str) -> tuple[str, Rule] | None:
    """The rule that covers a field path (its own, else its nearest ancestor's) and the path it is for."""
    if kind == "TrainJob" and path.startswith(f"{PATCHED}."):  # a patched field: the runtime's verdict
        found = rule_for("ClusterTrainingRuntime", "spec" + path[len(PATCHED):])
        if found and found[0].startswith("spec.template"):
            return PATCHED + found[0][len("spec"):], found[1]
    rules = RULES[kind]
    while True:
        if path in rules:
            return path, rules[path]
        if not path:
            return None
        cut = max(path.rfind("."), path.rfind("[]"))
        path = path[:cut] if cut > 0 else ""


@dataclass
class Findings:
    causes: list[Cause]
    warnings: list[str]


def check(kind: str, obj: dict[str, Any]) -> Findings:
    """The refused fields (as 422 causes) and warned fields (as warning texts) an object sets."""
    found = Findings([], [])
    if kind not in RULES:
        return found
    seen: set[str] = set()
    for where, path, value in _set_fields(obj):
        if kind == MPIJOB_KIND:  # a replica type is a map key: its rules are written for any (`*`)
            path = _MPI_REPLICAS.sub("spec.mpiReplicaSpecs.*", path)
        covered = rule_for(kind, path)
        rule_path, rule = covered if covered else (path, Rule(REFUSED, "not supported by the local cluster"))
        at = _concrete(where, rule_path) if rule.verdict == REFUSED else where  # a refusal names its rule's field
        if rule.verdict == HONOURED or at in seen or (rule_path == path and value in rule.honoured):
            continue
        seen.add(at)
        if rule.verdict == REFUSED:
            found.causes.append(Cause(at, f"Forbidden: {rule.why}", "FieldValueForbidden"))
        else:
            found.warnings.append(f"{at}: {rule.why}")
    found.warnings += _unrun_steps(kind, obj) + _claim_class(kind, obj)
    found.causes += _volume_causes(kind, obj)
    found.causes += _unrun_containers(kind, obj) + _uncounted_containers(kind, obj) + _mpijob_sidecars(kind, obj)
    return found


def _set_fields(node: Any, where: str = "", path: str = "") -> Iterator[tuple[str, str, Any]]:
    """`(concrete path, rule path, value)` of every field set to something (empty lists and maps are unset)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _set_fields(value, f"{where}.{key}" if where else key, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _set_fields(item, f"{where}[{i}]", f"{path}[]")
    elif node is not None:
        yield where, path, node


def _concrete(where: str, rule_path: str) -> str:
    """The prefix of a concrete path (`a[2].b.c`) that a rule path (`a[].b`) names."""
    depth = rule_path.count(".") + rule_path.count("[]")
    parts = []
    for i, token in enumerate(where.replace("[", ".[").split(".")):
        if i == depth + 1:
            break
        parts.append(token)
    return ".".join(parts).replace(".[", "[")


def _replicated_jobs(kind: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    if kind not in ("TrainingRuntime", "ClusterTrainingRuntime"):
        return []
    return (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs") or []


def _unrun_steps(kind: str, obj: dict[str, Any]) -> list[str]:
    """ReplicatedJobs other than the MPI launcher and nodes (initializers) are stored, not run."""
    return [f"spec.template.spec.replicatedJobs[{i}]: replicatedJob {rj.get('name')!r} is {NOT_RUN}: only "
            f"'{LAUNCHER}' and '{NODE}' run here" for i, rj in enumerate(_replicated_jobs(kind, obj))
            if rj.get("name") not in (LAUNCHER, NODE)]


def _unrun_containers(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """A pod runs its `node` container only (Trainer's MPI container); a sidecar would silently not run."""
    out = []
    for i, rj in enumerate(_replicated_jobs(kind, obj)):
        if rj.get("name") not in (LAUNCHER, NODE):
            continue
        pod = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        out += [Cause(f"spec.template.spec.replicatedJobs[{i}].template.spec.template.spec.containers[{k}]",
                      f"Forbidden: only the container named {CONTAINER!r} runs on the local cluster; "
                      f"{c.get('name')!r} would not: remove it", "FieldValueForbidden")
                for k, c in enumerate(pod.get("containers") or []) if c.get("name") != CONTAINER]
    return out


def _uncounted_containers(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """The scheduler counts the first container of a Workload's pod set; Kueue sums them all."""
    if kind != "Workload":
        return []
    out = []
    for i, pod_set in enumerate(((obj.get("spec") or {}).get("podSets")) or []):
        spec = ((pod_set or {}).get("template") or {}).get("spec") or {}
        for j in range(1, len(spec.get("containers") or [])):
            out.append(Cause(f"spec.podSets[{i}].template.spec.containers[{j}]",
                             "Forbidden: Kueue counts every container's requests and the local cluster counts the "
                             f"first container's only, {UNCOUNTED}; put the pod's whole request in one container",
                             "FieldValueForbidden"))
    return out


def _mpijob_sidecars(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """MPI Operator runs every container of a replica's pod, and kube every container of a Pod; the local cluster
    runs the first one only (a bare pod is one process tree: api/core/bare_pods.py)."""
    if kind == "Pod":
        pods = {"spec": obj.get("spec") or {}}
    elif kind == MPIJOB_KIND:
        replicas = ((obj.get("spec") or {}).get("mpiReplicaSpecs")) or {}
        pods = {f"spec.mpiReplicaSpecs.{replica}.template.spec": _dig(spec, "template", "spec") or {}
                for replica, spec in replicas.items()}
    else:
        return []
    return [Cause(f"{where}.containers[{k}]", f"Forbidden: only the first container of a pod runs on the local "
                  f"cluster; {c.get('name')!r} would not: remove it", "FieldValueForbidden")
            for where, pod in pods.items() for k, c in enumerate(pod.get("containers") or []) if k > 0]


def _claim_class(kind: str, obj: dict[str, Any]) -> list[str]:
    """A claim naming a StorageClass the local cluster does not have is bound locally all the same: said."""
    name = (obj.get("spec") or {}).get("storageClassName") if kind == PVC_KIND else None
    if not name or name == LOCAL_STORAGE_CLASS:
        return []
    return [(f'spec.storageClassName: "{name}" is not a StorageClass of the local cluster: the claim is bound to a '
             f'directory of this machine, as its "{LOCAL_STORAGE_CLASS}" class binds one')]


def _dig(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _pod_templates(kind: str, obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """`(path, pod spec, whole)` of each pod template an object holds; a runtime patch's is not whole (its
    mounts may name the runtime's volumes)."""
    rjob_pod = ("template", "spec", "template", "spec")
    if kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        for i, rj in enumerate(_replicated_jobs(kind, obj)):
            yield f"spec.template.spec.replicatedJobs[{i}].template.spec.template.spec", _dig(rj, *rjob_pod), True
    elif kind == "TrainJob":
        for k, patch in enumerate(_dig(obj, "spec", "runtimePatches") or []):
            rjobs = _dig(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs") or []
            for i, rj in enumerate(rjobs):
                yield ((f"spec.runtimePatches[{k}].trainingRuntimeSpec.template.spec.replicatedJobs[{i}].template.spec"
                        ".template.spec"), _dig(rj, *rjob_pod), False)
    elif kind == MPIJOB_KIND:
        for replica, spec in (_dig(obj, "spec", "mpiReplicaSpecs") or {}).items():
            yield f"spec.mpiReplicaSpecs.{replica}.template.spec", _dig(spec, "template", "spec"), True
    elif kind == "Pod":
        yield "spec", obj.get("spec") or {}, True


def _volume_causes(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """Each pod template's volumes and mounts, as kube-apiserver checks a pod's (`api/core/volumes.py`)."""
    return [cause for where, spec, whole in _pod_templates(kind, obj) if isinstance(spec, dict)
            for cause in volumes.pod_causes(spec, where, whole)]
