"""Looking inside a running job: every rank's current stack, merged (`mpijob debug stacks`; the local cluster
answers it, docs/debugging.md)."""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.resources import TRAINJOBS
from mpijob.client.core import Call, Op


def stacks_path(namespace: str, name: str) -> str:
    return f"{names.DASHBOARD_API}/namespaces/{namespace}/{TRAINJOBS.plural}/{name}/stacks"


def job_stacks(namespace: str, name: str) -> Op[Obj]:
    """A `StackDump` (api/trainer/stacks.py `dump`): every rank's stack now, identical ones grouped, the odd
    ones out first, then the ranks that could not be read. Each rank is paused for a moment while it is read."""
    return (yield from Call("POST", stacks_path(namespace, name)))
