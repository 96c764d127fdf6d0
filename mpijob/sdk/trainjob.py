"""`TrainJob`: a typed, validated builder of the upstream Kubeflow Trainer TrainJob.

Keyword fields in snake_case mirror `spec.trainer`; every mistake the server would reject cheaply
(name, node count, reserved Open MPI env, env names, quantities, label values) raises `InvalidInput`
when the object is built, so a notebook learns about it before any request. `to_object()` is the
plain `trainer.kubeflow.org/v1alpha1` TrainJob the CLI, kubectl and the server all understand.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from mpijob.api import names as n
from mpijob.api.quantity import is_quantity
from mpijob.api.trainjob import MAX_ENV, MAX_NUM_NODES
from mpijob.sdk.errors import Cause, InvalidInput

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
DEFAULT_RUNTIME = "mpi-distributed"
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# snake_case field → where it lands in the upstream object, so causes name both
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
    "resources_per_node": "spec.trainer.resourcesPerNode",
}


def _label_value(value: str | None, what: str) -> str | None:
    if value is not None and (len(value) > 63 or not _LABEL_VALUE.match(value)):
        raise ValueError(f"{value!r} is not a valid {what}: at most 63 letters, digits, '-', '_' or '.', "
                         "starting and ending with a letter or digit")
    return value


class TrainJob(BaseModel):
    """An MPI TrainJob: `TrainJob(name="pi", num_nodes=4, command=["mpirun", "python", "pi.py"])`.

    Unset optional fields are left to the runtime (`runtime`, default `mpi-distributed`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    name: str = Field(description="RFC 1035 label, at most 63 characters (e.g. 'pi-2').")
    num_nodes: int | None = Field(None, description=f"Nodes (1..{MAX_NUM_NODES}); default: the runtime's.")
    num_proc_per_node: int | None = Field(None, description="MPI slots (ranks) per node; default: the runtime's.")
    command: list[str] | None = Field(None, description="The launcher's command, e.g. ['mpirun', 'python', 'x.py'].")
    args: list[str] | None = Field(None, description="Arguments appended to the command.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment of the launcher (and every rank).")
    image: str | None = Field(None, description="Container image (recorded on the local cluster, pulled on Kubernetes).")
    resources_per_node: dict[str, str | int] = Field(
        default_factory=dict, description="Per-node resources, e.g. {'cpu': 2, 'memory': '4Gi', 'nvidia.com/gpu': 1}.")
    runtime: str = Field(DEFAULT_RUNTIME, description="The ClusterTrainingRuntime to run on.")
    queue: str | None = Field(None, description="Kueue LocalQueue (label kueue.x-k8s.io/queue-name).")
    priority: str | None = Field(None, description="WorkloadPriorityClass (label kueue.x-k8s.io/priority-class).")
    namespace: str | None = Field(None, description="Namespace; default: the client's.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra metadata.labels.")

    @model_validator(mode="wrap")
    @classmethod
    def _as_invalid_input(cls, data: Any, handler: Any) -> Any:
        """Pydantic's errors become one `InvalidInput` naming each field, its value and the fix."""
        try:
            return handler(data)
        except ValidationError as exc:
            raise _invalid(exc, data) from None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if len(v) > 63:
            raise ValueError(f"{v!r} has {len(v)} characters; a TrainJob name has at most 63")
        if not n.RFC1035_LABEL.match(v):
            raise ValueError(f"{v!r} is not an RFC 1035 label: use lower-case letters, digits and '-', "
                             "starting with a letter and ending with a letter or digit (e.g. 'pi-2')")
        return v

    @field_validator("num_nodes")
    @classmethod
    def _num_nodes(cls, v: int | None) -> int | None:
        if v is not None and not 1 <= v <= MAX_NUM_NODES:
            raise ValueError(f"{v} is out of range: set num_nodes to 1..{MAX_NUM_NODES}")
        return v

    @field_validator("num_proc_per_node")
    @classmethod
    def _procs(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"{v} is out of range: set num_proc_per_node to at least 1 (MPI ranks per node)")
        return v

    @field_validator("command")
    @classmethod
    def _command(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and not v:
            raise ValueError("[] is empty: give the program and its arguments, e.g. ['mpirun', 'python', 'x.py']")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) > MAX_ENV:
            raise ValueError(f"{len(v)} variables: at most {MAX_ENV} are allowed")
        for key in v:
            if key in n.RESERVED_ENV:
                raise ValueError(f"{key!r} is reserved: the MPI launcher sets it itself (hostfile, slots and "
                                 "ssh arguments come from the runtime); remove it")
            if not n.C_IDENTIFIER.match(key):
                raise ValueError(f"{key!r} is not a valid variable name: use letters, digits and '_', not "
                                 "starting with a digit (e.g. 'MY_VAR')")
        return v

    @field_validator("resources_per_node")
    @classmethod
    def _resources(cls, v: dict[str, str | int]) -> dict[str, str | int]:
        for key, q in v.items():
            if not is_quantity(q):
                raise ValueError(f"{key}={q!r} is not a quantity: use e.g. 2, '500m' or '4Gi'")
        return v

    @field_validator("runtime")
    @classmethod
    def _runtime(cls, v: str) -> str:
        if not v or not n.DNS1123_SUBDOMAIN.match(v):
            raise ValueError(f"{v!r} is not a runtime name: name a ClusterTrainingRuntime such as 'mpi-distributed'")
        return v

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str | None) -> str | None:
        if v is not None and (len(v) > 63 or not n.DNS1123_LABEL.match(v)):
            raise ValueError(f"{v!r} is not a namespace name: a DNS-1123 label such as 'default'")
        return v

    @field_validator("queue")
    @classmethod
    def _queue(cls, v: str | None) -> str | None:
        return _label_value(v, "LocalQueue name")

    @field_validator("priority")
    @classmethod
    def _priority(cls, v: str | None) -> str | None:
        return _label_value(v, "WorkloadPriorityClass name")

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        for key, val in v.items():
            _label_value(val, f"value for label {key!r}")
        return v

    def to_object(self) -> dict[str, Any]:
        """The upstream TrainJob (`trainer.kubeflow.org/v1alpha1`), ready to POST or dump as YAML."""
        labels = dict(self.labels)
        if self.queue:
            labels[QUEUE_LABEL] = self.queue
        if self.priority:
            labels[PRIORITY_LABEL] = self.priority
        metadata: dict[str, Any] = {"name": self.name}
        if self.namespace:
            metadata["namespace"] = self.namespace
        if labels:
            metadata["labels"] = labels
        trainer: dict[str, Any] = {}
        if self.image:
            trainer["image"] = self.image
        if self.command is not None:
            trainer["command"] = list(self.command)
        if self.args is not None:
            trainer["args"] = list(self.args)
        if self.env:
            trainer["env"] = [{"name": k, "value": v} for k, v in self.env.items()]
        if self.num_nodes is not None:
            trainer["numNodes"] = self.num_nodes
        if self.num_proc_per_node is not None:
            trainer["numProcPerNode"] = self.num_proc_per_node
        if self.resources_per_node:
            # limits only, as `mpijob create trainjob` writes them (Kubernetes defaults requests to limits)
            trainer["resourcesPerNode"] = {"limits": dict(self.resources_per_node)}
        spec: dict[str, Any] = {"runtimeRef": {"name": self.runtime}}
        if trainer:
            spec["trainer"] = trainer
        return {"apiVersion": n.TRAINER_API_VERSION, "kind": "TrainJob", "metadata": metadata, "spec": spec}


def _invalid(exc: ValidationError, data: Any) -> InvalidInput:
    causes: list[Cause] = []
    for e in exc.errors(include_url=False):
        loc = [str(p) for p in e.get("loc", ())]
        field = loc[0] if loc else ""
        path = SPEC_PATH.get(field, field)
        where = f"{field} ({path})" if path != field else field or "TrainJob"
        msg = str(e.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        elif e.get("type") == "extra_forbidden":
            msg = f"unknown field; the fields are: {', '.join(TrainJob.model_fields)}"
        else:
            msg = f"{msg} (got {e.get('input')!r})"
        if len(loc) > 1:
            where += f"[{']['.join(loc[1:])}]"
        causes.append(Cause(path if path else field, f"{where}: {msg}"))
    name = data.get("name") if isinstance(data, dict) else None
    head = f"TrainJob {name!r} is invalid" if isinstance(name, str) else "TrainJob is invalid"
    message = head + ": " + "; ".join(c.message for c in causes)
    return InvalidInput(message, code=0, reason="Invalid", causes=causes)
