"""`mpijob debug stacks`: how the merged stacks read (pure, from the server's JSON) and its usage errors, which
need no server. Against real jobs: tests/e2e/test_debug_stacks.py."""

from __future__ import annotations

from mpijob.api.trainer.stacks import Frame, RankStack, dump
from mpijob.cli.debug_cmd import render
from mpijob.cli.main import app
from typer.testing import CliRunner

BARRIER = (Frame("<module>", "prog.py:8"), Frame("MPI_Barrier", "libmpi.so.40"))


def test_the_odd_rank_first_each_stack_outermost_call_first_then_the_ranks_not_read() -> None:
    stacks = [RankStack(r, "pi-node-0-0", 10 + r, "py-spy+eu-stack", BARRIER) for r in range(3)]
    stacks += [RankStack(3, "pi-node-0-1", 13, "py-spy+eu-stack", (Frame("<module>", "prog.py:7"),
                                                                   Frame("read_batch", "prog.py:4"))),
               RankStack(4, "pi-node-0-1", 14, "eu-stack", error="the rank ended while its stack was read")]
    lines = render(dump("team-a", "pi", stacks, 0.25, "2026-11-20T12:00:00Z"))
    assert lines[0] == ("trainjob team-a/pi: 5 ranks read in 0.25s, 2 distinct stacks (odd ones out first; each "
                        "from the outermost call down to where the rank is now)")
    assert lines[1:] == [
        "", "rank 3 (1 of 5) in pi-node-0-1", "    <module> (prog.py:7)", "    read_batch (prog.py:4)",
        "", "ranks 0-2 (3 of 5) in pi-node-0-0", "    <module> (prog.py:8)", "    MPI_Barrier (libmpi.so.40)",
        "", "not read (1):", "    rank 4 (pod pi-node-0-1, pid 14): the rank ended while its stack was read"]


def test_only_json_and_yaml_are_output_formats() -> None:
    r = CliRunner().invoke(app, ["debug", "stacks", "pi", "-o", "wide"], env={"KUBECONFIG": "/nonexistent"})
    assert r.exit_code == 2 and "debug stacks --output 'wide' is not supported; use one of: json, yaml" in r.stderr
