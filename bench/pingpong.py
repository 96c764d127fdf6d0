"""Two-rank MPI ping-pong (mpi4py): median one-way latency of 8 B and bandwidth of 1 MiB.

    mpirun -np 2 .venv/bin/python bench/pingpong.py [--iters N]

Rank 0 prints one line `PINGPONG {json}` (with the yield-when-idle setting it ran under); bench/datapath.py runs
it inside the cluster and by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import numpy as np
from mpi4py import MPI


def roundtrips(comm: MPI.Comm, buf: np.ndarray, iters: int, warmup: int) -> list[float]:
    """Seconds per round trip, one sample per iteration (rank 0's clock)."""
    rank, out = comm.Get_rank(), []
    for i in range(warmup + iters):
        t0 = MPI.Wtime()
        if rank == 0:
            comm.Send(buf, dest=1)
            comm.Recv(buf, source=1)
        else:
            comm.Recv(buf, source=0)
            comm.Send(buf, dest=0)
        if i >= warmup:
            out.append(MPI.Wtime() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=10000)
    parser.add_argument("--bw-iters", type=int, default=200)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    if comm.Get_size() != 2:
        raise SystemExit(f"pingpong needs exactly 2 ranks, got {comm.Get_size()}")
    comm.Barrier()
    small = roundtrips(comm, np.zeros(8, dtype=np.uint8), args.iters, 1000)
    big = roundtrips(comm, np.zeros(1 << 20, dtype=np.uint8), args.bw_iters, 20)
    if comm.Get_rank() == 0:
        print("PINGPONG " + json.dumps({
            "latency_us": round(statistics.median(small) / 2 * 1e6, 2),
            "bandwidth_MBps": round(2 * (1 << 20) / statistics.median(big) / 1e6, 1),
            "hosts": sorted({MPI.Get_processor_name()} | set(comm.gather(MPI.Get_processor_name()) or [])),
            # what the cluster chose for crowded ranks (None: unset, Open MPI busy-polls)
            "yield_when_idle": os.environ.get("OMPI_MCA_mpi_yield_when_idle"),  # noqa: SIM112 — Open MPI spells it so
        }), flush=True)
    else:
        comm.gather(MPI.Get_processor_name())


if __name__ == "__main__":
    main()
