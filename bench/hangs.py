"""Does any short job hang? Many small jobs per MPI implementation and sandbox mode, under CPU load.

    .venv/bin/python bench/hangs.py [--jobs 300] [--modes namespace,process] [--impls OpenMPI,OpenMPI5,MPICH,Intel]
                                    [--hogs 2] [--at-once 4] [--bound 60]

Each job is `examples/hello.yaml`'s program (every rank prints one line) on 3 nodes, run through the
local cluster's API while `--hogs` busy processes load the CPUs. A job that has not ended `--bound`
seconds after its creation is a hang: what it shows then (its status, its launcher's last lines, the
processes of its pods) is kept in the report, and it is deleted. Prints one JSON object: per mode and
implementation, jobs, completed, failed (with their messages), hangs, wall time and job durations. Never
judges the figures: exit 0 whenever every job ran to an end or a hang, 1 with a message on stderr when
something failed to run.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_cluster
from startup import BenchError
from surfaces import ready_client

from mpijob.api import names
from mpijob.api.trainer import runtimes
from mpijob.store import server_process
from mpijob.store.home import Home

NAMESPACE = "default"
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
TRAINJOBS = f"{TRAINER}/namespaces/{NAMESPACE}/trainjobs"
RUNTIMES = f"{TRAINER}/namespaces/{NAMESPACE}/trainingruntimes"
NODES = 3
POLL_S = 0.2
PROCESS_MODE_IMPLS = (names.OPEN_MPI, names.MPI_MPICH, names.MPI_INTEL)  # the process sandbox refuses Open MPI 5
UNPRIVILEGED = "unprivileged"  # a mode: the process sandbox of a server run by an ordinary user (user namespaces off)
ROOTLESS = "rootless"  # the sandbox such a server picks where user namespaces work
BENCH_USER, BENCH_UID = "mpijob-bench", 23457

Obj = dict[str, Any]


def runtime(impl: str) -> Obj:
    """The bundled `mpi-distributed` as a namespaced TrainingRuntime that names `impl`."""
    rt = copy.deepcopy(runtimes.bundled()[0])
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": f"hang-{impl.lower()}", "namespace": NAMESPACE,
                      "annotations": {names.ANNOTATION_MPI_IMPLEMENTATION: impl}}
    return rt


def trainjob(name: str, impl: str, env: dict[str, str] | None = None) -> Obj:
    rank, size = _rank_variables(impl)
    script = f'echo "rank=${rank} size=${size} node=$(hostname)"'
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"runtimeRef": {"name": runtime(impl)["metadata"]["name"], "kind": "TrainingRuntime"},
                     "trainer": {"numNodes": NODES, "command": ["mpirun", "bash", "-c", script],
                                 "env": [{"name": k, "value": v} for k, v in (env or {}).items()]}}}


def _rank_variables(impl: str) -> tuple[str, str]:
    if impl in (names.OPEN_MPI, names.MPI_OPEN_MPI_5):
        return "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"
    return "PMI_RANK", "PMI_SIZE"


def _hog() -> None:
    while True:
        pass


@contextmanager
def cpu_hogs(count: int) -> Iterator[None]:
    """`count` processes that spin on a CPU each for the length of the block."""
    procs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(count)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.join()


@contextmanager
def unprivileged_cluster(sandbox: str) -> Iterator[server_process.ServerInfo]:
    """A server run by an ordinary user (made if missing), as someone without root runs it, in `sandbox`
    (rootless, or the process sandbox as where user namespaces are off), every pod that user's. An
    interpreter under a 0700 /root (pyenv) is bound back into a tmpfs /root in a mount namespace of the
    server's own."""
    try:
        pwd.getpwnam(BENCH_USER)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/bash", "-u", str(BENCH_UID), BENCH_USER], check=True)
    root = Path(tempfile.mkdtemp(prefix="mpijob-bench-hangs-user-"))
    os.chown(root, BENCH_UID, BENCH_UID)
    home = Home(root / "home")
    prefix, reach = Path(sys.base_prefix), ""
    if prefix.is_relative_to("/root"):
        reach = (f"mkdir -p /run/mpijob-bench-stage && mount --bind /root /run/mpijob-bench-stage && "
                 f"mount -t tmpfs -o mode=0755 tmpfs /root && mkdir -p {prefix} && "
                 f"mount --bind /run/mpijob-bench-stage/{prefix.relative_to('/root')} {prefix} && ")
    mpijob = Path(sys.executable).parent / "mpijob"
    script = (f"{reach}exec setpriv --reuid={BENCH_UID} --regid={BENCH_UID} --clear-groups env -i HOME={root} "
              f"PATH=/usr/bin:/bin MPIJOB_HOME={home.root} MPIJOB_SANDBOX={sandbox} {mpijob} server run")
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while (info := server_process.status(home)) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"the unprivileged server did not start (see {home.server_log})")
            time.sleep(0.1)
        yield info
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def cluster(mode: str) -> Iterator[server_process.ServerInfo]:
    if mode in (UNPRIVILEGED, ROOTLESS):
        with unprivileged_cluster("process" if mode == UNPRIVILEGED else ROOTLESS) as info:
            yield info
        return
    with temp_cluster(f"mpijob-bench-hangs-{mode}-", env={"MPIJOB_SANDBOX": mode}) as (_, info):
        yield info


def _finished(tj: Obj) -> str | None:
    for c in (tj.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None


def _failed_message(tj: Obj) -> str:
    return next((str(c.get("message")) for c in (tj.get("status") or {}).get("conditions") or []
                 if c.get("type") == "Failed"), "")


def _what_it_shows(http: httpx.Client, name: str) -> Obj:
    """A hung job's status, its launcher's last lines and its pods' processes: what explains the hang."""
    tj = http.get(f"{TRAINJOBS}/{name}").json()
    pods = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods",
                    params={"labelSelector": f"{names.LABEL_JOBSET_NAME}={name}"}).json().get("items") or []
    shown: Obj = {"conditions": (tj.get("status") or {}).get("conditions"), "pods": {}}
    for pod in pods:
        pod_name = pod["metadata"]["name"]
        log = http.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod_name}/log", params={"tailLines": 60})
        shown["pods"][pod_name] = {"phase": (pod.get("status") or {}).get("phase"), "log": log.text.splitlines()}
    ps = subprocess.run(["ps", "-eww", "-o", "pid,ppid,stat,etimes,wchan:20,args"], capture_output=True, text=True,
                        check=False)
    shown["processes"] = [ln for ln in ps.stdout.splitlines() if name in ln or "prted" in ln or "orted" in ln
                          or "hydra" in ln][:60]
    return shown


def run_jobs(http: httpx.Client, impl: str, jobs: int, at_once: int, bound: float,
             env: dict[str, str] | None = None) -> Obj:
    """`jobs` jobs of `impl`, `at_once` at a time, each until it ends or `bound` seconds pass."""
    http.delete(f"{RUNTIMES}/{runtime(impl)['metadata']['name']}")
    created = http.post(RUNTIMES, json=runtime(impl))
    if created.status_code != 201:
        raise BenchError(f"TrainingRuntime for {impl}: {created.status_code} {created.text[:500]}")
    started: dict[str, float] = {}
    durations: list[float] = []
    failed: list[Obj] = []
    hung: list[Obj] = []
    made = 0
    wall = time.perf_counter()
    while made < jobs or started:
        while made < jobs and len(started) < at_once:
            name = f"hang-{impl.lower()}-{made}"
            resp = http.post(TRAINJOBS, json=trainjob(name, impl, env))
            if resp.status_code != 201:
                raise BenchError(f"POST {name}: {resp.status_code} {resp.text[:500]}")
            started[name] = time.perf_counter()
            made += 1
        time.sleep(POLL_S)
        listed = {j["metadata"]["name"]: j for j in http.get(TRAINJOBS).json().get("items") or []}
        for name, t0 in list(started.items()):
            tj = listed.get(name, {})
            end = _finished(tj)
            if end is None and time.perf_counter() - t0 < bound:
                continue
            if end is None:
                hung.append({"job": name, "after_s": round(time.perf_counter() - t0, 1), **_what_it_shows(http, name)})
            elif end == "Failed":
                failed.append({"job": name, "message": _failed_message(tj)})
            else:
                durations.append(time.perf_counter() - t0)
            http.delete(f"{TRAINJOBS}/{name}")
            del started[name]
    http.delete(f"{RUNTIMES}/{runtime(impl)['metadata']['name']}")
    return {"jobs": jobs, "completed": len(durations), "failed": len(failed), "hangs": len(hung),
            "wall_s": round(time.perf_counter() - wall, 1),
            "job_s": {"median": round(statistics.median(durations), 2), "max": round(max(durations), 2)}
            if durations else None,
            "failures": failed[:10], "hung": hung[:5]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=300, help="jobs per mode and implementation")
    parser.add_argument("--modes", default=f"namespace,process,{ROOTLESS},{UNPRIVILEGED}",
                        help=f"sandbox modes; {ROOTLESS} and {UNPRIVILEGED}: a server run by an ordinary user, in "
                             "the rootless or the process sandbox")
    parser.add_argument("--impls", default=",".join(names.MPI_IMPLEMENTATIONS))
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2, help="busy processes loading the CPUs")
    parser.add_argument("--at-once", type=int, default=4, help="jobs running at the same time")
    parser.add_argument("--bound", type=float, default=60.0, help="seconds after which a job that has not ended hangs")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="trainer.env of every job (e.g. an MCA verbosity, to see where a hang stops)")
    args = parser.parse_args(argv)
    env = dict(e.split("=", 1) for e in args.env)
    report: Obj = {"jobs_per_case": args.jobs, "hogs": args.hogs, "at_once": args.at_once, "bound_s": args.bound,
                   "cases": {}}
    try:
        with cpu_hogs(args.hogs):
            for mode in args.modes.split(","):
                with cluster(mode) as info, ready_client(info.kubeconfig) as http:
                    for impl in args.impls.split(","):
                        if mode in ("process", UNPRIVILEGED) and impl not in PROCESS_MODE_IMPLS:
                            continue
                        case = run_jobs(http, impl, args.jobs, args.at_once, args.bound, env)
                        report["cases"][f"{mode}/{impl}"] = case
                        print(json.dumps({f"{mode}/{impl}": {k: case[k] for k in
                                                             ("jobs", "completed", "failed", "hangs", "wall_s")}}),
                              file=sys.stderr, flush=True)
    except BenchError as e:
        print(f"bench/hangs.py: {e}", file=sys.stderr)
        return 1
    report["hangs"] = sum(c["hangs"] for c in report["cases"].values())
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
