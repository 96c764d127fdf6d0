"""What the CLI and the Python SDK cost on top of what they wrap: `mpijob` against `kubectl`, the SDK
against a bare `httpx` request, the async client against the sync one — all against one local server.

    .venv/bin/python bench/surfaces.py [--runs N]

Prints one JSON object (see bench/README.md). Never asserts on the figures: exit 0 whenever every
measure ran, exit 1 with a message on stderr when something failed to run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster  # the sibling bench modules
from startup import RUNTIME, TRAINJOBS, BenchError, kubeconfig_access, parse_runs  # the sibling bench module

import mpijob

ROOT = Path(__file__).resolve().parent.parent
MPIJOB = str(ROOT / ".venv" / "bin" / "mpijob")
KUBECTL = "/usr/bin/kubectl"
NAMESPACE = "default"
FINISHED_JOBS = 20
CHATTY_NODES, CHATTY_LINES = 4, 5000
CHATTY_SCRIPT = f'for i in $(seq {CHATTY_LINES}); do echo "rank $OMPI_COMM_WORLD_RANK line $i"; done'
MANY_JOBS = 8
SDK_CALLS_PER_RUN = 10  # sdk_get: in-process calls are ~ms, so each run takes 10 samples per side
BACK_TO_BACK_PER_RUN = 4  # sdk_get.back_to_back: samples per side per run
IDLE_S = 0.05  # sdk_get: pause before each timed call (see README: back-to-back requests)
PYTHON = str(ROOT / ".venv" / "bin" / "python")
POLL_S = 0.05
JOB_TIMEOUT_S = 120.0
PROC_TIMEOUT_S = 60.0

Obj = dict[str, Any]
T = TypeVar("T")


# -- setup: a temporary cluster, raw access, jobs ------------------------------------------------------------


def timed_gets(clients: dict[str, httpx.Client], path: str, turn: int, times: dict[str, list[float]]) -> None:
    """One GET of `path` on every side of an A/B bench, milliseconds appended to `times[side]`; who goes first
    rotates with `turn`, so all sides share the machine's noise. A failed GET raises."""
    sides = list(clients)
    for side in sides[turn % len(sides):] + sides[:turn % len(sides)]:
        start = time.perf_counter()
        resp = clients[side].get(path)
        times[side].append((time.perf_counter() - start) * 1000)
        resp.raise_for_status()


def raw_client(kubeconfig: Path) -> httpx.Client:
    """A bare httpx client from the server's kubeconfig: its CA and bearer token (never printed)."""
    url, ctx, headers = kubeconfig_access(kubeconfig)
    return httpx.Client(base_url=url, verify=ctx, timeout=30.0, headers=headers)


@contextmanager
def ready_client(kubeconfig: Path, timeout: float = 30.0) -> Iterator[httpx.Client]:
    """`raw_client`, once the server serves mpi-distributed: a fresh server installs it just after start."""
    with raw_client(kubeconfig) as http:
        wait_runtime(http, timeout)
        yield http


def trainjob(name: str, nodes: int, script: str) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"runtimeRef": {"name": "mpi-distributed"},
                 "trainer": {"numNodes": nodes, "command": ["mpirun", "bash", "-c", script]}},
    }


def small_job(name: str) -> Obj:
    return trainjob(name, 2, 'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE"')


def wait_runtime(http: httpx.Client, timeout: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if http.get(RUNTIME).status_code == 200:
            return
        time.sleep(0.1)
    raise BenchError("the server never served ClusterTrainingRuntime mpi-distributed")


def create(http: httpx.Client, obj: Obj) -> None:
    resp = http.post(TRAINJOBS, json=obj)
    if resp.status_code != 201:
        raise BenchError(f"POST TrainJob {obj['metadata']['name']} answered {resp.status_code}: {resp.text[:1000]}")


def wait_complete(http: httpx.Client, names: list[str], timeout: float = JOB_TIMEOUT_S) -> None:
    """Until every named TrainJob is Complete (one list per poll); a Failed one is an error."""
    deadline = time.perf_counter() + timeout
    left = set(names)
    while left:
        for job in http.get(TRAINJOBS).json().get("items") or []:
            name = job["metadata"]["name"]
            conditions = {c.get("type"): c for c in (job.get("status") or {}).get("conditions") or []}
            if name in left and conditions.get("Complete", {}).get("status") == "True":
                left.discard(name)
            elif name in left and conditions.get("Failed", {}).get("status") == "True":
                failed = conditions["Failed"]
                raise BenchError(f"TrainJob {name} failed: {failed.get('reason')}: {failed.get('message')}")
        if left and time.perf_counter() > deadline:
            raise BenchError(f"TrainJobs {sorted(left)} did not complete within {timeout:.0f}s")
        if left:
            time.sleep(POLL_S)


def delete_all(http: httpx.Client, names: list[str], timeout: float = 60.0) -> None:
    """Delete TrainJobs and wait until they and their pods are gone, so runs do not overlap."""
    for name in names:
        http.request("DELETE", f"{TRAINJOBS}/{name}", json={"propagationPolicy": "Background"})
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        jobs = {j["metadata"]["name"] for j in http.get(TRAINJOBS).json().get("items") or []}
        pods = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods").json().get("items") or []
        owners = {(p["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name") for p in pods}
        if not (jobs | owners) & set(names):
            return
        time.sleep(POLL_S)
    raise BenchError(f"TrainJobs {names} or their pods were still there {timeout:.0f}s after DELETE")


def run_to_log(http: httpx.Client, prefix: str, spec: Obj, timeout: float = 600.0) -> tuple[str, float]:
    """One TrainJob of `spec`, named `prefix-<random>`, run to Complete and deleted: its launcher's log and
    its submit → Complete seconds."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    t0 = time.perf_counter()
    create(http, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                  "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})
    wait_complete(http, [name], timeout=timeout)
    wall = time.perf_counter() - t0
    log = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{launcher_pod(http, name)}/log").text
    delete_all(http, [name])
    return log, wall


def bare_mpirun(argv: list[str], env: dict[str, str] | None = None) -> tuple[str, float]:
    """`mpirun argv` on this machine, outside the cluster (as root, over loopback): its stdout and seconds."""
    full = {**os.environ, **(env or {}), "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo"}
    t0 = time.perf_counter()
    out = subprocess.run(["mpirun", *argv], env=full, capture_output=True, text=True, timeout=600, check=False)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise BenchError(f"bare mpirun {' '.join(argv[:3])} exited {out.returncode}:\n{out.stderr[-2000:]}")
    return out.stdout, wall


def launcher_pod(http: httpx.Client, name: str) -> str:
    selector = f"jobset.sigs.k8s.io/jobset-name={name},jobset.sigs.k8s.io/replicatedjob-name=launcher"
    items = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params={"labelSelector": selector}).json()["items"]
    if len(items) != 1:
        raise BenchError(f"TrainJob {name} has {len(items)} launcher pods, expected 1")
    return str(items[0]["metadata"]["name"])


def make_chatty(http: httpx.Client, tag: str, attempts: int = 3) -> tuple[str, str, int]:
    """The chatty job, run alone on an idle server, and checked to hold all its lines. Open MPI 4.1's
    mpirun, when its stdout is a pipe whose reader falls behind, can exit 0 with part of the ranks'
    output dropped (reproduced by hand, without mpijob); a busy server reads pod pipes late. Such a
    run is deleted and made again (shown on stderr, counted in `chatty_job.attempts`)."""
    for attempt in range(1, attempts + 1):
        name = f"chatty-{tag}-{attempt}"
        create(http, trainjob(name, CHATTY_NODES, CHATTY_SCRIPT))
        wait_complete(http, [name])
        pod = launcher_pod(http, name)
        log = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/log", params={"container": "node"})
        lines = len(log.raise_for_status().text.splitlines())
        if lines >= CHATTY_NODES * CHATTY_LINES:
            return name, pod, attempt
        print(f"bench/surfaces.py: chatty job {name} completed with {lines} of {CHATTY_NODES * CHATTY_LINES} "
              "launcher log lines (Open MPI dropped output); making it again", file=sys.stderr)
        delete_all(http, [name])
    raise BenchError(f"the chatty job lost launcher log lines in {attempts} attempts out of {attempts}")


# -- timing helpers --------------------------------------------------------------------------------


def stats(values: list[float], digits: int = 3) -> dict[str, float]:
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits)}


def alternate(runs: int, sides: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    """Run every side once per run, rotating who goes first, so all share the machine's noise."""
    names = list(sides)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for i in range(runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            samples[name].append(sides[name]())
    return samples


def recorded(run: Callable[[], T], into: list[T], figure: Callable[[T], float]) -> Callable[[], float]:
    """A side for `alternate` whose runs give more than one figure: each run's whole result is kept in `into`,
    `alternate` gets the one it samples."""
    def once() -> float:
        into.append(run())
        return figure(into[-1])
    return once


def compare(samples: dict[str, list[float]], digits: int = 3, **extra: Any) -> Obj:
    """median/min/max per side, ours − baseline (of the medians, and the median of paired differences)."""
    ours, base = samples["ours"], samples["baseline"]
    out: Obj = {side: stats(values, digits) for side, values in samples.items()}
    out["overhead_s"] = round(statistics.median(ours) - statistics.median(base), digits)
    out["paired_overhead_median_s"] = round(statistics.median(o - b for o, b in zip(ours, base)), digits)
    out["ratio"] = round(statistics.median(ours) / statistics.median(base), 2)
    out.update(extra)
    out["samples_s"] = {side: [round(v, digits) for v in values] for side, values in samples.items()}
    return out


class Proc:
    """Runs one command line, timed from just before spawn to exit (stdout read in full); a non-zero
    exit is a failure to run. Keeps the fewest stdout lines each label printed."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.lines: dict[str, int] = {}
        self.last_stdout = b""

    def run(self, label: str, argv: list[str]) -> float:
        t0 = time.perf_counter()
        try:
            done = subprocess.run(argv, check=False, env=self.env, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=PROC_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise BenchError(f"`{' '.join(argv)}` did not exit within {PROC_TIMEOUT_S:.0f}s") from exc
        took = time.perf_counter() - t0
        if done.returncode != 0:
            raise BenchError(f"`{' '.join(argv)}` exited {done.returncode}: {done.stderr.decode()[-1500:]}")
        lines = done.stdout.count(b"\n")
        self.lines[label] = min(self.lines.get(label, lines), lines)  # the fewest any run printed
        self.last_stdout = done.stdout
        return took

    def side(self, label: str, argv: list[str]) -> Callable[[], float]:
        return lambda: self.run(label, argv)


# -- 1-3: the CLI against kubectl --------------------------------------------------------------------


def cli_measures(runs: int, home: Path, kubeconfig: Path, tmp: Path, chatty: str, done: str,
                 launcher: str) -> Obj:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | {"MPIJOB_HOME": str(home), "NO_COLOR": "1"}
    kubectl = [KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp / "kube-cache")]
    proc = Proc(env)
    proc.run("warm", [*kubectl, "get", "trainjobs", "-o", "json"])  # fills kubectl's discovery cache
    proc.run("warm", [MPIJOB, "get", "trainjobs", "-o", "json"])  # pages in the venv, like kubectl above
    out: Obj = {}

    listed: dict[str, int] = {}

    def get_side(label: str, argv: list[str]) -> Callable[[], float]:
        def run() -> float:
            took = proc.run(f"get.{label}", argv)
            listed[label] = len(json.loads(proc.last_stdout).get("items") or [])
            return took
        return run

    out["cli_startup"] = compare(alternate(runs, {
        "ours": proc.side("startup.ours", [MPIJOB, "--help"]),
        "baseline": proc.side("startup.baseline", [*kubectl, "--help"]),
        "python_bare": proc.side("startup.python_bare", [PYTHON, "-c", "pass"])}))
    out["cli_get"] = compare(alternate(runs, {
        "ours": get_side("ours", [MPIJOB, "get", "trainjobs", "-o", "json"]),
        "baseline": get_side("baseline", [*kubectl, "get", "trainjobs", "-o", "json"])}), items=dict(listed))
    rank2: dict[str, int] = {}

    def rank2_side() -> float:
        took = proc.run("logs.ours_rank2", [MPIJOB, "logs", chatty, "--rank", "2"])
        whole = re.findall(rb"\] rank 2 line (\d+)$", proc.last_stdout, re.MULTILINE)
        rank2.update(whole_lines=len(whole), distinct_line_numbers=len(set(whole)),
                     other_lines=proc.last_stdout.count(b"\n") - len(whole))
        return took

    logs = compare(alternate(runs, {
        "ours": proc.side("logs.ours", [MPIJOB, "logs", chatty]),
        "baseline": proc.side("logs.baseline", [*kubectl, "logs", launcher]),
        "ours_rank2": rank2_side}),
        lines={k: proc.lines[f"logs.{k}"] for k in ("ours", "baseline", "ours_rank2")}, rank2_output=rank2)
    if min(logs["lines"]["ours"], logs["lines"]["baseline"]) < CHATTY_NODES * CHATTY_LINES:
        raise BenchError(f"cli_logs printed too few lines (want ≥ {CHATTY_NODES * CHATTY_LINES}): {logs['lines']}")
    out["cli_logs"] = logs
    out["cli_wait"] = compare(alternate(runs, {
        "ours": proc.side("wait.ours", [MPIJOB, "wait", done, "--for", "Complete"]),
        "baseline": proc.side("wait.baseline", [*kubectl, "wait", "--for=condition=Complete", f"trainjob/{done}"])}))
    return out


# -- 4: the SDK against raw httpx -----------------------------------------------------------------------


def sdk_measures(runs: int, kubeconfig: Path, http: httpx.Client, chatty: str, done: str, launcher: str) -> Obj:
    client = mpijob.Client(kubeconfig=kubeconfig)
    try:
        job_url = f"{TRAINJOBS}/{done}"
        log_url = f"/api/v1/namespaces/{NAMESPACE}/pods/{launcher}/log"
        lines: dict[str, int] = {}

        def sdk_get() -> Any:
            return client.get(done)

        def raw_get() -> Any:
            return http.get(job_url).raise_for_status().json()

        def idle_then(call: Callable[[], Any]) -> Callable[[], float]:
            def run() -> float:
                time.sleep(IDLE_S)
                t0 = time.perf_counter()
                call()
                return time.perf_counter() - t0
            return run

        def twice(call: Callable[[], Any]) -> Callable[[], float]:
            def run() -> float:
                time.sleep(IDLE_S)
                call()
                t0 = time.perf_counter()  # the second of two calls in a row on one connection
                call()
                return time.perf_counter() - t0
            return run

        def sdk_logs() -> float:
            t0 = time.perf_counter()
            lines["ours"] = len(list(client.logs(chatty)))
            return time.perf_counter() - t0

        def raw_logs() -> float:
            t0 = time.perf_counter()
            lines["baseline"] = len(http.get(log_url, params={"container": "node"})
                                    .raise_for_status().text.splitlines())
            return time.perf_counter() - t0

        sdk_get(), raw_get()  # connections opened and TLS handshakes done before timing
        b2b = alternate(runs * BACK_TO_BACK_PER_RUN, {"ours": twice(sdk_get), "baseline": twice(raw_get)})
        get = compare(alternate(runs * SDK_CALLS_PER_RUN, {"ours": idle_then(sdk_get), "baseline": idle_then(raw_get)}),
                      digits=5, calls=runs * SDK_CALLS_PER_RUN,
                      back_to_back={side: stats(v, 5) for side, v in b2b.items()})
        logs = compare(alternate(runs, {"ours": sdk_logs, "baseline": raw_logs}), lines=dict(lines))
        if min(lines.values()) < CHATTY_NODES * CHATTY_LINES:
            raise BenchError(f"sdk_logs returned too few lines (want ≥ {CHATTY_NODES * CHATTY_LINES}): {lines}")
        return {"sdk_get": get, "sdk_logs": logs}
    finally:
        client.close()


# -- 5: many waits, async against sync ---------------------------------------------------------------------


async def _async_many(kubeconfig: Path, names: list[str]) -> tuple[float, int, int]:
    async with mpijob.AsyncClient(kubeconfig=kubeconfig) as client:
        before = threading.active_count()
        peak = [before]
        sampling = True

        async def sample() -> None:
            while sampling:
                peak[0] = max(peak[0], threading.active_count())
                await asyncio.sleep(0.005)

        async def one(name: str) -> None:
            await client.create(small_job(name))
            await client.wait(name, timeout=JOB_TIMEOUT_S)

        sampler = asyncio.create_task(sample())
        t0 = time.perf_counter()
        try:
            await asyncio.gather(*(one(n) for n in names))
            took = time.perf_counter() - t0
        finally:
            sampling = False
            await sampler
        return took, before, peak[0]


def many_measure(runs: int, kubeconfig: Path, http: httpx.Client) -> Obj:
    client = mpijob.Client(kubeconfig=kubeconfig)
    threads: dict[str, list[int]] = {"before": [], "peak": []}

    def batch(tag: str) -> list[str]:
        return [f"many-{tag}-{i}-{uuid.uuid4().hex[:5]}" for i in range(MANY_JOBS)]

    def ours() -> float:
        names = batch("async")
        took, before, peak = asyncio.run(_async_many(kubeconfig, names))
        threads["before"].append(before)
        threads["peak"].append(peak)
        delete_all(http, names)
        return took

    def baseline() -> float:
        names = batch("sync")
        t0 = time.perf_counter()
        for name in names:
            client.create(small_job(name))
        for name in names:
            client.wait(name, timeout=JOB_TIMEOUT_S)
        took = time.perf_counter() - t0
        delete_all(http, names)
        return took

    try:
        return compare(alternate(runs, {"ours": ours, "baseline": baseline}), jobs=MANY_JOBS,
                       async_threads=threads)
    finally:
        client.close()


# -- main ----------------------------------------------------------------------------------------------------


def bench(runs: int, home: Path, kubeconfig: Path, tmp: Path) -> Obj:
    with ready_client(kubeconfig) as http:
        t0 = time.perf_counter()
        tag = uuid.uuid4().hex[:5]
        chatty, launcher, attempts = make_chatty(http, tag)
        names = [f"done-{tag}-{i}" for i in range(FINISHED_JOBS)]
        for name in names:
            create(http, small_job(name))
        wait_complete(http, names)
        setup_s = time.perf_counter() - t0
        result: Obj = {"runs": runs, "finished_jobs": FINISHED_JOBS + 1,
                       "chatty_job": {"nodes": CHATTY_NODES, "lines_per_rank": CHATTY_LINES,
                                      "attempts": attempts}}
        result |= cli_measures(runs, home, kubeconfig, tmp, chatty, names[0], launcher)
        result |= sdk_measures(runs, kubeconfig, http, chatty, names[0], launcher)
        result["async_wait_many"] = many_measure(runs, kubeconfig, http)
        result["setup_s"] = round(setup_s, 2)
        return result


def main(argv: list[str] | None = None) -> int:
    runs = parse_runs(argv, __doc__)
    if runs is None:
        return 1
    t0 = time.perf_counter()
    try:
        with temp_cluster("mpijob-bench-home-") as (home, info):
            result = bench(runs, home.root, info.kubeconfig, home.root.parent)
            result["sandbox_mode"] = info.sandbox_mode
    except Exception as exc:  # noqa: BLE001 — a bench reports what failed to run, it does not judge
        print(f"bench/surfaces.py: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    result["total_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
