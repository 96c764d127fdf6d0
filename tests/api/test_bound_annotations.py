"""A run's bounds (api/trainer/bounds.py): durations as the annotations spell them, refused at admission with the
field, the value and the fix, and resolved job-first, then runtime, then the defaults scaled by the hosts;
the failures they end a run with (api/trainer/bound_failures.py) name the pods, ranks and hosts, and why."""

from __future__ import annotations

import pytest
from mpijob.api import names
from mpijob.api.core.errors import ApiError
from mpijob.api.core.resources import TRAINJOBS
from mpijob.api.core.validation import admit
from mpijob.api.trainer import bound_failures, bounds
from mpijob.api.trainer.failures import Facts, Failure, Line, PodFacts

LAUNCHER = PodFacts("j-launcher-0-0-abcde", "j-launcher-0-0.j", launcher=True)
NODE = PodFacts("j-node-0-0-fghij", "j-node-0-0.j", last_line="sshd: accepted")
NODE1 = PodFacts("j-node-0-1-klmno", "j-node-0-1.j", last_line="")


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("5m", 300), ("1m30s", 90), ("1h", 3600), ("250ms", 0.25), ("0.5s", 0.5), ("45", 45), ("2.5", 2.5),
])
def test_durations_read_as_kubernetes_writes_them(text: str, seconds: float) -> None:
    assert bounds.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5 m", "fast", "1d", "m5", "5m garbage", "nan", "inf"])
def test_what_is_not_a_duration_is_none(text: str) -> None:
    assert bounds.parse_duration(text) is None


def _trainjob(annotations: dict[str, str]) -> dict:
    return {"apiVersion": names.TRAINER_API_VERSION, "kind": "TrainJob",
            "metadata": {"name": "j", "namespace": "default", "annotations": annotations},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 2}}}


def test_admission_refuses_a_bad_bound_naming_field_value_and_fix() -> None:
    with pytest.raises(ApiError) as refused:
        admit(TRAINJOBS, _trainjob({names.ANNOTATION_WIREUP_TIMEOUT: "soon", names.ANNOTATION_STALL_TIMEOUT: "0s",
                                    names.ANNOTATION_ON_STALL: "panic"}))
    causes = {c.field: c.message for c in refused.value.causes}
    wireup = causes[f"metadata.annotations[{names.ANNOTATION_WIREUP_TIMEOUT}]"]
    assert wireup.startswith('Invalid value: "soon": must be a duration such as "90s"'), wireup
    assert "remove the annotation for the default" in wireup
    assert "greater than zero" in causes[f"metadata.annotations[{names.ANNOTATION_STALL_TIMEOUT}]"]
    on_stall = causes[f"metadata.annotations[{names.ANNOTATION_ON_STALL}]"]
    assert on_stall.startswith('Invalid value: "panic": supported values: "warn"') and '"fail"' in on_stall


def test_admission_keeps_good_bounds() -> None:
    kept = admit(TRAINJOBS, _trainjob({names.ANNOTATION_READY_TIMEOUT: "2m", names.ANNOTATION_ON_STALL: "fail"}))
    assert kept["metadata"]["annotations"][names.ANNOTATION_READY_TIMEOUT] == "2m"


def test_the_job_wins_over_its_runtime_and_the_defaults_grow_with_the_hosts() -> None:
    job = {names.ANNOTATION_WIREUP_TIMEOUT: "5s", names.ANNOTATION_ON_STALL: names.ON_STALL_FAIL}
    runtime = {names.ANNOTATION_WIREUP_TIMEOUT: "9s", names.ANNOTATION_STALL_TIMEOUT: "1m", names.ANNOTATION_EXIT_GRACE: "x"}
    got = bounds.resolve(job, runtime, nodes=100)
    assert (got.wireup, got.stall, got.stall_fail) == (5, 60, True)
    assert got.exit_grace == bounds.EXIT_GRACE  # the runtime's unreadable value is skipped, not obeyed
    assert (got.ready, bounds.resolve(None, None, 100).wireup) == (160, 260)  # 100 nodes: generous defaults
    assert bounds.resolve(None, None, 2, ready_default=0.5).ready == 0.5  # the server's MPIJOB_READY_TIMEOUT
    assert not bounds.resolve(None, None, 2).stall_fail


def _facts(**more: object) -> Facts:
    return Facts(job="j", culprit=LAUNCHER.name, pods=(NODE, NODE1, LAUNCHER), **more)  # type: ignore[arg-type]


def test_a_wire_up_timeout_names_the_missing_ranks_and_the_hosts_that_never_reported() -> None:
    found = bound_failures.wireup_timeout(_facts(
        bound=5, world_size=3, ranks_seen=(0,), reporting=(NODE.name,), daemons=(NODE.name,),
        launcher_log=(Line(None, "starting"), Line(0, "rank 0 up"))))
    assert found.reason == names.FAILURE_WIREUP_TIMEOUT and found.pod == NODE1.name and found.host == NODE1.host
    assert found.summary.startswith(f"mpirun on launcher pod {LAUNCHER.name} (host {LAUNCHER.host}) started 5s ago "
                                    "and 1 of 3 ranks ran (never seen: ranks 1, 2)"), found.summary
    assert f"Never reported: node pod {NODE1.name} (host {NODE1.host}): no MPI daemon started there" in found.summary
    assert NODE.name not in found.summary.partition("Never reported")[2]  # it reported
    assert found.summary.endswith("The launcher said last: rank 0 up")
    assert names.ANNOTATION_WIREUP_TIMEOUT in found.fix
    assert found.message.endswith("See docs/troubleshooting.md#wire-up-timeout")


def test_a_daemon_without_ranks_is_said_apart_from_no_daemon() -> None:
    found = bound_failures.wireup_timeout(_facts(bound=5, daemons=(NODE.name, NODE1.name)))
    assert "and no rank ran" in found.summary
    assert f"node pod {NODE.name} (host {NODE.host}): its MPI daemon started but ran no rank: sshd: accepted" \
        in found.summary, found.summary


def test_a_stall_names_the_idle_pods_and_ranks() -> None:
    found = bound_failures.stalled(_facts(bound=600, idle=(NODE.name, LAUNCHER.name), idle_ranks=(1, 0)))
    assert found.reason == names.FAILURE_STALLED and found.rank == 0 and found.pod == NODE.name
    assert found.summary == (f"nothing was printed and no process of pods {NODE.name}, {LAUNCHER.name} (ranks 0, 1) "
                             "used CPU for 600s")
    assert found.message.endswith("See docs/troubleshooting.md#stalled")


def test_an_mpirun_that_outlives_its_ranks_ends_as_mpirun_said_they_ended() -> None:
    clean = _facts(bound=30, launcher_log=(Line(0, "Process name: [[1,1],0] Exit code: 3"),))
    assert bound_failures.launcher_hung(clean) is None  # a rank's own words are not mpirun's report
    said = (Line(1, "giving up"), Line(None, "mpirun detected that one or more processes exited with non-zero status"),
            Line(None, "  Process name: [[4242,1],1]\n  Exit code:    3"))
    failed = bound_failures.launcher_hung(_facts(bound=30, launcher_log=said))
    assert isinstance(failed, Failure) and failed.reason == names.FAILURE_PROGRAM and failed.rank == 1
    assert failed.summary.startswith("rank 1 ended with code 3: giving up; mpirun on launcher pod"), failed.summary
    assert "had not exited 30s after its last rank ended, and was stopped" in failed.summary


def test_a_node_not_ready_says_what_it_listens_on_and_the_fix_follows() -> None:
    timeout = Failure(names.FAILURE_SSHD_NOT_READY, "the sshd of node pod x did not answer on port 2222 within 9s",
                      "Give it longer.", NODE.name)
    why = f"{bound_failures.ELSEWHERE} the probe's port 2222: sshd on port 2223"
    found = bound_failures.not_ready_why(timeout, _facts(starting=True, ready_timeout=9, why=((NODE.name, why),)))
    assert found.summary.endswith(f"within 9s: {why}") and "/usr/sbin/sshd -De" in found.fix
    plain = bound_failures.not_ready_why(timeout, _facts(starting=True, ready_timeout=9))
    assert plain.summary == timeout.summary and plain.fix.endswith(f'annotation {names.ANNOTATION_READY_TIMEOUT} (e.g. "5m").')


def test_the_ranks_own_exit_statuses_decide_over_mpiruns_silence() -> None:
    quiet = _facts(bound=30, launcher_log=(Line(1, "bye"),))
    assert bound_failures.launcher_hung(quiet, ((0, 0), (1, 0))) is None
    failed = bound_failures.launcher_hung(quiet, ((0, 0), (1, 3), (2, -9)))
    assert failed is not None and failed.rank == 1 and failed.summary.startswith("rank 1 exited with code 3: bye;")
    killed = bound_failures.launcher_hung(quiet, ((2, -9),))
    assert killed is not None and killed.summary.startswith("rank 2 exited with signal 9;"), killed
