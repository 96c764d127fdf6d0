"""mpi4py's ringtest with more ranks than cores: a TrainJob on the local cluster against the same
program under a bare `mpirun --oversubscribe` on the same machine, in the same run.

    .venv/bin/python bench/ringtest.py [--runs N] [--loops L]

Open MPI busy-polls while a rank waits for a message; when ranks outnumber cores the rank that should
send is starved by the ones spinning. A bare `mpirun --oversubscribe` knows it oversubscribes and
yields; a TrainJob's hosts each advertise their slots, so Open MPI cannot know, and the local cluster
sets `OMPI_MCA_mpi_yield_when_idle=1` itself. The `no_yield` side is a TrainJob whose trainer.env sets
it to 0: what every job did before. Prints one JSON object (bench/README.md); exit 1 when something
failed to run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from operator import itemgetter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster
from surfaces import (
    PYTHON,
    BenchError,
    alternate,
    bare_mpirun,
    ready_client,
    recorded,
    run_to_log,
    stats,
)

RANKS = 4
TIME = re.compile(r"time for (\d+) loops = ([0-9.e+-]+) seconds \((\d+) processes")


def ringtest(loops: int) -> list[str]:
    return [PYTHON, "-m", "mpi4py.bench", "ringtest", "-l", str(loops), "-s", "10"]


def reported(text: str) -> float:
    """The seconds ringtest reports for its loops (rank 0's line)."""
    m = TIME.search(text)
    if m is None or int(m[3]) != RANKS:
        raise BenchError(f"no ringtest result for {RANKS} processes in:\n{text[-2000:]}")
    return float(m[2])


def run_job(http: Any, loops: int, env: dict[str, str]) -> tuple[float, float]:
    """(ringtest's own seconds, create → Complete seconds) of one TrainJob."""
    log, wall = run_to_log(http, "ring", {"runtimeRef": {"name": "mpi-distributed"},
                                          "trainer": {"numNodes": RANKS, "command": ["mpirun", *ringtest(loops)],
                                                      "env": [{"name": k, "value": v} for k, v in env.items()]}})
    return reported(log), wall


def run_bare(loops: int) -> tuple[float, float]:
    out, wall = bare_mpirun(["--oversubscribe", "-np", str(RANKS), *ringtest(loops)])
    return reported(out), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--loops", type=int, default=100)
    args = parser.parse_args()
    try:
        with temp_cluster("mpijob-ringtest-") as (_, info), ready_client(info.kubeconfig) as http:
            seen: dict[str, list[tuple[float, float]]] = {"ours": [], "baseline": [], "no_yield": []}
            seconds = itemgetter(0)
            samples = alternate(args.runs, {
                "ours": recorded(lambda: run_job(http, args.loops, {}), seen["ours"], seconds),
                "baseline": recorded(lambda: run_bare(args.loops), seen["baseline"], seconds),
                "no_yield": recorded(lambda: run_job(http, args.loops, {"OMPI_MCA_mpi_yield_when_idle": "0"}),
                                     seen["no_yield"], seconds),
            })
    except BenchError as e:
        print(f"bench/ringtest.py: {e}", file=sys.stderr)
        return 1
    walls = {side: [wall for _, wall in runs] for side, runs in seen.items()}
    median = {k: stats(v, 5) for k, v in samples.items()}
    print(json.dumps({
        "runs": args.runs, "loops": args.loops, "ranks": RANKS, "cores": len(os.sched_getaffinity(0)),
        "sandbox_mode": info.sandbox_mode,
        "ringtest_s": median,
        "ratio_ours_to_baseline": round(median["ours"]["median"] / median["baseline"]["median"], 2),
        "ratio_no_yield_to_ours": round(median["no_yield"]["median"] / median["ours"]["median"], 1),
        "job_wall_s": {k: stats(v) for k, v in walls.items()},
        "samples_s": samples,
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
