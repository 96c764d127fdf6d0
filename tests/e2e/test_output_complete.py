"""Every byte every rank writes reaches the launcher's log, in each rank's own order, each line whole and
beside its rank: fast printers, a 1 MiB line, bytes that are not UTF-8, a last line without a newline, a
rank killed mid-line, the launcher's own writes to /dev/stdout and /dev/stderr, on each MPI.

Two causes lost output before (docs/logs.md): ssh set O_NONBLOCK on mpirun's stdout, which it inherits, so
Open MPI 4.1's mpirun kept in memory what its pipe could not take and dropped it when the job ended (28%
of 4 ranks x 25,000 lines once); and a pod's user could not reopen its own stdout (`echo > /dev/stdout`:
Permission denied). A third was Open MPI's: tagged, 4.1 cuts a chunk whose tags outgrow its buffer (lines
under 14 bytes printed in a burst), as a bare `mpirun --tag-output` does (bench/output.py); Open MPI's ranks
are now read where they run (`rank_agent.py`), and a burst of short lines loses nothing.
"""

from __future__ import annotations

import copy
import re
import signal
from collections.abc import Iterator

import httpx
import pytest
from mpijob.api import names
from mpijob.api.trainer import runtimes
from mpijob.api.trainer.mpi_output import RANKS_HEADER

from support import TRAINER, condition, create, job_pods, launcher_of, trainjob, wait_finished

LINES = 20_000  # per rank, as fast as Python prints
NODES = 4
BIG = 1 << 20  # one line of 1 MiB, from rank 1
RUNTIMES = f"{TRAINER}/namespaces/default/trainingruntimes"
IMPLEMENTATIONS = [names.OPEN_MPI, names.MPI_OPEN_MPI_5, names.MPI_MPICH, names.MPI_INTEL]
RANK = "r = int(os.environ.get('OMPI_COMM_WORLD_RANK') or os.environ['PMI_RANK'])\n"
PROGRAM = f"""import os, sys
{RANK}out = sys.stdout.buffer
for i in range({LINES}):
    out.write(b'rank %d line %d of a fast printer\\n' % (r, i))
sys.stderr.write(f'rank {{r}} to its stderr\\n')
if r == 1:
    out.write(b'big:' + b'x' * {BIG} + b'\\n')
if r == 2:
    out.write(b'not utf-8: \\xff\\xfe\\x80 end\\n')
if r == 3:
    out.write(b'rank 3 ends without a newline')
out.flush()
"""
# the launcher's own output, through paths a container allows, then mpirun
LAUNCHER = ("echo 'launcher via /dev/stdout' > /dev/stdout && echo 'launcher via /dev/stderr' > /dev/stderr && "
            'exec mpirun python -c "$0"')  # $0: the program, the command's next word
FAST = re.compile(rb"rank (\d+) line (\d+) of a fast printer")


def runtime_for(impl: str) -> dict:
    """The bundled `mpi-distributed` as a namespaced TrainingRuntime naming `impl`."""
    rt = copy.deepcopy(runtimes.bundled()[0])
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": f"output-{impl.lower()}", "annotations": {names.ANNOTATION_MPI_IMPLEMENTATION: impl}}
    return rt


@pytest.fixture(scope="module")
def annotated(api: httpx.Client) -> Iterator[None]:
    for impl in IMPLEMENTATIONS:
        api.delete(f"{RUNTIMES}/{runtime_for(impl)['metadata']['name']}")
        r = api.post(RUNTIMES, json=runtime_for(impl))
        assert r.status_code == 201, r.text
    yield
    for impl in IMPLEMENTATIONS:
        api.delete(f"{RUNTIMES}/{runtime_for(impl)['metadata']['name']}")


def _run(api: httpx.Client, name: str, impl: str, command: list[str], program: str, nodes: int) -> tuple[dict, bytes]:
    """The job run to its end, and its launcher's log with each line's rank (`<rank> <text>`), as bytes."""
    tj = trainjob(name, [*command, program], num_nodes=nodes, runtime=runtime_for(impl)["metadata"]["name"])
    tj["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    create(api, tj)
    try:
        done = wait_finished(api, name, timeout=300)
        launcher = launcher_of(job_pods(api, name))["metadata"]["name"]
        r = api.get(f"/api/v1/namespaces/default/pods/{launcher}/log", headers={RANKS_HEADER: "true"})
        assert r.status_code == 200, r.text
        return done, r.content
    finally:
        api.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_every_byte_every_rank_writes_reaches_the_log(impl: str, api: httpx.Client, annotated: None) -> None:
    done, log = _run(api, f"ee-every-byte-{impl.lower()}", impl, ["bash", "-c", LAUNCHER], PROGRAM, NODES)
    assert condition(done, "Complete") is not None, done.get("status")
    lines = [tuple(ln.split(b" ", 1)) for ln in log.split(b"\n")[:-1]]
    rest: list[tuple[bytes, ...]] = []
    last = dict.fromkeys(range(NODES), -1)
    for rank, text in lines:
        m = FAST.fullmatch(text)
        if m is None:
            rest.append((rank, text if len(text) < 100 else text[:20] + b"...%d bytes" % len(text)))
            continue
        assert rank == m[1], f"rank {m[1]}'s line stored as rank {rank!r}'s"
        assert int(m[2]) == last[int(m[1])] + 1, f"rank {m[1]}: line {m[2]} after line {last[int(m[1])]}"
        last[int(m[1])] = int(m[2])
    assert last == dict.fromkeys(range(NODES), LINES - 1), f"last line seen per rank: {last}"
    big = (b"1", b"big:" + b"x" * BIG)
    assert sorted(rest, key=repr) == sorted([
        (b"-", b"launcher via /dev/stdout"), (b"-", b"launcher via /dev/stderr"),
        *[(b"%d" % r, b"rank %d to its stderr" % r) for r in range(NODES)],
        (b"1", b"big:xxxxxxxxxxxxxxxx...%d bytes" % (BIG + 4)),
        (b"2", b"not utf-8: \xff\xfe\x80 end"), (b"3", b"rank 3 ends without a newline"),
    ], key=repr)
    assert big in lines


def test_a_rank_killed_mid_line_keeps_its_partial_line(api: httpx.Client, annotated: None) -> None:
    program = f"""import os, sys, time
{RANK}if r == 1:
    sys.stdout.write('rank 1 was killed after this'); sys.stdout.flush()
    os.kill(os.getpid(), {int(signal.SIGKILL)})
print(f'rank {{r}} carries on', flush=True)
time.sleep(60)
"""
    done, log = _run(api, "ee-killed-mid-line", names.OPEN_MPI, ["bash", "-c", 'exec mpirun python -c "$0"'],
                     program, 2)
    assert condition(done, "Failed") is not None, done.get("status")
    assert b"1 rank 1 was killed after this\n" in log, log[-2000:]


@pytest.mark.parametrize("impl", [names.OPEN_MPI, names.MPI_OPEN_MPI_5])
def test_a_burst_of_short_lines_loses_none(impl: str, api: httpx.Client, annotated: None) -> None:
    """What a bare `mpirun --tag-output` cuts: 4 ranks x 50,000 lines of a few bytes, as fast as Python prints."""
    program = f"import os, sys\n{RANK}for i in range(50000):\n    print(r, i)\n"
    done, log = _run(api, f"ee-short-{impl.lower()}", impl, ["mpirun", "python", "-c"], program, NODES)
    assert condition(done, "Complete") is not None, done.get("status")
    seen: dict[bytes, list[int]] = {b"%d" % r: [] for r in range(NODES)}
    for ln in log.split(b"\n")[:-1]:
        rank, text = ln.split(b" ", 1)
        said, i = text.split(b" ")
        assert said == rank, ln
        seen[rank].append(int(i))
    assert all(lines == list(range(50000)) for lines in seen.values()), {r: len(v) for r, v in seen.items()}
