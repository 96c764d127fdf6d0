"""Container logs on disk: a launcher's log keeps each line's rank beside the program's own bytes."""

from __future__ import annotations

from pathlib import Path

from mpijob.api.trainer.mpi_output import LauncherOutput
from mpijob.store.logs import LogStore


def test_the_launchers_log_is_what_the_ranks_printed_with_the_ranks_beside_it(tmp_path: Path) -> None:
    logs = LogStore(tmp_path)
    w = logs.writer("ns", "launcher", "node", LauncherOutput(keep_tags=False))
    # bytes that are not UTF-8 pass through untouched; a line may come in several writes
    w.write(b"[1,0]<stdout>:caf\xe9 \xff[1,1]<stdout>:one\n[1,0]<std")
    w.write(b"out>:!\nmpirun: done\n[1,1]<stdout>:tail")
    w.close()
    assert logs.read("ns", "launcher", "node") == b"one\ncaf\xe9 \xff!\nmpirun: done\ntail\n"
    ranked = logs.read("ns", "launcher", "node", ranks=True)
    assert ranked == b"1 one\n0 caf\xe9 \xff!\n- mpirun: done\n1 tail\n"
    stamped = logs.read("ns", "launcher", "node", ranks=True, timestamps=True, tail_lines=1).split(b" ", 1)
    assert stamped[0].endswith(b"Z") and stamped[1] == b"1 tail\n"


def test_a_plain_pods_log_is_unchanged_and_has_no_ranks(tmp_path: Path) -> None:
    logs = LogStore(tmp_path)
    w = logs.writer("ns", "node", "node")
    w.write(b"[1,0]<stdout>:not mpirun's output here\n\nlast")
    w.close()
    assert logs.read("ns", "node", "node") == b"[1,0]<stdout>:not mpirun's output here\n\nlast\n"
    assert logs.read("ns", "node", "node", ranks=True) == b"- [1,0]<stdout>:not mpirun's output here\n- \n- last\n"


def test_lines_stored_before_ranks_were_kept_still_read_whole(tmp_path: Path) -> None:
    logs = LogStore(tmp_path)
    path = logs.path("ns", "old", "node")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"2026-01-01T00:00:01.000000000Z hello world\n2026-01-01T00:00:02.000000000Z \n"
                     b"2026-01-01T00:00:03.000000000Z one\n")
    assert logs.read("ns", "old", "node") == b"hello world\n\none\n"
    assert logs.read("ns", "old", "node", ranks=True) == b"- hello world\n- \n- one\n"


def test_a_tail_sends_what_is_there_after_the_lines_skipped_then_whole_new_lines(tmp_path: Path) -> None:
    logs = LogStore(tmp_path)
    path = logs.path("ns", "pod", "node")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"2026-01-01T00:00:01.000000000Z - one\n2026-01-01T00:00:02.000000000Z - two\n"
                     b"2026-01-01T00:00:03.000000000Z - thr")  # a line still being written is not sent
    assert logs.tail("ns", "pod", "node").first == b"one\ntwo\n"
    assert logs.tail("ns", "pod", "node", tail_lines=1, ranks=True).first == b"- two\n"
    assert logs.tail("ns", "pod", "node", skip_lines=1).first == b"two\n"  # resumed after the first line
    assert logs.tail("ns", "pod", "node", skip_lines=5).first == b""
    tail = logs.tail("ns", "pod", "node", skip_lines=2)
    assert tail.first == b"" and tail.read() == b""
    with path.open("ab") as f:
        f.write(b"ee\n2026-01-01T00:00:04.000000000Z - fo")
    assert tail.read() == b"three\n"
    assert tail.read() == b""
    with path.open("ab") as f:
        f.write(b"ur\n")
    assert tail.read() == b"four\n"
    assert logs.tail("ns", "gone", "node").read() == b""  # no file yet: nothing, no error
