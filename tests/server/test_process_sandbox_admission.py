"""Open MPI 5 in the process sandbox: its runtime (PRRTE) never uses a loopback interface for its daemons,
and the loopback is the only network a pod has there, so a server in the process sandbox refuses such a
job at creation, naming the annotation and the fix, rather than let mpirun fail once it runs."""

from __future__ import annotations

import copy
from collections.abc import Callable

import httpx
from mpijob.api import names
from mpijob.api.trainer import mpi_impl
from mpijob.api.trainer.runtimes import bundled
from mpijob.controllers.kubelet import mpi_installs
from mpijob.store.server_process import ServerInfo

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"


def test_only_open_mpi_5_needs_a_network_beside_the_loopback() -> None:
    assert [i.name for i in mpi_impl.IMPLEMENTATIONS.values() if not i.runs_on_loopback] == [names.MPI_OPEN_MPI_5]
    five = mpi_impl.IMPLEMENTATIONS[names.MPI_OPEN_MPI_5]
    assert mpi_installs.sandbox_refusal(five, process_sandbox=False) == ""
    why = mpi_installs.sandbox_refusal(five, process_sandbox=True)
    assert why.startswith(f"{names.ANNOTATION_MPI_IMPLEMENTATION}: OpenMPI5 cannot run in the process sandbox")
    assert mpi_installs.sandbox_refusal(mpi_impl.IMPLEMENTATIONS[names.MPI_MPICH], process_sandbox=True) == ""


def test_a_process_sandbox_server_refuses_open_mpi_5_jobs(new_server: Callable[..., ServerInfo],
                                                          connect: Callable[..., httpx.Client]) -> None:
    info = new_server("process-sandbox", env={"MPIJOB_SANDBOX": "process"})
    with connect(info) as api:
        for impl in (names.MPI_OPEN_MPI_5, names.OPEN_MPI):
            rt = copy.deepcopy(bundled()[0])
            rt["kind"] = "TrainingRuntime"
            rt["metadata"] = {"name": impl.lower(), "namespace": "default",
                              "annotations": {names.ANNOTATION_MPI_IMPLEMENTATION: impl}}
            assert api.post(f"{TRAINER}/namespaces/default/trainingruntimes", json=rt).status_code == 201
        job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "five"},
               "spec": {"runtimeRef": {"name": "openmpi5", "kind": "TrainingRuntime"},
                        "trainer": {"command": ["mpirun", "hostname"]}}}
        refused = api.post(f"{TRAINER}/namespaces/default/trainjobs", json=job)
        assert refused.status_code == 422, refused.text
        (cause,) = refused.json()["details"]["causes"]
        assert cause["field"] == "spec.runtimeRef.name"
        assert cause["message"].startswith(f'Invalid value: "openmpi5": {names.ANNOTATION_MPI_IMPLEMENTATION}: '
                                           "OpenMPI5 cannot run in the process sandbox")
        assert "MPIJOB_SANDBOX" in cause["message"] and "set the annotation to OpenMPI" in cause["message"]
        assert api.get(f"{TRAINER}/namespaces/default/trainjobs/five").status_code == 404  # nothing stored
        job["spec"]["runtimeRef"]["name"] = "openmpi"
        accepted = api.post(f"{TRAINER}/namespaces/default/trainjobs", params={"dryRun": "All"}, json=job)
        assert accepted.status_code == 201, accepted.text
