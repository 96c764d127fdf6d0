"""Every rank's stack, merged (pure): the tools' output read, a stack cut at its MPI call, identical stacks grouped
with their ranks as ranges, the odd ones out first, the JSON every surface reads, and the stall's pointer to it.
The tools themselves, on real ranks: tests/e2e/test_debug_stacks.py."""

from __future__ import annotations

from mpijob.api import names
from mpijob.api.trainer import bound_failures
from mpijob.api.trainer.failures import Facts, PodFacts
from mpijob.api.trainer.stacks import (
    Frame,
    RankStack,
    dump,
    frames_of,
    from_eu_stack,
    from_gdb,
    from_py_spy,
    group_title,
    merge,
    rank_ranges,
    simplify,
    stack_hint,
    with_native,
)

# `py-spy dump --native --json` of a rank in comm.Barrier() (trimmed to what is read)
PY_SPY = [{"os_thread_id": 99, "frames": [{"name": "other", "short_filename": "t.py", "line": 1}]},
          {"os_thread_id": 31205, "frames": [
              {"name": "sched_yield", "filename": "/usr/lib/x86_64-linux-gnu/libc.so.6", "short_filename": "libc.so.6",
               "line": 0},
              {"name": "ompi_sync_wait_mt", "short_filename": "libopen-pal.so.40.30.2", "line": 0},
              {"name": "PMPI_Barrier", "short_filename": "libmpi.so.40.30.4", "line": 0},
              {"name": "Barrier", "short_filename": "mpi4py/MPI.openmpi.cpython-311-x86_64-linux-gnu.so", "line": 0},
              {"name": "<module>", "filename": "/tmp/st/prog.py", "short_filename": "prog.py", "line": 8},
              {"name": "0x7f3f9964524a", "short_filename": "libc.so.6", "line": 0}]}]
EU_STACK = """PID 1369 - process
TID 1369:
#0  0x00007f9972ced545 clock_nanosleep@GLIBC_2.2.5 - /usr/lib/x86_64-linux-gnu/libc.so.6
    ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48:7
#1  0x00007f9972cf1b13 sleep - /usr/lib/x86_64-linux-gnu/libc.so.6
#2  0x000055e8f458f1a9 wait_for_input - /tmp/st/prog
    /tmp/st/prog.c:3:36
#3  0x000055e8f458f1d4 main - /tmp/st/prog
    /tmp/st/prog.c:8:20
#4  0x00007f9972c4524a __libc_start_call_main - /usr/lib/x86_64-linux-gnu/libc.so.6
#5  0x00007f9972c45305 __libc_start_main@@GLIBC_2.34 - /usr/lib/x86_64-linux-gnu/libc.so.6
#6  0x000055e8f458f0b1 _start - /tmp/st/prog
TID 1373:
#0  0x00007f9972d1e8f6 epoll_wait - /usr/lib/x86_64-linux-gnu/libc.so.6
"""
GDB = """[New LWP 1373]
0x00007fdd112ab017 in __GI_sched_yield () at ../sysdeps/unix/syscall-template.S:120
#0  0x00007fdd112ab017 in __GI_sched_yield () at ../sysdeps/unix/syscall-template.S:120
#1  0x00007fdd113f11f5 in ompi_request_default_wait_all () from /lib/x86_64-linux-gnu/libmpi.so.40
#3  0x00007fdd1140a568 in PMPI_Barrier () from /lib/x86_64-linux-gnu/libmpi.so.40
#4  0x000055e8f458f1de in main (argc=1, argv=0x7ffc3dd484b8) at prog.c:9
[Inferior 1 (process 1369) detached]
"""
BARRIER = (Frame("<module>", "prog.py:8"), Frame("Barrier", "mpi4py/MPI.openmpi.cpython-311-x86_64-linux-gnu.so"),
           Frame("MPI_Barrier", "libmpi.so.40.30.4"))


def test_py_spy_gives_the_main_threads_frames_outermost_first_cut_at_the_mpi_call() -> None:
    frames = from_py_spy(PY_SPY, {31205})
    assert frames[0] == Frame("0x7f3f9964524a", "libc.so.6") and frames[-1] == Frame("sched_yield", "libc.so.6")
    assert simplify(frames) == BARRIER  # no address, no MPI internals, the profiling name as the program calls it
    assert from_py_spy([], {1}) == () and from_py_spy({"not": "a list"}, {1}) == ()
    named = [{"os_thread_id": 7, "frames": []}, {"os_thread_id": 8, "thread_name": "MainThread",
                                                  "frames": [{"name": "main", "short_filename": "t.py", "line": 3}]}]
    assert from_py_spy(named, {12345}) == (Frame("main", "t.py:3"),)  # no thread of the process's ids: MainThread
    assert from_py_spy(PY_SPY, {12345})[0] == Frame("0x7f3f9964524a", "libc.so.6")  # nor that: the oldest


def test_a_python_ranks_stack_goes_on_into_the_native_calls_below_its_innermost_python_frame() -> None:
    python = (Frame("<module>", "prog.py:7"), Frame("read_batch", "prog.py:4"))
    native = from_eu_stack("""TID 4134:
#0  0x00007f9972ced545 clock_nanosleep@GLIBC_2.2.5 - /usr/lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f9973115ada time_sleep - /usr/lib/libpython3.11.so.1.0
#2  0x00007f9972fa6ee2 cfunction_vectorcall_O - /usr/lib/libpython3.11.so.1.0
#3  0x00007f9972f58ba3 PyObject_Vectorcall - /usr/lib/libpython3.11.so.1.0
#4  0x00007f9972efd9c3 _PyEval_EvalFrameDefault - /usr/lib/libpython3.11.so.1.0
#5  0x00007f99730508e4 PyEval_EvalCode - /usr/lib/libpython3.11.so.1.0
""")
    assert simplify(with_native(python, native)) == (
        *python, Frame("time_sleep", "libpython3.11.so.1.0"), Frame("clock_nanosleep", "libc.so.6"))
    assert with_native(python, (Frame("main", "x.c:1"),)) == python  # no interpreter loop seen: the Python frames


def test_eu_stack_gives_the_first_threads_frames_with_source_lines_where_known() -> None:
    assert simplify(from_eu_stack(EU_STACK)) == (
        Frame("main", "/tmp/st/prog.c:8"), Frame("wait_for_input", "/tmp/st/prog.c:3"), Frame("sleep", "libc.so.6"),
        Frame("clock_nanosleep", "../sysdeps/unix/sysv/linux/clock_nanosleep.c:48"))


def test_gdb_gives_the_current_threads_frames() -> None:
    assert simplify(from_gdb(GDB)) == (Frame("main", "prog.c:9"), Frame("MPI_Barrier", "libmpi.so.40"))


def test_rank_ranges_are_runs_of_consecutive_ranks() -> None:
    assert rank_ranges([9, 0, 1, 2, 3, 4, 5, 6]) == "0-6,9"
    assert rank_ranges([3]) == "3" and rank_ranges([1, 3, 4]) == "1,3-4" and rank_ranges([]) == ""
    assert group_title([0, 1, 2], 4) == "ranks 0-2 (3 of 4)" and group_title([3], 4) == "rank 3 (1 of 4)"


def test_identical_stacks_are_one_group_and_the_odd_ones_out_come_first() -> None:
    sleeping = (Frame("<module>", "prog.py:7"), Frame("read_batch", "prog.py:4"))
    other = (Frame("main", "prog.c:1"),)
    stacks = [RankStack(r, f"pod-{r // 2}", 100 + r, "py-spy", BARRIER) for r in (0, 1, 2, 4, 5, 6)]
    stacks += [RankStack(3, "pod-1", 103, "py-spy", sleeping), RankStack(7, "pod-3", 107, "eu-stack", other),
               RankStack(8, "pod-4", 108, "eu-stack", other), RankStack(9, "pod-4", 109, error="ptrace refused")]
    groups, errors = merge(stacks)
    assert [(g.ranks, g.frames) for g in groups] == [((3,), sleeping), ((7, 8), other), ((0, 1, 2, 4, 5, 6), BARRIER)]
    assert groups[2].pods == ("pod-0", "pod-1", "pod-2", "pod-3") and groups[1].tools == ("eu-stack",)
    assert [e.rank for e in errors] == [9]
    tie = merge([RankStack(5, "p", 5, "gdb", other), RankStack(1, "p", 1, "gdb", sleeping)])[0]
    assert [g.ranks for g in tie] == [(1,), (5,)]  # as many ranks each: the lowest rank first


def test_the_json_holds_the_groups_in_order_then_the_ranks_not_read() -> None:
    stacks = [RankStack(r, "node-0", 10 + r, "py-spy", BARRIER) for r in range(3)]
    stacks += [RankStack(3, "node-1", 13, "py-spy", (Frame("read_batch", "prog.py:4"),)),
               RankStack(4, "node-1", 14, "eu-stack", error="the rank ended while its stack was read")]
    out = dump("team", "stall", stacks, 0.12345, "2026-11-20T12:00:00Z")
    assert out["kind"] == "StackDump" and out["apiVersion"] == f"{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}"
    assert out["metadata"] == {"name": "stall", "namespace": "team", "creationTimestamp": "2026-11-20T12:00:00Z"}
    assert (out["ranks"], out["seconds"]) == (5, 0.123)
    first, second = out["groups"]
    assert (first["ranks"], first["title"], first["frames"]) == (
        "3", "rank 3 (1 of 5)", [{"function": "read_batch", "where": "prog.py:4"}])
    assert (second["ranks"], second["rankList"], second["pods"], second["tools"]) == ("0-2", [0, 1, 2], ["node-0"],
                                                                                      ["py-spy"])
    assert tuple(frames_of(second)) == BARRIER
    assert out["errors"] == [{"rank": 4, "pod": "node-1", "pid": 14, "tool": "eu-stack",
                              "message": "the rank ended while its stack was read"}]


def test_a_stall_names_the_command_that_shows_its_ranks_stacks() -> None:
    facts = Facts("trainer", "trainer-launcher-0-0", (PodFacts("trainer-node-0-0", "trainer-node-0-0"),),
                  bound=600, idle=("trainer-node-0-0",), idle_ranks=(0,), namespace="team-a")
    found = bound_failures.stalled(facts)
    assert stack_hint("trainer", "team-a") == "see its ranks' stacks: mpijob debug stacks trainer -n team-a"
    assert stack_hint("trainer", "team-a") in found.fix and found.reason == names.FAILURE_STALLED
    assert found.message.startswith(f"{names.FAILURE_STALLED}: nothing was printed")
