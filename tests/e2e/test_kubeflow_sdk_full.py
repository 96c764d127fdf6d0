"""The rest of the upstream Kubeflow SDK's TrainerClient (kubeflow 0.5.0) against the real server:
`get_runtime`, a `train()` that is observed while it runs (`wait_for_job_status` Running then
Complete, `get_job` Running then Complete), logs with and without `follow=True`, `get_job_events`
and `delete_job`. tests/e2e/test_kubeflow_sdk.py covers list_runtimes/list_jobs/train/logs."""

from __future__ import annotations

import httpx
import pytest
from kubeflow.trainer import CustomTrainer, TrainerClient

from support import TRAINER, job_pods, wait_for

RUNTIME = "mpi-distributed"


def slow_train() -> None:
    # Runs on every rank. The SDK pastes this into an unquoted bash heredoc: no dollar signs here.
    # It sleeps so that the job is observably Running; the lines before and after the sleep let the
    # followed log prove that it waited for the container to end.
    import os
    import time

    rank = os.environ["OMPI_COMM_WORLD_RANK"]
    print("slow-start rank", rank, flush=True)
    time.sleep(12)
    print("slow-done rank", rank, flush=True)


def test_get_runtime_returns_the_mpi_runtime(trainer: TrainerClient) -> None:
    runtime = trainer.get_runtime(RUNTIME)
    assert runtime.name == RUNTIME
    assert runtime.kind.value == "ClusterTrainingRuntime"
    assert runtime.trainer.command[0] == "mpirun"  # the SDK recognises it as an MPI runtime
    assert runtime.trainer.framework == "mpi", runtime  # from the label trainer.kubeflow.org/framework


def test_get_runtime_of_a_missing_runtime_raises(trainer: TrainerClient) -> None:
    with pytest.raises(RuntimeError, match="Failed to get Runtime: no-such-runtime"):
        trainer.get_runtime("no-such-runtime")


def test_sdk_observes_a_train_job_from_running_to_deleted(trainer: TrainerClient, api: httpx.Client) -> None:
    name = trainer.train(runtime=RUNTIME, trainer=CustomTrainer(func=slow_train, num_nodes=2))
    try:
        running = trainer.wait_for_job_status(name, {"Running"}, timeout=120, polling_interval=1)
        assert running.status == "Running" and running.num_nodes == 2
        # The function sleeps 12 s after starting, so the job is still running right after.
        during = trainer.get_job(name)
        assert during.status == "Running", during
        assert {s.name for s in during.steps} == {"node-0", "node-1"}, during.steps  # launcher = node-0

        # ends when the launcher's container ends; each line keeps Open MPI's rank tag
        followed = ("\n".join(trainer.get_job_logs(name, follow=True))).splitlines()
        assert sorted(line for line in followed if line.startswith("slow-done")) == \
            ["slow-done rank 0", "slow-done rank 1"], followed
        assert sorted(line for line in followed if line.startswith("slow-start")) == \
            ["slow-start rank 0", "slow-start rank 1"], followed

        done = trainer.wait_for_job_status(name, {"Complete"}, timeout=120, polling_interval=1)
        assert done.status == "Complete"
        assert trainer.get_job(name).status == "Complete"

        logs = ("\n".join(trainer.get_job_logs(name))).splitlines()
        assert [line for line in logs if line.startswith("slow-")] == \
            [line for line in followed if line.startswith("slow-")], (logs, followed)

        events = trainer.get_job_events(name)
        assert events, "get_job_events returned nothing"
        assert all(e.involved_object_name == name or e.involved_object_name.startswith(f"{name}-")
                   for e in events), events
        kinds_reasons = {(e.involved_object_kind, e.reason) for e in events}
        assert ("TrainJob", "CreatedPods") in kinds_reasons, kinds_reasons
        assert ("TrainJob", "AllJobsCompleted") in kinds_reasons, kinds_reasons
        assert [e.event_time for e in events] == sorted(e.event_time for e in events)
    finally:
        trainer.delete_job(name)

    # Gone from the API, and the server cascaded to its pods (the SDK's DELETE names no propagation).
    assert api.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").status_code == 404
    with pytest.raises(RuntimeError, match=name):
        trainer.get_job(name)
    assert name not in [j.name for j in trainer.list_jobs()]
    wait_for(lambda: not job_pods(api, name), f"the pods of {name} to be deleted", timeout=60)
