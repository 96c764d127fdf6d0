"""Building the upstream TrainJob from a handful of keyword fields: the one writer of that object for
`mpijob create trainjob` and the SDK's `TrainJob.to_object()`.

Pure (no I/O): the object it returns is exactly what the same job written as YAML would be, so the
server validates, defaults and runs both the same way. The cheap rules the server would apply (and a
few of Trainer's webhook) are checked here, before any request, and reported together as a 422
`ApiError` whose causes name the upstream field, the value and the fix. `field_causes` exposes each
field's rule so the SDK reports the same rules under its snake_case names without a second copy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core import errors
from mpijob.api.core.errors import Cause
from mpijob.api.core.labels import is_label_value, is_qualified_name
from mpijob.api.core.quantity import parse_quantity

GROUP = names.TRAINER_GROUP
API_VERSION = names.TRAINER_API_VERSION
RUNTIME_KIND = "ClusterTrainingRuntime"
DEFAULT_RUNTIME = "mpi-distributed"
QUEUE_LABEL = names.LABEL_QUEUE_NAME
PRIORITY_LABEL = names.LABEL_PRIORITY_CLASS
GPU = "nvidia.com/gpu"
LIMITS = "spec.trainer.resourcesPerNode.limits"

# The CLI's per-resource conveniences and the `resources` key each one writes.
CONVENIENCES = {"gpus": GPU, "cpu": "cpu", "memory": "memory"}

# Where each keyword field of `build_trainjob` lands in the upstream object, so causes name it.
SPEC_PATH = {
    "name": "metadata.name",
    "namespace": "metadata.namespace",
    "labels": "metadata.labels",
    "queue": f"metadata.labels[{QUEUE_LABEL}]",
    "priority": f"metadata.labels[{PRIORITY_LABEL}]",
    "runtime": "spec.runtimeRef.name",
    "num_nodes": "spec.trainer.numNodes",
    "num_proc_per_node": "spec.trainer.numProcPerNode",
    "command": "spec.trainer.command",
    "args": "spec.trainer.args",
    "env": "spec.trainer.env",
    "image": "spec.trainer.image",
    "resources": "spec.trainer.resourcesPerNode",
    **{conv: f"{LIMITS}[{key}]" for conv, key in CONVENIENCES.items()},
}

_QUANTITY_EXAMPLE = {"cpu": "4 or '500m'", "memory": "'8Gi' or '512Mi'", GPU: "1"}


def _bad(field: str, value: object, fix: str, reason: str = "FieldValueInvalid") -> Cause:
    return Cause(field, f"Invalid value: {value!r}: {fix}", reason)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- one rule per keyword field --------------------------------------------------------------------


def _name(value: Any) -> list[Cause]:
    field = SPEC_PATH["name"]
    if isinstance(value, str) and len(value) > 63:
        return [_bad(field, value, f"has {len(value)} characters; a TrainJob name has at most 63, e.g. 'my-job'")]
    if not isinstance(value, str) or not names.RFC1035_LABEL.match(value):
        return [_bad(field, value, "a TrainJob name is a lower-case RFC 1035 label of at most 63 characters "
                     "(letters, digits, '-'; starts with a letter, ends with a letter or digit), e.g. 'my-job'")]
    return []


def _namespace(value: Any) -> list[Cause]:
    if not isinstance(value, str) or len(value) > 63 or not names.DNS1123_LABEL.match(value):
        return [_bad(SPEC_PATH["namespace"], value, "not a namespace name: a namespace is a lower-case DNS-1123 "
                     "label of at most 63 characters, e.g. 'team-a'")]
    return []


def _runtime(value: Any) -> list[Cause]:
    if not isinstance(value, str) or len(value) > 253 or not names.DNS1123_SUBDOMAIN.match(value):
        return [_bad(SPEC_PATH["runtime"], value, "not a runtime name: name an installed ClusterTrainingRuntime "
                     f"(`mpijob get runtimes`), e.g. {DEFAULT_RUNTIME!r}")]
    return []


def _num_nodes(value: Any) -> list[Cause]:
    if not _is_int(value) or value < 1:  # the local cluster's own upper limit is its server's to enforce
        return [_bad(SPEC_PATH["num_nodes"], value, "the number of nodes must be a whole number of at least 1")]
    return []


def _num_proc_per_node(value: Any) -> list[Cause]:
    if not _is_int(value) or value < 1:
        return [_bad(SPEC_PATH["num_proc_per_node"], value, "the MPI slots (ranks) per node must be a whole "
                     "number of at least 1")]
    return []


def _words(field: str, what: str, example: str, allow_empty: bool) -> Callable[[Any], list[Cause]]:
    def check(value: Any) -> list[Cause]:
        if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(w, str) for w in value):
            return [_bad(SPEC_PATH[field], value, f"give the {what} as a list of strings, e.g. {example}")]
        if not value and not allow_empty:
            return [_bad(SPEC_PATH[field], value, f"the {what} is empty: give the program and its arguments, "
                         f"e.g. {example}")]
        return []

    return check


def _env(value: Any) -> list[Cause]:
    field = SPEC_PATH["env"]
    if not isinstance(value, Mapping):
        return [_bad(field, value, "give the environment as a mapping of NAME to value, e.g. {'OMP_NUM_THREADS': "
                     "'4'}")]
    causes = []
    if len(value) > names.MAX_ENV:
        causes.append(Cause(field, f"Too many: {len(value)} variables: at most {names.MAX_ENV} are allowed; set the "
                                   "rest in the program or its runtime", "FieldValueTooMany"))
    for key, val in value.items():
        if key in names.RESERVED_ENV:
            causes.append(_bad(field, key, "reserved: the MPI launcher sets it itself (hostfile, slots and ssh "
                               "arguments come from the runtime); remove it"))
        elif not isinstance(key, str) or not names.C_IDENTIFIER.match(key):
            causes.append(_bad(field, key, "not a valid variable name: use letters, digits and '_', not starting "
                               "with a digit (e.g. 'MY_VAR')"))
        if not isinstance(val, str):
            causes.append(_bad(field, val, f"the value of {key} must be a string; quote it, e.g. '{val}'"))
    return causes


def _quantity(key: str, value: Any) -> list[Cause]:
    field = f"{LIMITS}[{key}]"
    if not is_qualified_name(key):
        return [_bad(field, key, "not a resource name: use e.g. 'cpu', 'memory' or 'nvidia.com/gpu'")]
    example = _QUANTITY_EXAMPLE.get(key, "2, '500m' or '4Gi'")
    try:
        amount = parse_quantity(value)
    except ValueError:
        return [_bad(field, value, f"{key} is not a quantity: use a Kubernetes quantity, e.g. {example}")]
    if amount < 0:
        return [_bad(field, value, f"{key} must not be negative, e.g. {example}")]
    if "/" in key and amount != amount.to_integral_value():
        return [_bad(field, value, f"{key} is an extended resource, counted in whole units, e.g. 1")]
    return []


def _gpus(value: Any) -> list[Cause]:
    if not _is_int(value) or value < 0:
        return [_bad(SPEC_PATH["gpus"], value, "GPUs per node must be a whole number ≥ 0")]
    return []


def _resources(value: Any) -> list[Cause]:
    if not isinstance(value, Mapping):
        return [_bad(SPEC_PATH["resources"], value, "give the resources per node as a mapping, e.g. {'cpu': 2, "
                     "'memory': '4Gi', 'nvidia.com/gpu': 1}")]
    return [c for key, q in value.items() for c in _quantity(key, q)]


def _queue_name(field: str, kind: str) -> Callable[[Any], list[Cause]]:
    def check(value: Any) -> list[Cause]:
        # an object name (DNS-1123) that is also a label value (at most 63 characters)
        if not isinstance(value, str) or len(value) > 63 or not names.DNS1123_SUBDOMAIN.match(value):
            return [_bad(SPEC_PATH[field], value, f"not a {kind} name: a lower-case DNS-1123 name of at most 63 "
                         "characters, e.g. 'team-a'")]
        return []

    return check


def _labels(value: Any) -> list[Cause]:
    if not isinstance(value, Mapping):
        return [_bad(SPEC_PATH["labels"], value, "give the labels as a mapping, e.g. {'app': 'pi'}")]
    causes = []
    for key, val in value.items():
        field = f"metadata.labels[{key}]"
        if not is_qualified_name(key):
            causes.append(_bad(field, key, "not a label key: an optional DNS prefix and '/', then at most 63 "
                               "letters, digits, '-', '_' or '.', e.g. 'app' or 'example.com/team'"))
        if not is_label_value(val):
            causes.append(_bad(field, val, "not a label value: at most 63 letters, digits, '-', '_' or '.', "
                               "starting and ending with a letter or digit"))
    return causes


def _cpu(value: Any) -> list[Cause]:
    return _quantity("cpu", value)


def _memory(value: Any) -> list[Cause]:
    return _quantity("memory", value)


def _image(value: Any) -> list[Cause]:
    if not isinstance(value, str):
        return [_bad(SPEC_PATH["image"], value, "give the image as a string, e.g. 'ghcr.io/me/train:1'")]
    return []


_RULES: dict[str, Callable[[Any], list[Cause]]] = {
    "name": _name,
    "namespace": _namespace,
    "runtime": _runtime,
    "num_nodes": _num_nodes,
    "num_proc_per_node": _num_proc_per_node,
    "command": _words("command", "command", "['mpirun', 'python', 'train.py']", allow_empty=False),
    "args": _words("args", "args", "['--lr', '0.1']", allow_empty=True),
    "env": _env,
    "image": _image,
    "gpus": _gpus,
    "cpu": _cpu,
    "memory": _memory,
    "resources": _resources,
    "queue": _queue_name("queue", "LocalQueue"),
    "priority": _queue_name("priority", "WorkloadPriorityClass"),
    "labels": _labels,
}
_REQUIRED = ("name", "runtime")


def field_causes(field: str, value: Any) -> list[Cause]:
    """What is wrong with one keyword field of `build_trainjob` (`[]`: nothing; `None` is "unset" for
    every field but `name` and `runtime`). Each cause names the upstream field, the value and the fix."""
    if value is None and field not in _REQUIRED:
        return []
    return _RULES[field](value)


def _conflicts(fields: Mapping[str, Any]) -> list[Cause]:
    """Two keywords that would write the same key: refused rather than silently picking one."""
    causes = []
    pairs = [(conv, "resources", key) for conv, key in CONVENIENCES.items()]
    pairs += [("queue", "labels", QUEUE_LABEL), ("priority", "labels", PRIORITY_LABEL)]
    for single, mapping, key in pairs:
        given = fields.get(mapping)
        if fields.get(single) is not None and isinstance(given, Mapping) and key in given:
            causes.append(_bad(SPEC_PATH[single], fields[single], f"{single}= and {mapping}[{key!r}]="
                               f"{given[key]!r} both set it; give only one of them"))
    return causes


def _check(fields: Mapping[str, Any]) -> list[Cause]:
    """Every problem of the keyword fields at once (each field's rule, then the conflicts between them)."""
    causes = [c for field, value in fields.items() for c in field_causes(field, value)]
    return causes + _conflicts(fields)


def _split_env(pairs: Sequence[str]) -> tuple[dict[str, str], list[Cause]]:
    env: dict[str, str] = {}
    causes = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            causes.append(Cause("spec.trainer.env", f"Invalid value: {pair!r}: write it as NAME=VALUE "
                                "(e.g. --env OMP_NUM_THREADS=4)"))
            continue
        if key in env:
            causes.append(Cause("spec.trainer.env", f"Duplicate value: {key!r}: it is given twice "
                                f"({key}={env[key]!r} and {key}={value!r}); give each NAME once",
                                "FieldValueDuplicate"))
        env[key] = value
    return env, causes


def build_trainjob(
    name: str,
    *,
    num_nodes: int | None = None,
    num_proc_per_node: int | None = None,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    env: Mapping[str, str] | Sequence[str] | None = None,
    image: str | None = None,
    gpus: int | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    resources: Mapping[str, str | int] | None = None,
    queue: str | None = None,
    priority: str | None = None,
    runtime: str = DEFAULT_RUNTIME,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Obj:
    """The `trainer.kubeflow.org/v1alpha1` TrainJob these fields describe; fields left `None` are
    left out so the runtime's defaults apply (as when a YAML omits them).

    `env` is a mapping or `["K=V", …]`. `resources` are the per-node limits (any resource name);
    `gpus`, `cpu` and `memory` are shorthands for three of its keys, so giving one together with the
    same key in `resources` is an error, as are `queue`/`priority` together with their label in
    `labels`. Raises a 422 `ApiError` listing every problem."""
    if isinstance(env, Mapping) or env is None:
        env_map: Any = env if env is None else dict(env)
        causes: list[Cause] = []
    else:
        env_map, causes = _split_env(list(env))
    fields: dict[str, Any] = {
        "name": name, "namespace": namespace, "runtime": runtime, "num_nodes": num_nodes,
        "num_proc_per_node": num_proc_per_node, "command": command, "args": args, "env": env_map, "image": image,
        "gpus": gpus, "cpu": cpu, "memory": memory, "resources": resources, "queue": queue, "priority": priority,
        "labels": labels,
    }
    causes += _check(fields)
    if causes:
        raise errors.invalid("TrainJob", name if isinstance(name, str) else "", causes, GROUP)

    trainer: Obj = {}
    if image:
        trainer["image"] = image
    if command is not None:
        trainer["command"] = list(command)
    if args is not None:  # [] is kept: upstream, an empty list overrides the runtime's args
        trainer["args"] = list(args)
    if env_map:
        trainer["env"] = [{"name": k, "value": v} for k, v in env_map.items()]
    if num_nodes is not None:
        trainer["numNodes"] = num_nodes
    if num_proc_per_node is not None:
        trainer["numProcPerNode"] = num_proc_per_node
    limits: Obj = {}
    if gpus:
        limits[GPU] = gpus
    if cpu is not None:
        limits["cpu"] = str(cpu)
    if memory is not None:
        limits["memory"] = str(memory)
    limits.update(resources or {})
    if limits:
        # limits only, as Kubernetes defaults requests to limits
        trainer["resourcesPerNode"] = {"limits": limits}
    all_labels = {**(labels or {}), **{k: v for k, v in ((QUEUE_LABEL, queue), (PRIORITY_LABEL, priority)) if v}}
    metadata: Obj = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if all_labels:
        metadata["labels"] = all_labels
    spec: Obj = {"runtimeRef": {"name": runtime, "apiGroup": GROUP, "kind": RUNTIME_KIND}}
    if trainer:
        spec["trainer"] = trainer
    return {"apiVersion": API_VERSION, "kind": "TrainJob", "metadata": metadata, "spec": spec}
