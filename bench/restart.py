"""What a pod's supervisor costs: the server's restart → every running pod re-adopted, for 50 running
pods, against the same restart with no job running; and one pod's start → exit through `pods.spawn`
(its supervisor) against a bare `asyncio.create_subprocess_exec`.

    .venv/bin/python bench/restart.py [--runs N]

Prints one JSON object (see bench/README.md). Never asserts on the figures: exit 0 whenever every
measure ran, exit 1 with a message on stderr when something failed to run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import BenchError, parse_runs  # the sibling bench modules
from surfaces import create, delete_all, raw_client, ready_client, trainjob

from mpijob.controllers.kubelet import pods
from mpijob.store import server_process
from mpijob.store.home import Home
from mpijob.store.logs import LogStore

JOBS, NODES = 25, 2
SCRIPT = 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 600'
NAMESPACE = "default"
EVENT_REASON = "ControlPlaneRestarted"
SPAWNS = 50
SUPERVISOR_TARGET_MS = 50.0
POLL_S = 0.05
UP_TIMEOUT_S = 300.0
ADOPT_TIMEOUT_S = 120.0

Obj = dict[str, Any]


# -- the cluster -------------------------------------------------------------------------------------


def cluster_id(home: Home) -> str:
    """The marker every pod and supervisor of this home carries (`MPIJOB_CLUSTER`, `Manager.cluster_id`)."""
    return hashlib.sha256(str(home.root).encode()).hexdigest()[:16]


def marked(cluster: str) -> list[int]:
    """Pids of the processes carrying this cluster's marker."""
    marker, found = f"MPIJOB_CLUSTER={cluster}".encode(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def supervisors_pss(server_pid: int) -> tuple[int, float]:
    """How many supervisors run (`shim.py`: one per pod, one more per launcher's sshd; forked by the
    server's fork server, which is not counted), and their proportional set size in MB: a forked
    supervisor shares its pages with the fork server until it writes them, so its RSS would count them
    once per supervisor."""
    kb = count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"kubelet.shim" not in (entry / "cmdline").read_bytes():
                continue
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            if ppid in (server_pid, os.getpid()):
                continue  # a fork server: the server's, or this bench's own (part 1)
            count += 1
            kb += next(int(line.split()[1]) for line in (entry / "smaps_rollup").read_text().splitlines()
                       if line.startswith("Pss:"))
        except (OSError, StopIteration, ValueError):
            continue
    return count, kb / 1024


def kill_server(info: server_process.ServerInfo) -> None:
    """kill -9, and reap it (our child: `server_process.start`) so it is really gone."""
    os.kill(info.pid, signal.SIGKILL)
    try:
        os.waitpid(info.pid, 0)
    except ChildProcessError:
        pass


def timed_start(home: Home) -> tuple[server_process.ServerInfo, float]:
    t0 = time.perf_counter()
    info = server_process.start(home, timeout=120)
    return info, time.perf_counter() - t0


def launcher_logs(http: httpx.Client) -> dict[str, str]:
    """Each job's launcher log, by job name."""
    items = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods",
                     params={"labelSelector": "jobset.sigs.k8s.io/replicatedjob-name=launcher"}).json()["items"]
    out = {}
    for pod in items:
        job = pod["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"]
        resp = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}/log",
                        params={"container": "node"})
        out[job] = resp.text if resp.status_code == 200 else ""
    return out


def wait_all_up(http: httpx.Client, names: list[str]) -> float:
    """Until every launcher log shows both ranks up; a job that ends or fails meanwhile is an error."""
    t0, left = time.perf_counter(), set(names)
    while left:
        logs = launcher_logs(http)
        left = {n for n in left if not all(f"rank {r} up" in logs.get(n, "") for r in range(NODES))}
        if left and time.perf_counter() - t0 > UP_TIMEOUT_S:
            raise BenchError(f"{len(left)} jobs never had both ranks up within {UP_TIMEOUT_S:.0f}s: {sorted(left)[:5]}")
        if left:
            time.sleep(0.5)
    return time.perf_counter() - t0


def job_pods_running(http: httpx.Client, names: list[str]) -> dict[str, int]:
    """How many pods of each named job are Running."""
    items = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods").json().get("items") or []
    out = dict.fromkeys(names, 0)
    for pod in items:
        job = (pod["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name")
        if job in out and (pod.get("status") or {}).get("phase") == "Running":
            out[job] += 1
    return out


def restart_events(http: httpx.Client) -> dict[str, tuple[Any, ...]]:
    """Per TrainJob, what its ControlPlaneRestarted Events say (name, count, last time): a new restart changes it."""
    items = http.get(f"/api/v1/namespaces/{NAMESPACE}/events").json().get("items") or []
    out: dict[str, list[Any]] = {}
    for e in items:
        if e.get("reason") == EVENT_REASON and e.get("involvedObject", {}).get("kind") == "TrainJob":
            out.setdefault(e["involvedObject"]["name"], []).append(
                (e["metadata"]["name"], e.get("count") or 1, e.get("lastTimestamp") or e.get("eventTime") or ""))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def wait_readopted(http: httpx.Client, names: list[str], before: dict[str, tuple[Any, ...]], pods_per_job: int,
                   t0: float) -> float:
    """Until every job has a new ControlPlaneRestarted Event and all its pods Running: seconds since `t0`."""
    left = set(names)
    while True:
        events = restart_events(http)
        noted = {n for n in left if events.get(n) and events.get(n) != before.get(n)}
        if noted:
            running = job_pods_running(http, sorted(noted))
            left -= {n for n in noted if running[n] == pods_per_job}
        if not left:
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > ADOPT_TIMEOUT_S:
            raise BenchError(f"{len(left)} jobs were not re-adopted within {ADOPT_TIMEOUT_S:.0f}s: {sorted(left)[:5]}")
        time.sleep(POLL_S)


def bench_restart(runs: int) -> Obj:
    tmp = tempfile.TemporaryDirectory(prefix="mpijob-bench-restart-")
    home = Home(Path(tmp.name)).ensure()
    cluster = cluster_id(home)
    names = [f"restart-{i:02d}" for i in range(JOBS)]
    idle: list[float] = []
    busy_ready: list[float] = []
    busy_adopted: list[float] = []
    out: Obj = {}
    try:
        info, _ = timed_start(home)
        with ready_client(info.kubeconfig):
            pass  # up, and serving mpi-distributed, before the first kill
        for _ in range(runs):  # the baseline: the same kill -9 and start, no job running
            kill_server(info)
            info, took = timed_start(home)
            idle.append(took)
        with ready_client(info.kubeconfig) as http:
            t0 = time.perf_counter()
            for name in names:
                create(http, trainjob(name, NODES, SCRIPT))
            out["all_up_s"] = round(wait_all_up(http, names), 2)
            out["submit_to_all_up_s"] = round(time.perf_counter() - t0, 2)
            counts = job_pods_running(http, names)
            pods_per_job = max(counts.values())
            if any(c != pods_per_job for c in counts.values()):
                raise BenchError(f"jobs run unequal numbers of pods: {counts}")
            before = restart_events(http)
        out["pods"] = pods_per_job * JOBS
        processes = sorted(marked(cluster))
        out["marked_processes_running"] = len(processes)
        shims, pss = supervisors_pss(info.pid)
        out["supervisors"] = shims
        out["supervisor_pss_mb"] = {"total": round(pss), "per_supervisor": round(pss / max(shims, 1), 1)}
        for _ in range(runs):
            kill_server(info)
            t0 = time.perf_counter()
            info = server_process.start(home, timeout=120)
            busy_ready.append(time.perf_counter() - t0)
            with raw_client(info.kubeconfig) as http:
                busy_adopted.append(wait_readopted(http, names, before, pods_per_job, t0))
                before = restart_events(http)
            if (now := sorted(marked(cluster))) != processes:  # the very same processes ran on
                raise BenchError(f"the jobs' processes changed across a restart: {len(processes)} before, "
                                 f"{len(now)} after, {len(set(processes) - set(now))} of them gone")
        noted = {n: sum(count for _, count, _ in before.get(n, ())) for n in names}
        if any(v != runs for v in noted.values()):
            raise BenchError(f"expected {runs} {EVENT_REASON} per job (Event count), found {noted}")
        with raw_client(info.kubeconfig) as http:
            delete_all(http, names, timeout=120)
    finally:
        server_process.stop(home, drain=True)
        left = marked(cluster)
        if left:
            print(f"bench/restart.py: killing {len(left)} processes with the cluster marker left after the "
                  "server stopped", file=sys.stderr)
        for pid in left:  # never leave a pod behind, even when the bench failed
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        tmp.cleanup()
    if left:
        raise BenchError(f"{len(left)} processes with the cluster marker were left after the server stopped "
                         f"(killed now): pids {left[:10]}")
    med = statistics.median
    pods_n = out["pods"]
    return {
        "jobs": JOBS, **out,
        "idle_start_s": _stats(idle),
        "restart_ready_s": _stats(busy_ready),
        "restart_all_readopted_s": _stats(busy_adopted),
        "extra_s": {"ready": round(med(busy_ready) - med(idle), 3),
                    "all_readopted": round(med(busy_adopted) - med(idle), 3)},
        "extra_ms_per_pod": {"ready": round((med(busy_ready) - med(idle)) * 1000 / pods_n, 1),
                             "all_readopted": round((med(busy_adopted) - med(idle)) * 1000 / pods_n, 1)},
        "leftover_marked_processes": len(left),
        "samples_s": {"idle_start": _r(idle), "restart_ready": _r(busy_ready),
                      "restart_all_readopted": _r(busy_adopted)},
    }


# -- one pod's supervisor ---------------------------------------------------------------------------


async def spawn_once(logs: LogStore, root: Path, i: int) -> float:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    t0 = time.perf_counter()
    proc = await pods.spawn(logs, "bench", f"pod-{i}", ["true"], env, root / "state" / f"pod-{i}")
    done = await proc.wait()
    took = time.perf_counter() - t0
    if not done.ok:
        raise BenchError(f"`true` under a supervisor exited {done.code}")
    return took


async def bare_once() -> float:
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec("true", stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    code = await proc.wait()
    took = time.perf_counter() - t0
    if code != 0:
        raise BenchError(f"bare `true` exited {code}")
    return took


async def supervisor_cost() -> Obj:
    """Alternate the two sides, one pod at a time, so both share the machine's noise."""
    shim_s, bare_s = [], []
    with tempfile.TemporaryDirectory(prefix="mpijob-bench-spawn-") as tmp:
        root = Path(tmp)
        logs = LogStore(root / "logs")
        for i in range(SPAWNS):
            if i % 2 == 0:
                shim_s.append(await spawn_once(logs, root, i))
                bare_s.append(await bare_once())
            else:
                bare_s.append(await bare_once())
                shim_s.append(await spawn_once(logs, root, i))
    shim_ms, bare_ms = _ms(shim_s), _ms(bare_s)
    extra = round(statistics.median(shim_ms) - statistics.median(bare_ms), 1)
    return {
        "pods": SPAWNS,
        "supervised_ms": _pct(shim_ms),
        "bare_ms": _pct(bare_ms),
        "extra_ms_per_pod": {"median": extra, "p90": round(_p90(shim_ms) - _p90(bare_ms), 1)},
        "target_ms": SUPERVISOR_TARGET_MS,
        "meets_target": extra <= SUPERVISOR_TARGET_MS,
    }


# -- figures -----------------------------------------------------------------------------------------


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


def _r(values: list[float]) -> list[float]:
    return [round(v, 3) for v in values]


def _ms(values: list[float]) -> list[float]:
    return [v * 1000 for v in values]


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def _pct(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "p90": round(_p90(values), 1),
            "min": round(min(values), 1), "max": round(max(values), 1)}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    runs = parse_runs(argv if any(a.startswith("--runs") for a in argv) else [*argv, "--runs", "3"], __doc__)
    if runs is None:
        return 1
    try:
        result = {"supervisor": asyncio.run(supervisor_cost()), "restart": {"runs": runs, **bench_restart(runs)}}
    except (BenchError, server_process.ServerError, httpx.HTTPError, OSError) as exc:
        print(f"bench/restart.py: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
