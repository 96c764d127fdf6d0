"""Data-parallel linear regression with mpi4py and numpy, small enough to train in a few seconds: the
program the notebook (loss.ipynb) submits. Each rank holds a shard of a synthetic data set; every step
the ranks sum their gradients with Allreduce, so all of them apply the same update.

Rank 0 prints `step N/STEPS loss L` once per step (the notebook plots these lines) and reports its
progress to the job's status endpoint — Trainer's `trainerStatus`: percentage, seconds left and the
loss (docs/progress.md) — which `Client.wait(..., show_progress=True)` shows as a live bar. Every rank
prints one `rank R/SIZE: N samples` line first, so the merged log shows all of them.

Settings (environment): STEPS (20), STEP_SLEEP (0.15: seconds per step, so a person can watch the bar),
LR (0.2), SAMPLES (4096, over all ranks).
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.request
from datetime import UTC, datetime

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
STEPS = int(os.environ.get("STEPS", "20"))
STEP_SLEEP = float(os.environ.get("STEP_SLEEP", "0.15"))
LR = float(os.environ.get("LR", "0.2"))
SAMPLES = int(os.environ.get("SAMPLES", "4096"))
FEATURES = 8


def report(step: int, loss: float, seconds_per_step: float) -> None:
    """POST this step's progress to the TrainJob's status (Trainer's status server; the local cluster
    serves the same endpoint). Outside a TrainJob there is nowhere to report; a refused report is said
    once on stderr and training goes on: progress is for people, not a reason to fail."""
    url = os.environ.get("KUBEFLOW_TRAINER_SERVER_URL")
    if not url or getattr(report, "broken", False):
        return
    status = {"progressPercentage": 100 * step // STEPS,
              "estimatedRemainingSeconds": round(seconds_per_step * (STEPS - step)),
              "metrics": [{"name": "loss", "value": f"{loss:.6f}"}, {"name": "step", "value": f"{step}/{STEPS}"}],
              "lastUpdatedTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    with open(os.environ["KUBEFLOW_TRAINER_SERVER_TOKEN"]) as f:  # re-read each time: the token rotates
        token = f.read().strip()
    request = urllib.request.Request(  # noqa: S310 — the job's own https status URL, from its pod's env
        url, data=json.dumps({"trainerStatus": status}).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    context = ssl.create_default_context(cafile=os.environ["KUBEFLOW_TRAINER_SERVER_CA_CERT"])
    try:
        with urllib.request.urlopen(request, context=context, timeout=5):  # noqa: S310 — that same URL
            pass
    except OSError as exc:
        print(f"progress report refused ({exc}); training goes on without reports", file=sys.stderr, flush=True)
        report.broken = True  # type: ignore[attr-defined]  # a flag on the function: report once


# The same data everywhere (one seed), each rank keeps every size-th sample: y = x·w_true + noise.
rng = np.random.default_rng(0)
w_true = rng.normal(size=FEATURES)
x = rng.normal(size=(SAMPLES, FEATURES))
y = x @ w_true + 0.1 * rng.normal(size=SAMPLES)
x_shard, y_shard = x[rank::size], y[rank::size]
print(f"rank {rank}/{size}: {len(y_shard)} samples", flush=True)

w = np.zeros(FEATURES)
grad, sums = np.empty(FEATURES), np.empty(2)
started = time.perf_counter()
for step in range(1, STEPS + 1):
    residual = x_shard @ w - y_shard
    comm.Allreduce(x_shard.T @ residual, grad, op=MPI.SUM)
    comm.Allreduce(np.array([residual @ residual, len(y_shard)], dtype="f8"), sums, op=MPI.SUM)
    loss = sums[0] / sums[1]  # mean squared error over every rank's samples, before this step's update
    w -= LR * grad / sums[1]
    if rank == 0:
        print(f"step {step}/{STEPS} loss {loss:.6f}", flush=True)
        report(step, loss, (time.perf_counter() - started) / step)
    time.sleep(STEP_SLEEP)

if rank == 0:
    print(f"final weights error {np.linalg.norm(w - w_true):.6f} after {STEPS} steps on {size} ranks", flush=True)
