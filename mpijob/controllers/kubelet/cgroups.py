"""Memory limits per pod through cgroups (v2, else v1), the kernel's word on OOM kills, and what a pod uses.

`resources.limits.memory` becomes the pod cgroup's limit; every process of the pod (ranks started by
its sshd included) is in it, so an allocation over the limit is OOM-killed by the kernel and the
kubelet-style status can say `OOMKilled` truthfully. The same cgroup accounts the pod's CPU time and
memory (`usage`), as cAdvisor reads them for the kubelet; on cgroup v1 the CPU account is a second
cgroup of the `cpuacct` hierarchy. Needs root; without it pods run unlimited and unaccounted.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from mpijob.api.core.quantity import quantity_value

ROOT = Path("/sys/fs/cgroup")


def job_pod(job_uid: str, pod: str) -> str:
    """The cgroup name of a job's pod: pod names repeat across namespaces (every `pi` job has a `pi-worker-0`),
    and two pods in one cgroup would share a memory limit and each other's OOM kills."""
    return f"{job_uid}-{pod}"


def _base() -> tuple[Path, int] | None:
    """Where pod cgroups go, and the cgroup version; None when we cannot make them."""
    if os.geteuid() != 0:
        return None
    controllers = ROOT / "cgroup.controllers"
    if controllers.exists() and "memory" in controllers.read_text().split():
        return ROOT / "mpijob", 2
    if (ROOT / "memory" / "memory.limit_in_bytes").exists():
        return ROOT / "memory" / "mpijob", 1
    return None


@dataclass(frozen=True)
class Usage:
    """What a pod has used, as the kubelet reports it (`kubectl top`)."""

    cpu_seconds: float | None  # CPU time of all its processes; None where no CPU account exists
    memory_bytes: int  # working set: memory in use less the inactive file cache, which the kernel can drop
    memory_peak_bytes: int | None  # the most it has held at once; None where the kernel keeps no peak


def oom_kills(path: Path, version: int) -> int:
    """The kernel's count of OOM kills in memory cgroup `path` (v2 `memory.events`, v1 `memory.oom_control`)."""
    try:
        for line in (path / ("memory.events" if version == 2 else "memory.oom_control")).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except OSError:
        pass
    return 0


@dataclass(frozen=True)
class PodCgroup:
    path: Path
    version: int
    cpu_path: Path | None = None  # cgroup v1: the pod's cgroup of the cpuacct hierarchy (v2 accounts in `path`)

    @classmethod
    def create(cls, cluster_id: str, pod_uid: str, resources: dict) -> PodCgroup | None:
        """A cgroup for one pod (`pod_uid`: a name unique in the cluster, see `job_pod`), limited to
        `resources.limits.memory` when set."""
        base = _base()
        if base is None:
            return None
        root, version = base
        path = root / cluster_id / pod_uid
        try:
            if version == 2 and not root.exists():
                root.mkdir()
                (ROOT / "cgroup.subtree_control").write_text("+memory")
                (root / "cgroup.subtree_control").write_text("+memory")
            path.mkdir(parents=True, exist_ok=True)
            if version == 2 and path.parent != root:
                (path.parent / "cgroup.subtree_control").write_text("+memory")
            limit = (resources.get("limits") or {}).get("memory")
            if limit is not None:
                name = "memory.max" if version == 2 else "memory.limit_in_bytes"
                (path / name).write_text(str(quantity_value(limit)))
                if version == 2:
                    (path / "memory.swap.max").write_text("0") if (path / "memory.swap.max").exists() else None
                elif (path / "memory.memsw.limit_in_bytes").exists():
                    (path / "memory.memsw.limit_in_bytes").write_text(str(quantity_value(limit)))
        except OSError:
            return None
        cpu_path = ROOT / "cpuacct" / "mpijob" / cluster_id / pod_uid if version == 1 else None
        if cpu_path is not None:
            try:
                cpu_path.mkdir(parents=True, exist_ok=True)
            except OSError:
                cpu_path = None
        return cls(path, version, cpu_path)

    @property
    def procs(self) -> list[Path]:
        """Write a pid to each to put it (and what it later forks) in the pod's cgroups."""
        return [d / "cgroup.procs" for d in (self.path, self.cpu_path) if d is not None]

    def usage(self) -> Usage | None:
        """The pod's CPU seconds and memory now (None once its cgroup is gone)."""
        try:
            stat = _keyed(self.path / "memory.stat")
            if self.version == 2:
                current = int((self.path / "memory.current").read_text())
                inactive = stat.get("inactive_file", 0)
                peak_file = self.path / "memory.peak"
                peak = int(peak_file.read_text()) if peak_file.exists() else None
                cpu = _keyed(self.path / "cpu.stat").get("usage_usec")
                seconds = cpu / 1e6 if cpu is not None else None
            else:
                current = int((self.path / "memory.usage_in_bytes").read_text())
                inactive = stat.get("total_inactive_file", 0)
                peak = int((self.path / "memory.max_usage_in_bytes").read_text())
                seconds = int((self.cpu_path / "cpuacct.usage").read_text()) / 1e9 if self.cpu_path else None
        except (OSError, ValueError):
            return None
        return Usage(seconds, max(current - inactive, 0), peak)

    def oom_kills(self) -> int:
        """How many processes of the pod the kernel OOM-killed."""
        return oom_kills(self.path, self.version)

    def remove(self) -> None:
        """Drop the cgroups once their processes are gone (the kernel refuses while any remain)."""
        for d in (self.path, self.cpu_path):
            try:
                if d:
                    d.rmdir()
            except OSError:
                pass


def _cluster_dirs(cluster_id: str) -> list[Path]:
    base = _base()
    if base is None:
        return []
    root, version = base
    return [root / cluster_id] + ([ROOT / "cpuacct" / "mpijob" / cluster_id] if version == 1 else [])


def sweep(cluster_id: str, keep: Collection[str]) -> int:
    """Remove this cluster's pod cgroups but those named in `keep` (re-adopted pods, whose OOM kills still
    count): those of pods whose job was deleted, or whose server was killed, while no server ran. The kernel
    refuses to remove a cgroup that still holds processes, so a live pod's is never lost. How many went."""
    removed: set[str] = set()
    for cluster in _cluster_dirs(cluster_id):
        if not cluster.is_dir():
            continue
        for pod in cluster.iterdir():
            if pod.is_dir() and pod.name not in keep:
                try:
                    pod.rmdir()
                    removed.add(pod.name)
                except OSError:
                    pass
    return len(removed)


def remove_cluster(cluster_id: str) -> None:
    """Drop the cluster's own cgroup directories once no pod cgroup is left in them (a server that stops while
    its jobs run on leaves them to the next): else one stays behind for every server home ever made."""
    for cluster in _cluster_dirs(cluster_id):
        try:
            cluster.rmdir()
        except OSError:
            pass


def _keyed(path: Path) -> dict[str, int]:
    """A cgroup file of `key value` lines (memory.stat, cpu.stat)."""
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


def available() -> bool:
    """Whether this server can give pods cgroups (limits enforced, usage accounted)."""
    return _base() is not None
