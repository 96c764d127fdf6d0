"""What the local cluster does with each field of a TrainJob and a (Cluster)TrainingRuntime.

Rule: nothing accepted is silently ignored. Every field is *honoured* as Trainer, JobSet and the
kubelet honour it, *warned* (accepted, with a `Warning` header naming it, as kube-apiserver warns, for
what is harmless on one machine: node placement, image pulls), or *refused* with a 422 that names it
and says why (what would change the job's outcome if it were dropped: volumes, patches, hooks).

Paths are written as `kubectl explain` walks them, with `[]` after a list: `spec.trainer.env[].name`.
A rule covers its field and everything below it unless a longer rule says otherwise; a field no rule
covers is refused. `tests/api/test_field_inventory.py` walks the served schemas and checks that every
field path has a rule and that each verdict holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mpijob.api.errors import Cause

HONOURED, WARNED, REFUSED = "honoured", "warned", "refused"
VOLUMES_LATER = "volumes are not mounted by the local cluster yet; keep data on this machine's files (README: Files)"


@dataclass(frozen=True)
class Rule:
    verdict: str
    why: str = ""  # for warned and refused fields: what the user should know, and the fix


def _h(why: str = "") -> Rule:
    return Rule(HONOURED, why)


def _w(why: str) -> Rule:
    return Rule(WARNED, why)


def _r(why: str) -> Rule:
    return Rule(REFUSED, why)


_META = {"apiVersion": _h(), "kind": _h(), "metadata": _h(), "status": _h()}

TRAINJOB: dict[str, Rule] = {
    **_META,
    "spec.runtimeRef": _h(),
    "spec.suspend": _h(),
    "spec.activeDeadlineSeconds": _h(),
    "spec.managedBy": _h(),
    "spec.trainer.command": _h(),
    "spec.trainer.args": _h(),
    "spec.trainer.env": _h(),
    "spec.trainer.env[].valueFrom": _r("env from a Secret, ConfigMap or field is not resolved by the local cluster "
                                       "yet; give the value itself"),
    "spec.trainer.numNodes": _h(),
    "spec.trainer.numProcPerNode": _h(),
    "spec.trainer.resourcesPerNode": _h(),
    "spec.trainer.image": _w("recorded on the pods, not pulled: the local cluster runs this machine's programs"),
    "spec.initializer": _r("dataset and model initializers do not run on the local cluster yet; fetch the data "
                           "in the training command, or run on a cluster with Trainer"),
    "spec.runtimePatches": _r("runtime patches are not applied by the local cluster yet; put the change in a "
                              "TrainingRuntime of your own"),
}

_JOB = "spec.template.spec.replicatedJobs[].template"
_POD = f"{_JOB}.spec.template.spec"
_CTR = f"{_POD}.containers[]"
_ONE_MACHINE = "no effect on one machine: every pod runs on this machine"
_NOT_RUN = "not run by the local cluster"

RUNTIME: dict[str, Rule] = {
    **_META,
    "spec.mlPolicy": _h(),  # MPI runs; other frameworks are stored and their jobs fail TrainingRuntimeNotSupported
    "spec.podGroupPolicy": _w("gang scheduling: the local cluster admits a job's pods all together anyway"),
    "spec.template.metadata": _w("labels and annotations of the JobSet: the local cluster makes no JobSet"),
    "spec.template.spec": _w("JobSet behaviour the local cluster does not reproduce"),
    "spec.template.spec.replicatedJobs[].name": _h(),
    "spec.template.spec.replicatedJobs[].replicas": _h(),
    "spec.template.spec.replicatedJobs[].dependsOn": _h(),
    "spec.template.spec.network": _h(),
    "spec.template.spec.successPolicy": _h(),
    "spec.template.spec.startupPolicy": _h(),
    "spec.template.spec.failurePolicy": _r("restarts are not made by the local cluster yet: the first failure "
                                           "ends the job; remove failurePolicy"),
    f"{_JOB}.metadata": _h(),
    f"{_JOB}.spec": _w("Job behaviour the local cluster does not reproduce"),
    f"{_JOB}.spec.template.metadata": _h(),
    f"{_JOB}.spec.backoffLimit": _r("retries are not made by the local cluster yet: the first failure ends the "
                                    "job; remove backoffLimit"),
    f"{_JOB}.spec.activeDeadlineSeconds": _r("use the TrainJob's spec.activeDeadlineSeconds"),
    f"{_POD}": _w(_ONE_MACHINE),
    f"{_POD}.securityContext.runAsUser": _h(),
    f"{_POD}.securityContext.runAsGroup": _h(),
    f"{_POD}.volumes": _r(VOLUMES_LATER),
    f"{_POD}.initContainers": _r(f"init containers are {_NOT_RUN} yet"),
    f"{_POD}.ephemeralContainers": _r(f"ephemeral containers are {_NOT_RUN}"),
    f"{_POD}.activeDeadlineSeconds": _r("use the TrainJob's spec.activeDeadlineSeconds"),
    f"{_POD}.hostAliases": _r("the pod's /etc/hosts is Trainer's host names only; remove hostAliases"),
    f"{_POD}.containers": _h(),
    f"{_CTR}": _w(f"{_NOT_RUN} on one machine"),
    f"{_CTR}.name": _h(),
    f"{_CTR}.command": _h(),
    f"{_CTR}.args": _h(),
    f"{_CTR}.env": _h(),
    f"{_CTR}.env[].valueFrom": TRAINJOB["spec.trainer.env[].valueFrom"],
    f"{_CTR}.envFrom": _r("env from a Secret or ConfigMap is not resolved by the local cluster yet; list the "
                          "variables in env"),
    f"{_CTR}.resources": _h(),
    f"{_CTR}.workingDir": _h(),
    f"{_CTR}.ports": _h(),
    f"{_CTR}.readinessProbe": _h(),
    f"{_CTR}.securityContext.runAsUser": _h(),
    f"{_CTR}.securityContext.runAsGroup": _h(),
    f"{_CTR}.image": TRAINJOB["spec.trainer.image"],
    f"{_CTR}.volumeMounts": _r(VOLUMES_LATER),
    f"{_CTR}.volumeDevices": _r(VOLUMES_LATER),
    f"{_CTR}.lifecycle": _r(f"lifecycle hooks are {_NOT_RUN} yet"),
}

RULES: dict[str, dict[str, Rule]] = {"TrainJob": TRAINJOB, "TrainingRuntime": RUNTIME,
                                     "ClusterTrainingRuntime": RUNTIME}


def rule_for(kind: str, path: str) -> tuple[str, Rule] | None:
    """The rule that covers a field path (its own, else its nearest ancestor's) and the path it is for."""
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
    for where, path in _set_fields(obj):
        covered = rule_for(kind, path)
        rule_path, rule = covered if covered else (path, _r("not supported by the local cluster"))
        at = _concrete(where, rule_path) if rule.verdict == REFUSED else where  # a refusal names its rule's field
        if rule.verdict == HONOURED or at in seen:
            continue
        seen.add(at)
        if rule.verdict == REFUSED:
            found.causes.append(Cause(at, f"Forbidden: {rule.why}", "FieldValueForbidden"))
        else:
            found.warnings.append(f"{at}: {rule.why}")
    found.warnings += _unrun_steps(kind, obj)
    return found


def _set_fields(node: Any, where: str = "", path: str = "") -> Iterator[tuple[str, str]]:
    """`(concrete path, rule path)` of every field set to something (empty lists and maps are unset)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _set_fields(value, f"{where}.{key}" if where else key, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _set_fields(item, f"{where}[{i}]", f"{path}[]")
    elif node is not None:
        yield where, path


def _concrete(where: str, rule_path: str) -> str:
    """The prefix of a concrete path (`a[2].b.c`) that a rule path (`a[].b`) names."""
    depth = rule_path.count(".") + rule_path.count("[]")
    parts, i = [], 0
    for token in where.replace("[", ".[").split("."):
        if i == depth + 1:
            break
        parts.append(token)
        i += 1
    return ".".join(parts).replace(".[", "[")


def _unrun_steps(kind: str, obj: dict[str, Any]) -> list[str]:
    """ReplicatedJobs other than the MPI launcher and nodes (initializers) are stored, not run."""
    if kind not in ("TrainingRuntime", "ClusterTrainingRuntime"):
        return []
    rjobs = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    return [f"spec.template.spec.replicatedJobs[{i}]: replicatedJob {rj.get('name')!r} is {_NOT_RUN}: only "
            "'launcher' and 'node' run here" for i, rj in enumerate(rjobs)
            if rj.get("name") not in ("launcher", "node")]
