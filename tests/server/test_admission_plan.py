"""Admission of a new job resolves its run plan once and hands that plan to every check that reads it (SCC,
LimitRange and ResourceQuota, never-fits, volumes), in process: the checks over a real store, the
controllers' code reached through the server's seam (`mpijob.server.ports`), `mpijob.api.trainer.plan.resolve`
counted wherever a module holds it."""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mpijob.api.core import rbac, validation
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import CLUSTER_QUEUES, LIMIT_RANGES, MPIJOBS, RESOURCE_QUOTAS, TRAINJOBS
from mpijob.api.kueue.adapters import DEFAULT_CLUSTER_QUEUE
from mpijob.api.sandbox_mode import SandboxMode
from mpijob.api.trainer import plan as plans
from mpijob.controllers.kueue.workloads import default_objects
from mpijob.server import admission, bootstrap, ports
from mpijob.store.objects import Store

ADMIN = rbac.User("admin", "", ("system:masters", "system:authenticated"))
# Every mode admission knows: the two sandboxes, and a server without controllers
MODES = [SandboxMode.NAMESPACE, SandboxMode.PROCESS, None]


@pytest.fixture(scope="module")
def controllers() -> ports.Controllers:
    """The controllers' code, with every MPI installed and runnable here (what this machine has is not the
    point): admission's other checks all run."""
    return dataclasses.replace(ports.connect(), mpi_refusal=lambda impl, mode: "")


@pytest.fixture()
def store(tmp_path: Path, controllers: ports.Controllers) -> Iterator[Store]:
    """A new cluster with a ClusterQueue, a LimitRange and a ResourceQuota in `default`, so that every check
    of a TrainJob's plan has something to check it against."""
    s = Store(tmp_path / "cluster.db")
    bootstrap.run(s)
    for res, obj in default_objects({"cpu": "8"}):  # the queues a new cluster has, over 8 CPUs
        s.create(res, obj)
    s.create(LIMIT_RANGES, {"metadata": {"name": "limits", "namespace": "default"},
                            "spec": {"limits": [{"type": "Container", "default": {"cpu": "1"}}]}})
    s.create(RESOURCE_QUOTAS, {"metadata": {"name": "cpu", "namespace": "default"}, "spec": {"hard": {"requests.cpu": "6"}}})
    yield s
    s.close()


@pytest.fixture()
def resolves(monkeypatch: pytest.MonkeyPatch, controllers: ports.Controllers) -> list[str]:
    """The name of the job each `resolve` call is for, counted in every module that imported the function
    (the controllers' included: `controllers` loaded them)."""
    calls: list[str] = []
    original = plans.resolve

    def counting(trainjob: dict, runtime: dict) -> plans.RunPlan:
        calls.append(trainjob["metadata"]["name"])
        return original(trainjob, runtime)

    holders = [name for name, module in list(sys.modules.items())
               if name.startswith("mpijob") and getattr(module, "resolve", None) is original]
    assert "mpijob.server.admission" in holders
    for name in holders:
        monkeypatch.setattr(sys.modules[name], "resolve", counting)
    return calls


def trainjob(name: str, cpu: str = "1", num_nodes: int = 2) -> dict[str, Any]:
    tj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
          "metadata": {"name": name, "namespace": "default"},
          "spec": {"runtimeRef": {"name": "mpi-distributed"},
                   "trainer": {"numNodes": num_nodes, "command": ["mpirun", "true"],
                               "resourcesPerNode": {"limits": {"cpu": cpu}}}}}
    return validation.admit(TRAINJOBS, tj, None)


def create(store: Store, obj: dict[str, Any], mode: SandboxMode | None, controllers: ports.Controllers) -> None:
    res = MPIJOBS if obj["kind"] == "MPIJob" else TRAINJOBS
    admission.check_references(store, res, obj, ADMIN, mode, controllers)


@pytest.mark.parametrize("mode", MODES)
def test_an_admitted_trainjob_is_resolved_once(store: Store, controllers: ports.Controllers, resolves: list[str],
                                               mode: SandboxMode | None) -> None:
    create(store, trainjob("fits"), mode, controllers)
    assert resolves == ["fits"], f"{len(resolves)} resolves of one TrainJob create; admission resolves it once"


@pytest.mark.parametrize(("cpu", "refusal"), [
    ("4", "exceeded quota: cpu, requested: requests.cpu=8"),  # 2 pods of 4 CPUs: past the ResourceQuota of 6
    ("3", "ClusterQueue cluster-queue can never provide"),  # 6 CPUs fit the quota; its ClusterQueue gets 5
])
def test_a_refused_trainjob_is_resolved_once_too(store: Store, controllers: ports.Controllers, resolves: list[str],
                                                 cpu: str, refusal: str) -> None:
    cq = store.get(CLUSTER_QUEUES, "", DEFAULT_CLUSTER_QUEUE)
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "5"
    store.update(CLUSTER_QUEUES, cq)
    with pytest.raises(ApiError) as refused:
        create(store, trainjob("big", cpu), SandboxMode.PROCESS, controllers)
    assert refused.value.code == 403 and refusal in str(refused.value)
    assert resolves == ["big"]


def test_every_check_reads_the_one_plan(store: Store, controllers: ports.Controllers) -> None:
    """The plan the SCC check sees is the one quota and the Workload are made from, and none of them
    changes it."""
    seen: list[plans.RunPlan] = []

    def spy(name: str) -> Any:
        real = getattr(controllers, name)

        def call(*args: Any) -> Any:
            plan = next(a for a in args if isinstance(a, plans.RunPlan))
            seen.append(plan)
            before = copy.deepcopy([p.pod_spec for p in plan.pods])
            out = real(*args)
            assert [p.pod_spec for p in plan.pods] == before, f"{name} changed the plan's pod specs"
            return out

        return call

    spied = dataclasses.replace(controllers, **{n: spy(n) for n in ("admit_pods", "with_limit_ranges", "render_workload")})
    create(store, trainjob("shared"), SandboxMode.NAMESPACE, spied)
    assert len(seen) == 3 and all(p is seen[0] for p in seen)


def test_an_mpijob_is_resolved_once(store: Store, controllers: ports.Controllers, resolves: list[str]) -> None:
    job = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "pi", "namespace": "default"},
           "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": {
               "Launcher": {"replicas": 1, "template": {"spec": {"containers": [
                   {"name": "launcher", "image": "mpioperator/mpi-pi", "command": ["mpirun", "true"]}]}}},
               "Worker": {"replicas": 2, "template": {"spec": {"containers": [
                   {"name": "worker", "image": "mpioperator/mpi-pi"}]}}},
           }}}
    create(store, validation.admit(MPIJOBS, job, None), None, controllers)
    assert len(resolves) == 1


def test_admission_reaches_the_controllers_through_the_seam(store: Store, controllers: ports.Controllers) -> None:
    """What the seam answers is what admission says: here an MPI install the controllers cannot run."""
    refusing = dataclasses.replace(controllers, mpi_refusal=lambda impl, mode: f"no {impl.name} in the {mode} sandbox")
    with pytest.raises(ApiError) as refused:
        create(store, trainjob("nompi"), SandboxMode.PROCESS, refusing)
    assert refused.value.code == 422 and "no OpenMPI in the process sandbox" in str(refused.value)
