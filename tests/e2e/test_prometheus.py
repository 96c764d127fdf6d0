"""Debian's real Prometheus scrapes a real server over TLS with a bearer token (a user bound to the
`metrics-reader` ClusterRole, as a Prometheus would be), after a known sequence of jobs: two complete,
one fails, a low-priority job is preempted by a high-priority one and then waits. Its query API must
give the counts, the failure's reason, the preemption and the wait; every PromQL expression of the
Grafana dashboard (deploy/grafana/mpijob.json) must return data and name only metrics the server
exports; `kubectl top` and `mpijob top` show the running job's pods.

Prometheus is installed by `make setup` (the Makefile's Debian packages); this module installs nothing.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from mpijob.controllers.metrics.gpus import Nvml
from prometheus_client.parser import text_string_to_metric_families

from support import (
    REPO,
    TRAINER,
    condition,
    create,
    get_trainjob,
    https_client,
    job_pods,
    kubectl_runner,
    trainjob,
    wait_finished,
    wait_for,
)

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
PROMETHEUS = "/usr/bin/prometheus"
MPIJOB = str(Path(sys.executable).parent / "mpijob")
DASHBOARD = REPO / "deploy" / "grafana" / "mpijob.json"
Query = Callable[[str], list[dict[str, Any]]]


def gpu_job(name: str, gpus: int, command: str, priority: str | None = None) -> dict:
    job = trainjob(name, ["mpirun", "bash", "-c", command], num_nodes=2)
    job["spec"]["trainer"]["resourcesPerNode"] = {"limits": {GPU: gpus}}
    job["spec"]["trainer"]["numProcPerNode"] = 1
    if priority:
        job["metadata"]["labels"] = {"kueue.x-k8s.io/priority-class": priority}
    return job


def workload(c: httpx.Client, job: str) -> dict:
    items = c.get(f"{KUEUE}/namespaces/default/workloads").json()["items"]
    return next(w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job)


@pytest.fixture(scope="module")
def cluster(servers: Any) -> Iterator[dict[str, Any]]:
    """The server, and the sequence: m-ok-1 and m-ok-2 complete, m-fail fails, m-victim (low priority,
    every GPU) is preempted by m-vip (high priority, every GPU), which keeps running while m-victim waits."""
    info = servers.start("prometheus", env={"MPIJOB_CAPACITY": f"{GPU}=4,cpu=8,memory=16Gi",
                                            "MPIJOB_METRICS_INTERVAL": "0.5"})
    with https_client(info.kubeconfig) as c:
        for name, value in (("m-low", 10), ("m-high", 1000)):
            r = c.post(f"{KUEUE}/workloadpriorityclasses", json={
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": name}, "value": value})
            assert r.status_code == 201, r.text
        cq = c.get(f"{KUEUE}/clusterqueues/cluster-queue").json()
        cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
        assert c.put(f"{KUEUE}/clusterqueues/cluster-queue", json=cq).status_code == 200
        for name in ("m-ok-1", "m-ok-2"):
            create(c, trainjob(name, ["mpirun", "bash", "-c", "echo rank $OMPI_COMM_WORLD_RANK"]))
        create(c, trainjob("m-fail", ["mpirun", "bash", "-c", "echo starting; exit 3"]))
        for name in ("m-ok-1", "m-ok-2", "m-fail"):
            wait_finished(c, name)
        create(c, gpu_job("m-victim", 2, "sleep 300", priority="m-low"))
        wait_for(lambda: len(job_pods(c, "m-victim")) == 2 or None, "m-victim running")
        create(c, gpu_job("m-vip", 2, "echo vip; sleep 300", priority="m-high"))
        wait_for(lambda: condition(workload(c, "m-victim"), "Preempted"), "m-victim preempted")
        wait_for(lambda: (condition(workload(c, "m-vip"), "Admitted") and len(job_pods(c, "m-vip")) == 2
                 and not job_pods(c, "m-victim")) or None, "m-vip running, m-victim's pods gone", timeout=60)
        failed = condition(get_trainjob(c, "m-fail"), "Failed")
        assert failed is not None
        yield {"info": info, "api": c, "failed_reason": failed["reason"]}
        for name in ("m-vip", "m-victim"):
            c.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def prometheus(cluster: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Query]:
    """Debian's Prometheus scraping the server every second as user `prometheus`, bound to metrics-reader."""
    if not Path(PROMETHEUS).exists():
        pytest.fail(f"{PROMETHEUS} is missing: run `make setup`, which installs Debian's prometheus package")
    c, info = cluster["api"], cluster["info"]
    made = c.post("/apis/mpijob.io/v1alpha1/users", json={"metadata": {"name": "prometheus"}})
    assert made.status_code == 201, made.text
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "prometheus-metrics"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
               "subjects": [{"kind": "User", "name": "prometheus", "apiGroup": "rbac.authorization.k8s.io"}]}
    assert c.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json=binding).status_code == 201
    tmp = tmp_path_factory.mktemp("prometheus")
    (tmp / "token").write_text(made.json()["status"]["token"])
    config = yaml.safe_load(info.kubeconfig.read_text())
    (tmp / "ca.pem").write_bytes(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
    target = info.url.removeprefix("https://")
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "mpijob", "scheme": "https", "metrics_path": "/metrics",
                            "authorization": {"type": "Bearer", "credentials_file": str(tmp / "token")},
                            "tls_config": {"ca_file": str(tmp / "ca.pem")},
                            "static_configs": [{"targets": [target]}]}],
    }))
    port = _free_port()
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    web = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def query(expr: str) -> list[dict[str, Any]]:
        answer = web.get("/api/v1/query", params={"query": expr}).json()
        assert answer["status"] == "success", (expr, answer)
        return list(answer["data"]["result"])

    try:
        wait_for(lambda: _ready(web), "Prometheus ready", timeout=60, interval=0.2)
        # five scrapes in: enough points for the dashboard's rates and increases over 30s windows
        wait_for(lambda: query('count_over_time(up{job="mpijob"}[1m]) >= 5 and up{job="mpijob"} == 1'),
                 "Prometheus scraping the server five times", timeout=30, interval=0.5)
        yield query
    finally:
        web.close()
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _ready(web: httpx.Client) -> bool:
    try:
        return web.get("/-/ready").status_code == 200
    except httpx.TransportError:
        return False


def value(query: Query, expr: str) -> float | None:
    """The single value of `expr` (None when it has no result)."""
    found = query(expr)
    assert len(found) <= 1, (expr, found)
    return float(found[0]["value"][1]) if found else None


def settles(query: Query, expr: str, want: float, timeout: float = 20) -> float | None:
    """`expr`'s value once it equals `want` (Prometheus scrapes every second), else the last one seen."""
    deadline = time.monotonic() + timeout
    while (seen := value(query, expr)) != want and time.monotonic() < deadline:
        time.sleep(0.5)
    return seen


def test_prometheus_sees_the_sequence_of_jobs(cluster: dict[str, Any], prometheus: Query) -> None:
    q = prometheus
    assert settles(q, 'sum(kubeflow_trainer_trainjobs_created_total{namespace="default"})', 5) == 5
    assert settles(q, 'sum(kubeflow_trainer_trainjobs_completed_total{runtime="mpi-distributed"})', 2) == 2
    reason = cluster["failed_reason"]
    assert settles(q, f'kubeflow_trainer_trainjobs_failed_total{{namespace="default",reason="{reason}"}}', 1) == 1
    # Kueue's counters: five admissions (m-victim's before it was preempted), one preemption in the queue
    assert settles(q, 'sum(kueue_admitted_workloads_total{cluster_queue="cluster-queue"})', 5) == 5
    assert settles(q, 'kueue_preempted_workloads_total{preempting_cluster_queue="cluster-queue",'
                      'reason="InClusterQueue"}', 1) == 1
    assert settles(q, 'kueue_evicted_workloads_total{cluster_queue="cluster-queue",reason="Preempted",'
                      'priority_class="m-low"}', 1) == 1
    # ... and the gauges: m-victim waits, m-vip holds every GPU
    assert settles(q, 'sum(kueue_pending_workloads{cluster_queue="cluster-queue"})', 1) == 1
    assert settles(q, 'sum(kueue_local_queue_pending_workloads{namespace="default",name="user-queue"})', 1) == 1
    assert settles(q, 'kueue_admitted_active_workloads{cluster_queue="cluster-queue"}', 1) == 1
    gpu = 'cluster_queue="cluster-queue",resource="nvidia.com/gpu"'
    assert settles(q, f"kueue_cluster_queue_nominal_quota{{{gpu}}}", 4) == 4
    assert settles(q, f"kueue_cluster_queue_resource_usage{{{gpu}}}", 4) == 4
    assert settles(q, 'sum(kube_pod_container_resource_requests{resource="nvidia_com_gpu"})', 4) == 4
    assert value(q, 'kube_node_status_capacity{resource="nvidia_com_gpu"}') == 4
    # the phases of the three finished jobs' starts, and their runs
    assert settles(q, 'sum(mpijob_trainjob_startup_phase_seconds_count{phase="first_output"})', 3) == 3
    assert settles(q, 'sum(mpijob_trainjob_run_seconds_count{outcome="Failed"})', 1) == 1
    assert settles(q, 'sum(kubeflow_trainer_trainjob_duration_seconds_count{result="Failed"})', 1) == 1
    assert settles(q, 'sum(mpijob_trainjob_admission_wait_seconds_count)', 3) == 3
    # what the running job's pods use, from their cgroups
    assert settles(q, 'count(container_memory_working_set_bytes{namespace="default",pod=~"m-vip-.+"} > 0)', 2) == 2
    assert settles(q, 'count(container_cpu_usage_seconds_total{pod=~"m-vip-.+"})', 2) == 2
    assert (value(q, "sum(node_memory_working_set_bytes)") or 0) > 0


# -- the dashboard ---------------------------------------------------------------------------------------

# Grafana's variables, as the dashboard would resolve them against this server
VARIABLES = {"$__rate_interval": "30s", "$__range": "1h", "$cluster_queue": "cluster-queue",
             "$namespace": "default", "$job": "m-vip"}
# PromQL's words, which are not metric names
PROMQL_WORDS = frozenset({
    "sum", "avg", "min", "max", "count", "topk", "bottomk", "by", "without", "on", "ignoring", "group_left",
    "group_right", "rate", "irate", "increase", "histogram_quantile", "and", "or", "unless", "bool", "offset",
    "label_values"})


def expressions(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable, variables substituted; a
    variable's `label_values(<selector>, label)` is checked as its selector."""
    out = []
    for panel in dashboard["panels"]:
        out += [(f"panel {panel['title']!r} {t['refId']}", t["expr"]) for t in panel.get("targets") or []]
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((.+),\s*\w+\)", var["query"])
            assert m, var["query"]
            out.append((f"variable {var['name']}", m.group(1)))
    for name, replacement in sorted(VARIABLES.items(), key=lambda kv: -len(kv[0])):
        out = [(where, expr.replace(name, replacement)) for where, expr in out]
    return out


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: its identifiers once strings, label matchers,
    ranges and grouping clauses are gone, less PromQL's own words."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    return {w for w in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text) if w not in PROMQL_WORDS}


def test_the_metric_name_reader_finds_what_a_query_selects() -> None:
    expr = ('histogram_quantile(0.95, sum by (le, cluster_queue) (rate(kueue_admission_wait_time_seconds_bucket'
            '{cluster_queue=~"a|b"}[5m]))) / on (x) group_left kube_node_status_capacity')
    assert metric_names(expr) == {"kueue_admission_wait_time_seconds_bucket", "kube_node_status_capacity"}


def test_every_dashboard_expression_returns_data_and_names_exported_metrics(
        cluster: dict[str, Any], prometheus: Query) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exposition = cluster["api"].get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(exposition)}
    exported = {s.name for f in families.values() for s in f.samples} | set(families)
    declared = set(re.findall(r"^# TYPE (\S+)", exposition, re.M))
    # On a machine without NVIDIA GPUs NVML cannot start (there is no GPU here, so the GPU families
    # are declared and empty): their panels must then be empty too, and are checked for that instead.
    no_gpus = Nvml.open() is None
    found = expressions(dashboard)
    assert len(found) >= 25, found
    unknown, empty = [], []
    for where, expr in found:
        gpu = any(name.startswith("DCGM_FI_DEV_") for name in metric_names(expr))
        for name in metric_names(expr):
            if name not in exported and not (gpu and no_gpus and name in declared):
                unknown.append(f"{where}: {name} in {expr}")
        result = prometheus(expr)
        if gpu and no_gpus:
            assert result == [], (where, result)
        elif not result:
            empty.append(f"{where}: {expr}")
    assert not unknown, "the dashboard names metrics the server does not export:\n" + "\n".join(unknown)
    assert not empty, "dashboard expressions that return nothing:\n" + "\n".join(empty)


# -- kubectl top, mpijob top --------------------------------------------------------------------------------


def test_kubectl_top_pods_and_nodes(cluster: dict[str, Any], tmp_path: Path) -> None:
    kubectl = kubectl_runner(cluster["info"].kubeconfig, tmp_path)
    pods = {p["metadata"]["name"] for p in job_pods(cluster["api"], "m-vip")}
    out = wait_for(lambda: (r := kubectl("top", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=m-vip", check=False))
                   .returncode == 0 and r.stdout, "kubectl top pods", timeout=20, interval=0.5)
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"], out
    assert {line.split()[0] for line in lines[1:]} == pods, out
    assert all(re.fullmatch(r"\d+m", line.split()[1]) and re.fullmatch(r"\d+Mi", line.split()[2])
               for line in lines[1:]), out
    nodes = kubectl("top", "nodes").stdout.splitlines()
    assert nodes[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"], nodes
    name = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout
    row = nodes[1].split()
    assert row[0] == name and row[2].endswith("%") and row[4].endswith("%"), nodes  # % of the Node's allocatable
    assert "Ready" in kubectl("get", "nodes").stdout


def test_mpijob_top_shows_the_jobs_pods(cluster: dict[str, Any]) -> None:
    pods = {p["metadata"]["name"] for p in job_pods(cluster["api"], "m-vip")}
    argv = [MPIJOB, "--kubeconfig", str(cluster["info"].kubeconfig), "top", "m-vip"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["POD", "ROLE", "CPU(cores)", "MEMORY(bytes)", "GPUS", "GPU-UTIL", "GPU-MEMORY"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == pods, r.stdout
    assert {row[1] for row in rows.values()} == {"launcher", "node"}
    assert all(re.fullmatch(r"\d+m", row[2]) and re.fullmatch(r"\d+Mi", row[3]) for row in rows.values())
    assert all(row[4] == "<none>" for row in rows.values()), r.stdout  # no NVML on this machine: no GPU figures
    missing = subprocess.run([*argv[:-1], "no-such-job"], capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "not found" in missing.stderr
