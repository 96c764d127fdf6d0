"""Fifty jobs at once without degradation: 50 running 2-node TrainJobs across 5 namespaces plus 1,000
pending ones, while a client watches, GETs a TrainJob and lists 100 — those requests' latency against the
same ones on the idle server, and the scheduler's cycle under that load.

    .venv/bin/python bench/load.py [--running 50] [--pending 1000] [--namespaces 5] [--samples 300]

Prints one JSON object (see bench/README.md). Never asserts on the figures: exit 0 whenever every part
ran, exit 1 with a message on stderr when something failed to run (SIGTERM included: the cluster, its
pods and the temporary directories are gone before it exits).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster  # the sibling bench modules
from podcost import comm, pod_processes, pss_kib, with_supervisor
from restart import cluster_id, marked
from scheduler import after_write, counts, no_evict, percentile, positive, stats
from startup import BenchError, api_client, wait_runtime

from mpijob.api import Obj
from mpijob.api.core import resources as r
from mpijob.api.kueue.scheduler import schedule
from mpijob.api.names import KUEUE_API_VERSION, TRAINER_API_VERSION
from mpijob.controllers.kueue.queueing import Queueing
from mpijob.controllers.kueue.workloads import build_snapshot
from mpijob.store import server_process
from mpijob.store.objects import Store

BASELINE_NS, LISTED = "baseline", 100  # the namespace of the 100 suspended TrainJobs every phase reads
TRAINER = f"/apis/{TRAINER_API_VERSION}"
NODE_CPU = 1  # per pod; a job is a launcher that is also a node + 1 node pod: 2 cpu
PROGRAM = "sleep"  # each rank, once it has said it is up (exec: the pod's program is this one process)
SCRIPT = f'echo "rank $OMPI_COMM_WORLD_RANK up"; exec {PROGRAM} 3600'
PAUSE_S = 0.02  # between two timed requests: a client's pace, not a flood
SUBMIT_AT_ONCE = 16
POLL_S = 0.5
UP_TIMEOUT_S = 300.0
PENDING_TIMEOUT_S = 300.0
SETTLE_S = 3.0  # after the last change the bench waits for: the server's cycles and writes calm down
CYCLE_RUNS = 20
STOP_TIMEOUT_S = 120.0  # draining 100 pods


def trainjob(name: str, namespace: str, suspended: bool = False) -> Obj:
    return {"apiVersion": TRAINER_API_VERSION, "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "suspend": suspended,
                     "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"cpu": str(NODE_CPU)}},
                                 "command": ["mpirun", "bash", "-c", SCRIPT]}}}


async def post(client: httpx.AsyncClient, path: str, obj: Obj) -> None:
    resp = await client.post(path, json=obj)
    if resp.status_code != 201:
        raise BenchError(f"POST {path} {obj['metadata']['name']} answered {resp.status_code}: {resp.text[:500]}")


async def bounded(calls: list[Awaitable[Any]], at_once: int = SUBMIT_AT_ONCE) -> list[Any]:
    """`calls` awaited at most `at_once` at a time: many clients' worth, not one socket per call."""
    gate = asyncio.Semaphore(at_once)

    async def one(call: Awaitable[Any]) -> Any:
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls))


async def submit(client: httpx.AsyncClient, jobs: list[tuple[str, str]], suspended: bool = False) -> None:
    await bounded([post(client, f"{TRAINER}/namespaces/{ns}/trainjobs", trainjob(name, ns, suspended))
                   for name, ns in jobs])


async def items(client: httpx.AsyncClient, path: str, **params: str) -> list[Obj]:
    resp = await client.get(path, params=params)
    resp.raise_for_status()
    return resp.json().get("items") or []


def _owner(wl: Obj) -> str:
    return next((o["name"] for o in wl["metadata"].get("ownerReferences") or [] if o.get("kind") == "TrainJob"), "")


def _reserved(wl: Obj) -> str | None:
    """The Workload's QuotaReserved status ("True", "False"), None before the scheduler looked at it."""
    return next((c.get("status") for c in (wl.get("status") or {}).get("conditions") or []
                 if c.get("type") == "QuotaReserved"), None)


async def wait_workloads(client: httpx.AsyncClient, prefix: str, count: int, status: str | None,
                         timeout: float) -> None:
    """Until `count` Workloads of TrainJobs named `prefix…` exist, each with QuotaReserved `status`
    (None: any, the suspended ones are never looked at), then `SETTLE_S` more."""
    deadline = time.perf_counter() + timeout
    while True:
        workloads = await items(client, f"/apis/{KUEUE_API_VERSION}/workloads")
        mine = [wl for wl in workloads if _owner(wl).startswith(prefix)]
        done = sum(1 for wl in mine if status is None or _reserved(wl) == status)
        if done >= count:
            await asyncio.sleep(SETTLE_S)
            return
        if time.perf_counter() > deadline:
            raise BenchError(f"{done} of {count} Workloads of {prefix}* had QuotaReserved={status} "
                             f"after {timeout:.0f}s")
        await asyncio.sleep(POLL_S)


async def wait_ranks_up(client: httpx.AsyncClient, names: set[str]) -> None:
    """Until every named job's launcher log shows both ranks up (each log read until it does); a job that
    fails meanwhile is an error."""
    t0, left = time.perf_counter(), set(names)
    while left:
        launchers = await items(client, "/api/v1/pods", labelSelector="jobset.sigs.k8s.io/replicatedjob-name=launcher")
        todo = [(p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"], p["metadata"]) for p in launchers]
        todo = [(job, meta) for job, meta in todo if job in left]
        logs = await bounded([client.get(f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}/log",
                                         params={"container": "node"}) for _, m in todo])
        left -= {job for (job, _), resp in zip(todo, logs, strict=True)
                 if resp.status_code == 200 and all(f"rank {k} up" in resp.text for k in range(2))}
        failed = [j["metadata"]["name"] for j in await items(client, f"{TRAINER}/trainjobs")
                  if j["metadata"]["name"] in left and _true(j, "Failed")]
        if failed:
            raise BenchError(f"TrainJobs failed before all ranks were up: {failed[:5]}")
        if left and time.perf_counter() - t0 > UP_TIMEOUT_S:
            raise BenchError(f"{len(left)} jobs never had both ranks up within {UP_TIMEOUT_S:.0f}s: {sorted(left)[:5]}")
        if left:
            await asyncio.sleep(POLL_S)


def _true(obj: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


# -- what a client sees ------------------------------------------------------------------------------


class Watch:
    """A watch on every namespace's TrainJobs, held open while the client measures, counting events (not
    parsing them: the client's own work stays out of its timings)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client, self.events = client, 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self, since: str) -> None:
        params = {"watch": "1", "resourceVersion": since, "allowWatchBookmarks": "false"}
        async with self.client.stream("GET", f"{TRAINER}/trainjobs", params=params,
                                      timeout=httpx.Timeout(10.0, read=None)) as resp:
            resp.raise_for_status()
            async for line in resp.aiter_lines():
                self.events += bool(line)

    async def __aenter__(self) -> Watch:
        resp = await self.client.get(f"{TRAINER}/trainjobs", params={"limit": "1"})
        resp.raise_for_status()
        self._task = asyncio.create_task(self._run(resp.json()["metadata"]["resourceVersion"]))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        if self._task.done():  # the stream ended early: say why
            self._task.result()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


def cpu_s(pid: int) -> float:
    """The process's user + system CPU seconds so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(client: httpx.AsyncClient, server_pid: int, samples: int) -> Obj:
    """`samples` rounds of GET one TrainJob, list a namespace of 100, list `?limit=100` across namespaces
    (milliseconds, client-side, the body read), the order rotating each round, with a watch open."""
    paths = {"get": f"{TRAINER}/namespaces/{BASELINE_NS}/trainjobs/{BASELINE_NS}-0",
             "list_namespace": f"{TRAINER}/namespaces/{BASELINE_NS}/trainjobs",
             "list_limit": f"{TRAINER}/trainjobs?limit={LISTED}"}
    times: dict[str, list[float]] = {k: [] for k in paths}
    async with Watch(client) as watch:
        cpu0, t0 = cpu_s(server_pid), time.perf_counter()
        for turn in range(samples):
            order = list(paths)[turn % 3:] + list(paths)[:turn % 3]
            for kind in order:
                start = time.perf_counter()
                resp = await client.get(paths[kind])
                times[kind].append((time.perf_counter() - start) * 1000)
                resp.raise_for_status()
                if turn == 0 and kind != "get" and len(resp.json()["items"]) != LISTED:
                    raise BenchError(f"{paths[kind]} listed {len(resp.json()['items'])} TrainJobs, not {LISTED}")
                await asyncio.sleep(PAUSE_S)
        cpu = (cpu_s(server_pid) - cpu0) / (time.perf_counter() - t0)
    return {"times": times, "watch_events": watch.events, "server_cpu_percent": round(cpu * 100, 1)}


def latency_report(idle: Obj, loaded: Obj) -> Obj:
    out: Obj = {}
    for kind in idle["times"]:
        a, b = idle["times"][kind], loaded["times"][kind]
        side = {name: {"p50": round(percentile(v, 50), 2), "p99": round(percentile(v, 99), 2),
                       "max": round(max(v), 2)} for name, v in (("idle", a), ("loaded", b))}
        out[kind] = side | {"ratio_p50": round(percentile(b, 50) / percentile(a, 50), 2),
                            "ratio_p99": round(percentile(b, 99) / percentile(a, 99), 2)}
    return out


# -- the scheduler under the load --------------------------------------------------------------------


async def cycle_bench(db: Path, runs: int) -> Obj:
    """The server's store as it is now, copied (SQLite's online backup) and read by this process: one
    Workload written, then snapshot + decision (what bench/scheduler.py times), and the whole controller
    cycle (also the writes back: queue status, why each waits) — on the machine the load runs on."""
    with tempfile.TemporaryDirectory(prefix="mpijob-bench-load-") as tmp:
        copy = Path(tmp) / "cluster.db"
        with sqlite3.connect(db) as src, sqlite3.connect(copy) as dst:
            src.backup(dst)
        store = Store(copy)
        try:
            snap = build_snapshot(store)
            decisions = counts(schedule(snap))
            touched = store.list(r.WORKLOADS)[0][-1]
            both = after_write(store, touched, runs, decide=True)
            queueing = Queueing(store, no_evict)
            await queueing.cycle()  # a new controller's first cycle reads what each Workload says
            cycle = []
            for _ in range(runs):
                after_write(store, touched, 1, decide=False)
                t0 = time.perf_counter()
                await queueing.cycle()
                cycle.append(time.perf_counter() - t0)
        finally:
            store.close()
    return {"workloads": len(snap.workloads), "decisions": decisions, "runs": runs,
            "snapshot_plus_decision_s": stats(both), "controller_cycle_s": stats(cycle)}


def node_pod_memory(server_pid: int, pods: list[str]) -> Obj | None:
    """Each running node pod's processes beyond its program, read as podcost.py reads them (its cgroup, with
    the supervisor and `unshare` above it; proportional set size); None without pod cgroups (a server not
    run as root)."""
    per_pod = []
    for pod in pods:
        own = [p for p in with_supervisor(pod_processes(pod), server_pid) if comm(p) != PROGRAM]
        if own:
            per_pod.append(sum(pss_kib(p) for p in own) / 1024)
    if not per_pod:
        return None
    return {"pods": len(per_pod), "median": round(statistics.median(per_pod), 1), "max": round(max(per_pod), 1)}


# -- the run -------------------------------------------------------------------------------------------


async def drive(info: server_process.ServerInfo, db: Path, running: int, pending: int, spaces: int,
                samples: int) -> Obj:
    namespaces = [f"bench-{i}" for i in range(spaces)]
    async with api_client(info.kubeconfig) as client:
        client.timeout = httpx.Timeout(60.0)
        await wait_runtime(client)
        await bounded([post(client, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": ns}})
                       for ns in [BASELINE_NS, *namespaces]])
        # What every phase reads: 100 TrainJobs that never run (suspended), in a namespace of their own.
        await submit(client, [(f"{BASELINE_NS}-{i}", BASELINE_NS) for i in range(LISTED)], suspended=True)
        await wait_workloads(client, f"{BASELINE_NS}-", LISTED, None, PENDING_TIMEOUT_S)
        idle = await measure(client, info.pid, samples)

        t0 = time.perf_counter()
        runners = [(f"run-{i}", namespaces[i % spaces]) for i in range(running)]
        await submit(client, runners)
        await wait_ranks_up(client, {name for name, _ in runners})
        t1 = time.perf_counter()
        await submit(client, [(f"wait-{i}", namespaces[i % spaces]) for i in range(pending)])
        await wait_workloads(client, "wait-", pending, "False", PENDING_TIMEOUT_S)
        pending_s = time.perf_counter() - t1
        still_up = len(await items(client, "/api/v1/pods", fieldSelector="status.phase=Running"))
        loaded = await measure(client, info.pid, samples)
        node_pods = [p["metadata"]["name"] for p in await items(
            client, "/api/v1/pods", labelSelector="jobset.sigs.k8s.io/replicatedjob-name=node")]
        memory = node_pod_memory(info.pid, node_pods)
    return {
        "running_jobs": running, "pending_jobs": pending, "namespaces": spaces, "samples": samples,
        "setup_s": {"submit_to_all_ranks_up": round(t1 - t0, 1), "submit_to_all_pending": round(pending_s, 1)},
        "running_pods": still_up,
        "latency_ms": latency_report(idle, loaded),
        "watch_events": {"idle": idle["watch_events"], "loaded": loaded["watch_events"]},
        "server_cpu_percent": {"idle": idle["server_cpu_percent"], "loaded": loaded["server_cpu_percent"]},
        "scheduler": await cycle_bench(db, CYCLE_RUNS),
        "node_pod_memory_mib": memory,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--running", type=int, default=50, help="2-node jobs running at once (default 50)")
    parser.add_argument("--pending", type=int, default=1000, help="jobs waiting for quota behind them (default 1000)")
    parser.add_argument("--namespaces", type=int, default=5, help="namespaces the jobs are spread over (default 5)")
    parser.add_argument("--samples", type=int, default=300, help="timed rounds per phase (default 300)")
    args = parser.parse_args(argv)
    if not positive(args, ("running", "pending", "namespaces", "samples")):
        return 1
    # Quota for exactly the running jobs: every later one waits in its queue (Kueue's pending).
    env = {"MPIJOB_CAPACITY": f"cpu={2 * NODE_CPU * args.running}"}
    t0, cluster, report, left = time.perf_counter(), "", None, []
    load_before = [round(x, 2) for x in os.getloadavg()]  # others' work on the machine moves every figure
    try:  # SIGTERM too: temp_cluster makes it an exit that drains the server and removes the home first
        with temp_cluster("mpijob-bench-load-", env=env, stop_timeout=STOP_TIMEOUT_S) as (home, info):
            cluster = cluster_id(home)
            report = asyncio.run(drive(info, home.db, args.running, args.pending, args.namespaces, args.samples))
            report["sandbox_mode"] = info.sandbox_mode
    except (BenchError, server_process.ServerError, httpx.HTTPError, OSError, sqlite3.Error) as exc:
        print(f"bench/load.py: {type(exc).__name__}: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("bench/load.py: interrupted", file=sys.stderr)
    finally:
        left = marked(cluster) if cluster else []
        for pid in left:  # never leave a pod behind, even when the bench failed
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if left:
            print(f"bench/load.py: killed {len(left)} processes with the cluster marker left after the server "
                  "stopped", file=sys.stderr)
    if report is None or left:
        return 1
    report["load_average"] = {"start": load_before, "end": [round(x, 2) for x in os.getloadavg()]}
    report["total_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
