"""The rank agent (`controllers/kubelet/rank_agent.py`), run as Open MPI's daemons run it: the program sees
what it would see without it (a terminal on stdout, a pipe on stderr, its stdin), every byte reaches the
rank's files, and the agent ends as the program did — its exit code, its signal — so mpirun reports the
same. Without a writable directory it steps aside and the output goes where it would have gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mpijob.controllers.kubelet import rank_agent
from mpijob.controllers.kubelet.rank_files import RankFiles

from support import SLOWDOWN

AGENT = ["/bin/sh", "-c", rank_agent.LAUNCH, "rank_agent.sh", sys.executable, rank_agent.__file__]  # as the daemons do
ENV = {"PATH": os.environ["PATH"], "OMPI_MCA_ess_base_jobid": "1617100801", "OMPI_COMM_WORLD_RANK": "3"}


def captured(path: Path) -> bytes:
    """What the agent appended to one of a rank's files, its records' bytes joined."""
    complete, rest = rank_agent.records(path.read_bytes())
    assert rest == b""
    return b"".join(part for _, part in complete)


def run(tmp_path: Path, program: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*AGENT, str(tmp_path), sys.executable, "-c", program], env=ENV, capture_output=True,
                          timeout=30 * SLOWDOWN, check=False, **kw)  # type: ignore[call-overload]


def test_every_byte_reaches_the_ranks_files_and_the_program_sees_a_terminal_and_a_pipe(tmp_path: Path) -> None:
    program = ("import os, sys, stat\n"
               "print('stdout is a tty:', os.isatty(1))\n"
               "print('stderr is a fifo:', stat.S_ISFIFO(os.fstat(2).st_mode), file=sys.stderr)\n"
               "print('stdin:', sys.stdin.read())\n"
               "for i in range(100000): print(i)\n"
               "sys.stdout.buffer.write(b'\\xff no newline')\n")
    done = run(tmp_path, program, input=b"from the daemon")
    assert done.returncode == 0, done.stderr
    assert done.stdout == done.stderr == b""  # nothing through the daemon: all of it in the files
    out = captured(tmp_path / "1617100801.3.1")
    assert out.startswith(b"stdout is a tty: True\nstdin: from the daemon\n0\n1\n")
    assert out.endswith(b"99999\n\xff no newline")
    assert out.count(b"\n") == 100002 and b"\r" not in out  # no terminal processing: `\n` stays `\n`
    assert captured(tmp_path / "1617100801.3.2") == b"stderr is a fifo: True\n"
    assert (tmp_path / "1617100801.3.1").stat().st_mode & 0o777 == 0o600


def test_the_program_starts_with_no_signal_ignored_that_the_daemon_did_not_ignore(tmp_path: Path) -> None:
    """Python ignores SIGPIPE in the agent; the program must not inherit that (`yes | head` would never end)."""
    done = subprocess.run([*AGENT, str(tmp_path), "grep", "^SigIgn", "/proc/self/status"], env=ENV, check=False,
                          timeout=30 * SLOWDOWN)
    assert done.returncode == 0
    ignored = int(captured(tmp_path / "1617100801.3.1").decode().split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1)), hex(ignored)


def test_it_ends_with_the_programs_exit_code_or_signal(tmp_path: Path) -> None:
    assert run(tmp_path, "import sys; sys.exit(7)").returncode == 7
    killed = run(tmp_path, "import os, sys; sys.stdout.write('partial'); sys.stdout.flush(); os.kill(os.getpid(), 9)")
    assert killed.returncode == -signal.SIGKILL
    assert captured(tmp_path / "1617100801.3.1") == b"partial"  # the line cut by its death, kept


def test_signals_reach_the_program(tmp_path: Path) -> None:
    program = ("import signal, sys, time\n"
               "signal.signal(signal.SIGTERM, lambda *a: (print('checkpointed', flush=True), sys.exit(143)))\n"
               "print('ready', flush=True); time.sleep(60)\n")
    agent = subprocess.Popen([*AGENT, str(tmp_path), sys.executable, "-c", program], env=ENV)
    out = tmp_path / "1617100801.3.1"
    deadline = time.monotonic() + 20 * SLOWDOWN
    while not (out.exists() and captured(out)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert Path(f"/proc/{agent.pid}/comm").read_text().strip() == rank_agent.PROCESS_NAME
    agent.send_signal(signal.SIGTERM)
    assert agent.wait(timeout=20 * SLOWDOWN) == 143
    assert captured(out) == b"ready\ncheckpointed\n"


def test_a_child_left_holding_stdout_does_not_keep_the_rank_running(tmp_path: Path) -> None:
    program = "import subprocess; print(subprocess.Popen(['sleep', '30']).pid)"
    t0 = time.monotonic()
    done = run(tmp_path, program)
    assert done.returncode == 0 and time.monotonic() - t0 < 10 * SLOWDOWN
    os.kill(int(captured(tmp_path / "1617100801.3.1").decode()), signal.SIGKILL)


def test_without_a_writable_directory_it_runs_the_program_in_its_place(tmp_path: Path) -> None:
    agent = subprocess.Popen([*AGENT, str(tmp_path / "missing"), sys.executable, "-c", "import os; print(os.getpid())"],
                             env=ENV, stdout=subprocess.PIPE)
    out, _ = agent.communicate(timeout=30 * SLOWDOWN)
    assert agent.returncode == 0
    assert int(out) == agent.pid  # the program itself, its output through the daemon


def test_the_launchers_supervisor_stores_each_ranks_lines_beside_its_rank_in_the_order_written(
        tmp_path: Path) -> None:
    ranks, log = tmp_path / "ranks", tmp_path / "log"
    ranks.mkdir()
    record = rank_agent.RECORD.pack
    t = 1_800_000_000 * 10**9
    (ranks / rank_agent.FILE.pattern).write_bytes(b"not a rank's file\n")
    (ranks / "prterun-vm-1@1.0.1").write_bytes(record(t + 3, 10) + b"zero\nhalf " + record(t + 9, 3)[:5])
    (ranks / "prterun-vm-1@1.12.2").write_bytes(record(t + 1, 7) + b"twelve\n")
    files = RankFiles(ranks, log)
    files.poll()  # a record cut in its header waits for the rest of it
    with open(ranks / "prterun-vm-1@1.0.1", "ab") as f:
        f.write(record(t + 9, 7)[5:] + b"a line\n")
    files.close()
    stored = [ln.split(b" ", 2) for ln in log.read_bytes().split(b"\n")[:-1]]
    assert [(rank, text) for _, rank, text in stored] == [(b"12", b"twelve"), (b"0", b"zero"), (b"0", b"half a line")]
    assert stored[0][0] == b"2027-01-15T08:00:00.000000001Z"  # the time the rank's agent read it


def test_where_its_python_cannot_run_the_program_runs_in_its_place(tmp_path: Path) -> None:
    """A root pod's own home hides a Python under /root: the rank runs all the same, its output through mpirun."""
    hidden = [*AGENT[:4], str(tmp_path / "no-python"), rank_agent.__file__, str(tmp_path), sys.executable, "-c"]
    done = subprocess.run([*hidden, "print('ran')"], env=ENV, capture_output=True, timeout=30 * SLOWDOWN,
                          check=False)
    assert (done.returncode, done.stdout) == (0, b"ran\n")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("path", ["/home/a user/ranks", "/tmp/ranks\tx"])
def test_a_path_with_a_space_gives_no_agent(path: str) -> None:
    from mpijob.controllers.kubelet.mpi_env import rank_agent_env
    assert rank_agent_env("/x/rank_agent.sh", "/x/rank_agent.py", path) == {}
    assert set(rank_agent_env("/x/rank_agent.sh", "/x/rank_agent.py", "/tmp/ranks")) == {
        "OMPI_MCA_orte_fork_agent", "PRTE_MCA_odls_base_exec_agent"}
