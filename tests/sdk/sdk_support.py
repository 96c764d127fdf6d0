"""Helpers for SDK tests: the upstream TrainJob CRD schema and small MPI TrainJobs."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from support import UPSTREAM


@cache
def trainjob_schema() -> dict[str, Any]:
    crd = yaml.safe_load((UPSTREAM / "trainer" / "trainer.kubeflow.org_trainjobs.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return version["schema"]["openAPIV3Schema"]


def hello(name: str, *, nodes: int = 2, sleep: float = 0, fail: bool = False) -> dict[str, Any]:
    """Keyword arguments for a small MPI TrainJob: every rank prints its rank, then sleeps / fails."""
    script = f'echo "sdk rank=$OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE"; sleep {sleep}'
    if fail:
        script += "; exit 3"
    return {"name": name, "num_nodes": nodes, "command": ["mpirun", "bash", "-c", script],
            "env": {"SDK_TEST": name}}
