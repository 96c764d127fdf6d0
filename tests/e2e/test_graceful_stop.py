"""A job stopped from outside (suspended, deleted) gets SIGTERM at every rank, on the launcher and on
every node, and its pods' terminationGracePeriodSeconds to checkpoint before SIGKILL
(docs/checkpointing.md); a rank that ignores SIGTERM is killed when the grace period ends."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support import TRAINER, create, resource_version, terminations, trainjob, wait_launcher, wait_log

MERGE = {"Content-Type": "application/merge-patch+json"}
RANKS = 3  # one on the launcher (runLauncherAsNode), one on each of the two node pods
# Each rank says it is up, then on SIGTERM takes 3 s to "checkpoint" (longer than the 2 s quick teardown,
# shorter than the grace period) and writes its file to the shared directory.
CHECKPOINTING = """
import signal, sys, time
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
def save(*_):
    time.sleep(3)
    open(f"/ckpt/rank-{rank}", "w").write("saved\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, save)
print(f"rank {rank} up", flush=True)
while True:
    time.sleep(0.1)
"""
IGNORING = """
import signal, time
from mpi4py import MPI
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(f"rank {MPI.COMM_WORLD.Get_rank()} up", flush=True)
while True:
    time.sleep(0.1)
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every rank can write, mounted at /ckpt through a hostPath volume."""
    path = Path("/tmp") / f"mpijob-e2e-graceful-{os.getpid()}-{time.monotonic_ns()}"
    path.mkdir(mode=0o777)
    os.chmod(path, 0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def graceful(name: str, program: str, grace: int, shared: Path) -> dict:
    """A 3-rank job of `program` whose pods have `grace` seconds to stop and mount `shared` at /ckpt."""
    job = trainjob(name, ["mpirun", "python3", "-c", program], num_nodes=RANKS)
    pod = {"terminationGracePeriodSeconds": grace,
           "volumes": [{"name": "ckpt", "hostPath": {"path": str(shared), "type": "Directory"}}],
           "containers": [{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}]}]}
    rjobs = [{"name": r, "template": {"spec": {"template": {"spec": pod}}}} for r in ("launcher", "node")]
    job["spec"]["runtimePatches"] = [{"manager": "example.com/graceful-stop-e2e",
                                      "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": rjobs}}}}]
    return job


def started(c: httpx.Client, name: str) -> str:
    """Wait until every rank printed that it is up; the resourceVersion to watch the pods' ends from."""
    wait_log(c, wait_launcher(c, name), lambda t: all(f"rank {r} up" in t for r in range(RANKS)))
    return resource_version(c)


def stop(c: httpx.Client, name: str, how: str) -> float:
    path = f"{TRAINER}/namespaces/default/trainjobs/{name}"
    r = c.patch(path, json={"spec": {"suspend": True}}, headers=MERGE) if how == "suspend" else c.delete(path)
    assert r.status_code == 200, r.text
    return time.monotonic()


@pytest.mark.parametrize("how", ["suspend", "delete"])
def test_every_rank_gets_sigterm_and_the_grace_period_to_checkpoint(api: httpx.Client, shared: Path,
                                                                      how: str) -> None:
    name = f"ee-graceful-{how}"
    create(api, graceful(name, CHECKPOINTING, 20, shared))
    since = started(api, name)
    stop(api, name, how)
    ended = terminations(api, name, since, timeout=30)
    assert len(ended) == RANKS, ended
    assert sorted(p.name for p in shared.iterdir()) == [f"rank-{r}" for r in range(RANKS)]
    assert all((shared / f"rank-{r}").read_text() == "saved\n" for r in range(RANKS))
    if how == "suspend":
        assert {t["reason"] for t in ended.values()} == {"Suspended"}, ended
        api.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")


def test_a_rank_ignoring_sigterm_is_killed_when_the_grace_period_ends(api: httpx.Client, shared: Path) -> None:
    name = "ee-graceful-ignore"
    create(api, graceful(name, IGNORING, 2, shared))
    since = started(api, name)
    asked = stop(api, name, "delete")
    ended = terminations(api, name, since, timeout=30)
    took = time.monotonic() - asked
    assert len(ended) == RANKS, ended
    assert 2 <= took < 8, f"its pods went {took:.1f} s after the deletion, not ~2 s (the grace period) after"
