"""Soak: many jobs (most succeed, some fail, some are preempted by later high-priority ones) while the
server is killed with `kill -9` at random moments and started again. Every job must end with its true
outcome, every line of every launcher log must be there exactly once, nothing of any job may be left
running, and the scheduler must never admit more than the queue's quota.

CI runs a short version; the issue's full one (40 jobs, 5 kills) is `make soak`
(`MPIJOB_SOAK_JOBS=40 MPIJOB_SOAK_KILLS=5`). The test prints its figures.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable

import httpx
from mpijob.store.server_process import ServerInfo

from support import (
    TRAINER,
    by_role,
    condition,
    create,
    events_of,
    job_pods,
    launcher_of,
    pod_log,
    trainjob,
    wait_finished,
    wait_no_processes,
)

JOBS = int(os.environ.get("MPIJOB_SOAK_JOBS", "12"))
KILLS = int(os.environ.get("MPIJOB_SOAK_KILLS", "2"))
LINES = 12  # per rank
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
QUOTA_JOBS = 2  # the queue's 2 CPUs hold two jobs of two half-CPU pods, and no more
QUEUE, PRIORITY = "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class"
TICK = 'for i in $(seq 1 {n}); do echo "rank $OMPI_COMM_WORLD_RANK line $i"; sleep 0.15; done'
# Rank 1 says its lines, then fails; rank 0 goes on until mpirun stops it.
FAILING = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then ' + TICK.format(n=4) + "; exit 3; fi; "
           + TICK.format(n=LINES))


def _queue(c: httpx.Client) -> None:
    cq = {"metadata": {"name": "soak"}, "spec": {
        "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": str(QUOTA_JOBS)}]}]}]}}
    assert c.post(f"{KUEUE}/clusterqueues", json=cq).status_code == 201
    lq = {"metadata": {"name": "soak"}, "spec": {"clusterQueue": "soak"}}
    assert c.post(f"{KUEUE}/namespaces/default/localqueues", json=lq).status_code == 201
    for name, value in (("soak-low", 10), ("soak-high", 1000)):
        assert c.post(f"{KUEUE}/workloadpriorityclasses",
                      json={"metadata": {"name": name}, "value": value}).status_code in (201, 409)


def _job(name: str, kind: str) -> dict:
    job = trainjob(name, ["mpirun", "bash", "-c", FAILING if kind == "fail" else TICK.format(n=LINES)], num_nodes=2)
    job["metadata"]["labels"] = {QUEUE: "soak", PRIORITY: "soak-high" if kind == "high" else "soak-low"}
    job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "500m"}}
    return job


class QuotaWatch:
    """Counts the queue's admitted Workloads every 0.1 s while a server answers: never above the quota."""

    def __init__(self) -> None:
        self.client: httpx.Client | None = None
        self.most, self.looks = 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            c = self.client
            try:
                items = c.get(f"{KUEUE}/namespaces/default/workloads").json()["items"] if c else []
            except (httpx.HTTPError, KeyError, ValueError):
                continue  # the server is down: nothing is admitted then
            admitted = [w for w in items if condition(w, "Admitted") and not condition(w, "Finished")]
            self.most, self.looks = max(self.most, len(admitted)), self.looks + 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def test_jobs_end_truthfully_through_repeated_kill_9s_of_the_server(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    started = time.monotonic()
    rng = random.Random(int(os.environ.get("MPIJOB_SOAK_SEED", "1234")))  # the moments of the kills
    kinds = {f"soak-{i:02d}": "high" if i % 5 == 4 else "fail" if i % 4 == 1 else "ok" for i in range(JOBS)}
    info = new_server("soak")
    watch = QuotaWatch()
    c = connect(info)
    watch.client = c
    _queue(c)
    highs = [n for n, k in kinds.items() if k == "high"]
    for name, kind in kinds.items():
        if kind != "high":
            create(c, _job(name, kind))
    for kill in range(KILLS):  # a preempting job arrives now and then; the server dies at random moments
        time.sleep(rng.uniform(2, 6))
        for name in highs[kill::KILLS]:
            create(c, _job(name, "high"))
        watch.client = None
        c.close()
        os.kill(info.pid, signal.SIGKILL)
        try:
            os.waitpid(info.pid, 0)
        except ChildProcessError:
            pass
        time.sleep(rng.uniform(0, 1.5))
        info = new_server("soak")
        c = connect(info)
        watch.client = c

    lines_checked = 0
    try:
        for name, kind in kinds.items():
            done = wait_finished(c, name, timeout=600)
            pods = job_pods(c, name)
            assert by_role(pods, "launcher"), (name, done["status"], [p["metadata"]["name"] for p in pods])
            log = pod_log(c, launcher_of(pods)["metadata"]["name"])
            ranks = {r: [ln for ln in log.splitlines() if ln.startswith(f"rank {r} ")] for r in (0, 1)}
            if kind == "fail":
                failed = condition(done, "Failed")
                assert failed and "exited with code 3" in failed["message"], (name, done["status"], log)
                assert ranks[1] == [f"rank 1 line {i}" for i in range(1, 5)], (name, log)
                lines_checked += 4
            else:
                assert condition(done, "Complete"), (name, done["status"], log)
                for r in (0, 1):  # exactly once each, in order: none lost, none doubled by a restart
                    assert ranks[r] == [f"rank {r} line {i}" for i in range(1, LINES + 1)], (name, log)
                lines_checked += 2 * LINES
        for name in kinds:
            wait_no_processes(name, timeout=30)
        preempted = sum(any(e["reason"] == "Preempted" for e in events_of(c, n)) for n in kinds)
    finally:
        watch.stop()
        for name in kinds:
            c.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")
        c.close()
    assert watch.looks > 0 and watch.most <= QUOTA_JOBS, (watch.most, watch.looks)
    print(f"\nsoak: {JOBS} jobs ({sum(k == 'fail' for k in kinds.values())} failing, {len(highs)} preempting), "
          f"{preempted} preempted, {KILLS} kill -9s, {lines_checked} log lines checked, most admitted at once {watch.most} "
          f"(quota {QUOTA_JOBS}), {time.monotonic() - started:.0f} s", flush=True)
