"""The watchdog (controllers/trainer/watchdog.py): its Tracker fed looks at a job, as the clocks of the bounds
(pure), and its look at real process trees in /proc: an "mpirun" with ranks below it, and what a process
that is not ready listens on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpijob.api.trainer.bounds import Bounds
from mpijob.controllers.trainer.procfs import not_listening
from mpijob.controllers.trainer.watchdog import Kind, Look, Pod, Tracker, Watchdog

BOUNDS = Bounds(ready=10, wireup=5, exit_grace=3, stall=20)
RANKS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")


def _run(tracker: Tracker, *looks: Look) -> list[Kind]:
    return [v.kind for look in looks if (v := tracker.see(look))]


def test_wire_up_ends_when_every_rank_of_the_world_was_seen() -> None:
    t = Tracker(BOUNDS, 0)
    assert _run(t, Look(1, mpirun=7, cpu={"a": 0}), Look(2, 7, {0: "a"}, 2, cpu={"a": 1}),
                Look(3, 7, {}, 0, logged=frozenset({1}), cpu={"a": 2})) == []
    assert t.wired and t.seen == {0, 1}
    assert _run(t, Look(100, 7, {0: "a"}, 2, cpu={"a": 99})) == []  # wired: no wire-up bound any more


def test_without_a_world_size_every_daemon_running_ranks_ends_wire_up() -> None:
    t = Tracker(BOUNDS, 0)  # Hydra under -pmi-port: PMI_ID, and no PMI_SIZE
    _run(t, Look(1, 7, {0: "a"}, 0, frozenset({"a", "b"}), cpu={"a": 1}, started={"a": 1}))
    assert not t.wired
    _run(t, Look(2, 7, {0: "a", 1: "b"}, 0, frozenset({"a", "b"}), cpu={"a": 2}, started={"a": 1, "b": 1}))
    assert t.wired


def test_a_rank_that_cleared_its_environment_still_counts_as_started() -> None:
    t = Tracker(BOUNDS, 0)
    _run(t, Look(1, 7, {0: "a"}, 2, frozenset({"a", "b"}), cpu={"a": 1}, started={"a": 1}))
    assert not t.wired  # one process of a world of two
    _run(t, Look(2, 7, {0: "a"}, 2, frozenset({"a", "b"}), cpu={"a": 2}, started={"a": 1, "b": 1}))
    assert t.wired


def test_wire_up_times_out_counted_from_mpiruns_start_not_the_launchers() -> None:
    t = Tracker(BOUNDS, 0)
    assert _run(t, Look(30, cpu={"l": 30})) == []  # the launcher works before it calls mpirun: not wire-up
    assert _run(t, Look(31, mpirun=9, cpu={"l": 31}), Look(35, 9, {1: "n"}, 3, frozenset({"n"}), {"l": 35})) == []
    verdicts = [t.see(Look(36.5, 9, {}, 3, cpu={"l": 36}))]
    assert verdicts[0] is not None and verdicts[0].kind is Kind.WIREUP
    assert (verdicts[0].world_size, verdicts[0].ranks_seen, verdicts[0].reporting, verdicts[0].daemons) == (
        3, (1,), ("n",), ("n",))


def test_a_new_mpirun_starts_its_own_wire_up() -> None:
    t = Tracker(BOUNDS, 0)
    _run(t, Look(1, 5, {0: "a"}, 1, cpu={"a": 1}))
    assert t.wired
    _run(t, Look(2, None, cpu={"a": 2}), Look(3, 6, cpu={"a": 3}))
    assert not t.wired and t.seen == set()
    assert _run(t, Look(8.5, 6, cpu={"a": 8})) == [Kind.WIREUP]


def test_mpirun_outliving_its_ranks_is_noticed_after_the_grace_once_the_log_is_quiet() -> None:
    t = Tracker(BOUNDS, 0)
    _run(t, Look(1, 5, {0: "a", 1: "b"}, 2, output=10, cpu={"a": 1, "b": 1}))
    assert _run(t, Look(2, 5, {}, 2, output=20, cpu={"a": 2, "b": 2})) == []  # the ranks' last lines
    assert _run(t, Look(4.5, 5, {}, 2, output=20, cpu={"a": 3, "b": 3})) == []  # 2.5 s quiet: within the grace
    assert _run(t, Look(5.5, 5, {}, 2, output=20, cpu={"a": 4, "b": 4})) == [Kind.HUNG]


def test_the_ranks_exits_seen_go_with_the_verdict() -> None:
    t = Tracker(BOUNDS, 0)
    _run(t, Look(1, 5, {0: "a", 1: "b"}, 2, output=1, cpu={"a": 1}))
    _run(t, Look(2, 5, {1: "b"}, 2, output=1, cpu={"a": 2}, ended={0: 0}))
    verdicts = [v for look in (Look(3, 5, {}, 2, output=1, cpu={"a": 3}, ended={1: 3}),
                               Look(6.5, 5, {}, 2, output=1, cpu={"a": 4})) if (v := t.see(look))]
    assert [v.kind for v in verdicts] == [Kind.HUNG] and verdicts[0].exits == ((0, 0), (1, 3))


def test_a_rank_running_again_or_output_resets_the_grace() -> None:
    t = Tracker(BOUNDS, 0)
    _run(t, Look(1, 5, {0: "a"}, 1, output=1, cpu={"a": 1}))
    assert _run(t, Look(3, 5, {}, 1, output=1, cpu={"a": 2}), Look(4, 5, {}, 1, output=2, cpu={"a": 3}),
                Look(6.5, 5, {}, 1, output=2, cpu={"a": 4})) == []
    assert _run(t, Look(7.5, 5, {}, 1, output=2, cpu={"a": 5})) == [Kind.HUNG]


def test_quiet_and_idle_is_a_stall_and_output_or_cpu_ends_it() -> None:
    t = Tracker(BOUNDS, 0)
    looks = [Look(float(s), 5, {0: "a", 1: "b"}, 2, output=100, cpu={"a": 1.0, "b": 2.0}) for s in range(1, 22)]
    assert _run(t, *looks) == [Kind.STALLED]
    stall = Tracker(BOUNDS, 0)
    verdict = next(v for look in looks if (v := stall.see(look)))
    assert (verdict.idle, verdict.idle_ranks, verdict.bound) == (("a", "b"), (0, 1), 20)
    assert _run(t, Look(23, 5, {0: "a", 1: "b"}, 2, output=100, cpu={"a": 1.0, "b": 3.0})) == [Kind.RESUMED]
    assert _run(t, Look(24, 5, {0: "a", 1: "b"}, 2, output=100, cpu={"a": 1.0, "b": 3.0})) == []


def test_a_pod_computing_in_silence_is_not_a_stall() -> None:
    t = Tracker(BOUNDS, 0)
    looks = [Look(float(s), 5, {0: "a", 1: "b"}, 2, output=100, cpu={"a": 1.0, "b": 0.9 * s}) for s in range(1, 60)]
    assert _run(t, *looks) == []
    trickle = Tracker(BOUNDS, 0)  # sshd's and the daemons' housekeeping: well under IDLE_CPU of a core
    assert _run(trickle, *[Look(float(s), None, {}, 0, output=1, cpu={"a": 0.001 * s}) for s in range(1, 22)]) == [
        Kind.STALLED]


# -- the look at real processes -------------------------------------------------------------------------------


@pytest.fixture
def fake_mpirun(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A program named mpirun (that is what the kernel calls a script's process) starting two "ranks" with
    Open MPI's variables, one of which starts a child of its own."""
    script = tmp_path / "mpirun"
    script.write_text("#!/bin/sh\n"
                      "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=3 sh -c 'sleep 30 & wait' &\n"
                      "OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=3 sleep 30 &\n"
                      "wait\n")
    script.chmod(0o755)
    proc = subprocess.Popen([str(script)], start_new_session=True)
    yield proc
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_look_finds_mpirun_its_ranks_and_the_world(fake_mpirun: subprocess.Popen[bytes], tmp_path: Path) -> None:
    log = tmp_path / "node.log"
    log.write_bytes(b"2026-01-01T00:00:00.000000000Z 1 rank one says hi\n2026-01-01T00:00:00.1Z - mpirun\n")
    dog = Watchdog([Pod("l", (fake_mpirun.pid,), None, launcher=True)], RANKS, log, Tracker(BOUNDS, 0))
    deadline, logged = time.monotonic() + 10, []
    while True:  # until both ranks have been started
        look = dog.look(1.0)
        logged.append(look.logged)
        if look.ranks == {0: "l", 2: "l"} or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert look.mpirun == fake_mpirun.pid and look.ranks == {0: "l", 2: "l"} and look.world_size == 3
    assert logged[0] == frozenset({1}) and not any(logged[1:])  # each line read once
    assert look.output == log.stat().st_size and look.cpu["l"] >= 0


def test_a_look_reads_an_ended_ranks_exit_status(tmp_path: Path) -> None:
    script = tmp_path / "mpirun"
    script.write_text("#!/bin/sh\nOMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 sh -c 'sleep 1; exit 7' &\nsleep 30\n")
    script.chmod(0o755)
    proc = subprocess.Popen([str(script)], start_new_session=True)
    try:
        dog = Watchdog([Pod("l", (proc.pid,), None, launcher=True)], RANKS, tmp_path / "log", Tracker(BOUNDS, 0))
        deadline = time.monotonic() + 10
        while dog.look(1.0).ranks != {0: "l"} and time.monotonic() < deadline:
            time.sleep(0.05)  # seen running: its pidfd is held; it exits 7 a second after its start
        ended: dict[int, int] = {}
        while not ended and time.monotonic() < deadline:
            ended = dog.look(2.0).ended
            time.sleep(0.05)
        assert ended == {0: 7}, ended
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        dog.close()


def test_a_process_listening_elsewhere_is_named() -> None:
    code = ("import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
            "print(s.getsockname()[1], flush=True); time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        why = not_listening([proc.pid], 2222)
        name = Path(sys.executable).name[:15]
        assert why == f"it listens elsewhere than the probe's port 2222: {name} on port {port}", why
        assert not_listening([proc.pid], port) == ""  # listening where it should: nothing to add
    finally:
        proc.kill()
        proc.wait()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert not_listening([sleeper.pid], 2222) == "none of its processes listens on a TCP port (they are: sleep)"
    finally:
        sleeper.kill()
        sleeper.wait()
