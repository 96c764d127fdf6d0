"""What the pods and the machine use: a sampler, as the kubelet's cAdvisor samples cgroups, and the
series it feeds (Prometheus, and the resource metrics API behind `kubectl top`).

Every `interval` seconds (`$MPIJOB_METRICS_INTERVAL`, default 2; 0 turns sampling off) the sampler
reads each running pod's cgroup (`PodCgroup.usage`: CPU seconds, working set, peak), the machine's
`/proc/stat` and `/proc/meminfo`, and the GPUs through NVML. It keeps the last two readings of each, so
CPU is also known as a rate (cores over the window between them), which is what `kubectl top` shows.
A pod whose job has ended drops out, as it does from the kubelet's stats.

Names are the kubelet's and its exporters': `container_*` (cAdvisor and the kubelet's resource
metrics), `node_*_usage_*`/`node_memory_working_set_bytes` (the kubelet's `/metrics/resource`),
`kube_node_status_{capacity,allocatable}` and `kube_pod_container_resource_{requests,limits}`
(kube-state-metrics; resource names sanitised as it does, `nvidia.com/gpu` → `nvidia_com_gpu`) and
DCGM exporter's `DCGM_FI_DEV_*` for GPUs, so existing dashboards apply.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mpijob.api import Obj, names
from mpijob.api.core.quantity import parse_quantity
from mpijob.api.core.resources import PODS
from mpijob.api.kueue.adapters import requests
from mpijob.controllers.kubelet.cgroups import PodCgroup
from mpijob.controllers.metrics.gpus import MIB, GpuReading, Nvml, owners
from mpijob.controllers.metrics.series import Point, UsageHistory
from mpijob.store.objects import Store

log = logging.getLogger(__name__)
INTERVAL_ENV = "MPIJOB_METRICS_INTERVAL"
DEFAULT_INTERVAL = 2.0  # seconds; a figure is in Prometheus one scrape after the next sample
PodKey = tuple[str, str]  # (namespace, pod)


def interval_from_env() -> float:
    """The sampling interval `$MPIJOB_METRICS_INTERVAL` asks for (seconds, 0 = off)."""
    text = os.environ.get(INTERVAL_ENV, "")
    try:
        value = float(text) if text else DEFAULT_INTERVAL
    except ValueError:
        log.warning("%s=%r is not a number of seconds; sampling every %ss", INTERVAL_ENV, text, DEFAULT_INTERVAL)
        return DEFAULT_INTERVAL
    return max(value, 0.0)


@dataclass(frozen=True)
class RunningPod:
    """A pod the sampler reads: its cgroup and the GPU indices of its CUDA_VISIBLE_DEVICES."""

    namespace: str
    name: str
    cgroup: PodCgroup
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class Reading:
    """One reading of a pod or of the machine; `cpu_cores` and `window` once there were two."""

    at: float
    cpu_seconds: float | None
    memory: int  # working set, bytes
    peak: int | None = None
    cpu_cores: float | None = None
    window: float | None = None

    def after(self, previous: Reading | None) -> Reading:
        """This reading, with its CPU rate over the time since `previous`."""
        if previous is None or previous.cpu_seconds is None or self.cpu_seconds is None or self.at <= previous.at:
            return self
        window = self.at - previous.at
        rate = max(self.cpu_seconds - previous.cpu_seconds, 0.0) / window
        return Reading(self.at, self.cpu_seconds, self.memory, self.peak, rate, window)


def machine_reading(at: float) -> Reading:
    """The machine's CPU seconds (every core's non-idle time) and memory in use (total − available)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    busy = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            info[key] = int(rest.split()[0]) * 1024
    return Reading(at, busy, info.get("MemTotal", 0) - info.get("MemAvailable", 0))


@dataclass
class Sampler:
    """Reads what the running pods and the machine use, every `interval` seconds (see the module doc)."""

    running: Callable[[], Iterable[RunningPod]]
    interval: float
    nvml: Nvml | None = None
    pods: dict[PodKey, Reading] = field(default_factory=dict)
    machine: Reading | None = None
    gpus: list[GpuReading] = field(default_factory=list)
    gpu_owners: dict[int, PodKey] = field(default_factory=dict)
    history: UsageHistory = field(init=False)  # every pod's readings over its life (the dashboard's charts)
    _task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.history = UsageHistory(self.interval)

    def sample(self, at: float | None = None) -> None:
        at = time.time() if at is None else at
        current: dict[PodKey, Reading] = {}
        assigned: dict[PodKey, tuple[int, ...]] = {}
        for pod in self.running():
            usage = pod.cgroup.usage()
            if usage is None:  # its cgroup is gone: the pod has ended
                continue
            key = (pod.namespace, pod.name)
            current[key] = Reading(at, usage.cpu_seconds, usage.memory_bytes, usage.memory_peak_bytes).after(
                self.pods.get(key))
            assigned[key] = pod.gpus
        self.pods = current
        self.machine = machine_reading(at).after(self.machine)
        self.gpu_owners = owners(assigned)
        if self.nvml is not None:
            try:
                self.gpus = self.nvml.read()
            except Exception as e:  # noqa: BLE001 — a GPU fell off the bus, the driver went away: say so, keep sampling
                log.warning("reading the GPUs through NVML failed: %s", e)
                self.gpus = []
        for key, reading in current.items():
            self.history.add(key, self._point(key, reading))

    def _point(self, key: PodKey, reading: Reading) -> Point:
        gpus = self.gpus_of(key)
        if not gpus:
            return Point(reading.at, reading.cpu_cores, reading.memory)
        return Point(reading.at, reading.cpu_cores, reading.memory,
                     sum(g.utilization for g in gpus) / len(gpus), sum(g.memory_used for g in gpus))

    def gpus_of(self, key: PodKey) -> list[GpuReading]:
        return [g for g in self.gpus if self.gpu_owners.get(g.index) == key]

    def start(self) -> None:
        if self.interval > 0:
            self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.nvml is not None:
            self.nvml.close()

    async def _loop(self) -> None:
        while True:
            try:
                self.sample()
            except Exception:
                log.exception("sampling resource usage failed")
            await asyncio.sleep(self.interval)


_UNITS = {"cpu": "core", "memory": "byte", "ephemeral-storage": "byte"}


def _resource_label(resource: str) -> tuple[str, str]:
    """kube-state-metrics' `resource` and `unit` labels of a resource name."""
    unit = _UNITS.get(resource, "byte" if resource.startswith("hugepages-") else "integer")
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource), unit


class UsageCollector(Collector):
    """The usage series, from the sampler's last readings and, for capacity and requests, the store."""

    def __init__(self, sampler: Sampler, store: Store, node: str, capacity: dict[str, str]) -> None:
        self.sampler, self.store, self.node, self.capacity = sampler, store, node, capacity

    def collect(self) -> Iterator[Metric]:
        yield from self._containers()
        yield from self._machine()
        yield from self._requests()
        yield from self._gpus()

    def _containers(self) -> Iterator[Metric]:
        labels = ("namespace", "pod", "container")
        cpu = CounterMetricFamily("container_cpu_usage_seconds", "Cumulative cpu time consumed by the container "
                                  "in core-seconds", labels=labels)
        memory = GaugeMetricFamily("container_memory_working_set_bytes", "Current working set of the container "
                                   "in bytes", labels=labels)
        peak = GaugeMetricFamily("container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes",
                                 labels=labels)
        for (ns, pod), r in sorted(self.sampler.pods.items()):
            values = [ns, pod, names.CONTAINER]
            if r.cpu_seconds is not None:
                cpu.add_metric(values, r.cpu_seconds)
            memory.add_metric(values, r.memory)
            if r.peak is not None:
                peak.add_metric(values, r.peak)
        yield from (cpu, memory, peak)

    def _machine(self) -> Iterator[Metric]:
        cpu = CounterMetricFamily("node_cpu_usage_seconds", "Cumulative cpu time consumed by the node in "
                                  "core-seconds", labels=("node",))
        memory = GaugeMetricFamily("node_memory_working_set_bytes", "Current working set of the node in bytes",
                                   labels=("node",))
        if (r := self.sampler.machine) is not None:
            if r.cpu_seconds is not None:
                cpu.add_metric([self.node], r.cpu_seconds)
            memory.add_metric([self.node], r.memory)
        status = ("node", "resource", "unit")
        capacity = GaugeMetricFamily("kube_node_status_capacity", "The capacity for different resources of a node.",
                                     labels=status)
        allocatable = GaugeMetricFamily("kube_node_status_allocatable", "The allocatable for different resources "
                                        "of a node that are available for scheduling.", labels=status)
        for resource, quantity in sorted(self.capacity.items()):
            values = [self.node, *_resource_label(resource)]
            capacity.add_metric(values, float(parse_quantity(quantity)))
            allocatable.add_metric(values, float(parse_quantity(quantity)))
        yield from (cpu, memory, capacity, allocatable)

    def _requests(self) -> Iterator[Metric]:
        """What the pods that hold resources (not yet Succeeded or Failed) asked for: the allocation."""
        labels = ("namespace", "pod", "container", "node", "resource", "unit")
        reqs = GaugeMetricFamily("kube_pod_container_resource_requests", "The number of requested request "
                                 "resource by a container.", labels=labels)
        lims = GaugeMetricFamily("kube_pod_container_resource_limits", "The number of requested limit "
                                 "resource by a container.", labels=labels)
        for pod in self.store.list(PODS)[0]:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            meta = pod["metadata"]
            for container in (pod.get("spec") or {}).get("containers") or []:
                declared: Obj = container.get("resources") or {}
                for family, amounts in ((reqs, requests(declared)), (lims, declared.get("limits") or {})):
                    for resource, quantity in sorted(amounts.items()):
                        family.add_metric([meta["namespace"], meta["name"], container.get("name", ""), self.node,
                                           *_resource_label(resource)], float(parse_quantity(quantity)))
        yield from (reqs, lims)

    def _gpus(self) -> Iterator[Metric]:
        labels = ("gpu", "UUID", "device", "modelName", "Hostname", "namespace", "pod", "container")
        util = GaugeMetricFamily("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", labels=labels)
        used = GaugeMetricFamily("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", labels=labels)
        free = GaugeMetricFamily("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", labels=labels)
        for g in self.sampler.gpus:
            ns, pod = self.sampler.gpu_owners.get(g.index, ("", ""))
            values = [str(g.index), g.uuid, f"nvidia{g.index}", g.model, self.node, ns, pod,
                      names.CONTAINER if pod else ""]
            util.add_metric(values, g.utilization)
            used.add_metric(values, g.memory_used / MIB)
            free.add_metric(values, (g.memory_total - g.memory_used) / MIB)
        yield from (util, used, free)
