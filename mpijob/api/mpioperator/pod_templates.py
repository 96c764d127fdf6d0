"""An MPIJob's pod templates converted: the Launcher's and Worker's become the generated runtime's launcher
and node replicatedJobs, and what a TrainJob has a field for (the launcher's image, command, args, env,
resources) goes into its spec.trainer instead. Each field gets its line of the report. Pure: no I/O.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from mpijob.api import names
from mpijob.api.core.errors import Cause
from mpijob.api.mpioperator.report import DROPPED, MAPPED, RUNTIME, is_set
from mpijob.api.trainer.runtimes import bundled

if TYPE_CHECKING:
    from mpijob.api.mpioperator.convert import Converter

BUNDLED_NODE_FIELDS = ("image", "command", "args", "ports", "readinessProbe")  # what mpi-distributed's node sets
NODE_INDEX, LAUNCHER_INDEX = 0, 1  # the runtime's replicatedJobs: node first, as upstream's MPI runtimes

_LAUNCHER_FIELD = ("a TrainJob carries only the launcher's image, command, args, env and resources: the rest of "
                   "its container is the runtime's")
_WORKER_FIELD = "the workers' pod template is the runtime's node replicatedJob: a TrainJob changes only the launcher"
_ENTRYPOINT = ("with no command, the image's entrypoint runs these args (MPI Operator's Intel and MPICH images "
               "set their MPI up there, then exec them); the local cluster, which runs no image entrypoints, runs "
               "the args themselves")
_KEY = ("renamed node: Trainer mounts the SSH key only into containers named node and applies spec.trainer "
        "to them")


def rjob(index: int, rest: str = "") -> str:
    """A path into the generated runtime's pod template of replicatedJob `index`."""
    return f"spec.template.spec.replicatedJobs[{index}].template.spec.template{rest}"


def bundled_node() -> tuple[dict, dict]:
    """mpi-distributed's MPI policy and node container, what a job must match to run on it as is."""
    spec = bundled()[0]["spec"]
    (node,) = [rj for rj in spec["template"]["spec"]["replicatedJobs"] if rj["name"] == names.NODE]
    return spec["mlPolicy"]["mpi"], node["template"]["spec"]["template"]["spec"]["containers"][0]


def convert_template(conv: Converter, rtype: str, template: Any) -> None:
    """Split replica `rtype`'s pod template between the runtime's replicatedJob and spec.trainer, a report
    line per field set; a template with no container is a cause, as there is nothing to run."""
    where = f"spec.mpiReplicaSpecs.{rtype}.template"
    index = LAUNCHER_INDEX if rtype == names.REPLICA_LAUNCHER else NODE_INDEX
    containers = ((template or {}).get("spec") or {}).get("containers") if isinstance(template, dict) else None
    if not containers or not isinstance(containers, list) or not isinstance(containers[0], dict):
        conv.causes.append(Cause(f"{where}.spec.containers", "Required value: a pod template with at least one "
                                 "container; the first one is the MPI container", "FieldValueRequired"))
        return
    out = conv.templates[index]
    for key, value in template.items():
        if not is_set(value):
            continue
        if key == "metadata" and isinstance(value, dict):
            for mkey, mvalue in value.items():
                if not is_set(mvalue):
                    continue
                if mkey in ("labels", "annotations"):
                    out.setdefault("metadata", {})[mkey] = copy.deepcopy(mvalue)
                    conv.add(f"{where}.metadata.{mkey}", RUNTIME, rjob(index, f".metadata.{mkey}"),
                             "a pod template of the runtime")
                else:
                    conv.add(f"{where}.metadata.{mkey}", DROPPED, why="the Job controller names its pods")
        elif key == "spec":
            _pod_spec(conv, rtype, index, value)
        else:
            conv.add(f"{where}.{key}", DROPPED, why="not a field of a pod template")


def _pod_spec(conv: Converter, rtype: str, index: int, pod: dict) -> None:
    where = f"spec.mpiReplicaSpecs.{rtype}.template.spec"
    out = conv.templates[index]["spec"]
    for key, value in pod.items():
        if not is_set(value) or key == "containers":
            continue
        if key == "restartPolicy" and value == "Always":
            conv.add(f"{where}.{key}", DROPPED, why="a JobSet's Jobs take OnFailure or Never; left out, JobSet "
                     "picks for them")
            continue
        out[key] = copy.deepcopy(value)
        conv.add(f"{where}.{key}", RUNTIME, rjob(index, f".spec.{key}"), "a pod template field of the runtime")
    containers = pod["containers"]
    out["containers"] = [{} for _ in containers]
    _main_container(conv, rtype, index, containers[0], out["containers"][0])
    for k, c in enumerate(containers[1:], 1):
        out["containers"][k] = copy.deepcopy(c)
        conv.add(f"{where}.containers[{k}]", RUNTIME, rjob(index, f".spec.containers[{k}]"),
                 f"a second container runs beside {names.CONTAINER} on a cluster; the local cluster runs only "
                 f"the one named {names.CONTAINER}")


def _main_container(conv: Converter, rtype: str, index: int, c: dict, out: dict) -> None:
    where = f"spec.mpiReplicaSpecs.{rtype}.template.spec.containers[0]"
    at = rjob(index, ".spec.containers[0]")
    out["name"] = names.CONTAINER
    launcher = rtype == names.REPLICA_LAUNCHER
    node = bundled_node()[1]
    for key, value in c.items():
        if not is_set(value):
            continue
        fld = f"{where}.{key}"
        if key == "name":
            conv.add(fld, RUNTIME, f"{at}.name", _KEY, bundled_at=f"container {names.CONTAINER}")
        elif launcher and key in ("image", "command", "args"):
            conv.trainer[key] = copy.deepcopy(value)
            if key == "image":
                out["image"] = value
            why = "Trainer applies it to the launcher's node container" if key == "image" else ""
            if key == "args" and not is_set(c.get("command")):
                why = _ENTRYPOINT
            conv.add(fld, MAPPED, f"spec.trainer.{key}", why)
        elif launcher and key == "env" and isinstance(value, list):
            _launcher_env(conv, where, at, value, out)
        elif key == "resources":
            _resources(conv, fld, at, rtype, value, out)
        else:
            out[key] = copy.deepcopy(value)
            same = not launcher and key in BUNDLED_NODE_FIELDS and node.get(key) == value
            why = _LAUNCHER_FIELD if launcher else _WORKER_FIELD
            if key == "args" and not is_set(c.get("command")):
                why = f"{_WORKER_FIELD}; {_ENTRYPOINT}"
            conv.add(fld, RUNTIME, f"{at}.{key}", why,
                     bundled_at=f"node container {key}" if same else None)


def _launcher_env(conv: Converter, where: str, at: str, env: list, out: dict) -> None:
    for j, var in enumerate(env):
        fld = f"{where}.env[{j}]"
        name = var.get("name") if isinstance(var, dict) else None
        if name in names.RESERVED_ENV or (isinstance(var, dict) and is_set(var.get("valueFrom"))):
            out.setdefault("env", []).append(copy.deepcopy(var))
            conv.add(fld, RUNTIME, f"{at}.env[{len(out['env']) - 1}]",
                     "Trainer refuses it in spec.trainer.env (it sets that variable itself)"
                     if name in names.RESERVED_ENV else "a value from a Secret, ConfigMap or field stays on the "
                     "launcher container (the local cluster refuses valueFrom)")
        else:
            conv.trainer.setdefault("env", []).append(copy.deepcopy(var))
            conv.add(fld, MAPPED, f"spec.trainer.env[{len(conv.trainer['env']) - 1}]",
                     "it reaches the launcher, and the nodes too when the launcher is a node")


def _resources(conv: Converter, fld: str, at: str, rtype: str, value: Any, out: dict) -> None:
    """Worker resources become resourcesPerNode when the launcher is a host (Trainer then applies them to
    every host); otherwise each stays on its own pod template, as resourcesPerNode would reach only the
    launcher."""
    if not conv.launcher_as_worker:
        out["resources"] = copy.deepcopy(value)
        conv.add(fld, RUNTIME, f"{at}.resources", "spec.trainer.resourcesPerNode would reach the launcher only "
                 "(it is no host), so each pod template keeps its own")
        return
    worker = _worker_resources(conv.src)
    if rtype == names.REPLICA_WORKER or value == worker:
        conv.trainer["resourcesPerNode"] = copy.deepcopy(worker if worker else value)
        conv.add(fld, MAPPED, "spec.trainer.resourcesPerNode", "the resources of every host, the launcher "
                 "included (it is a node)")
    else:
        out["resources"] = copy.deepcopy(value)
        conv.add(fld, RUNTIME, f"{at}.resources", "it differs from the Worker's, which spec.trainer."
                 "resourcesPerNode merges over it key by key (the launcher is a node)")


def _worker_resources(src: dict) -> Any:
    try:
        return src["spec"]["mpiReplicaSpecs"][names.REPLICA_WORKER]["template"]["spec"]["containers"][0] \
            .get("resources")
    except (KeyError, TypeError, IndexError, AttributeError):
        return None

