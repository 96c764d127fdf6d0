"""Memory limits per pod through cgroups (v2, else v1), and the kernel's word on OOM kills.

`resources.limits.memory` becomes the pod cgroup's limit; every process of the pod (ranks started by
its sshd included) is in it, so an allocation over the limit is OOM-killed by the kernel and the
kubelet-style status can say `OOMKilled` truthfully. Needs root; without it pods run unlimited.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mpijob.api.quantity import quantity_value

ROOT = Path("/sys/fs/cgroup")


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
class PodCgroup:
    path: Path
    version: int

    @classmethod
    def create(cls, cluster_id: str, pod_uid: str, resources: dict) -> PodCgroup | None:
        """A cgroup for one pod, limited to `resources.limits.memory` when set."""
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
        return cls(path, version)

    @property
    def procs(self) -> Path:
        """Write a pid here to put it (and what it later forks) in the cgroup."""
        return self.path / "cgroup.procs"

    def oom_kills(self) -> int:
        """How many processes of the pod the kernel OOM-killed."""
        source = self.path / ("memory.events" if self.version == 2 else "memory.oom_control")
        try:
            for line in source.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except OSError:
            pass
        return 0

    def remove(self) -> None:
        """Drop the cgroup once its processes are gone (the kernel refuses while any remain)."""
        try:
            self.path.rmdir()
        except OSError:
            pass
