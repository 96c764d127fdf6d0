"""What each way of stopping a running job says: the table `JobRunner.stop` and the controllers share.

The e2e tests (test_stop_reasons.py, test_queueing.py, test_trainjob_fields.py) prove that a real job's
pods and TrainJob end with these words; this is the table itself.
"""

from __future__ import annotations

from mpijob.controllers.trainer.stops import Stop, Then


def test_each_stop_says_what_happened_and_what_becomes_of_the_job() -> None:
    table = {
        "deleted": (Stop.deleted(), "TrainJobDeleted", Then.FORGET),
        "suspended": (Stop.suspended(), "Suspended", Then.REQUEUE),
        "preempted": (Stop.evicted("Preempted", "Preempted to accommodate a workload"), "Preempted", Then.REQUEUE),
        "queue stopped": (Stop.evicted("ClusterQueueStopped", "The ClusterQueue is stopped"), "ClusterQueueStopped",
                          Then.REQUEUE),
        "deadline": (Stop.deadline_exceeded(), "DeadlineExceeded", Then.FAIL),
        "server stopped with --drain": (Stop.drained(), "ControlPlaneRestarted", Then.REQUEUE),
    }
    for kind, (stop, reason, then) in table.items():
        assert (stop.reason, stop.then) == (reason, then), kind
        assert stop.outcome.reason == reason and not stop.outcome.succeeded, kind
    assert len({stop.reason for stop, _, _ in table.values()}) == len(table)  # no two stops share a word


def test_only_a_stop_that_fails_the_job_says_the_job_failed() -> None:
    assert Stop.deadline_exceeded().pod_message == "stopped because the TrainJob failed: TrainJob exceeded its active deadline"
    assert Stop.deleted().pod_message == "stopped: the TrainJob was deleted"
    assert Stop.suspended().pod_message == "stopped: the TrainJob was suspended"
