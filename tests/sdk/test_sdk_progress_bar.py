"""What the SDK's progress bar shows of a job (`JobView`), in text and HTML, and which display it picks:
no server, TrainJob objects as a poll reads them. The live bar against real jobs is
tests/e2e/test_progress_bar.py; in a real notebook kernel, tests/e2e/test_notebook.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from mpijob.client.wait import JobState
from mpijob.sdk.progress_bar import BAR_WIDTH, JobView, TerminalDisplay, in_notebook, progress_display

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def reporting(percentage: int, remaining: int, reported_ago: float, **metrics: str) -> dict:
    """A TrainJob whose program reported `percentage` done and `remaining` seconds left, `reported_ago`
    seconds before NOW (as `status.trainerStatus` stores it: docs/progress.md)."""
    at = (NOW - timedelta(seconds=reported_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": {"name": "pi"}, "status": {"trainerStatus": {
        "progressPercentage": percentage, "estimatedRemainingSeconds": remaining, "lastUpdatedTime": at,
        "metrics": [{"name": k, "value": v} for k, v in metrics.items()]}}}


def test_a_running_job_shows_its_programs_report_with_the_eta_counted_down() -> None:
    view = JobView.of("pi", reporting(40, 30, 10, loss="0.25", step="8/20"), JobState("Running", "", 2, 2), NOW)
    assert (view.percentage, view.remaining, view.metrics) == (40, 20, {"loss": "0.25", "step": "8/20"})
    text = view.text()
    assert text.startswith("pi [") and " 40% Running · loss=0.25 step=8/20 · ETA 20s" in text
    bar = re.search(r"\[(#*)(\.*)\]", text)
    assert bar is not None and len(bar[1]) == BAR_WIDTH * 40 // 100 and len(bar[1] + bar[2]) == BAR_WIDTH
    assert 'value="40" max="100"' in view.html() and "40%" in view.html() and "ETA 20s" in view.html()


def test_a_complete_job_is_at_100_whatever_its_last_report_said() -> None:
    view = JobView.of("pi", reporting(95, 4, 1, loss="0.1"), JobState("Succeeded", "", 0, 3), NOW)
    assert view.percentage == 100 and view.ended
    assert "100% Succeeded · loss=0.1" in view.text() and "ETA" not in view.text()
    assert view.text().count("#") == BAR_WIDTH
    assert 'value="100"' in view.html()


def test_before_any_report_the_bar_is_indeterminate_and_says_why_it_waits() -> None:
    waiting = "needs 4 cpu, 2 of 2 free in ClusterQueue default; 1 job ahead"
    view = JobView.of("pi", {"metadata": {"name": "pi"}}, JobState("Queued", waiting, 0, 0), NOW)
    assert view.percentage is None and view.metrics == {}
    assert view.text().endswith(f"  — Queued · {waiting}") and "#" not in view.text()
    assert "<progress max=" in view.html()  # no value: the browser draws an indeterminate bar


def test_a_failed_job_keeps_its_last_percentage_and_shows_why() -> None:
    view = JobView.of("pi", reporting(30, 60, 1), JobState("Failed", "node-1 rank 3 exited with code 137", 0, 3), NOW)
    assert view.percentage == 30 and view.ended
    assert view.text().endswith("30% Failed · node-1 rank 3 exited with code 137")


def test_html_escapes_what_the_program_and_the_cluster_wrote() -> None:
    view = JobView.of("pi", reporting(5, 9, 0, note="<script>x</script>"), JobState("Running", "", 1, 1), NOW)
    assert "<script>" not in view.html() and "&lt;script&gt;x&lt;/script&gt;" in view.html()


def test_outside_a_kernel_the_display_is_the_terminal_bar() -> None:
    assert not in_notebook()
    assert isinstance(progress_display(), TerminalDisplay)
