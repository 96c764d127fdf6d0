"""The report of an MPIJob's conversion: the verdict of each field the MPIJob sets, and the result.

Kept apart from the converter so the parts that build the TrainJob and its runtime (`convert`,
`pod_templates`) share one notion of a line and of a field being set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAPPED, RUNTIME, DROPPED = "mapped", "runtime", "dropped"
VERDICTS = (MAPPED, RUNTIME, DROPPED)


@dataclass(frozen=True)
class Mapping:
    """One line of the report: where an MPIJob field went."""

    field: str  # the MPIJob's path, concrete: spec.mpiReplicaSpecs.Worker.template.spec.containers[0].image
    verdict: str  # MAPPED (into the TrainJob or onto the bundled runtime) | RUNTIME | DROPPED
    to: str  # where it went: a TrainJob path, a runtime path, a label; "" when dropped
    why: str  # for runtime and dropped lines (and non-obvious mapped ones): the reason, in one sentence


@dataclass(frozen=True)
class Conversion:
    trainjob: dict
    runtime: dict | None  # a namespaced TrainingRuntime named after the job, when the job needs one
    report: list[Mapping]


@dataclass
class Line:
    mapping: Mapping
    bundled: str | None = None  # a runtime line whose value mpi-distributed already has: where it has it


def is_set(value: Any) -> bool:
    """Whether a field is set (kube treats null, empty lists and empty maps as unset)."""
    return value is not None and value not in ([], {})
