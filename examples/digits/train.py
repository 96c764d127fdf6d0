"""Data-parallel training of a softmax classifier on scikit-learn's digits, Horovod's pattern in mpi4py:
every rank holds a shard of the training set, rank 0's initial weights are broadcast, and each step's
gradients are averaged with Allreduce so all ranks keep identical weights. Rank 0 checkpoints every epoch
to $CHECKPOINT_DIR (temp file + rename, so a reader never sees half a file), the job resumes from the last
checkpoint at start, and SIGTERM (a stop, a suspension, a preemption) writes one before exiting.

Settings (environment): EPOCHS (30), BATCH (32, per rank), LR (0.5), TARGET (0.95: the test accuracy the
job must reach, else it exits 1), CHECKPOINT_DIR (unset: no checkpoints), EPOCH_SLEEP (0: seconds to
pause after each epoch, to give a test time to stop it), REPEAT (1: the training set repeated this many
times, for a larger data set per rank in a scaling benchmark)."""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
from mpi4py import MPI
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
EPOCHS = int(os.environ.get("EPOCHS", "30"))
BATCH = int(os.environ.get("BATCH", "32"))
LR = float(os.environ.get("LR", "0.5"))
TARGET = float(os.environ.get("TARGET", "0.95"))
CKPT_DIR = os.environ.get("CHECKPOINT_DIR", "")
EPOCH_SLEEP = float(os.environ.get("EPOCH_SLEEP", "0"))
REPEAT = int(os.environ.get("REPEAT", "1"))
CKPT = os.path.join(CKPT_DIR, "digits.npz") if CKPT_DIR else ""

stop = False


def on_sigterm(signum: int, frame: object) -> None:
    """Note the stop; the training loop checkpoints at the next step and exits."""
    global stop  # noqa: PLW0603 — the flag a signal handler can set
    stop = True


signal.signal(signal.SIGTERM, on_sigterm)


def save(w: np.ndarray, b: np.ndarray, epoch: int) -> None:
    """Rank 0 writes the weights after `epoch` epochs, atomically."""
    if rank != 0 or not CKPT:
        return
    tmp = f"{CKPT}.tmp-{os.getpid()}.npz"
    np.savez(tmp, w=w, b=b, epoch=epoch)
    os.replace(tmp, CKPT)
    print(f"checkpoint: epoch {epoch} -> {CKPT}", flush=True)


def accuracy(w: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(x @ w + b, axis=1) == y))


digits = load_digits()
x_all = digits.data / 16.0
x_train, x_test, y_train, y_test = train_test_split(x_all, digits.target, test_size=0.25, random_state=0,
                                                    stratify=digits.target)
x_train, y_train = np.tile(x_train, (REPEAT, 1)), np.tile(y_train, REPEAT)
x_shard, y_shard = x_train[rank::size], y_train[rank::size]
features, classes = x_train.shape[1], 10

# Same starting point everywhere: rank 0's weights (fresh or from the checkpoint) and epoch, broadcast.
w, b = np.zeros((features, classes)), np.zeros(classes)
start = np.zeros(1, dtype="i8")
if rank == 0:
    w = np.random.default_rng(0).normal(0, 0.01, (features, classes))
    if CKPT and os.path.exists(CKPT):
        with np.load(CKPT) as saved:
            w, b, start[0] = saved["w"], saved["b"], int(saved["epoch"])
        print(f"resumed from epoch {start[0]}", flush=True)
comm.Bcast(w, root=0)
comm.Bcast(b, root=0)
comm.Bcast(start, root=0)

# Every rank takes the same number of steps per epoch (the smallest shard's), so Allreduce calls match.
steps = comm.allreduce(len(x_shard) // BATCH, op=MPI.MIN)
rng = np.random.default_rng(1000 + rank)
grads = np.empty(features * classes + classes)
epoch = int(start[0])
train_start = time.perf_counter()  # the training loop's own wall time, printed at the end (bench/scaling.py)
while epoch < EPOCHS:
    order = rng.permutation(len(x_shard))
    for step in range(steps):
        idx = order[step * BATCH:(step + 1) * BATCH]
        xb, yb = x_shard[idx], y_shard[idx]
        logits = xb @ w + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(yb)), yb] -= 1.0
        local = np.concatenate([(xb.T @ p).ravel(), p.sum(axis=0)]) / len(yb)
        comm.Allreduce(local, grads, op=MPI.SUM)
        grads /= size
        w -= LR * grads[:-classes].reshape(features, classes)
        b -= LR * grads[-classes:]
    epoch += 1
    if rank == 0:
        print(f"epoch {epoch}/{EPOCHS}: test accuracy {accuracy(w, b, x_test, y_test):.4f}", flush=True)
    save(w, b, epoch)
    # All ranks agree whether anyone was asked to stop, so they leave the loop together.
    if comm.allreduce(int(stop), op=MPI.MAX):
        if rank == 0:
            print(f"SIGTERM: stopped after epoch {epoch}, checkpoint written", flush=True)
        sys.exit(0)
    if EPOCH_SLEEP:
        time.sleep(EPOCH_SLEEP)

acc = accuracy(w, b, x_test, y_test)
if rank == 0:
    print(f"train time {time.perf_counter() - train_start:.3f} s", flush=True)
    print(f"final test accuracy {acc:.4f} (target {TARGET}, {size} ranks, {EPOCHS} epochs, batch {BATCH})",
          flush=True)
sys.exit(0 if acc >= TARGET else 1)
