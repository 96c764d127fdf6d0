"""Every line the ranks print reaches the launcher's log: a TrainJob against the same `mpirun` writing to a
file, lines delivered and how fast they were stored.

    .venv/bin/python bench/output.py                 # 8 ranks x 100,000 lines, 1 run per side and case
    .venv/bin/python bench/output.py --ranks 4 --lines 25000 --runs 3

Prints one JSON object (see bench/README.md). Never asserts on the figures: exit 0 whenever every side ran,
exit 1 with a message on stderr when something failed to run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster  # the sibling bench modules
from startup import BenchError
from surfaces import NAMESPACE, create, delete_all, launcher_pod, ready_client, wait_complete

from mpijob.api.trainer.mpi_output import LauncherOutput

PYTHON = sys.executable  # the venv's: every pod reaches it
# What each rank prints, as fast as Python can. `long` lines (about 40 bytes) are what training logs look
# like; `short` ones (about 8) overflow Open MPI 4.1's tagging buffer (docs/logs.md).
CASES = {"long": "f'rank {r} line {i} of a fast printer'", "short": "f'{r} {i}'"}
LINE = {"long": re.compile(r"rank (\d+) line (\d+) of a fast printer"), "short": re.compile(r"(\d+) (\d+)")}
BARE_TIMEOUT_S = 600
JOB_TIMEOUT_S = 600.0
Obj = dict[str, Any]


def program(case: str, lines: int) -> str:
    return (f"import os\nr = int(os.environ['OMPI_COMM_WORLD_RANK'])\nfor i in range({lines}):\n"
            f"    print({CASES[case]})\n")


def delivered(texts: list[str], case: str, ranks: int, lines: int) -> Obj:
    """Per rank, how many of its lines arrived whole (each exactly once counts), in its own order or not;
    `other` counts lines that are no rank's line (cut, merged, or mpirun's own)."""
    seen: dict[int, collections.Counter[int]] = {r: collections.Counter() for r in range(ranks)}
    in_order = dict.fromkeys(range(ranks), True)
    last = dict.fromkeys(range(ranks), -1)
    other = 0
    for text in texts:
        m = LINE[case].fullmatch(text)
        if m is None or int(m[1]) not in seen or int(m[2]) >= lines:
            other += 1
            continue
        rank, i = int(m[1]), int(m[2])
        seen[rank][i] += 1
        in_order[rank] &= i > last[rank]
        last[rank] = i
    per_rank = [len(seen[r]) for r in range(ranks)]
    return {"lines": sum(per_rank), "expected": ranks * lines, "per_rank": per_rank,
            "duplicated": sum(n - 1 for c in seen.values() for n in c.values() if n > 1),
            "other": other, "each_rank_in_order": all(in_order.values())}


def ours(http: Any, case: str, ranks: int, lines: int) -> Obj:
    """A TrainJob of `ranks` nodes (one rank each) on the local cluster: submit → Complete, and the
    launcher's log as `kubectl logs` reads it, with timestamps for the storing window."""
    name = f"output-{case}-{uuid.uuid4().hex[:6]}"
    t0 = time.perf_counter()
    create(http, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                  "metadata": {"name": name, "namespace": NAMESPACE},
                  "spec": {"runtimeRef": {"name": "mpi-distributed"},
                           "trainer": {"numNodes": ranks, "command": ["mpirun", PYTHON, "-c", program(case, lines)]}}})
    wait_complete(http, [name], timeout=JOB_TIMEOUT_S)
    wall = time.perf_counter() - t0
    log = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{launcher_pod(http, name)}/log",
                   params={"timestamps": "true"}, timeout=JOB_TIMEOUT_S).raise_for_status().content
    delete_all(http, [name])
    stamped = log.decode(errors="replace").split("\n")[:-1]
    stamps = [_stamp(ln) for ln in stamped]
    out = delivered([ln.split(" ", 1)[1] for ln in stamped], case, ranks, lines)
    window = max(stamps) - min(stamps) if stamps else 0.0
    return out | {"wall_s": round(wall, 3), "storing_window_s": round(window, 3),
                  "bytes": len(log) - sum(len(ln.split(" ", 1)[0]) + 1 for ln in stamped)}


def bare(case: str, ranks: int, lines: int, tagged: bool, tmp: Path) -> Obj:
    """The same program under the machine's `mpirun -n ranks`, stdout to a file, by hand (no cluster);
    `tagged` adds `--tag-output` and reads the tags as the cluster does with what passes through mpirun."""
    out_file = tmp / f"bare-{case}-{int(tagged)}.out"
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo"}
    argv = ["mpirun", "--oversubscribe", "-n", str(ranks), *(["--tag-output"] if tagged else []),
            PYTHON, "-c", program(case, lines)]
    with open(out_file, "wb") as f:
        t0 = time.perf_counter()
        proc = subprocess.run(argv, env=env, stdout=f, stderr=subprocess.PIPE, timeout=BARE_TIMEOUT_S,
                              check=False)
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise BenchError(f"bare mpirun exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
    raw = out_file.read_bytes()
    out_file.unlink()
    if tagged:  # as the cluster stores them: tags read into ranks, a rank's chunks rejoined
        reader = LauncherOutput(keep_tags=False)
        stored = [s for ln in raw.split(b"\n")[:-1] for s in reader.feed(ln)] + reader.flush()
        texts = [s.split(b" ", 1)[1].decode(errors="replace") for s in stored]
    else:
        texts = raw.decode(errors="replace").split("\n")[:-1]
    return delivered(texts, case, ranks, lines) | {"wall_s": round(wall, 3), "bytes": len(raw)}


def _stamp(line: str) -> float:
    whole, _, frac = line.split(" ", 1)[0].rstrip("Z").partition(".")
    return time.mktime(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float(f"0.{frac or 0}")


def summary(runs: list[Obj]) -> Obj:
    """The run with the fewest lines delivered, the median wall time, lines per second of that median."""
    worst = min(runs, key=lambda r: r["lines"])
    wall = statistics.median(r["wall_s"] for r in runs)
    return worst | {"wall_s": round(wall, 3), "lines_per_s": round(worst["expected"] / wall),
                    "lines_each_run": [r["lines"] for r in runs], "wall_s_each_run": [r["wall_s"] for r in runs]}


def bench(ranks: int, lines: int, runs: int, cases: list[str]) -> Obj:
    result: Obj = {"ranks": ranks, "lines_per_rank": lines, "runs": runs}
    with temp_cluster("mpijob-bench-output-") as (_home, info), ready_client(info.kubeconfig) as http, \
            tempfile.TemporaryDirectory(prefix="mpijob-bench-output-") as tmp:
        result["sandbox_mode"] = info.sandbox_mode
        for case in cases:
            samples: dict[str, list[Obj]] = {"ours": [], "bare": [], "bare_tagged": []}
            for _ in range(runs):  # alternate, so the sides share the machine's noise
                samples["ours"].append(ours(http, case, ranks, lines))
                samples["bare"].append(bare(case, ranks, lines, False, Path(tmp)))
                samples["bare_tagged"].append(bare(case, ranks, lines, True, Path(tmp)))
            sides = {side: summary(s) for side, s in samples.items()}
            o, b = sides["ours"], sides["bare"]
            sides["ratios"] = {"lines_ours_to_bare": round(o["lines"] / b["lines"], 4),
                               "wall_ours_to_bare": round(o["wall_s"] / b["wall_s"], 2),
                               "storing_lines_per_s_ours_to_bare": round(
                                   o["expected"]
                                   / max(statistics.median(r["storing_window_s"] for r in samples["ours"]), 1e-3)
                                   / b["lines_per_s"], 2)}
            result[case] = sides
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--cases", default="long,short", help="comma-separated: long, short")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    try:
        result = bench(args.ranks, args.lines, args.runs, args.cases.split(","))
    except Exception as exc:  # noqa: BLE001 — a bench reports what failed to run, it does not judge
        print(f"bench/output.py: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    result["total_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
