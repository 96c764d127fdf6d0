"""Each pod's use of CPU, memory and GPUs over its whole life, for the dashboard's Metrics tab.

Prometheus keeps history when one scrapes the server; the local cluster must not need one to show a
job's curves. Every sample of the sampler (`usage.Sampler`) adds a point per running pod. A pod keeps at
most `MAX_POINTS`: when it reaches them every other point is dropped and the pod is then sampled half as
often, so a 12-hour job keeps its whole shape (a point every 2 s for 50 minutes, every 4 s after, …)
in bounded memory. The series of ended pods stay for the newest `MAX_PODS` pods, in memory only.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

PodKey = tuple[str, str]  # (namespace, pod)
MAX_POINTS = 1500  # per pod: about 36 KB
MAX_PODS = 2000  # ended pods' series are dropped, oldest first, beyond this many pods


@dataclass(frozen=True)
class Point:
    at: float  # Unix seconds
    cpu_cores: float | None
    memory: int  # working set, bytes
    gpu_utilization: float | None = None  # the mean over the pod's GPUs, percent; None without GPUs
    gpu_memory: int | None = None  # bytes, summed over its GPUs

    def as_list(self) -> list[float | int | None]:
        return [round(self.at, 3), None if self.cpu_cores is None else round(self.cpu_cores, 4), self.memory,
                self.gpu_utilization, self.gpu_memory]


@dataclass
class _Series:
    points: list[Point] = field(default_factory=list)
    stride: int = 1  # keep one sample in `stride`
    seen: int = 0


@dataclass
class UsageHistory:
    interval: float  # the sampler's, in seconds
    _pods: OrderedDict[PodKey, _Series] = field(default_factory=OrderedDict)

    def add(self, key: PodKey, point: Point) -> None:
        series = self._pods.get(key)
        if series is None:
            series = self._pods[key] = _Series()
            while len(self._pods) > MAX_PODS:
                self._pods.popitem(last=False)
        series.seen += 1
        if (series.seen - 1) % series.stride:
            return
        series.points.append(point)
        if len(series.points) >= MAX_POINTS:
            series.points = series.points[::2]
            series.stride *= 2

    def series(self, key: PodKey) -> list[Point]:
        found = self._pods.get(key)
        return list(found.points) if found is not None else []
