"""Building the upstream TrainJob from a handful of keyword fields (`mpijob create trainjob`, the SDK).

Pure (no I/O): the object it returns is exactly what the same job written as YAML would be, so the
server validates, defaults and runs both the same way. Errors are raised before any request, as a
422 `ApiError` whose causes name the upstream field, the value and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from mpijob.api import errors
from mpijob.api.errors import Cause

Obj = dict[str, Any]

GROUP = "trainer.kubeflow.org"
API_VERSION = f"{GROUP}/v1alpha1"
DEFAULT_RUNTIME = "mpi-distributed"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GPU = "nvidia.com/gpu"

_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_RFC1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_QUANTITY = re.compile(r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def _split_env(pairs: Sequence[str]) -> tuple[dict[str, str], list[Cause]]:
    env: dict[str, str] = {}
    causes = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            causes.append(Cause("spec.trainer.env", f"Invalid value: {pair!r}: write it as NAME=VALUE "
                                "(e.g. --env OMP_NUM_THREADS=4)"))
            continue
        env[key] = value
    return env, causes


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    """`["K=V", …]` (the CLI's repeatable `--env`) as an ordered mapping; the value may contain `=`."""
    env, causes = _split_env(pairs)
    if causes:
        raise errors.invalid("TrainJob", "", causes, GROUP)
    return env


def _check(name: str, num_nodes: int | None, num_proc_per_node: int | None, env: Mapping[str, str],
           gpus: int | None, cpu: str | None, memory: str | None, queue: str | None, priority: str | None,
           runtime: str, namespace: str | None, command: Sequence[str] | None) -> list[Cause]:
    causes: list[Cause] = []

    def bad(field: str, value: object, fix: str) -> None:
        causes.append(Cause(field, f"Invalid value: {value!r}: {fix}"))

    if not name or len(name) > 63 or not _RFC1035.match(name):
        bad("metadata.name", name, "a TrainJob name is a lower-case RFC 1035 label of at most 63 characters "
            "(letters, digits, '-'; starts with a letter), e.g. 'my-job'")
    if namespace is not None and (len(namespace) > 63 or not _RFC1123.match(namespace) or "." in namespace):
        bad("metadata.namespace", namespace, "a namespace is a lower-case RFC 1123 label, e.g. 'team-a'")
    if not runtime or not _RFC1123.match(runtime):
        bad("spec.runtimeRef.name", runtime, "name an installed runtime (`mpijob get runtimes`), e.g. "
            f"{DEFAULT_RUNTIME!r}")
    for field, value, flag in (("spec.trainer.numNodes", num_nodes, "nodes"),
                               ("spec.trainer.numProcPerNode", num_proc_per_node, "procs per node")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            bad(field, value, f"the number of {flag} must be a whole number of at least 1")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
        bad(f"spec.trainer.resourcesPerNode.limits[{GPU}]", gpus, "GPUs per node must be a whole number ≥ 0")
    for field, value, example in (("cpu", cpu, "'4' or '500m'"), ("memory", memory, "'8Gi' or '512Mi'")):
        if value is not None and not _QUANTITY.match(str(value)):
            bad(f"spec.trainer.resourcesPerNode.limits.{field}", value, f"use a Kubernetes quantity, e.g. {example}")
    for key in env:
        if not _ENV_NAME.match(key):
            bad("spec.trainer.env", key, "an environment variable name has letters, digits, '_', '-', '.' and "
                "does not start with a digit")
    for field, value in (("metadata.labels[" + QUEUE_LABEL + "]", queue),
                         ("metadata.labels[" + PRIORITY_LABEL + "]", priority)):
        if value is not None and (len(value) > 63 or not _RFC1123.match(value) or "." in value):
            bad(field, value, "a queue or priority class name is a lower-case RFC 1123 label, e.g. 'team-a'")
    if command is not None and (isinstance(command, str) or not all(isinstance(c, str) for c in command)):
        bad("spec.trainer.command", command, "give the command as a list of strings, e.g. ['mpirun', 'python', "
            "'train.py']")
    return causes


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
    queue: str | None = None,
    priority: str | None = None,
    runtime: str = DEFAULT_RUNTIME,
    namespace: str | None = None,
) -> Obj:
    """The `trainer.kubeflow.org/v1alpha1` TrainJob these fields describe; fields left `None` are
    left out so the runtime's defaults apply (as when a YAML omits them). `env` is a mapping or
    `["K=V", …]`."""
    env_causes: list[Cause] = []
    if isinstance(env, Mapping):
        env_map = {str(k): str(v) for k, v in env.items()}
    else:
        env_map, env_causes = _split_env(list(env or []))
    causes = env_causes + _check(name, num_nodes, num_proc_per_node, env_map, gpus, cpu, memory, queue,
                                 priority, runtime, namespace, command)
    if args is not None and (isinstance(args, str) or not all(isinstance(a, str) for a in args)):
        causes.append(Cause("spec.trainer.args", f"Invalid value: {args!r}: give the args as a list of strings"))
    if causes:
        raise errors.invalid("TrainJob", name or "", causes, GROUP)
    trainer: Obj = {}
    if image:
        trainer["image"] = image
    if command:
        trainer["command"] = list(command)
    if args:
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
    if limits:
        trainer["resourcesPerNode"] = {"limits": limits}
    labels = {k: v for k, v in ((QUEUE_LABEL, queue), (PRIORITY_LABEL, priority)) if v}
    metadata: Obj = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    spec: Obj = {"runtimeRef": {"name": runtime, "apiGroup": GROUP, "kind": "ClusterTrainingRuntime"}}
    if trainer:
        spec["trainer"] = trainer
    return {"apiVersion": API_VERSION, "kind": "TrainJob", "metadata": metadata, "spec": spec}

