"""The server's one way into the controllers' code: what admission, the visibility API, the TLS certificate
and the app's lifespan take from `mpijob.controllers`, as one typed value (`Controllers`) that the app's
`Cluster` holds (`connect()` fills it at start-up).

This module is the only one of the server that imports the controllers (`state.py` names two of their
types for the type checker), and it does so inside functions, for start-up cost: the server's modules
are imported by much that never serves (the CLI, tools, tests), and the controllers' modules (pyroute2
among them) load when a server starts; the whole runtime (`controllers.manager`, about 1 s) loads only
when the controllers run (`MPIJOB_NO_CONTROLLERS` unset).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mpijob.api import Obj
from mpijob.api.core import quota, rbac
from mpijob.api.kueue.snapshot import Snapshot
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer.mpi_impl import Implementation
from mpijob.api.trainer.plan import RunPlan
from mpijob.api.trainer.stacks import RankStack
from mpijob.store.home import Home
from mpijob.store.objects import Store

if TYPE_CHECKING:
    from mpijob.controllers.manager import Manager
    from mpijob.controllers.metrics import Metrics
    from mpijob.store.logs import LogStore

Positions = dict[str, tuple[int, int]]  # pending workload "<ns>/<name>" → (in its ClusterQueue, in its LocalQueue)


@dataclass(frozen=True)
class Controllers:
    """What the server asks of the controllers, each the controllers' own function (named beside it)."""

    # Why the runtime's MPI cannot run here, in the sandbox `mode` ("" when it can; None: no controllers):
    # `kubelet.mpi_installs.missing`, then `sandbox_refusal`.
    mpi_refusal: Callable[[Implementation, SandboxMode | None], str]
    # why a job of this many pods, of this many ranks each, can never run on this machine ("" when it can):
    # `kubelet.capacity.too_many_pods`
    machine_refusal: Callable[[int, int], str]
    admit_pods: Callable[[Store, RunPlan, rbac.User | None], RunPlan]  # OpenShift's SCC admission: `scc.admit`
    # a new Pod no job owns, admitted to run here (mutated in place), or refused: `kubelet.bare_admission.admit`
    admit_bare_pod: Callable[[Store, Obj, rbac.User | None, SandboxMode], None]
    with_limit_ranges: Callable[[RunPlan, list[Obj]], RunPlan]  # the LimitRanges' defaults: `quota.with_limit_ranges`
    namespace_usage: Callable[[Store, str, list[Obj]], quota.Usage]  # `quota.namespace_usage`
    render_workload: Callable[[Store, Obj, RunPlan, Obj], Obj]  # a job's Workload: `kueue.workloads.render_workload`
    local_queues: Callable[[Store], dict[tuple[str, str], str]]  # `kueue.workloads.local_queue_map`
    snapshot: Callable[[Store], Snapshot]  # the scheduler's input now: `kueue.workloads.build_snapshot`
    queue_positions: Callable[[Snapshot], Positions]  # `kueue.scheduler.positions`
    kubernetes_service: tuple[str, int]  # the `kubernetes` Service's address in a job's network: `kubelet.network`
    metrics: Callable[[Store, LogStore], Metrics]  # the server's metrics registry: `controllers.metrics.Metrics`
    manager: Callable[[Store, LogStore, Home, Metrics], Manager]  # the controllers: `controllers.manager.Manager`
    # every rank's stack of the run of the job with this uid (None: it has none): `trainer.stacks.of_run`
    stacks: Callable[[Manager, str], Awaitable[list[RankStack] | None]]


def connect() -> Controllers:
    """The controllers' functions, loaded now (see the module's docstring)."""
    from mpijob.api.kueue import scheduler
    from mpijob.controllers import quota as quotas
    from mpijob.controllers import scc
    from mpijob.controllers.kubelet import bare_admission, capacity, mpi_installs
    from mpijob.controllers.kueue import workloads
    from mpijob.controllers.metrics import Metrics

    def mpi_refusal(impl: Implementation, mode: SandboxMode | None) -> str:
        return mpi_installs.missing(impl) or mpi_installs.sandbox_refusal(
            impl, process_sandbox=mode == SandboxMode.PROCESS)

    def manager(store: Store, logs: LogStore, home: Home, metrics: Metrics) -> Manager:
        from mpijob.controllers.manager import Manager  # the whole runtime: only when the controllers run

        return Manager(store, logs, home, metrics)

    async def stacks(manager: Manager, uid: str) -> list[RankStack] | None:
        from mpijob.controllers.trainer import stacks as rank_stacks  # with the runtime, as `manager`

        return await rank_stacks.of_run(manager.kinds.runs(), uid)

    return Controllers(
        mpi_refusal=mpi_refusal, machine_refusal=capacity.too_many_pods, admit_pods=scc.admit,
        admit_bare_pod=bare_admission.admit, with_limit_ranges=quotas.with_limit_ranges,
        namespace_usage=quotas.namespace_usage, render_workload=workloads.render_workload,
        local_queues=workloads.local_queue_map, snapshot=workloads.build_snapshot,
        queue_positions=scheduler.positions, kubernetes_service=kubernetes_service(), metrics=Metrics,
        manager=manager, stacks=stacks,
    )


def kubernetes_service() -> tuple[str, int]:
    """The `kubernetes` Service's ClusterIP and port (`controllers/kubelet/network.py`), which the serving
    certificate names before any app exists (`tls.py`)."""
    from mpijob.controllers.kubelet.network import SERVICE_IP, SERVICE_PORT

    return SERVICE_IP, SERVICE_PORT
