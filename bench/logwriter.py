"""How fast the server stores a launcher's output with each line's rank, against storing it plain.

The launcher's stream is read by one thread (mpijob/controllers/kubelet/pods.py); if it falls behind, Open MPI
4.1's mpirun drops output. Both sides write the same tagged output (`[1,R]<stdout>:rank R line N`,
some lines split mid-way as Open MPI forwards them) in 64 KiB reads through `LogWriter`: ours reads
the tags into ranks (`LauncherOutput`), the baseline stores the bytes as they come. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from mpijob.api.trainer.mpi_output import LauncherOutput
from mpijob.store.logs import LogStore

LINES = 200_000
READ = 65536


def tagged_output(lines: int, ranks: int = 4) -> bytes:
    """Every 50th line of a rank is cut in two, the next rank's line between the halves."""
    out = []
    for i in range(lines):
        rank = i % ranks
        if i % 50 == 0:
            out.append(f"[1,{rank}]<stdout>:rank {rank} li[1,{(rank + 1) % ranks}]<stdout>:other\n"
                       f"[1,{rank}]<stdout>:ne {i}\n")
        else:
            out.append(f"[1,{rank}]<stdout>:rank {rank} line {i}\n")
    return "".join(out).encode()


def write(data: bytes, ranks: bool) -> float:
    with tempfile.TemporaryDirectory() as d:
        w = LogStore(Path(d)).writer("bench", "launcher", "node", LauncherOutput(keep_tags=False) if ranks else None)
        t0 = time.perf_counter()
        for i in range(0, len(data), READ):
            w.write(data[i:i + READ])
        w.close()
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    data = tagged_output(LINES)
    samples: dict[str, list[float]] = {"ours": [], "baseline": []}
    for _ in range(runs):  # alternate, so both sides share the machine's noise
        samples["ours"].append(write(data, ranks=True))
        samples["baseline"].append(write(data, ranks=False))
    median = {k: statistics.median(v) for k, v in samples.items()}
    print(json.dumps({
        "runs": runs, "lines": data.count(b"\n"), "bytes": len(data),
        "seconds": {k: {"median": round(median[k], 4), "min": round(min(v), 4), "max": round(max(v), 4)}
                    for k, v in samples.items()},
        "lines_per_s": {k: round(data.count(b"\n") / median[k]) for k in median},
        "mb_per_s": {k: round(len(data) / median[k] / 1e6, 1) for k in median},
        "ratio": round(median["ours"] / median["baseline"], 2),
    }, indent=2))


if __name__ == "__main__":
    main()
