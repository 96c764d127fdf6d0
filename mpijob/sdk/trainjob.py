"""`TrainJob`: a typed, validated builder of the upstream Kubeflow Trainer TrainJob.

Keyword fields in snake_case mirror `spec.trainer`; every mistake the server would reject cheaply
(name, node count, reserved Open MPI env, env names, quantities, label values) raises `InvalidInput`
when the object is built, so a notebook learns about it before any request. `to_object()` is the
plain `trainer.kubeflow.org/v1alpha1` TrainJob the CLI, kubectl and the server all understand.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from mpijob.api import names
from mpijob.api.core.errors import ApiError
from mpijob.client import builder
from mpijob.client.builder import DEFAULT_RUNTIME
from mpijob.sdk.errors import Cause, InvalidInput

# The rules and the object are `mpijob.client.builder`'s, the code `mpijob create trainjob` runs, so the
# two cannot disagree; pydantic adds the types and the snake_case field names.
# The SDK's field name → the builder keyword it is (only where they differ).
BUILDER_FIELD = {"resources_per_node": "resources"}


class TrainJob(BaseModel):
    """An MPI TrainJob: `TrainJob(name="pi", num_nodes=4, command=["mpirun", "python", "pi.py"])`.

    Unset optional fields are left to the runtime (`runtime`, default `mpi-distributed`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    name: str = Field(description="RFC 1035 label, at most 63 characters (e.g. 'pi-2').")
    num_nodes: int | None = Field(
        None, description="Nodes (at least 1; the local cluster runs up to 64); default: the runtime's.")
    num_proc_per_node: int | None = Field(None, description="MPI slots (ranks) per node; default: the runtime's.")
    command: list[str] | None = Field(None, description="The launcher's command, e.g. ['mpirun', 'python', 'x.py'].")
    args: list[str] | None = Field(None, description="Arguments appended to the command.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment of the launcher (and every rank).")
    image: str | None = Field(
        None, description="Container image (recorded on the local cluster, pulled on Kubernetes).")
    resources_per_node: dict[str, str | int] = Field(
        default_factory=dict, description="Per-node resources, e.g. {'cpu': 2, 'memory': '4Gi', 'nvidia.com/gpu': 1}.")
    runtime: str = Field(DEFAULT_RUNTIME, description="The ClusterTrainingRuntime to run on.")
    queue: str | None = Field(None, description=f"Kueue LocalQueue (label {names.LABEL_QUEUE_NAME}).")
    priority: str | None = Field(None, description=f"WorkloadPriorityClass (label {names.LABEL_PRIORITY_CLASS}).")
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

    @field_validator("name", "namespace", "runtime", "num_nodes", "num_proc_per_node", "command", "args", "env",
                     "image", "resources_per_node", "queue", "priority", "labels")
    @classmethod
    def _builder_rule(cls, value: Any, info: ValidationInfo) -> Any:
        """The builder's rule for this field, once its type is right (one copy, shared with the CLI)."""
        field = info.field_name or ""
        causes = builder.field_causes(BUILDER_FIELD.get(field, field), value)
        if causes:
            raise ValueError("; ".join(c.message for c in causes))
        return value

    @model_validator(mode="after")
    def _whole_object(self) -> TrainJob:
        """Rules between fields (e.g. `queue=` and the same label in `labels=`) are the builder's too."""
        self.to_object()
        return self

    def to_object(self) -> dict[str, Any]:
        """The upstream TrainJob (`trainer.kubeflow.org/v1alpha1`), ready to POST or dump as YAML."""
        try:
            return builder.build_trainjob(
                self.name, num_nodes=self.num_nodes, num_proc_per_node=self.num_proc_per_node,
                command=self.command, args=self.args, env=self.env, image=self.image,
                resources=self.resources_per_node or None, queue=self.queue, priority=self.priority,
                runtime=self.runtime, namespace=self.namespace, labels=self.labels or None)
        except ApiError as err:
            raise _invalid_input(self.name, [(_field_of(c.field), c.field, c.message) for c in err.causes]) from None


def spec_path(field: str) -> str:
    """Where the SDK field `field` lands in the upstream object (e.g. `num_nodes` → spec.trainer.numNodes)."""
    return builder.SPEC_PATH.get(BUILDER_FIELD.get(field, field), field)


def _field_of(path: str) -> str:
    """The SDK field that writes the upstream `path` (the most specific one), or '' if none does."""
    owners = [f for f in TrainJob.model_fields
              if path == spec_path(f) or path.startswith((spec_path(f) + ".", spec_path(f) + "["))]
    return max(owners, key=lambda f: len(spec_path(f)), default="")


def _invalid_input(name: object, problems: list[tuple[str, str, str]]) -> InvalidInput:
    """One `InvalidInput` for (SDK field, upstream path, message) problems."""
    causes = []
    for field, path, message in problems:
        where = f"{field} ({path})" if field and path != field else field or path or "TrainJob"
        causes.append(Cause(path or field, f"{where}: {message}"))
    head = f"TrainJob {name!r} is invalid" if isinstance(name, str) else "TrainJob is invalid"
    return InvalidInput(head + ": " + "; ".join(c.message for c in causes), code=0, reason="Invalid", causes=causes)


def _invalid(exc: ValidationError, data: Any) -> InvalidInput:
    problems = []
    for e in exc.errors(include_url=False):
        loc = [str(p) for p in e.get("loc", ())]
        field = loc[0] if loc else ""
        msg = str(e.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        elif e.get("type") == "extra_forbidden":
            msg = f"unknown field; the fields are: {', '.join(TrainJob.model_fields)}"
        else:
            msg = f"{msg} (got {e.get('input')!r})"
        if len(loc) > 1:
            msg = f"[{']['.join(loc[1:])}] {msg}"
        path = spec_path(field) if field in TrainJob.model_fields else field
        problems.append((field, path, msg))
    return _invalid_input(data.get("name") if isinstance(data, dict) else None, problems)
