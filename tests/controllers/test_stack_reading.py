"""Reading ranks' stacks (controllers/trainer/stacks.py) on real processes, no server: which process of a pod is
a rank (not its agent, not a shell), a Python rank's frames through py-spy and eu-stack, a native one's through
eu-stack, and a rank that cannot be read reported with why, its tool killed and reaped at the bound. Real MPI
jobs: tests/e2e/test_debug_stacks.py."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpijob.controllers.trainer import stacks
from mpijob.controllers.trainer.watchdog import Pod

from support import wait_for

RANKS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")
# A pod's tree: a shell carrying rank 0 above its `sleep` (the rank), and a stand-in for the rank agent
# (named as the agent is in /proc) above rank 1, a Python program waiting in a named function.
AGENT = """
import os, subprocess, sys
open("/proc/self/comm", "w").write("mpijob-rank")
sys.exit(subprocess.call(sys.argv[1:]))
"""
PROGRAM = """
import sys, time

def wait_for_input():
    open(sys.argv[1], "w").close()  # in its function now, not still importing: the test may read it
    time.sleep(120)

wait_for_input()
"""


@pytest.fixture()
def pod(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "prog.py").write_text(PROGRAM)
    script = (f"OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 sh -c 'sleep 120 & wait' & "
              f"OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 {sys.executable} {tmp_path / 'agent.py'} "
              f"{sys.executable} {tmp_path / 'prog.py'} {tmp_path / 'waiting'} & wait")
    proc = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _ranks(proc: subprocess.Popen[bytes]) -> list[stacks.RankProcess]:
    def found() -> list[stacks.RankProcess] | None:
        ranks = stacks.find_ranks([Pod("p", (proc.pid,), None)], RANKS, orphans=False)
        names = [Path(f"/proc/{r.pid}/comm").read_text().strip() for r in ranks]
        # rank 1 is the program, not the agent caught before it renamed itself (under load, it was), and in
        # its function, not still importing: the file it then makes is its last argument
        argv = Path(f"/proc/{ranks[1].pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0") if len(ranks) == 2 else []
        waiting = b"prog.py" in b" ".join(argv) and Path(os.fsdecode(argv[-1])).exists()
        return ranks if waiting and names[0] == "sleep" and names[1].startswith("python") else None

    return wait_for(found, "rank 0's sleep and rank 1's Python, in its function, below the agent", timeout=30)


def test_a_rank_is_the_first_process_below_its_agent_and_shells(pod: subprocess.Popen[bytes]) -> None:
    ranks = _ranks(pod)
    assert [(r.rank, r.pod) for r in ranks] == [(0, "p"), (1, "p")]


def test_python_and_native_ranks_are_read_with_their_tools(pod: subprocess.Popen[bytes]) -> None:
    native, python = asyncio.run(stacks.read_all(_ranks(pod)))
    assert native.error == "" and native.tool == "eu-stack" and native.frames, native
    assert any("nanosleep" in f.function for f in native.frames), native  # the sleep, in libc
    assert python.error == "" and python.tool == "py-spy+eu-stack", python
    functions = [f.function for f in python.frames]
    assert functions[:2] == ["<module>", "wait_for_input"] and functions[-1] == "clock_nanosleep", functions


def _fake(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_a_tool_past_its_bound_is_killed_and_the_rank_reported(pod: subprocess.Popen[bytes], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    hung = _fake(tmp_path, "eu-stack", f"echo $$ > {tmp_path / 'pid'}; exec sleep 60")
    monkeypatch.setattr(stacks, "tool", lambda name: hung if name == stacks.EU_STACK else None)
    [rank] = [r for r in _ranks(pod) if r.rank == 0]
    read = asyncio.run(stacks.read_rank(rank, timeout=1.0))
    assert read.error == "eu-stack read nothing within 1s and was stopped" and read.tool == "eu-stack", read
    tool_pid = int((tmp_path / "pid").read_text())
    assert not Path(f"/proc/{tool_pid}").exists()  # killed and reaped: no zombie left
    assert Path(f"/proc/{rank.pid}/stat").read_text().split(") ")[1][0] in "SR"  # the rank runs on


def test_a_refused_trace_says_why_and_what_to_do(pod: subprocess.Popen[bytes], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    refused = _fake(tmp_path, "eu-stack", "echo 'eu-stack: dwfl_linux_proc_attach pid 1: Operation not permitted' >&2;"
                                          " exit 1")
    monkeypatch.setattr(stacks, "tool", lambda name: refused if name == stacks.EU_STACK else None)
    [rank] = [r for r in _ranks(pod) if r.rank == 0]
    read = asyncio.run(stacks.read_rank(rank))
    assert read.error.startswith("the kernel refused to let the server trace it (eu-stack: eu-stack: "
                                 "dwfl_linux_proc_attach pid 1: Operation not permitted): the server must run as "
                                 "root (CAP_SYS_PTRACE)"), read


def test_a_rank_that_ended_and_a_missing_tool_are_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ended = subprocess.Popen(["true"])
    ended.wait()
    read = asyncio.run(stacks.read_rank(stacks.RankProcess(5, "p", ended.pid)))
    assert read.error == "the rank ended while its stack was read", read
    monkeypatch.setattr(stacks, "tool", lambda name: None)
    read = asyncio.run(stacks.read_rank(stacks.RankProcess(5, "p", os.getpid())))
    assert read.error.startswith("no tool to read it is installed"), read
