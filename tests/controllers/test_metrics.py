"""The metrics of one server, on real parts without a server: the queueing controller moving Kueue's
counters on a real store, the queue gauges from its snapshot, the sampler reading a real pod cgroup,
and GPUs mapped to pods through their CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mpijob.api import Obj
from mpijob.api.core import resources as r
from mpijob.api.kueue.snapshot import ClusterQueue
from mpijob.controllers.kubelet.cgroups import PodCgroup
from mpijob.controllers.kueue.queueing import Queueing
from mpijob.controllers.metrics.gpus import Nvml, owners
from mpijob.controllers.metrics.kueue import KueueMetrics, QueueCollector, exponential_buckets, pending_status
from mpijob.controllers.metrics.usage import RunningPod, Sampler, UsageCollector
from mpijob.store.objects import Store
from prometheus_client import CollectorRegistry

ROLE = {"replica_role": "standalone"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "objects.db")
    s.create(r.RESOURCE_FLAVORS, {"metadata": {"name": "f"}, "spec": {}})
    s.create(r.CLUSTER_QUEUES, {"metadata": {"name": "team"}, "spec": {
        "namespaceSelector": {}, "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [
            {"name": "cpu", "nominalQuota": "4"}]}]}]}})
    s.create(r.LOCAL_QUEUES, {"metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "team"}})
    yield s
    s.close()


def _workload(store: Store, name: str, priority: int, cpu: str, priority_class: str = "") -> None:
    spec: Obj = {"queueName": "lq", "active": True, "priority": priority, "podSets": [
        {"name": "node", "count": 2, "template": {"spec": {"containers": [
            {"name": "node", "resources": {"requests": {"cpu": cpu}}}]}}}]}
    if priority_class:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": priority_class}
    store.create(r.WORKLOADS, {"metadata": {"name": name, "namespace": "default"}, "spec": spec})


def _cycle(store: Store, metrics: KueueMetrics) -> None:
    async def evict(_: Obj, __: str) -> None:
        return None

    asyncio.run(Queueing(store, evict, metrics).cycle())


def test_admissions_preemptions_and_the_queue_gauges_in_kueues_words(store: Store) -> None:
    registry = CollectorRegistry()
    metrics = KueueMetrics(registry)
    registry.register(QueueCollector(store))
    _workload(store, "low", 0, "2", "low")
    _cycle(store, metrics)
    admitted = {"cluster_queue": "team", "priority_class": "low", **ROLE}
    assert registry.get_sample_value("kueue_admitted_workloads_total", admitted) == 1
    assert registry.get_sample_value("kueue_admission_wait_time_seconds_count", admitted) == 1
    assert registry.get_sample_value("kueue_local_queue_admitted_workloads_total",
                                     {"name": "lq", "namespace": "default", "priority_class": "low", **ROLE}) == 1
    usage = {"cohort": "", "cluster_queue": "team", "flavor": "f", "resource": "cpu", **ROLE}
    assert registry.get_sample_value("kueue_cluster_queue_resource_usage", usage) == 4  # cores, as Kueue reports
    assert registry.get_sample_value("kueue_cluster_queue_nominal_quota", usage) == 4
    assert registry.get_sample_value("kueue_admitted_active_workloads", {"cluster_queue": "team", **ROLE}) == 1
    _workload(store, "high", 100, "2")
    _cycle(store, metrics)  # evicts low, which then waits; high is admitted once low is gone
    assert registry.get_sample_value("kueue_preempted_workloads_total", {
        "preempting_cluster_queue": "team", "reason": "InClusterQueue", **ROLE}) == 1
    assert registry.get_sample_value("kueue_evicted_workloads_total", {
        "cluster_queue": "team", "reason": "Preempted", "underlying_cause": "", "priority_class": "low", **ROLE}) == 1
    _cycle(store, metrics)
    pending = {"cluster_queue": "team", **ROLE}
    assert registry.get_sample_value("kueue_pending_workloads", {**pending, "status": "inadmissible"}) == 1
    assert registry.get_sample_value("kueue_pending_workloads", {**pending, "status": "active"}) == 0
    assert registry.get_sample_value("kueue_local_queue_pending_workloads", {
        "name": "lq", "namespace": "default", "status": "inadmissible", **ROLE}) == 1
    assert registry.get_sample_value("kueue_admitted_workloads_total", {
        "cluster_queue": "team", "priority_class": "", **ROLE}) == 1
    assert registry.get_sample_value("kueue_cluster_queue_weighted_share", {
        "cluster_queue": "team", "cohort": "", **ROLE}) == 0  # no cohort: never borrowing
    assert registry.get_sample_value("kueue_cluster_queue_borrowing_limit", usage) == float("inf")


def test_a_pending_workload_is_inadmissible_once_an_attempt_failed_in_best_effort_fifo() -> None:
    def wl(reason: str | None) -> Obj:
        conditions = [{"type": "QuotaReserved", "status": "False", "reason": reason}] if reason else []
        return {"status": {"conditions": conditions}}

    best, strict = ClusterQueue("a", ()), ClusterQueue("b", (), strategy="StrictFIFO")
    assert pending_status(wl(None), best, True) == "active"  # not tried yet
    assert pending_status(wl("WaitingForQuota"), best, True) == "inadmissible"
    assert pending_status(wl("WaitingForPreemptedWorkloads"), best, True) == "active"  # it fits once they go
    assert pending_status(wl("WaitingForQuota"), strict, True) == "active"  # StrictFIFO keeps its head
    assert pending_status(wl(None), best, False) == "inadmissible"  # the queue cannot admit
    assert pending_status(wl(None), None, True) == "inadmissible"  # no such ClusterQueue
    assert exponential_buckets(4) == [1.0, 2.5, 5.0, 10.0]


# burns ~0.3 s of CPU, then holds 32 MiB until told to go
HOG = ("import sys, time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
       "a = bytearray(32 << 20)\nprint('ready', flush=True)\nsys.stdin.readline()\n")


class FakeNvml:
    """A stand-in for the `pynvml` module, with its functions and shapes: this machine has no GPU, so
    the real NVML cannot start here (see the test below)."""

    def __init__(self, gpus: list[tuple[str, int, int]]) -> None:
        self.gpus = gpus  # (uuid, utilization %, memory used in MiB), by NVML index

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self.gpus[h][0]

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA H100 80GB HBM3"  # older releases answer bytes

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=self.gpus[h][1], memory=0)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(used=self.gpus[h][2] << 20, total=80 << 30, free=(80 << 30) - (self.gpus[h][2] << 20))

    def nvmlShutdown(self) -> None:
        pass


def test_the_sampler_reads_a_pods_cgroup_and_maps_gpus_to_pods(store: Store) -> None:
    assert os.geteuid() == 0, "pod cgroups need root (CI runs as root)"
    cgroup = PodCgroup.create("test-metrics", uuid.uuid4().hex[:8], {})
    assert cgroup is not None
    procs = " && ".join(f"echo $$ > {p}" for p in cgroup.procs)
    hog = subprocess.Popen(["sh", "-c", f'{procs} && exec "$0" -c "$1"', sys.executable, HOG],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    nvml = FakeNvml([("GPU-aaa", 10, 100), ("GPU-bbb", 90, 2048), ("GPU-ccc", 50, 0)])
    pods = [RunningPod("team", "job-launcher-0-0-abcde", cgroup, (1,)),
            RunningPod("team", "job-node-0-0-fghij", cgroup, (0, 2))]
    sampler = Sampler(lambda: pods, interval=1.0, nvml=Nvml(nvml))
    try:
        assert hog.stdout and hog.stdout.readline() == "ready\n"
        sampler.sample(at=1000.0)
        first = sampler.pods[("team", "job-launcher-0-0-abcde")]
        assert first.cpu_cores is None and first.memory >= 32 << 20  # a rate needs two readings
        sampler.sample(at=1002.0)
        second = sampler.pods[("team", "job-launcher-0-0-abcde")]
        assert second.window == 2.0 and second.cpu_cores is not None and second.cpu_cores >= 0
        assert second.cpu_seconds is not None and second.cpu_seconds >= 0.2
        assert sampler.machine is not None and sampler.machine.memory > 0
    finally:
        assert hog.stdin
        hog.stdin.close()
        hog.wait(timeout=10)
        cgroup.remove()
    assert [g.uuid for g in sampler.gpus_of(("team", "job-node-0-0-fghij"))] == ["GPU-aaa", "GPU-ccc"]
    assert sampler.gpus_of(("team", "job-launcher-0-0-abcde"))[0].as_annotation() == {
        "index": 1, "uuid": "GPU-bbb", "model": "NVIDIA H100 80GB HBM3", "utilization": 90.0,
        "memoryUsed": 2048 << 20, "memoryTotal": 80 << 30}
    registry = CollectorRegistry()
    registry.register(UsageCollector(sampler, store, "machine", {"cpu": "2", "nvidia.com/gpu": "3"}))
    gpu1 = {"gpu": "1", "UUID": "GPU-bbb", "device": "nvidia1", "modelName": "NVIDIA H100 80GB HBM3",
            "Hostname": "machine", "namespace": "team", "pod": "job-launcher-0-0-abcde", "container": "node"}
    assert registry.get_sample_value("DCGM_FI_DEV_GPU_UTIL", gpu1) == 90
    assert registry.get_sample_value("DCGM_FI_DEV_FB_USED", gpu1) == 2048
    assert registry.get_sample_value("container_cpu_usage_seconds_total", {
        "namespace": "team", "pod": "job-launcher-0-0-abcde", "container": "node"}) == second.cpu_seconds
    assert registry.get_sample_value("kube_node_status_capacity", {
        "node": "machine", "resource": "nvidia_com_gpu", "unit": "integer"}) == 3
    sampler.sample(at=1004.0)  # the cgroup is gone: the pods have ended
    assert sampler.pods == {} and sampler.gpu_owners == {}
    life = sampler.history.series(("team", "job-node-0-0-fghij"))  # the dashboard's chart keeps it
    assert [p.at for p in life] == [1000.0, 1002.0] and life[1].cpu_cores == second.cpu_cores
    assert life[1].gpu_utilization == 30.0 and life[1].gpu_memory == 100 << 20  # GPU-aaa and GPU-ccc


def test_gpu_owners_follow_cuda_visible_devices() -> None:
    assert owners({("a", "p0"): (0, 1), ("a", "p1"): (3,), ("b", "q"): ()}) == {
        0: ("a", "p0"), 1: ("a", "p0"), 3: ("a", "p1")}


def test_without_an_nvidia_driver_there_are_no_gpu_figures() -> None:
    assert Nvml.open() is None  # this machine has no GPU: NVML cannot start
