"""The Stacks tab of a running job: "Read stacks" shows every rank's stack merged, as `mpijob debug stacks`
prints it (the odd rank first, naming its function; the others in MPI_Barrier). The endpoint and the merge:
tests/e2e/test_debug_stacks.py, tests/api/test_stacks.py."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser_support import Dashboard, wait_for

from support import TRAINER, create, trainjob

JOB = "dash-stacks"
READING = "Reading the ranks' stacks"  # the spinner's label while a read is under way
PROGRAM = '''
import time
from mpi4py import MPI


def read_batch():
    time.sleep(900)


comm = MPI.COMM_WORLD
if comm.Get_rank() == 2:
    read_batch()
comm.Barrier()
'''


@pytest.fixture(scope="module")
def running(api: httpx.Client) -> Iterator[str]:
    where = Path(tempfile.mkdtemp(prefix="dash-stacks-", dir="/tmp"))
    where.chmod(0o755)  # the pods run as their namespace's user
    (where / "prog.py").write_text(PROGRAM)
    (where / "prog.py").chmod(0o644)
    create(api, trainjob(JOB, ["mpirun", "python", str(where / "prog.py")], num_nodes=3))
    try:
        yield JOB
    finally:
        api.delete(f"{TRAINER}/namespaces/default/trainjobs/{JOB}")
        shutil.rmtree(where, ignore_errors=True)


def test_read_stacks_shows_the_odd_rank_first(dash: Dashboard, running: str) -> None:
    dash.load(f"#/jobs/default/{running}/stacks")
    dash.settled("the job's Stacks tab")
    button = dash.one('[data-testid="read-stacks"]')
    wait_for(button.is_enabled, "the job to run (the button enabled)", 120)

    def groups() -> list[str] | None:  # read until every rank is where the program holds it
        dash.one('[data-testid="read-stacks"]').click()
        wait_for(lambda: not dash.find(f'[aria-label="{READING}"]'), "the answer", 30)
        texts = [g.text for g in dash.find('[data-testid="stack-group"]')]
        settled = len(texts) == 2 and texts[0].startswith("rank 2 ") and "MPI_Barrier" in texts[1]
        return texts if settled else None  # (under load, ranks 0-1 were once caught before their barrier)

    odd, waiting = wait_for(groups, "rank 2 alone, ranks 0-1 together in MPI_Barrier", 120, interval=1.0)
    assert odd.startswith("rank 2 (1 of 3) in ") and "read_batch (prog.py:" in odd, odd
    assert waiting.startswith("ranks 0-1 (2 of 3) in ") and "MPI_Barrier (libmpi" in waiting, waiting
    assert "3 ranks read in " in dash.text_of('[data-testid="stacks"]')
    dash.screenshot("stacks")
    # a read before every rank ran is a 409 ("no rank of it runs now"), which the browser logs
    assert not dash.console.severe(allowed=[r"/stacks - Failed to load resource: .* 409"]), dash.console.entries
