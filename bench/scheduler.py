"""Kueue scheduling on the local cluster: how long one decision over 1,000 pending workloads takes, and
50 small 2-node TrainJobs submitted at once across 5 namespaces on a real server.

    .venv/bin/python bench/scheduler.py [--pending 1000] [--jobs 50] [--namespaces 5] [--runs 20]

Prints one JSON object (see bench/README.md). Never asserts on the figures: exit 0 whenever both parts
ran, exit 1 with a message on stderr when something failed to run.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster
from startup import BenchError, api_client, wait_runtime  # the sibling bench modules

from mpijob.api import Obj
from mpijob.api.core import resources as r
from mpijob.api.kueue.scheduler import Admit, Pending, Preempt, schedule
from mpijob.api.kueue.snapshot import Snapshot
from mpijob.api.names import KUEUE_API_VERSION, LABEL_PRIORITY_CLASS, LABEL_QUEUE_NAME, TRAINER_API_VERSION
from mpijob.api.trainer import plan as run_plan
from mpijob.api.trainer import render, runtimes
from mpijob.controllers.kueue.queueing import Queueing
from mpijob.controllers.kueue.workloads import SnapshotCache, build_snapshot, render_workload
from mpijob.store import server_process
from mpijob.store.objects import Store

SEED = 4  # the synthetic cluster is the same on every invocation
PRIORITIES = {"low": 100, "mid": 500, "high": 1000}
TEAMS = ("team-a", "team-b")  # one ClusterQueue each, in one cohort
RUNNING_PER_TEAM = 12  # workloads offered before the pending ones; those that fit hold quota
E2E_CAPACITY = "cpu=4,memory=8Gi,nvidia.com/gpu=4"
E2E_JOB_CPU = 2  # numNodes 2 with runLauncherAsNode: launcher + 1 node pod, 1 cpu each
POLL_S = 0.05
E2E_TIMEOUT_S = 600.0


def stats(values: list[float], digits: int = 4) -> dict[str, float]:
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits)}


def _timed(fn: Any, runs: int) -> tuple[list[float], Any]:
    samples, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        samples.append(time.perf_counter() - t0)
    return samples, out


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), so p99 of 50 samples is defined."""
    xs = sorted(values)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


# -- part 1: the decision, in process ---------------------------------------------------------------


def _cluster_queue(team: str) -> Obj:
    """16 GPUs each in cohort `research`; team-a preempts lower priority and reclaims anything lent,
    team-b also borrows by preempting lower priority — so a cycle exercises every preemption path."""
    preemption = ({"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"} if team == "team-a" else
                  {"withinClusterQueue": "LowerOrNewerEqualPriority", "reclaimWithinCohort": "LowerPriority",
                   "borrowWithinCohort": {"policy": "LowerPriority"}})
    return {"metadata": {"name": team}, "spec": {
        "cohortName": "research", "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
        "preemption": preemption,
        "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{
            "name": "gpu-a100", "resources": [{"name": "cpu", "nominalQuota": "128"},
                                              {"name": "memory", "nominalQuota": "512Gi"},
                                              {"name": "nvidia.com/gpu", "nominalQuota": "16"}]}]}]}}


def _trainjob(rng: random.Random, team: str, index: int) -> Obj:
    """A TrainJob of a random small shape and priority; it becomes a Workload with 2 pod sets."""
    return {"apiVersion": TRAINER_API_VERSION, "kind": "TrainJob",
            "metadata": {"name": f"job-{index}", "namespace": team, "uid": str(uuid.uuid4()),
                         "labels": {LABEL_QUEUE_NAME: f"{team}-queue",
                                    LABEL_PRIORITY_CLASS: rng.choice(list(PRIORITIES))}},
            "spec": {"runtimeRef": {"name": runtimes.BUNDLED_NAME}, "trainer": {
                "numNodes": rng.choice((2, 2, 3, 4)),
                "resourcesPerNode": {"limits": {"cpu": str(rng.choice((2, 4, 8))),
                                                "memory": f"{rng.choice((4, 8, 16))}Gi",
                                                "nvidia.com/gpu": str(rng.choice((1, 1, 2)))}}}}}


def _add_workloads(store: Store, rng: random.Random, count: int, start: int) -> None:
    """Workloads exactly as the TrainJob controller writes them: resolve against the bundled runtime,
    then `render_workload` (which also reads the priority from the WorkloadPriorityClass)."""
    runtime = runtimes.bundled()[0]
    for i in range(start, start + count):
        tj = _trainjob(rng, TEAMS[i % len(TEAMS)], i)
        store.create(r.WORKLOADS, render_workload(store, tj, run_plan.resolve(tj, runtime), render.owner_reference(tj)))


async def no_evict(tj: Obj, message: str) -> None:
    """Nothing runs in part 1; evictions only change the Workload."""


def populate(store: Store, pending: int) -> int:
    """Queues, priority classes, the admitted workloads (offered first, admitted by the real controller
    cycle; those that did not fit are removed), then `pending` more. Returns how many are admitted."""
    rng = random.Random(SEED)
    store.create(r.RESOURCE_FLAVORS, {"metadata": {"name": "gpu-a100"}, "spec": {}})
    for name, value in PRIORITIES.items():
        store.create(r.WORKLOAD_PRIORITY_CLASSES, {"metadata": {"name": name}, "value": value})
    for team in TEAMS:
        store.create(r.NAMESPACES, {"metadata": {"name": team}})
        store.create(r.CLUSTER_QUEUES, _cluster_queue(team))
        store.create(r.LOCAL_QUEUES, {"metadata": {"name": f"{team}-queue", "namespace": team},
                                      "spec": {"clusterQueue": team}}, team)
    _add_workloads(store, rng, RUNNING_PER_TEAM * len(TEAMS), 0)
    asyncio.run(Queueing(store, no_evict).cycle())
    admitted = 0
    for wl in store.list(r.WORKLOADS)[0]:
        if (wl.get("status") or {}).get("admission"):
            admitted += 1
        else:
            store.delete(r.WORKLOADS, wl["metadata"]["namespace"], wl["metadata"]["name"])
    _add_workloads(store, rng, pending, RUNNING_PER_TEAM * len(TEAMS))
    return admitted


def counts(decisions: list) -> dict[str, int]:
    return {"admit": sum(isinstance(d, Admit) for d in decisions),
            "preempt": sum(isinstance(d, Preempt) for d in decisions),
            "pending": sum(isinstance(d, Pending) for d in decisions)}


def _baseline_sort(snap: Snapshot) -> list:
    """The least any scheduler must do: order the pending workloads by (priority desc, created asc)."""
    return sorted((w for w in snap.workloads if w.admission is None), key=lambda w: (-w.priority, w.created, w.key))


def _touch(store: Store, wl: Obj) -> None:
    """One write to one Workload, as a cycle's worth of events makes: the next snapshot must see it."""
    current = store.get(r.WORKLOADS, wl["metadata"]["namespace"], wl["metadata"]["name"])
    current["metadata"].setdefault("annotations", {})["bench"] = str(time.perf_counter_ns())
    store.update(r.WORKLOADS, current)


def after_write(store: Store, wl: Obj, runs: int, decide: bool) -> list[float]:
    """A cycle as the server runs one: something was written, then snapshot (and decide)."""
    samples = []
    for _ in range(runs):
        _touch(store, wl)
        t0 = time.perf_counter()
        snap = build_snapshot(store)
        if decide:
            schedule(snap, fair_sharing=False)
        samples.append(time.perf_counter() - t0)
    return samples


def decision_bench(pending: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mpijob-bench-sched-") as tmp:
        store = Store(Path(tmp) / "store.db")
        try:
            admitted = populate(store, pending)
            snap = build_snapshot(store)  # the pure input: the same objects the store holds
            decide, decisions = _timed(lambda: schedule(snap, fair_sharing=False), runs)
            fair, fair_decisions = _timed(lambda: schedule(snap, fair_sharing=True), runs)
            snap_only, _ = _timed(lambda: build_snapshot(store), runs)
            cold, _ = _timed(lambda: SnapshotCache().snapshot(store), runs)
            touched = store.list(r.WORKLOADS)[0][-1]
            written = after_write(store, touched, runs, decide=False)
            both = after_write(store, touched, runs, decide=True)
            base, _ = _timed(lambda: _baseline_sort(snap), runs)
            # What the server pays when all of them arrive at once: snapshot, decide, write every
            # decision back (a QuotaReserved=False condition per pending workload), queue status.
            queueing = Queueing(store, no_evict)
            t0 = time.perf_counter()
            asyncio.run(queueing.cycle())
            first_cycle = time.perf_counter() - t0
        finally:
            store.close()
    median_decide, median_base = statistics.median(decide), statistics.median(base)
    return {
        "pending_workloads": pending,
        "admitted_workloads": admitted,
        "cluster_queues": len(TEAMS),
        "runs": runs,
        "decision_s": stats(decide),
        "decision_fair_sharing_s": stats(fair),
        "snapshot_s": stats(snap_only),
        "snapshot_cold_s": stats(cold),
        "snapshot_after_write_s": stats(written),
        "snapshot_plus_decision_s": stats(both),
        "baseline_sort_s": stats(base, 6),
        "decision_vs_sort": round(median_decide / median_base, 1) if median_base else None,
        "decisions": counts(decisions),
        "decisions_fair_sharing": counts(fair_decisions),
        "controller_first_cycle_s": round(first_cycle, 4),
    }


# -- part 2: end to end, on a real server -----------------------------------------------------------


def _e2e_trainjob(name: str, namespace: str) -> Obj:
    return {"apiVersion": TRAINER_API_VERSION, "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"runtimeRef": {"name": runtimes.BUNDLED_NAME}, "trainer": {
                "numNodes": 2, "resourcesPerNode": {"limits": {"cpu": "1"}},
                "command": ["mpirun", "bash", "-c", "echo rank $OMPI_COMM_WORLD_RANK"]}}}


def _condition(obj: Obj, kind: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _true(obj: Obj, kind: str) -> bool:
    return (_condition(obj, kind) or {}).get("status") == "True"


def _rfc3339(ts: str) -> float:
    return calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ"))


class Tracker:
    """Client-side clocks per job: submitted (just before its POST), admitted (first poll seeing its
    Workload QuotaReserved=True) and finished (first poll seeing Complete or Failed)."""

    def __init__(self) -> None:
        self.submitted: dict[str, float] = {}
        self.admitted: dict[str, float] = {}
        self.finished: dict[str, tuple[float, str]] = {}
        self.server_wait: dict[str, float] = {}  # QuotaReserved lastTransitionTime − creationTimestamp
        self.created: dict[str, str] = {}
        self.evictions: set[str] = set()
        self.max_admitted = 0

    def observe(self, now: float, workloads: list[Obj], trainjobs: list[Obj]) -> None:
        running = 0
        for wl in workloads:
            owner = next((o["name"] for o in wl["metadata"].get("ownerReferences") or []
                          if o.get("kind") == "TrainJob"), "")
            key = f"{wl['metadata']['namespace']}/{owner}"
            if _condition(wl, "Evicted") is not None:
                self.evictions.add(key)
            if not _true(wl, "QuotaReserved"):
                continue
            if not _true(wl, "Finished"):
                running += 1
            if key not in self.admitted:
                self.admitted[key] = now
                reserved = _condition(wl, "QuotaReserved") or {}
                if key in self.created and reserved.get("lastTransitionTime"):
                    self.server_wait[key] = _rfc3339(reserved["lastTransitionTime"]) - _rfc3339(self.created[key])
        self.max_admitted = max(self.max_admitted, running)
        for tj in trainjobs:
            key = f"{tj['metadata']['namespace']}/{tj['metadata']['name']}"
            self.created.setdefault(key, tj["metadata"].get("creationTimestamp", ""))
            if key not in self.finished:
                for kind in ("Complete", "Failed"):
                    if _true(tj, kind):
                        self.finished[key] = (now, kind)
                        self.admitted.setdefault(key, now)  # admitted and done between two polls


async def _submit(client: httpx.AsyncClient, tracker: Tracker, name: str, namespace: str) -> None:
    tracker.submitted[f"{namespace}/{name}"] = time.perf_counter()
    resp = await client.post(f"/apis/{TRAINER_API_VERSION}/namespaces/{namespace}/trainjobs",
                             json=_e2e_trainjob(name, namespace))
    if resp.status_code != 201:
        raise BenchError(f"POST TrainJob {namespace}/{name} answered {resp.status_code}: {resp.text[:1000]}")


async def _poll(client: httpx.AsyncClient, tracker: Tracker, expected: int, stop: asyncio.Event) -> None:
    """Two all-namespace lists per tick: cheap for the server, and one clock for every job."""
    while not stop.is_set():
        wls = await client.get(f"/apis/{KUEUE_API_VERSION}/workloads")
        tjs = await client.get(f"/apis/{TRAINER_API_VERSION}/trainjobs")
        now = time.perf_counter()
        if wls.status_code == 200 and tjs.status_code == 200:
            tracker.observe(now, wls.json().get("items") or [], tjs.json().get("items") or [])
        if len(tracker.finished) >= expected:
            return
        await asyncio.sleep(POLL_S)


async def e2e(kubeconfig: Path, jobs: int, namespaces: int) -> dict[str, Any]:
    tracker = Tracker()
    names = [f"bench-{i}" for i in range(namespaces)]
    async with api_client(kubeconfig) as client:
        client.timeout = httpx.Timeout(60.0)
        await wait_runtime(client)
        for ns in names:
            resp = await client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                                 "metadata": {"name": ns}})
            if resp.status_code != 201:
                raise BenchError(f"POST Namespace {ns} answered {resp.status_code}: {resp.text[:500]}")
        stop = asyncio.Event()
        poller = asyncio.create_task(_poll(client, tracker, jobs, stop))
        await asyncio.gather(*(_submit(client, tracker, f"job-{i}", names[i % namespaces]) for i in range(jobs)))
        try:
            await asyncio.wait_for(asyncio.shield(poller), E2E_TIMEOUT_S)
        except TimeoutError:
            stop.set()
            await poller
    return e2e_report(tracker, jobs, namespaces)


def e2e_report(t: Tracker, jobs: int, namespaces: int) -> dict[str, Any]:
    waits = [t.admitted[k] - t.submitted[k] for k in t.submitted if k in t.admitted]
    runs = [t.finished[k][0] - t.admitted[k] for k in t.finished if k in t.admitted]
    completed = sum(1 for _, kind in t.finished.values() if kind == "Complete")
    failed = sum(1 for _, kind in t.finished.values() if kind == "Failed")
    first_submit = min(t.submitted.values())
    makespan = max((f for f, _ in t.finished.values()), default=time.perf_counter()) - first_submit
    cpu = int(E2E_CAPACITY.split(",", maxsplit=1)[0].split("=")[1])
    concurrency = cpu // E2E_JOB_CPU
    run_sum = sum(runs)
    # A slot's idle time: the k-th finish frees room for the (concurrency + k)-th admission.
    finishes = sorted(f for f, _ in t.finished.values())
    later = sorted(t.admitted.values())[concurrency:]
    handoffs = [max(a - f, 0.0) for a, f in zip(later, finishes)]

    def pct(values: list[float]) -> dict[str, float] | None:
        if not values:
            return None
        return {f"p{p}": round(percentile(values, p), 3) for p in (50, 90, 99)} | {"max": round(float(max(values)), 3)}

    return {
        "capacity": E2E_CAPACITY,
        "namespaces": namespaces,
        "submitted": len(t.submitted),
        "completed": completed,
        "failed": failed,
        "lost": jobs - len(t.finished),
        "evicted": len(t.evictions),
        "concurrency_by_quota": concurrency,
        "max_admitted_at_once": t.max_admitted,
        "admission_wait_s": pct(waits),
        "admission_wait_server_s": pct(list(t.server_wait.values())),
        "run_s": pct(runs),
        "handoff_s": pct(handoffs),
        "makespan_s": round(makespan, 3),
        "jobs_per_minute": round(completed / makespan * 60, 2) if makespan > 0 else None,
        "sum_run_s": round(run_sum, 3),
        "ideal_makespan_s": round(run_sum / concurrency, 3),
        "scheduling_overhead_s": round(makespan - run_sum / concurrency, 3),
        "poll_interval_s": POLL_S,
    }


# -- main --------------------------------------------------------------------------------------------


def positive(args: argparse.Namespace, flags: tuple[str, ...]) -> bool:
    """Whether each of a bench's count `flags` is 1 or more; the first that is not is named on stderr."""
    for flag in flags:
        if getattr(args, flag) < 1:
            print(f"--{flag}: {getattr(args, flag)} is not a positive number; pass e.g. --{flag} 5", file=sys.stderr)
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pending", type=int, default=1000, help="pending workloads in part 1 (default 1000)")
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each part-1 measure (default 20)")
    parser.add_argument("--jobs", type=int, default=50, help="TrainJobs submitted at once in part 2 (default 50)")
    parser.add_argument("--namespaces", type=int, default=5, help="namespaces they are spread over (default 5)")
    args = parser.parse_args(argv)
    if not positive(args, ("pending", "runs", "jobs", "namespaces")):
        return 1
    try:
        decision = decision_bench(args.pending, args.runs)
    except Exception as exc:  # noqa: BLE001 — a bench reports what failed to run, it does not judge
        print(f"bench/scheduler.py: decision part failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    try:
        with temp_cluster("mpijob-bench-home-", env={"MPIJOB_CAPACITY": E2E_CAPACITY}) as (_, info):
            end_to_end = asyncio.run(e2e(info.kubeconfig, args.jobs, args.namespaces))
            end_to_end["sandbox_mode"] = info.sandbox_mode
    except (BenchError, server_process.ServerError, httpx.HTTPError, OSError) as exc:
        print(f"bench/scheduler.py: end-to-end part failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"decision": decision, "end_to_end": end_to_end}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
