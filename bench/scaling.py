"""Scaling of a data-parallel training job: examples/digits/train.py (softmax on scikit-learn's digits,
one mpi4py Allreduce of the gradients per minibatch) on 1, 2 and 4 ranks, as TrainJobs on a temporary
local cluster and under a bare `mpirun` on the same machine, in the same run.

    .venv/bin/python bench/scaling.py [--runs N] [--epochs E] [--repeat S] [--plot PNG]

* strong scaling — a fixed training set (digits repeated S times) split over R ranks;
* weak scaling — S/4 repeats per rank (REPEAT = R*S/4), so every rank's shard stays the same size;
  at 4 ranks both modes run the same job, which is run once and reported in both.

Three sides per rank count, alternated run by run:
* `pods`    — numNodes R, numProcPerNode 1: one rank per pod, TCP between pods (how a user spreads ranks);
* `one_pod` — numNodes 1, numProcPerNode R on datapath.py's `mpi-one-pod` TrainingRuntime (mpi-distributed
  without runLauncherAsNode, created once): one node pod holds every rank (shared memory) and the launcher
  only runs mpirun, so the hostfile has R slots, not R more for the launcher;
* `bare`    — `mpirun -np R` outside the cluster (`--oversubscribe` when R exceeds the cores).

`train_s` is the training loop's own wall time (train.py's `train time` line), so start-up is not in
it; `wall_s` is submit → Complete (for `bare`, the whole mpirun). Prints one JSON object
(bench/README.md); exit 1 when something failed to run. The machine's cores bound any speedup.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster
from datapath import ONE_POD_RUNTIME, create_one_pod_runtime
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

TRAIN = str(Path(__file__).resolve().parent.parent / "examples" / "digits" / "train.py")
RANKS = (1, 2, 4)
SIDES = ("pods", "one_pod", "bare")
TRAIN_TIME = re.compile(r"^train time ([0-9.]+) s$", re.M)
ACCURACY = re.compile(r"^final test accuracy ([0-9.]+)", re.M)
Obj = dict[str, Any]


def parse(text: str) -> Obj:
    """Rank 0's training time and final accuracy from a run's output."""
    train, acc = TRAIN_TIME.search(text), ACCURACY.search(text)
    if not train or not acc:
        raise BenchError(f"no 'train time' or 'final test accuracy' line in:\n{text[-2000:]}")
    return {"train_s": float(train.group(1)), "accuracy": float(acc.group(1))}


def settings(epochs: int, repeat: int) -> dict[str, str]:
    # TARGET 0: a job that trains fewer steps (4 ranks, strong) must still finish and report its accuracy.
    return {"EPOCHS": str(epochs), "REPEAT": str(repeat), "TARGET": "0"}


def run_job(http: Any, ranks: int, side: str, env: dict[str, str]) -> Obj:
    """One TrainJob of train.py on `ranks` ranks; its figures and submit → Complete."""
    nodes, procs = (ranks, 1) if side == "pods" else (1, ranks)
    runtime = {"name": "mpi-distributed"} if side == "pods" else {"name": ONE_POD_RUNTIME, "kind": "TrainingRuntime"}
    log, wall = run_to_log(http, "scale", {"runtimeRef": runtime,
                                           "trainer": {"numNodes": nodes, "numProcPerNode": procs,
                                                       "command": ["mpirun", "-np", str(ranks), PYTHON, TRAIN],
                                                       "env": [{"name": k, "value": v} for k, v in env.items()]}})
    return {**parse(log), "wall_s": wall}


def run_bare(ranks: int, env: dict[str, str]) -> Obj:
    """The same program under the machine's mpirun, outside the cluster."""
    extra = ["--oversubscribe"] if ranks > cores() else []
    out, wall = bare_mpirun(["-np", str(ranks), *extra, PYTHON, TRAIN], env)
    return {**parse(out), "wall_s": wall}


def cores() -> int:
    return len(os.sched_getaffinity(0))


def measure_config(http: Any, runs: int, ranks: int, env: dict[str, str]) -> Obj:
    """Every side `runs` times on one (ranks, REPEAT), alternated; per side medians of its figures."""
    seen: dict[str, list[Obj]] = {side: [] for side in SIDES}

    def one_run(side: str) -> Callable[[], Obj]:
        return (lambda: run_bare(ranks, env)) if side == "bare" else (lambda: run_job(http, ranks, side, env))

    alternate(runs, {side: recorded(one_run(side), seen[side], lambda rec: float(rec["train_s"])) for side in SIDES})
    return {side: {"train_s": stats([r["train_s"] for r in recs]),
                   "wall_s": stats([r["wall_s"] for r in recs], 2),
                   "accuracy": statistics.median(r["accuracy"] for r in recs)}
            for side, recs in seen.items()}


def measure(http: Any, runs: int, epochs: int, repeat: int) -> Obj:
    """Strong and weak scaling per side: each (ranks, REPEAT) measured once, then the figures of each mode."""
    plans = {"strong": dict.fromkeys(RANKS, repeat), "weak": {r: r * repeat // max(RANKS) for r in RANKS}}
    done: dict[tuple[int, int], Obj] = {}
    report: Obj = {}
    for mode, plan in plans.items():
        rows: Obj = {}
        for ranks, rep in plan.items():
            if (ranks, rep) not in done:
                done[(ranks, rep)] = measure_config(http, runs, ranks, settings(epochs, rep))
            # A copy: the job both modes share gets each mode's own speedup and efficiency.
            rows[str(ranks)] = {"repeat": rep, "oversubscribed": ranks > cores(), **copy.deepcopy(done[(ranks, rep)])}
        report[mode] = derive(mode, rows)
    return report


def derive(mode: str, rows: Obj) -> Obj:
    """Speedup and efficiency against the same side at 1 rank (strong: T1/TR and T1/(R*TR); weak: T1/TR),
    from the medians and, as `*_fastest`, from each side's fastest run: on a shared machine the fastest
    run is the one least slowed by other work, and it moves far less between invocations than a median.
    Each TrainJob side's median ratio to bare at the same rank count."""
    one = rows[str(min(RANKS))]
    for ranks, row in ((int(k), v) for k, v in rows.items()):
        for side in SIDES:
            for stat, suffix in (("median", ""), ("min", "_fastest")):
                t1, tr = one[side]["train_s"][stat], row[side]["train_s"][stat]
                if mode == "strong":
                    row[side]["speedup" + suffix] = round(t1 / tr, 3)
                    row[side]["efficiency" + suffix] = round(t1 / tr / ranks, 3)
                else:
                    row[side]["efficiency" + suffix] = round(t1 / tr, 3)
            if side != "bare":
                bare = row["bare"]
                row[side]["ratio_train_to_bare"] = round(row[side]["train_s"]["median"] / bare["train_s"]["median"], 3)
                row[side]["ratio_wall_to_bare"] = round(row[side]["wall_s"]["median"] / bare["wall_s"]["median"], 3)
    return rows


def plot(report: Obj, path: Path) -> None:
    """Speedup (strong) and efficiency (weak) of each side's fastest run against ranks, and the ideal, in one
    small PNG: the medians of a shared machine jump between invocations (the JSON has both)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks = [int(r) for r in report["strong"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2), dpi=90)
    styles = {"pods": ("o-", "TrainJob, 1 rank per pod"), "one_pod": ("s-", "TrainJob, ranks in 1 pod"),
              "bare": ("^--", "bare mpirun")}
    for side, (style, label) in styles.items():
        left.plot(ranks, [report["strong"][str(r)][side]["speedup_fastest"] for r in ranks], style, label=label)
        right.plot(ranks, [report["weak"][str(r)][side]["efficiency_fastest"] for r in ranks], style, label=label)
    left.plot(ranks, ranks, ":", color="grey", label="ideal")
    right.plot(ranks, [1.0] * len(ranks), ":", color="grey", label="ideal")
    for ax in (left, right):
        ax.axvline(report["cores"], color="lightgrey", linewidth=4, zorder=0)
        ax.set_xticks(ranks)
        ax.set_xlabel(f"ranks ({report['cores']} cores: grey bar)")
        ax.grid(alpha=0.3)
    left.set_title(f"strong scaling: speedup (fastest of {report['runs']} runs)", fontsize=10)
    right.set_title(f"weak scaling: efficiency (fastest of {report['runs']} runs)", fontsize=10)
    right.set_ylim(0, 1.2)
    left.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=32,
                        help="strong scaling's training set = digits x REPEAT; weak gives each rank REPEAT/4")
    parser.add_argument("--plot", type=Path, help="write speedup and efficiency to this PNG (matplotlib)")
    args = parser.parse_args()
    if args.repeat < max(RANKS) or args.repeat % max(RANKS):
        parser.error(f"--repeat {args.repeat}: must be a multiple of {max(RANKS)}, so weak scaling splits it evenly")
    started = time.perf_counter()
    try:
        with temp_cluster("mpijob-scaling-") as (_, info), ready_client(info.kubeconfig) as http:
            create_one_pod_runtime(http)
            report = measure(http, args.runs, args.epochs, args.repeat)
    except BenchError as e:
        print(f"bench/scaling.py: {e}", file=sys.stderr)
        return 1
    out = {"runs": args.runs, "epochs": args.epochs, "batch_per_rank": 32, "repeat_strong": args.repeat,
           "repeat_weak_per_rank": args.repeat // max(RANKS), "cores": cores(), "cpu_count": os.cpu_count(),
           "sandbox_mode": info.sandbox_mode, **report, "total_s": round(time.perf_counter() - started, 1)}
    if args.plot:
        plot(out, args.plot)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
