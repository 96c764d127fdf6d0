"""One-sided communication (MPI windows, RMA) between pods (docs/mpi-implementations.md, "One-sided
communication"). A window whose ranks are in three pods works under Open MPI 5, MPICH and Intel MPI, and
mpi4py's own RMA tests pass in a 3-node × 2 job under Open MPI 5 as they do under a bare mpirun on one host,
with nothing else in the log (Open MPI 5's osc/ucx, left out of its pods' environment, printed an error for
every window of every rank). Open MPI 4.1 cannot make such a window (it has no one-sided component for TCP):
its job fails `OneSidedUnavailable`, naming the fix, and within one pod its windows work."""

from __future__ import annotations

import copy
import importlib.metadata
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mpijob.api import names
from mpijob.api.trainer import runtimes

from support import (
    TRAINER,
    Obj,
    condition,
    create,
    delete_jobs_using,
    events_of,
    job_pods,
    launcher_of,
    pod_log,
    scaled,
    trainjob,
    wait_finished,
    wait_for,
)

RUNTIMES = f"{TRAINER}/namespaces/default/trainingruntimes"
NODES, PROCS = 3, 2  # the launcher is a node too: three pods, two ranks in each
# Every rank puts its rank into every rank's window (active target: fences), then adds 1 to a counter in
# rank 0's window and compares-and-swaps a slot of its right neighbour's (passive target: a lock on all).
# 32-bit integers, as mpi4py.util.sync's: Debian's Open MPI 4.1.4 crashes in a 64-bit MPI_Compare_and_swap
# between ranks of one host, under a bare mpirun too (in its shared-memory BTL, vader: open-mpi/ompi#11349).
PROGRAM = """
import array
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
pods = len(set(comm.allgather(MPI.Get_processor_name())))
win = MPI.Win.Allocate(4 * (size + 2), 4, comm=comm)
mine = memoryview(win.tomemory()).cast("i")
for i in range(size + 2):
    mine[i] = 0
win.Fence()
for target in range(size):
    win.Put(array.array("i", [rank]), target, target=rank)
win.Fence()
assert list(mine[:size]) == list(range(size)), list(mine)
win.Lock_all()
old = array.array("i", [0])
win.Fetch_and_op(array.array("i", [1]), old, 0, size, MPI.SUM)
win.Compare_and_swap(array.array("i", [rank + 1]), array.array("i", [0]), old, (rank + 1) % size, size + 1)
win.Unlock_all()
comm.Barrier()
win.Lock(rank, MPI.LOCK_SHARED)
win.Get(old, rank, size + 1)
win.Unlock(rank)
assert old[0] == (rank - 1) % size + 1, old[0]
if rank == 0:
    win.Lock(0)
    win.Get(old, 0, size)
    win.Unlock(0)
    print(f"counter {old[0]}", flush=True)
win.Free()
print(f"rank {rank} of {size}: window across {pods} pods", flush=True)
"""
# mpi4py's own tests of one-sided communication, from the sdist of the mpi4py that pods run
# (pyproject.toml pins it), fetched once into the environment's cache, which pods can read
MPI4PY = importlib.metadata.version("mpi4py")
SUITE = Path(sys.prefix) / "cache" / f"mpi4py-{MPI4PY}" / "test"
MODULES = ("test_rma", "test_rma_nb", "test_win", "test_util_sync")
# Buffers of the `array` module only (7 C types, in 3 kinds of buffer), not NumPy's too (17 types, 3 more
# kinds): the same windows and calls, a fraction of the time. A window across pods costs Open MPI 5 a round
# trip over TCP for each operation, and a 3-node × 2 job puts three ranks on each of 2 cores: test_rma_nb
# alone took 299 s with NumPy's buffers, 26 s without (bare mpirun, 6 ranks, TCP only).
SUITE_ARGS = ("--no-numpy", *(a for m in MODULES for a in ("-i", rf"^{m}\.py$")))


ONE_POD = "rma-one-pod"  # Open MPI 4, every rank in the one node pod: the launcher only runs mpirun


def runtime_name(impl: str) -> str:
    return f"rma-{impl.lower()}"


@pytest.fixture(scope="module")
def made(api: httpx.Client) -> Iterator[None]:
    """A runtime per implementation besides Open MPI 4 (the bundled `mpi-distributed`), and `ONE_POD`: the
    bundled one with `runLauncherAsNode: false`. Removed afterwards."""
    made = {}
    for impl in names.MPI_IMPLEMENTATIONS:
        rt = copy.deepcopy(runtimes.bundled()[0])
        rt["kind"] = "TrainingRuntime"
        if impl == names.OPEN_MPI:
            rt["metadata"] = {"name": ONE_POD}
            rt["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
        else:
            rt["metadata"] = {"name": runtime_name(impl),
                              "annotations": {names.ANNOTATION_MPI_IMPLEMENTATION: impl}}
        made[rt["metadata"]["name"]] = rt
    for name, rt in made.items():
        api.delete(f"{RUNTIMES}/{name}")
        r = api.post(RUNTIMES, json=rt)
        assert r.status_code == 201, r.text
    yield
    delete_jobs_using(api, set(made))
    for name in made:
        api.delete(f"{RUNTIMES}/{name}")


@pytest.fixture(scope="module")
def suite() -> Path:
    """mpi4py's test/ directory, downloaded (its sdist, from the package index) the first time only."""
    if not SUITE.is_dir():
        SUITE.parent.parent.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=SUITE.parent.parent) as tmp:  # then renamed in place, whole
            got = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                                  "mpi4py", f"mpi4py=={MPI4PY}", "-d", tmp], capture_output=True, text=True)
            assert got.returncode == 0, f"cannot download the mpi4py {MPI4PY} sdist: {got.stderr[-2000:]}"
            unpacked = Path(tmp) / f"mpi4py-{MPI4PY}"
            with tarfile.open(Path(tmp) / f"mpi4py-{MPI4PY}.tar.gz") as sdist:
                # plain files and folders under test/ only (Debian's Python 3.11.2 has no extraction filters)
                tests = [m for m in sdist.getmembers() if m.name.startswith(f"{unpacked.name}/test/")
                         and ".." not in Path(m.name).parts and (m.isfile() or m.isdir())]
                sdist.extractall(tmp, members=tests)
            for p in [unpacked, *unpacked.rglob("*")]:
                p.chmod(0o755 if p.is_dir() else 0o644)  # read by pods, whose users are not ours
            unpacked.rename(SUITE.parent)
    return SUITE


def run(api: httpx.Client, name: str, command: list[str], runtime: str = "", nodes: int = NODES,
        timeout: float = 240) -> tuple[Obj, str]:
    """Run a job of `nodes` × PROCS ranks on `runtime` (one of `made`; default the bundled Open MPI 4 one) to
    its end: the TrainJob and its launcher's log."""
    api.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")
    wait_for(lambda: api.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").status_code == 404 or None,
             f"an earlier {name} gone")
    tj = trainjob(name, command, num_nodes=nodes)
    tj["spec"]["trainer"]["numProcPerNode"] = PROCS
    if runtime:
        tj["spec"]["runtimeRef"] = {"name": runtime, "kind": "TrainingRuntime"}
    create(api, tj)
    done = wait_finished(api, name, timeout=timeout)
    return done, pod_log(api, str(launcher_of(job_pods(api, name))["metadata"]["name"]))


def expected(size: int, pods: int) -> list[str]:
    return sorted([f"counter {size}", *(f"rank {r} of {size}: window across {pods} pods" for r in range(size))])


@pytest.mark.parametrize("impl", [names.MPI_OPEN_MPI_5, names.MPI_MPICH, names.MPI_INTEL])
def test_a_window_across_pods(impl: str, api: httpx.Client, made: None) -> None:
    """Puts under fences, an atomic counter and compare-and-swap under a lock, between three pods; the log
    holds what the ranks printed and nothing else."""
    tj, log = run(api, f"rma-{impl.lower()}", ["mpirun", "python", "-c", PROGRAM], runtime_name(impl))
    assert condition(tj, "Complete"), (tj.get("status"), log)
    assert sorted(log.splitlines()) == expected(NODES * PROCS, NODES), log


def test_open_mpi_4_cannot_make_a_window_across_pods_and_says_what_can(api: httpx.Client) -> None:
    tj, log = run(api, "rma-openmpi", ["mpirun", "python", "-c", PROGRAM])
    assert "MPI_ERR_WIN: invalid window" in log, log
    failed = condition(tj, "Failed")
    assert failed is not None and failed["reason"] == names.REASON_FAILED_JOBS, tj.get("status")
    message = failed["message"]
    assert message.startswith(f"{names.FAILURE_ONE_SIDED}: rank "), message
    assert f"across the job's {NODES} pods" in message, message
    assert f"{names.ANNOTATION_MPI_IMPLEMENTATION}: {names.MPI_OPEN_MPI_5}" in message, message
    assert message.endswith("See docs/troubleshooting.md#one-sided-communication-unavailable"), message
    warnings = [e["reason"] for e in events_of(api, "rma-openmpi") if e["type"] == "Warning"]
    assert warnings == [names.FAILURE_ONE_SIDED], warnings


def test_open_mpi_4_windows_within_one_pod(api: httpx.Client, made: None) -> None:
    """The other fix the failure names: every rank in one pod, where Open MPI 4.1's windows work."""
    tj, log = run(api, "rma-openmpi-one-pod", ["mpirun", "python", "-c", PROGRAM], ONE_POD, nodes=1)
    assert condition(tj, "Complete"), (tj.get("status"), log)
    assert sorted(log.splitlines()) == expected(PROCS, 1), log


# its job may take the 420 s `run` allows it, after the module's set-up (a loaded fresh root took 48 + 252 s)
@pytest.mark.timeout(scaled(600))
def test_mpi4py_rma_tests_pass_across_pods_on_open_mpi_5(api: httpx.Client, made: None, suite: Path) -> None:
    tj, log = run(api, "rma-suite-openmpi5", ["mpirun", "python", str(suite / "main.py"), *SUITE_ARGS],
                  runtime_name(names.MPI_OPEN_MPI_5), timeout=420)
    assert condition(tj, "Complete"), (tj.get("status"), log)
    lines = log.splitlines()
    ran = [int(m[1]) for m in re.finditer(r"^Ran (\d+) tests? in ", log, re.M)]
    assert len(ran) == NODES * PROCS and len(set(ran)) == 1 and ran[0] > 200, log  # every rank ran them all
    assert sum(1 for ln in lines if re.fullmatch(r"OK( \(skipped=\d+\))?", ln)) == NODES * PROCS, log
    pods = {m[1] for m in re.finditer(r"^\[\d+@([^\]]+)\] MPI ", log, re.M)}
    assert len(pods) == NODES, log  # COMM_WORLD's windows spanned the three pods
    # nothing printed but each rank's report: its banner, a dot per test passed (`s` skipped), the summary;
    # no `OSC UCX ... Error` line
    noise = [ln for ln in lines if ln and not re.match(r"\[\d+@[^\]]+\] |[.s]+$|-+$|Ran \d+ tests? in |OK\b", ln)]
    assert noise == [], log


def test_mpi4py_rma_tests_fail_across_pods_on_open_mpi_4_saying_why(api: httpx.Client, suite: Path) -> None:
    tj, log = run(api, "rma-suite-openmpi", ["mpirun", "python", str(suite / "main.py"), *SUITE_ARGS])
    assert "MPI_ERR_WIN: invalid window" in log, log
    failed = condition(tj, "Failed")
    assert failed is not None and failed["message"].startswith(f"{names.FAILURE_ONE_SIDED}: "), tj.get("status")
