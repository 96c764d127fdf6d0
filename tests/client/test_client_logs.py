"""The pure half of merged logs and `wait`: timestamps, merge-sort, live reordering, grep, durations,
which endings satisfy which condition, the progress line."""

from __future__ import annotations

import json

import pytest
from mpijob.api.trainer.mpi_output import untag
from mpijob.cli.flags import message, parse_duration
from mpijob.cli.logs_cmd import Printer
from mpijob.cli.views import state_line
from mpijob.client.errors import InvalidArgument
from mpijob.client.logs import Filter, LogLine, PodLog, Reorder, merge, parse_line, parse_log, stamp_ns
from mpijob.client.wait import JobState, reached


def test_stamps_parse_to_nanoseconds_even_with_trimmed_fractions() -> None:
    # RFC3339Nano drops trailing zeros: as text ".1Z" > ".123Z", as time it is earlier
    assert stamp_ns("2026-01-01T00:00:05.1Z") < stamp_ns("2026-01-01T00:00:05.123Z")  # type: ignore[operator]
    assert stamp_ns("2026-01-01T00:00:05Z") == stamp_ns("2026-01-01T00:00:05.000000000Z")
    assert stamp_ns("2026-01-01T01:00:05+01:00") == stamp_ns("2026-01-01T00:00:05Z")
    assert stamp_ns("not-a-stamp") is None


def test_merge_orders_lines_of_every_pod_by_time() -> None:
    logs = {
        "pi-node-0-0": "2026-01-01T00:00:01.5Z node first\n2026-01-01T00:00:03Z node last\n",
        "pi-launcher-0-0": "2026-01-01T00:00:01.000000001Z launcher a\n2026-01-01T00:00:02Z launcher b\n",
    }
    merged = merge(parse_log(pod, text) for pod, text in logs.items())
    assert [(ln.pod, ln.text) for ln in merged] == [
        ("pi-launcher-0-0", "launcher a"), ("pi-node-0-0", "node first"),
        ("pi-launcher-0-0", "launcher b"), ("pi-node-0-0", "node last"),
    ]
    assert merged[0].stamp == "2026-01-01T00:00:01.000000001Z"


def test_equal_stamps_keep_each_pods_own_order_and_unstamped_lines_follow_their_predecessor() -> None:
    logs = {"b": "2026-01-01T00:00:01Z b1\n2026-01-01T00:00:01Z b2\n", "a": "2026-01-01T00:00:01Z a1\ncontinued\n"}
    assert [ln.text for ln in merge(parse_log(pod, text) for pod, text in logs.items())] == ["a1", "continued", "b1", "b2"]
    assert parse_line("p", "no stamp here", 3, 42) == [LogLine(42, "p", 3, "", "no stamp here")]


def _pieces(text: str) -> list[tuple[int | None, str]]:
    return [(p.rank, p.text) for p in untag(text)]


def test_open_mpi_rank_tags_become_ranks_and_leave_the_text() -> None:
    # exactly what Open MPI 4.1 `mpirun --tag-output` writes, including a rank that printed no newline
    assert _pieces("[1,0]<stdout>:pi ~= 3.14") == [(0, "pi ~= 3.14")]
    assert _pieces("[1,12]<stderr>:Traceback") == [(12, "Traceback")]
    assert _pieces("[1,0]<stdout>:partial[1,1]<stdout>:out 1") == [(0, "partial"), (1, "out 1")]
    assert _pieces("mpirun noticed that process rank 1 exited") == [(None, "mpirun noticed that process rank 1 exited")]
    assert _pieces("[1,3]<stdout>:") == [(3, "")]
    lines = parse_line("launcher", "2026-01-01T00:00:01Z [1,2]<stdout>:step 1", 4)
    assert [(ln.rank, ln.text, ln.stamp, ln.seq) for ln in lines] == [(2, "step 1", "2026-01-01T00:00:01Z", 4)]


def test_a_ranked_line_takes_its_rank_from_its_own_field() -> None:
    # the local cluster's answer to RANKS_HEADER: `<stamp> <rank|-> <text>`; the text is the program's own
    line = "2026-01-01T00:00:01Z 3 [1,0]<stdout>: looks like a tag, printed by rank 3"
    [ln] = parse_line("launcher", line, 0, ranked=True)
    assert (ln.rank, ln.text) == (3, "[1,0]<stdout>: looks like a tag, printed by rank 3")
    [ln] = parse_line("launcher", "2026-01-01T00:00:02Z - mpirun: done", 1, ranked=True)
    assert (ln.rank, ln.text) == (None, "mpirun: done")
    [ln] = parse_line("launcher", "2026-01-01T00:00:03Z 2 [1,2]<stdout>:asked for tags", 2, ranked=True)
    assert (ln.rank, ln.text) == (2, "asked for tags")  # a tag the user asked for is shown as the rank
    [ln] = parse_line("launcher", "2026-01-01T00:00:04Z 1 ", 3, ranked=True)
    assert (ln.rank, ln.text) == (1, "")


def test_a_ranks_line_split_into_pieces_is_put_back_together() -> None:
    # Open MPI forwards a rank's output in chunks: a line cut mid-way continues after other ranks' output
    log = "\n".join([
        "2026-01-01T00:00:01Z [1,0]<stdout>:rank 0 li[1,1]<stdout>:rank 1 line 1",
        "2026-01-01T00:00:02Z [1,0]<stdout>:ne 1",
        "2026-01-01T00:00:03Z [1,2]<stdout>:de[1,2]<stdout>:f",
        "2026-01-01T00:00:04Z [1,3]<stdout>:no newline at the end[1,0]<stdout>:x",
        "2026-01-01T00:00:05Z mpirun: done",
    ])
    lines = parse_log("launcher", log)
    assert [(ln.rank, ln.text) for ln in lines] == [
        (1, "rank 1 line 1"), (0, "rank 0 line 1"), (2, "def"), (0, "x"), (None, "mpirun: done"),
        (3, "no newline at the end")]  # what never got its newline comes last, not lost
    assert lines[1].stamp == "2026-01-01T00:00:02Z"  # a joined line is as old as the piece that ended it
    assert [(ln.ns, ln.seq) for ln in lines] == sorted((ln.ns, ln.seq) for ln in lines)  # still merge-sortable


def test_rank_filter_keeps_one_ranks_lines_and_the_printer_names_pod_and_rank() -> None:
    merged = parse_log("pi-launcher", "2026-01-01T00:00:01Z [1,0]<stdout>:zero\n2026-01-01T00:00:02Z [1,1]<stdout>:one\n"
                                      "2026-01-01T00:00:03Z plain\n")
    assert [ln.text for ln in merged if Filter(None, rank=1)(ln)] == ["one"]
    assert [ln.text for ln in merged if Filter("one", rank=0)(ln)] == []
    printer = Printer(prefix=True, timestamps=False, colour=False)
    assert [printer.format(ln) for ln in merged] == ["[pi-launcher rank 0] zero", "[pi-launcher rank 1] one",
                                                     "[pi-launcher] plain"]
    as_json = Printer(prefix=True, timestamps=False, colour=True, as_json=True)
    assert [json.loads(as_json.format(ln)) for ln in merged[1:]] == [
        {"time": "2026-01-01T00:00:02Z", "pod": "pi-launcher", "rank": 1, "text": "one"},
        {"time": "2026-01-01T00:00:03Z", "pod": "pi-launcher", "rank": None, "text": "plain"}]


def test_reorder_holds_lines_for_the_window_then_releases_in_time_order() -> None:
    r = Reorder(window=1.0)
    r.push(LogLine(20, "launcher", 0, "", "late stamp, early arrival"), now=0.0)
    r.push(LogLine(10, "node", 0, "", "early stamp, late arrival"), now=0.5)
    assert r.ready(now=0.9) == []  # nothing held long enough yet
    assert [ln.ns for ln in r.ready(now=1.0)] == [10, 20]  # the held line releases the earlier one too
    r.push(LogLine(30, "node", 1, "", "x"), now=2.0)
    assert r.ready(now=2.1) == [] and len(r) == 1
    assert [ln.ns for ln in r.drain()] == [30] and len(r) == 0


def test_grep_filters_by_regex_and_rejects_a_bad_one_naming_the_parameter_and_in_the_cli_the_flag() -> None:
    keep = Filter(r"loss=\d")
    assert keep(LogLine(0, "p", 0, "", "step 3 loss=0.5"))
    assert not keep(LogLine(0, "p", 0, "", "step 3 acc=0.5"))
    assert Filter(None)(LogLine(0, "p", 0, "", "anything"))
    with pytest.raises(InvalidArgument) as err:
        Filter("(")
    assert err.value.param == "pattern" and "regular expression" in str(err.value) and "--" not in str(err.value)
    assert "--grep '('" in message(err.value) and "regular expression" in message(err.value)
    with pytest.raises(InvalidArgument, match="rank -1 is negative"):
        Filter(None, rank=-1)


def test_printer_prefixes_pods_and_colours_them_only_when_asked() -> None:
    line = LogLine(1, "pi-node-0-0", 0, "2026-01-01T00:00:01Z", "hello")
    assert Printer(prefix=True, timestamps=False, colour=False).format(line) == "[pi-node-0-0] hello"
    assert Printer(True, True, False).format(line) == "[pi-node-0-0] 2026-01-01T00:00:01Z hello"
    assert Printer(False, False, False).format(line) == "hello"
    coloured = Printer(True, False, True)
    a = coloured.format(line)
    b = coloured.format(LogLine(2, "pi-launcher-0-0", 0, "", "x"))
    assert a.startswith("\x1b[") and a.endswith("[pi-node-0-0]\x1b[0m hello")
    assert a.split("[pi")[0] != b.split("[pi")[0]  # another pod, another colour


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("10m", 600), ("1h", 3600), ("1h30m", 5400),
                                          ("250ms", 0.25), ("45", 45), ("1.5m", 90)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["ten", "10x", "m", "5m3", "-5s"])
def test_bad_durations_name_the_flag_and_the_fix(text: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        parse_duration(text, "--since")
    assert f"--since {text!r}" in str(err.value) and "10m" in str(err.value)


def _job(*conditions: str) -> dict[str, object]:
    return {"status": {"conditions": [{"type": c, "status": "True"} for c in conditions]}}


RUNNING = [{"metadata": {"name": "j-launcher-0-0", "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "launcher"}},
            "status": {"phase": "Running"}}]


def test_which_endings_satisfy_which_condition() -> None:
    assert reached("Complete", _job("Complete")) is True
    assert reached("Complete", _job("Failed")) is False
    assert reached("Complete", _job(), RUNNING) is None
    assert reached("Failed", _job("Failed")) is True
    assert reached("Failed", _job("Complete")) is False
    assert reached("Running", _job(), RUNNING) is True
    assert reached("Running", _job(), []) is None
    assert reached("Running", _job("Complete"), []) is True
    assert reached("Running", _job("Failed"), RUNNING) is False
    assert reached("Finished", _job("Failed")) is True
    assert reached("Finished", _job()) is None


def test_progress_line_shows_phase_queue_position_and_pods_ready() -> None:
    queued = JobState("Queued", "Waiting for quota", 0, 0, position=2, queue="user-queue")
    assert state_line(queued) == "Queued · position 2 in queue user-queue · Waiting for quota"
    starting = JobState("Starting", "", 1, 3)
    assert state_line(starting) == "Starting · 1/3 pods ready"


def test_a_log_read_in_chunks_cut_anywhere_is_the_log_read_whole() -> None:
    text = ("2026-01-01T00:00:01.5Z 0 zero\n2026-01-01T00:00:02Z - mpirun says\nno stamp\n"
            "2026-01-01T00:00:03.25Z 1 [1,1]<stdout>:one, tagged by its user\n2026-01-01T00:00:04Z 2 last")
    for ranked in (True, False):
        whole = parse_log("p", text, ranked)
        for size in (1, 7, 64):
            log = PodLog("p", ranked)
            raw = text.encode()
            pieces = [log.feed(raw[i:i + size]) for i in range(0, len(raw), size)]
            assert [ln for piece in pieces for ln in piece] + log.close() == whole
    ranked_lines = parse_log("p", text, ranked=True)
    assert [(ln.rank, ln.text) for ln in ranked_lines] == [
        (0, "zero"), (None, "mpirun says"), (None, "stamp"), (1, "one, tagged by its user"), (2, "last")]
    assert ranked_lines[2].ns == ranked_lines[1].ns and ranked_lines[3].stamp == "2026-01-01T00:00:03.25Z"
