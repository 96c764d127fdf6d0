"""Table cells and ages as kubectl renders them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mpijob.api.core.durations import age, human_duration
from mpijob.cli import views

NOW = datetime(2026, 1, 10, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "seconds, text",
    [(0, "0s"), (45, "45s"), (119, "119s"), (150, "2m30s"), (300, "5m"), (42 * 60, "42m"),
     (3 * 3600 + 600, "3h10m"), (20 * 3600, "20h"), (3 * 86400 + 4 * 3600, "3d4h"), (40 * 86400, "40d"),
     (-5, "<invalid>")],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_ages_parse_rfc3339_with_fractions_and_offsets() -> None:
    assert age("2026-01-10T11:59:30Z", NOW) == "30s"
    assert age("2026-01-10T11:59:29.5Z", NOW) == "30s"  # 30.5 s: whole seconds, truncated
    assert age("2026-01-10T12:59:30+01:00", NOW) == "30s"
    assert age("2026-01-10T12:00:01Z", NOW) == "0s"  # a second ahead: clock skew, as kubectl shows it
    assert age("2026-01-10T12:01:00Z", NOW) == "<invalid>"
    assert age(None, NOW) == age("not a time", NOW) == "<unknown>"


def test_trainjob_row_and_runtime_fallback() -> None:
    created = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    job = {"metadata": {"name": "pi", "creationTimestamp": created},
           "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {}}}
    runtime = {"spec": {"mlPolicy": {"numNodes": 2}}}
    assert views.trainjob_row(job, [], runtime, False, NOW) == ["pi", "Queued", "2", "-", "-", "5m"]
    wide = views.trainjob_row(job, [], None, True, NOW)
    assert wide[2] == "-" and wide[6] == "ClusterTrainingRuntime/mpi-distributed"


def test_progress_and_eta_are_the_programs_last_report_counted_down() -> None:
    """PROGRESS and ETA come from `status.trainerStatus`: the ETA is what was left at the report, less the
    time since; once the job has ended there is nothing left to wait for."""
    reported = (NOW - timedelta(seconds=90)).strftime("%Y-%m-%dT%H:%M:%SZ")
    job = {"metadata": {"name": "pi", "creationTimestamp": reported},
           "spec": {"trainer": {"numNodes": 2}},
           "status": {"trainerStatus": {"progressPercentage": 45, "estimatedRemainingSeconds": 600,
                                        "metrics": [{"name": "loss", "value": "0.25"}], "lastUpdatedTime": reported}}}
    assert views.trainjob_row(job, None, None, False, NOW)[3:5] == ["45%", "8m30s"]
    text = views.describe_trainjob(job, [], [], None, NOW)
    assert "Progress:         45%, ETA 8m30s (reported 90s ago)\n" in text
    assert "  Metrics:        loss=0.25\n" in text
    done = {**job, "status": {**job["status"], "conditions": [{"type": "Complete", "status": "True"}]}}
    assert views.trainjob_row(done, None, None, False, NOW)[3:5] == ["45%", "-"]
    late = {**job, "status": {"trainerStatus": {"progressPercentage": 99, "estimatedRemainingSeconds": 30,
                                                "lastUpdatedTime": reported}}}
    assert views.trainjob_row(late, None, None, False, NOW)[3:5] == ["99%", "0s"]


def test_pod_row() -> None:
    pod = {"metadata": {"name": "pi-node-0-0-abcde", "creationTimestamp": "2026-01-10T11:59:30Z",
                        "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "node",
                                   "jobset.sigs.k8s.io/jobset-name": "pi"}},
           "spec": {"containers": [{"name": "node"}]},
           "status": {"phase": "Running", "containerStatuses": [
               {"name": "node", "ready": True, "restartCount": 0, "state": {"running": {}}}]}}
    assert views.pod_row(pod, True, NOW) == ["pi-node-0-0-abcde", "1/1", "Running", "0", "30s", "node", "pi"]
