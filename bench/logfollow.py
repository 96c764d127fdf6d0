"""What following every pod's log of a large job costs: `mpijob logs -f` and the dashboard's Logs view.

An API-only local cluster (no controllers: the pods are objects, and the bench writes their logs itself,
as each pod's supervisor would) holds one job of `--pods` pods (default 101: 100 nodes and the launcher),
each with a first line. Each side then follows every pod until all have ended:

* **cli**: `mpijob.client.logs.follow_merged` on one `Connection`, as `mpijob logs -f` runs it (the pods
  listed again on every poll, through the same connection);
* **dashboard**: the dashboard's one multiplexed request, `GET /dashboard/api/namespaces/NS/logs`.

For each: the threads and the connections to the server it holds while following, the seconds until every
pod's first line arrived, the seconds until a line written to every pod at once has all arrived (the
worst pod), the server's CPU (% of one core) while the streams idle, and the seconds from every pod's end
to the follow's end. A side that stalls (no line for `--stall` seconds) says so and how far it got.
Prints one JSON object; exits 0 whenever both sides ran, 1 when something failed to run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from clusters import temp_cluster

from mpijob.api import names
from mpijob.api.trainer.mpi_output import RANKS_HEADER
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.logs import follow_merged
from mpijob.store.logs import LogStore

NAMESPACE = "default"
JOB = "bench-follow"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
IDLE_S = 5.0  # how long the server's CPU is sampled while every stream idles


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _socket_inodes() -> set[str]:
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (listdir's own fd among them)
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def _connections(port: int) -> int:
    """This process's TCP connections to `port` (ESTABLISHED), read from /proc."""
    inodes, count = _socket_inodes(), 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            cols = row.split()
            if int(cols[2].rsplit(":", 1)[1], 16) == port and cols[3] == "01" and cols[9] in inodes:
                count += 1
    return count


class Cluster:
    """The bench's pods and their logs on a server without controllers."""

    def __init__(self, logs: Path, info: Any, pods: int) -> None:
        self.info, self.store = info, LogStore(logs)
        self.port = int(info.url.rsplit(":", 1)[1])
        self.http = httpx.Client(base_url=info.url, verify=False, timeout=30,  # noqa: S501 — loopback, a bench
                                 headers={"Authorization": f"Bearer {_token(info.kubeconfig)}"})
        self.names = [f"{JOB}-launcher-0-0-x"] + [f"{JOB}-node-0-{i}-x" for i in range(pods - 1)]

    def create(self) -> None:
        for pod in self.names:
            spec = {"containers": [{"name": names.CONTAINER, "image": "busybox"}]}
            r = self.http.post(PODS, json={"metadata": {"name": pod, "labels": {names.LABEL_JOBSET_NAME: JOB}},
                                           "spec": spec})
            if r.status_code != 201:
                raise RuntimeError(f"creating pod {pod}: {r.status_code} {r.text}")

    def write(self, text: str) -> None:
        for pod in self.names:
            w = self.store.writer(NAMESPACE, pod, names.CONTAINER)
            w.write(f"{pod} {text}\n".encode())
            w.close()

    def end_all(self) -> None:
        status = {"status": {"phase": "Succeeded", "containerStatuses": [{
            "name": names.CONTAINER, "ready": False, "restartCount": 0, "image": "busybox", "imageID": "",
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}
        for pod in self.names:
            self.http.patch(f"{PODS}/{pod}/status", content=json.dumps(status),
                            headers={"Content-Type": "application/merge-patch+json"})

    def delete_all(self) -> None:
        for pod in self.names:
            self.http.delete(f"{PODS}/{pod}")


def _token(kubeconfig: Path) -> str:
    import yaml

    return str(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"])


def cli_lines(cluster: Cluster, ended: threading.Event) -> Iterator[str]:
    with Connection(choose_cluster(str(cluster.info.kubeconfig), None, NAMESPACE, start=False)) as conn:
        def list_pods() -> list[str]:
            return [p["metadata"]["name"] for p in conn.job_pods(JOB)]

        for line in follow_merged(conn, list_pods, ended.is_set, on_error=lambda p, e: print(
                f"cli: stream of {p} ended early: {e}", file=sys.stderr)):
            yield line.text


def dashboard_lines(cluster: Cluster, ended: threading.Event) -> Iterator[str]:
    params = [("pod", p) for p in cluster.names] + [("timestamps", "true")]
    with cluster.http.stream("GET", f"{names.DASHBOARD_API}/namespaces/{NAMESPACE}/logs", params=params,
                             headers={RANKS_HEADER: "true"}, timeout=httpx.Timeout(30, read=None)) as r:
        if r.status_code != 200:
            r.read()
            raise RuntimeError(f"dashboard logs: {r.status_code} {r.text}")
        for raw in r.iter_lines():
            event = json.loads(raw) if raw else {}
            for line in event.get("lines") or []:
                yield line.split(" ", 2)[2]


Side = Callable[[Cluster, threading.Event], Iterator[str]]


def run_side(cluster: Cluster, lines: Side, stall: float) -> dict[str, Any]:
    """Follow every pod; measure as the module says. Each phase waits at most `stall` s for its next line."""
    seen: dict[str, set[str]] = {}
    arrived = threading.Condition()
    ended = threading.Event()
    done = threading.Event()
    failure: list[BaseException] = []
    threads_before = threading.active_count()

    def reader() -> None:
        try:
            for text in lines(cluster, ended):
                pod, _, what = text.partition(" ")
                with arrived:
                    seen.setdefault(what, set()).add(pod)
                    arrived.notify_all()
        except BaseException as exc:  # noqa: BLE001 — reported as the side's result
            failure.append(exc)
        finally:
            done.set()
            with arrived:
                arrived.notify_all()

    def wait_all(what: str) -> float | str:
        t0 = time.monotonic()
        with arrived:
            while len(seen.get(what, ())) < len(cluster.names):
                if done.is_set() or not arrived.wait(stall):
                    return f"stalled: {len(seen.get(what, ()))} of {len(cluster.names)} pods' lines"
        return round(time.monotonic() - t0, 3)

    cluster.write("first")
    start = time.monotonic()
    threading.Thread(target=reader, daemon=True).start()
    first = wait_all("first")
    result: dict[str, Any] = {"first_lines_s": first if isinstance(first, str) else round(time.monotonic() - start, 3)}
    result["threads"] = threading.active_count() - threads_before  # the reading loop (a CLI's main thread) too
    result["connections"] = _connections(cluster.port)
    cpu0, t0 = _cpu_seconds(cluster.info.pid), time.monotonic()
    time.sleep(IDLE_S)
    cpu = (_cpu_seconds(cluster.info.pid) - cpu0) / (time.monotonic() - t0)
    result["server_cpu_idle_percent"] = round(100 * cpu, 1)
    cluster.write("live")
    result["live_line_s"] = wait_all("live")
    cluster.end_all()
    t_end = time.monotonic()
    ended.set()
    finished = done.wait(stall)
    result["end_s"] = round(time.monotonic() - t_end, 3) if finished else f"stalled: still following after {stall} s"
    if failure:
        result["error"] = f"{type(failure[0]).__name__}: {failure[0]}"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=101, help="pods of the job (default 101: 100 nodes + launcher)")
    parser.add_argument("--sides", default="cli,dashboard", help="which sides, comma-separated")
    parser.add_argument("--stall", type=float, default=45.0, help="seconds without progress that count as stalled")
    args = parser.parse_args()
    out: dict[str, Any] = {"pods": args.pods}
    sides = {"cli": cli_lines, "dashboard": dashboard_lines}
    try:
        for side in args.sides.split(","):
            with temp_cluster("mpijob-bench-logfollow-", controllers=False) as (home, info):
                cluster = Cluster(home.logs, info, args.pods)
                cluster.create()
                try:
                    out[side] = run_side(cluster, sides[side], args.stall)
                finally:
                    cluster.delete_all()
                    cluster.http.close()
    except Exception as exc:  # noqa: BLE001 — a bench reports what failed to run and exits 1
        print(f"bench failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(json.dumps(out, indent=2))
        sys.exit(1)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
