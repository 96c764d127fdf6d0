"""Namespace quota usage from the store: what admission counts a new TrainJob against, and the
ResourceQuota controller's part the local cluster needs, every quota's `status.hard` and `status.used`
kept current (so `kubectl describe quota` shows Used and Hard).

What counts as used (docs/security.md, "Namespace quotas"): every TrainJob of the namespace counts
once for `count/trainjobs.trainer.kubeflow.org`; every TrainJob that has not finished (not Complete,
not Failed) counts its whole run plan, launcher and every node, from its creation on, whether Kueue
has admitted it yet or not, so two jobs can never both pass admission and then not fit. A job's usage
is released when it finishes or is deleted. A plan's pods are counted with the namespace's current
LimitRange defaults, as `mpijob.api.core.quota` applies them. A bare pod (`api/core/bare_pods.py`) counts as
kube counts a pod, from its creation until it has finished.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from mpijob.api import Obj
from mpijob.api.core import bare_pods
from mpijob.api.core import quota as quotas
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import (
    CLUSTER_TRAINING_RUNTIMES,
    LIMIT_RANGES,
    PODS,
    RESOURCE_QUOTAS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
)
from mpijob.api.trainer.plan import RunPlan, resolve
from mpijob.controllers import conditions as cond
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
# What can change a namespace's usage or its quotas.
KINDS = frozenset({TRAINJOBS.kind, RESOURCE_QUOTAS.kind, LIMIT_RANGES.kind, TRAINING_RUNTIMES.kind,
                   CLUSTER_TRAINING_RUNTIMES.kind})


def limit_ranges(store: Store, namespace: str) -> list[Obj]:
    return store.list(LIMIT_RANGES, namespace)[0]


def runtime_of(store: Store, trainjob: Obj) -> Obj | None:
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    if ref.get("kind", CLUSTER_TRAINING_RUNTIMES.kind) == TRAINING_RUNTIMES.kind:
        return store.try_get(TRAINING_RUNTIMES, trainjob["metadata"].get("namespace", "default"), ref.get("name", ""))
    return store.try_get(CLUSTER_TRAINING_RUNTIMES, "", ref.get("name", ""))


def plan_pods(trainjob: Obj, runtime: Obj | None, ranges: list[Obj]) -> list[quotas.Resources]:
    """Each pod of the job's run plan as its container's resources after the LimitRange defaults;
    none when its runtime is gone or cannot run here (such a job runs nothing)."""
    if runtime is None:
        return []
    meta = trainjob["metadata"]
    candidate = {**trainjob, "metadata": {**meta, "uid": meta.get("uid") or "new"}}
    try:
        plan = resolve(candidate, runtime)
    except ApiError:
        return []
    return [p.resources for p in with_limit_ranges(plan, ranges).pods]


def with_limit_ranges(plan: RunPlan, ranges: list[Obj]) -> RunPlan:
    """The plan with every container's resources as its pod is stored (requests defaulted from limits, then the
    LimitRanges' defaults for what it does not say), so the pods, their cgroups and their Workload's requests
    are what quota counted."""
    return dataclasses.replace(plan, pods=[dataclasses.replace(p, resources=quotas.defaulted(p.resources, ranges))
                                           for p in plan.pods])


def namespace_usage(store: Store, namespace: str, ranges: list[Obj] | None = None) -> quotas.Usage:
    """What the namespace's TrainJobs and bare pods use now (see the module's docstring)."""
    ranges = limit_ranges(store, namespace) if ranges is None else ranges
    usages = []
    for tj in store.list(TRAINJOBS, namespace)[0]:
        running = not cond.finished(tj)
        usages.append(quotas.job_usage(plan_pods(tj, runtime_of(store, tj), ranges) if running else [], running))
    usages += [quotas.pod_usage(quotas.defaulted(bare_pods.container(p).get("resources"), ranges))
               for p in store.list(PODS, namespace)[0] if bare_pods.is_bare(p) and not bare_pods.finished(p)]
    return quotas.add(*usages)


class QuotaStatus:
    """Writes each ResourceQuota's status from the store whenever something it counts changes."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._started = False

    def observe(self, event: str, obj: Obj) -> None:
        """A change from the store's watch (called for every object; cheap for the others)."""
        try:
            if not self._started:  # the first change after a start: bring every quota up to date
                self._started = True
                self.sync()
            elif obj.get("kind") == CLUSTER_TRAINING_RUNTIMES.kind:
                self.sync()
            elif obj.get("kind") in KINDS or (obj.get("kind") == PODS.kind and bare_pods.is_bare(obj)):
                self.sync(obj.get("metadata", {}).get("namespace") or "default")
        except Exception:
            log.exception("quota status of %s %s", event, obj.get("metadata", {}).get("name"))

    def sync(self, namespace: str | None = None) -> None:
        """Bring the quotas of `namespace` (default: every namespace) up to date."""
        by_namespace: dict[str, list[Obj]] = {}
        for q in self.store.list(RESOURCE_QUOTAS, namespace)[0]:
            by_namespace.setdefault(q["metadata"]["namespace"], []).append(q)
        for ns, items in by_namespace.items():
            used = namespace_usage(self.store, ns)
            for q in items:
                self._write(q, quotas.status(q, used))

    def _write(self, q: Obj, status: dict[str, Any]) -> None:
        if q.get("status") == status:
            return
        try:
            self.store.update(RESOURCE_QUOTAS, {**q, "status": status}, status=True)
        except ApiError as e:  # changed or deleted meanwhile: its own change brings it back here
            log.debug("quota %s not updated: %s", q["metadata"]["name"], e)
