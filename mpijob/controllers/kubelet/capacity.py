"""What this machine can give jobs: CPUs, memory and GPUs, detected or declared.

`mpijob server start --capacity nvidia.com/gpu=8,cpu=16,memory=64Gi` (passed to the server as
`$MPIJOB_CAPACITY`) overrides any subset of what is detected — for administrators, and for tests that
exercise the GPU logic on machines without GPUs.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from mpijob.api.kueue.capacity import parse_capacity

ENV = "MPIJOB_CAPACITY"
GPU = "nvidia.com/gpu"


def _memory() -> str:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) // 1024}Mi"  # whole MiB read better than KiB
    return "0"


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
