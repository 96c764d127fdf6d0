"""What this machine can give jobs: CPUs, memory and GPUs, detected or declared.

`mpijob server start --capacity nvidia.com/gpu=8,cpu=16,memory=64Gi` (passed to the server as
`$MPIJOB_CAPACITY`) overrides any subset of what is detected — for administrators, and for tests that
exercise the GPU logic on machines without GPUs.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mpijob.api.kueue.capacity import parse_capacity

ENV = "MPIJOB_CAPACITY"
GPU = "nvidia.com/gpu"


def _memory() -> str:
    total = _meminfo("MemTotal")
    return f"{total // 1024}Mi" if total else "0"  # whole MiB read better than KiB


def _gpus() -> int:
    """NVIDIA GPUs as `nvidia-smi -L` lists them (0 without a driver)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def detect() -> dict[str, str]:
    """The machine's capacity, with `$MPIJOB_CAPACITY` entries taking precedence."""
    found = {"cpu": str(os.cpu_count() or 1), "memory": _memory(), GPU: str(_gpus())}
    if text := os.environ.get(ENV):
        found.update(parse_capacity(text))
    return found


# -- how many pods of one job this machine can hold ------------------------------------------------------

# What one pod costs the machine beyond its program (bench/podcost.py: each node pod's supervisor, `unshare`,
# the sandbox's shell, sshd, the MPI daemon with its threads and the rank agent held 12 tasks and 14 MiB of
# proportional set size in a 64-node job, 23 MiB in a 16-node one, where fewer pods share the pages; the
# server held 2 open files more per pod), with room for sshd's session processes while the job starts. A
# rank, per process: an mpi4py program that has initialized MPI held 3 tasks and 9 MiB (30 MiB resident).
POD_TASKS = 16
POD_MEMORY = 24 << 20  # bytes
POD_FDS = 4
PROGRAM_TASKS, PROGRAM_MEMORY = 4, 32 << 20


@dataclass(frozen=True)
class Room:
    """One resource of the machine, whole: `pods` of the kind asked for fit in `total` of it."""

    resource: str
    total: int
    per_pod: int
    unit: str = ""

    @property
    def pods(self) -> int:
        return max(self.total, 0) // self.per_pod

    def show(self, n: int) -> str:
        return f"{n >> 20} MiB" if self.unit == "bytes" else str(n)


def rooms(procs_per_pod: int = 1) -> list[Room]:
    """The machine's limits on pods, each with what a pod of `procs_per_pod` ranks takes of it. Whole, not
    what is free now: a job that fits once others end waits in its queue; one that never fits is refused."""
    tasks = POD_TASKS + PROGRAM_TASKS * procs_per_pod
    memory = POD_MEMORY + PROGRAM_MEMORY * procs_per_pod
    found = [Room("kernel.threads-max", _int(Path("/proc/sys/kernel/threads-max")), tasks),
             Room("kernel.pid_max", _int(Path("/proc/sys/kernel/pid_max")), tasks),
             Room("memory (MemTotal)", _meminfo("MemTotal") * 1024, memory, "bytes")]
    if cgroup := _own_cgroup():
        if (limit := _int(cgroup / "pids.max")) > 0:
            found.append(Room(f"the server's cgroup's pids.max ({cgroup})", limit, tasks))
        if (limit := _int(cgroup / "memory.max")) > 0:
            found.append(Room(f"the server's cgroup's memory.max ({cgroup})", limit, memory, "bytes"))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY:
        found.append(Room("the server's open files (ulimit -Hn)", hard, POD_FDS))
    if os.geteuid() != 0 and (nproc := resource.getrlimit(resource.RLIMIT_NPROC)[1]) != resource.RLIM_INFINITY:
        found.append(Room("the server's user's processes (ulimit -Hu)", nproc, tasks))
    return found


def too_many_pods(pods: int, procs_per_pod: int = 1) -> str:
    """Why a job of `pods` pods can never run on this machine ("" when it can): the tightest limit, and the
    largest job it leaves room for."""
    tight = min(rooms(procs_per_pod), key=lambda r: r.pods)
    if pods <= tight.pods:
        return ""
    return (f"this machine holds at most {tight.pods} pods of {procs_per_pod} process(es) each, not {pods}: "
            f"{tight.resource} is {tight.show(tight.total)}, and a pod takes about {tight.show(tight.per_pod)} of it")


def _int(path: Path) -> int:
    """An integer file; -1 when it says `max` (no limit) or cannot be read."""
    try:
        text = path.read_text().strip()
    except OSError:
        return -1
    return int(text) if text.isdigit() else -1


def _meminfo(field: str) -> int:
    """A /proc/meminfo figure, in KiB (0 when missing)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    return 0


def _own_cgroup() -> Path | None:
    """This process's cgroup v2 directory, when it is one."""
    try:
        line = next(ln for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln.startswith("0::"))
    except (OSError, StopIteration):
        return None
    path = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
    return path if path.is_dir() else None
