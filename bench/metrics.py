"""What sampling costs a request, and how often it really samples: p50 latency of one GET with usage
sampling on vs off, each server running the same job; the sampler's real interval; how soon a new
pod's figures are served.

    .venv/bin/python bench/metrics.py               # 20 s of requests (10 sampling intervals)
    .venv/bin/python bench/metrics.py --seconds 60

Two servers with controllers in temporary homes. `on` samples at the default interval
($MPIJOB_METRICS_INTERVAL unset, 2 s), `off` does not sample ($MPIJOB_METRICS_INTERVAL=0). Each runs
the same 4-node TrainJob that sleeps (4 pods whose cgroups `on` reads every interval) for the whole
measurement. The measured request is `GET /api/v1/namespaces/default/pods` with the admin's token,
alternating between the servers over one keep-alive connection each, after a warm-up, back to back
for `--seconds`, so the sampler reads many times while requests are served and both sides share the
machine's noise. Prints one JSON object: p50 and p90 per side in milliseconds, `overhead_p50` (on/off
− 1; issue 13 asks for at most 0.05), `scrape_p50_ms` (a `GET /metrics` on `on`, what a Prometheus
scrape costs), `sampling_window_s` (the PodMetrics `window`: the time between the sampler's last two
readings, polled every half second) and `first_figure_s` (a new job POSTed → its launcher's
`container_memory_working_set_bytes` in `/metrics`). Exits 0 whenever both sides ran; it never judges
the figures.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import ssl
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from clusters import temp_clusters
from surfaces import timed_gets

from mpijob.store import server_process

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
METRICS_API = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"


def _client(info: server_process.ServerInfo) -> httpx.Client:
    config = json.loads(info.kubeconfig.read_text())
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    return httpx.Client(base_url=info.url, verify=ssl.create_default_context(cadata=ca),
                        headers={"Authorization": f"Bearer {config['users'][0]['user']['token']}"}, timeout=60)


def _job(name: str, nodes: int) -> dict:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": "mpi-distributed"},
                     "trainer": {"numNodes": nodes, "command": ["mpirun", "sleep", "600"]}}}


def _running(c: httpx.Client, name: str, pods: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    selector = {"labelSelector": f"jobset.sigs.k8s.io/jobset-name={name}"}
    while time.monotonic() < deadline:
        items = c.get("/api/v1/namespaces/default/pods", params=selector).json()["items"]
        if len(items) == pods and all((p.get("status") or {}).get("phase") == "Running" for p in items):
            return
        time.sleep(0.1)
    raise RuntimeError(f"job {name} did not start within {timeout:.0f}s")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _first_figure(c: httpx.Client) -> float:
    """POST a job; seconds until its launcher's working set is in /metrics."""
    start = time.perf_counter()
    c.post(TRAINER, json=_job("fresh", 2)).raise_for_status()
    while time.perf_counter() - start < 60:
        lines = c.get("/metrics").text.splitlines()
        if any(line.startswith("container_memory_working_set_bytes") and 'pod="fresh-launcher-' in line
               for line in lines):
            return time.perf_counter() - start
        time.sleep(0.05)
    raise RuntimeError("the new job's figures did not appear within 60s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    path = "/api/v1/namespaces/default/pods"
    env = {"on": {}, "off": {"MPIJOB_METRICS_INTERVAL": "0"}}
    try:
        with temp_clusters("mpijob-bench-metrics-", env) as infos, ExitStack() as stack:
            clients = {side: stack.enter_context(_client(infos[side])) for side in infos}
            for c in clients.values():
                c.post(TRAINER, json=_job("sleeper", 4)).raise_for_status()
                _running(c, "sleeper", 4)
            times: dict[str, list[float]] = {"on": [], "off": []}
            scrapes: list[float] = []
            windows: list[float] = []
            for side in ("on", "off"):  # warm-up: connections, caches
                for _ in range(20):
                    clients[side].get(path).raise_for_status()
            end, poll, i = time.monotonic() + args.seconds, 0.0, 0
            while time.monotonic() < end:
                timed_gets(clients, path, i, times)
                i += 1
                if time.monotonic() >= poll:  # not compared with `off`: what a scrape costs, how often it samples
                    poll = time.monotonic() + 0.5
                    start = time.perf_counter()
                    clients["on"].get("/metrics").raise_for_status()
                    scrapes.append((time.perf_counter() - start) * 1000)
                    windows += [float(m["window"].rstrip("s"))
                                for m in clients["on"].get(METRICS_API).json()["items"]]
            first = _first_figure(clients["on"])
    except Exception as exc:  # noqa: BLE001 — the bench reports and fails, never hides it
        print(f"bench/metrics.py: {exc}", file=sys.stderr)
        return 1
    p50 = {side: statistics.median(v) for side, v in times.items()}
    out = {"seconds": args.seconds, "requests_per_side": len(times["on"]), "pods_sampled": 4,
           "sampling_on_p50_ms": round(p50["on"], 3), "sampling_off_p50_ms": round(p50["off"], 3),
           "sampling_on_p90_ms": round(_percentile(times["on"], 0.9), 3),
           "sampling_off_p90_ms": round(_percentile(times["off"], 0.9), 3),
           "overhead_p50": round(p50["on"] / p50["off"] - 1, 4), "target": 0.05,
           "scrape_p50_ms": round(statistics.median(scrapes), 3),
           "sampling_interval_default_s": 2.0,
           "sampling_window_s": {"median": round(statistics.median(windows), 3), "min": round(min(windows), 3),
                                 "max": round(max(windows), 3)} if windows else None,
           "first_figure_s": round(first, 3), "cpus": os.cpu_count()}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
