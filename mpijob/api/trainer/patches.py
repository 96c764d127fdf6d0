"""A TrainJob's `spec.runtimePatches`, as Trainer (≥ 2.2) applies and checks them.

Each entry belongs to one `manager` (the user's tool, Kueue, a webhook) and patches the runtime's JobSet
template: labels and annotations at the JobSet, Job and pod level, and a few pod spec fields. Trainer
applies the entries in list order, each a strategic merge patch of the JobSet spec, so a later manager
wins where two set the same field. This module does the same to the runtime itself: `apply` returns the
runtime the job runs as if it had been written that way, and `plan.resolve` plans from it, so every
honoured field (node placement, security context, labels) takes effect through the code that already
honours it in a runtime. What a patch may set at all is `support.py`'s verdict for the same field of a
runtime, so a patch can smuggle nothing in that a runtime may not hold.

Pure: no I/O.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from typing import Any

from mpijob.api import names
from mpijob.api.core.errors import Cause
from mpijob.api.core.structural import show
from mpijob.api.trainer import support

MAX_PATCHES = 16  # the CRD's maxItems
FIELD = "spec.runtimePatches"
# The list fields of a JobSet spec a strategic merge patch merges item by item (their patchMergeKey, as
# in JobSet's and core/v1's Go types); every other list is replaced whole (tolerations, nodeSelectorTerms).
MERGE_KEYS = {"replicatedJobs": "name", "containers": "name", "initContainers": "name", "env": "name",
              "volumeMounts": "mountPath", "volumes": "name", "imagePullSecrets": "name", "schedulingGates": "name"}
ENV_OWNED = (names.DATASET_INITIALIZER, names.MODEL_INITIALIZER, names.CONTAINER)  # env comes from the TrainJob
_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")  # apimachinery's HTTP path characters


def dig(obj: Any, *path: str) -> Any:
    """`obj[path[0]][path[1]]...`, None where a step is missing or not a map."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def entries(trainjob: dict) -> list[dict]:
    return [p for p in dig(trainjob, "spec", "runtimePatches") or [] if isinstance(p, dict)]


def merge(base: Any, patch: Any, key: str = "") -> Any:
    """`patch` merged into `base` as a strategic merge patch does: maps key by key, lists with a merge key
    item by item (new items appended), anything else replaced. A null in the patch changes nothing (Go's
    typed patch never sends one)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if v is not None:
                out[k] = merge(out.get(k), v, k) if k in out else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_KEYS:
        by = MERGE_KEYS[key]
        items = list(base)
        for item in patch:
            at = next((i for i, x in enumerate(items) if isinstance(x, dict) and isinstance(item, dict)
                       and x.get(by) == item.get(by)), None)
            if at is None:
                items.append(copy.deepcopy(item))
            else:
                items[at] = merge(items[at], item)
        return items
    return copy.deepcopy(patch)


def apply(trainjob: dict, runtime: dict) -> dict:
    """The runtime with the TrainJob's patches applied in list order (a deep copy; `runtime` is untouched).
    The replicatedJobs keep the runtime's order, as Trainer restores it after merging."""
    out = copy.deepcopy(runtime)
    patches = [p for p in entries(trainjob) if isinstance(dig(p, "trainingRuntimeSpec", "template"), dict)]
    if not patches:
        return out
    template = out.setdefault("spec", {}).setdefault("template", {})
    order = {rj.get("name"): i for i, rj in enumerate(dig(template, "spec", "replicatedJobs") or [])}
    for patch in patches:
        wanted = patch["trainingRuntimeSpec"]["template"]
        if isinstance(wanted.get("metadata"), dict):  # the JobSet's own labels and annotations
            template["metadata"] = merge(template.get("metadata") or {}, wanted["metadata"])
        if isinstance(wanted.get("spec"), dict):
            template["spec"] = merge(template.get("spec") or {}, wanted["spec"])
    rjobs = dig(template, "spec", "replicatedJobs")
    if isinstance(rjobs, list):
        rjobs.sort(key=lambda rj: order.get(rj.get("name"), len(order)))
    return out


def _is_domain_prefixed_path(value: str) -> bool:
    host, slash, path = value.partition("/")
    return bool(slash and host and path and len(host) <= 253 and names.DNS1123_SUBDOMAIN.match(host)
                and _PATH.match(path))


def _without_time(patches: list[dict]) -> list[dict]:
    return [{k: v for k, v in p.items() if k != "time"} for p in patches]


def causes(trainjob: dict, old: dict | None = None) -> list[Cause]:
    """What Trainer's CRD and webhook refuse in a TrainJob's patches, without the runtime: more than 16,
    a manager twice or not a domain-prefixed path, a replicatedJob or container named twice in one entry,
    and a change while the job runs (allowed only when it is suspended before or after the update)."""
    patches = entries(trainjob)
    out: list[Cause] = []
    if len(patches) > MAX_PATCHES:
        out.append(Cause(FIELD, f"Too many: {len(patches)}: must have at most {MAX_PATCHES} items; merge the "
                                "entries of one tool into one", "FieldValueTooMany"))
    seen: set[str] = set()
    for i, patch in enumerate(patches):
        manager = patch.get("manager")
        if isinstance(manager, str) and manager:
            if manager in seen:
                out.append(Cause(f"{FIELD}[{i}]", f'Duplicate value: {{"manager":"{manager}"}}: each manager owns '
                                                  "one entry; merge the two", "FieldValueDuplicate"))
            elif not _is_domain_prefixed_path(manager):
                out.append(Cause(f"{FIELD}[{i}].manager", f'Invalid value: "{manager}": must be a domain-prefixed '
                                                          'path (such as "acme.io/foo"), e.g. "example.com/my-tool"'))
            seen.add(manager)
        rjobs = dig(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs") or []
        out += _duplicates(rjobs, f"{FIELD}[{i}].trainingRuntimeSpec.template.spec.replicatedJobs", "replicatedJob")
        for j, rj in enumerate(rjobs):
            pod = dig(rj, "template", "spec", "template", "spec") or {}
            where = f"{FIELD}[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}].template.spec.template.spec"
            for key in ("containers", "initContainers"):
                out += _duplicates(pod.get(key) or [], f"{where}.{key}", "container")
    if old is not None:
        before = entries(old)
        suspended = bool(dig(old, "spec", "suspend")) or bool(dig(trainjob, "spec", "suspend"))
        if _without_time(before) != _without_time(patches) and not suspended:
            out.append(Cause(FIELD, "Forbidden: RuntimePatches can only be modified when the TrainJob is suspended "
                                    "before or after the update; set spec.suspend: true in the same update, or "
                                    "first", "FieldValueForbidden"))
    return out


def _duplicates(items: list[Any], where: str, what: str) -> list[Cause]:
    seen: set[Any] = set()
    out = []
    for k, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if name is not None and name in seen:
            out.append(Cause(f"{where}[{k}]", f"Duplicate value: {show(name)}: each {what} appears once in an "
                                              "entry; merge the two", "FieldValueDuplicate"))
        seen.add(name)
    return out


def stamp(trainjob: dict, old: dict | None = None, at: datetime | None = None) -> None:
    """Trainer's defaulting webhook: each entry's `time` is when it was last written. A new entry, or one
    whose content changed, gets `at` (now); an unchanged one keeps its time."""
    when = (at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    before = {p.get("manager"): p for p in entries(old)} if old is not None else {}
    for patch in entries(trainjob):
        prior = before.get(patch.get("manager"))
        if prior is not None:
            same = _without_time([prior]) == _without_time([patch])
            patch["time"] = (prior.get("time") or when) if same else when
        elif not patch.get("time"):
            patch["time"] = when


def runtime_causes(trainjob: dict, runtime: dict) -> list[Cause]:
    """What Trainer's webhook refuses in the patches given the runtime they patch: a replicatedJob or
    container the runtime does not have, env for the node or initializer containers (which take it from
    spec.trainer and spec.initializer); and, on the local cluster, a patched runtime holding a field the
    runtime rules refuse (`support.py`)."""
    rjobs = {rj.get("name"): rj for rj in dig(runtime, "spec", "template", "spec", "replicatedJobs") or []}
    out: list[Cause] = []
    for i, patch in enumerate(entries(trainjob)):
        base = f"{FIELD}[{i}].trainingRuntimeSpec.template.spec.replicatedJobs"
        for j, rj in enumerate(dig(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs") or []):
            name = rj.get("name")
            if name not in rjobs:
                out.append(Cause(f"{base}[{j}].name", f"Invalid value: {show(name)}: must not have replicated job "
                                                      "that doesn't exist in the runtime job template; the runtime "
                                                      f"has {', '.join(map(str, rjobs))}"))
                continue
            have = dig(rjobs[name], "template", "spec", "template", "spec") or {}
            known = [c.get("name") for c in (have.get("initContainers") or []) + (have.get("containers") or [])]
            pod = dig(rj, "template", "spec", "template", "spec") or {}
            for key, what in (("initContainers", "initContainer"), ("containers", "container")):
                for k, c in enumerate(pod.get(key) or []):
                    where = f"{base}[{j}].template.spec.template.spec.{key}[{k}]"
                    if c.get("name") not in known:
                        out.append(Cause(f"{where}.name", f"Invalid value: {show(c.get('name'))}: must not have "
                                                          f"{what} that doesn't exist in the runtime job {name}; "
                                                          f"its containers: {', '.join(map(str, known))}"))
                    elif key == "containers" and c.get("env") and c.get("name") in ENV_OWNED:
                        out.append(Cause(f"{where}.env", "Invalid value: must not have envs for the "
                                                         f"{', '.join(ENV_OWNED)} containers; give the job's "
                                                         "env in spec.trainer.env"))
    if out:
        return out
    kind = runtime.get("kind") or "ClusterTrainingRuntime"
    had = {(c.field, c.message) for c in support.check(kind, runtime).causes}
    return [Cause(FIELD, f"Forbidden: the patched runtime would have {c.field}: {c.message}", "FieldValueForbidden")
            for c in support.check(kind, apply(trainjob, runtime)).causes if (c.field, c.message) not in had]
