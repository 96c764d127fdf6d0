"""In the process sandbox every pod's host name is the machine's, so Open MPI's shared-memory segments, named in
/dev/shm by host, job and local rank, were one file for the ranks of one local rank on two pods; with 2 ranks a
pod one of them died of SIGSEGV now and then under load (kubelet/mpi_env.py SHM_BACKING). Each node pod's ranks
now keep their segments in the pod's own TMPDIR: each rank lists its pod's, and mixes data with its pod-mate
through them (an Allreduce checked on every rank, a few times)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

import httpx
from mpijob.store.server_process import ServerInfo

from support import create, job_pods, launcher_of, pod_log, trainjob, wait_finished

PROGRAM = """
import glob, os
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
for _ in range(20):
    got = np.empty(1 << 16)
    comm.Allreduce(np.full(1 << 16, rank, dtype=float), got)
    assert (got == size * (size - 1) / 2).all(), got[:4]
comm.Barrier()
tmp = os.environ["TMPDIR"]
print("SEGMENTS", rank, tmp, len(glob.glob(os.path.join(tmp, "*_segment.*"))), flush=True)
comm.Barrier()
"""


def test_each_pods_ranks_keep_their_shared_memory_in_the_pod(new_server: Callable[..., ServerInfo],
                                                             connect: Callable[..., httpx.Client]) -> None:
    with connect(new_server("shm-process", env={"MPIJOB_SANDBOX": "process"})) as c:
        # this interpreter by its path: a process-sandbox rank's shell is its user's own (root's .bashrc may
        # put another Python first on PATH)
        job = trainjob("shm-two-a-pod", ["mpirun", sys.executable, "-c", PROGRAM])
        job["spec"]["trainer"]["numProcPerNode"] = 2
        create(c, job)
        done = wait_finished(c, "shm-two-a-pod", timeout=180)
        log = pod_log(c, launcher_of(job_pods(c, "shm-two-a-pod"))["metadata"]["name"])
        assert any(x["type"] == "Complete" and x["status"] == "True" for x in done["status"]["conditions"]), log
        seen = {int(r): (tmp, int(n)) for r, tmp, n in re.findall(r"SEGMENTS (\d) (\S+) (\d+)$", log, re.M)}
        assert sorted(seen) == [0, 1, 2, 3], log
        by_pod: dict[str, list[int]] = {}
        for rank, (tmp, count) in seen.items():
            by_pod.setdefault(tmp, []).append(rank)
            assert count == 2, f"rank {rank} found {count} segments in {tmp}, not its pod's 2: {log}"
        assert sorted(map(sorted, by_pod.values())) == [[0, 1], [2, 3]], by_pod  # two pods, a TMPDIR each
