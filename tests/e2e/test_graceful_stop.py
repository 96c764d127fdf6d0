"""A job stopped from outside (here: suspended) gets SIGTERM and its pods' terminationGracePeriodSeconds
before SIGKILL, so a program can write a checkpoint (docs/checkpointing.md). Covers the launcher's own
program; ranks started by mpirun on node pods are not covered yet."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import httpx
from e2e_support import TRAINER, create, resource_version, terminations, trainjob, wait_launcher, wait_log

MERGE = {"Content-Type": "application/merge-patch+json"}
HOME = "/home/mpiuser"


def _graceful(job: dict, grace: int, shared: Path) -> dict:
    """`job` whose launcher mounts `shared` at ~/ckpt and has `grace` seconds to stop."""
    pod = {"terminationGracePeriodSeconds": grace,
           "volumes": [{"name": "ckpt", "hostPath": {"path": str(shared), "type": "Directory"}}],
           "containers": [{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": f"{HOME}/ckpt"}]}]}
    entry = {"name": "launcher", "template": {"spec": {"template": {"spec": pod}}}}
    job["spec"]["runtimePatches"] = [{"manager": "example.com/graceful-stop-e2e",
                                      "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [entry]}}}}]
    return job


def _suspend(c: httpx.Client, name: str) -> float:
    r = c.patch(f"{TRAINER}/namespaces/default/trainjobs/{name}", json={"spec": {"suspend": True}}, headers=MERGE)
    assert r.status_code == 200, r.text
    return time.monotonic()


def _share(tag: str) -> Path:
    shared = Path("/tmp") / f"mpijob-e2e-graceful-{tag}-{os.getpid()}"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    return shared


def test_a_suspended_program_trapping_sigterm_writes_its_checkpoint_within_the_grace_period(
        api: httpx.Client) -> None:
    name, shared = "ee-graceful-trap", _share("trap")
    try:
        # Takes 3 s to "checkpoint": longer than the quick 2 s teardown, shorter than the 10 s grace.
        program = ('trap "sleep 3; echo saved > ~/ckpt/launcher; exit 0" TERM; echo up; '
                   'sleep 120 & wait; wait')
        create(api, _graceful(trainjob(name, ["bash", "-c", program], num_nodes=1), 10, shared))
        wait_log(api, wait_launcher(api, name), lambda t: "up" in t)
        since = resource_version(api)
        _suspend(api, name)
        ended = terminations(api, name, since, timeout=30)
        assert ended, "no pod ended"
        assert (shared / "launcher").read_text() == "saved\n"
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_program_ignoring_sigterm_is_killed_after_a_short_grace_period(api: httpx.Client) -> None:
    name, shared = "ee-graceful-ignore", _share("ignore")
    try:
        program = 'trap "" TERM; echo up; while true; do sleep 0.2; done'
        create(api, _graceful(trainjob(name, ["bash", "-c", program], num_nodes=1), 2, shared))
        wait_log(api, wait_launcher(api, name), lambda t: "up" in t)
        since = resource_version(api)
        asked = _suspend(api, name)
        ended = terminations(api, name, since, timeout=30)
        took = time.monotonic() - asked
        assert ended, "no pod ended"
        assert 1.5 <= took < 10, f"stopped after {took:.1f} s, not ~2 s"
    finally:
        shutil.rmtree(shared, ignore_errors=True)
