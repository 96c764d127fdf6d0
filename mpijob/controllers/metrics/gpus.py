"""Per-GPU utilization and memory from NVML (`nvidia-ml-py`), and which pod each GPU belongs to.

A pod's GPUs are the indices in its `CUDA_VISIBLE_DEVICES` (`JobRunner.gpus`, handed out by
`DevicePool`); the runner also sets `CUDA_DEVICE_ORDER=PCI_BUS_ID`, so CUDA's index i is NVML's (and
`nvidia-smi`'s) index i. On a machine without an NVIDIA driver `nvmlInit` fails and there are simply no
GPU figures.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)
MIB = 1 << 20


@dataclass(frozen=True)
class GpuReading:
    index: int  # NVML's index: CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID
    uuid: str
    model: str
    utilization: float  # percent of the last sample period the GPU was busy
    memory_used: int  # bytes
    memory_total: int  # bytes

    def as_annotation(self) -> dict[str, Any]:
        """How a PodMetrics' `mpijob.io/gpus` annotation lists it."""
        return {"index": self.index, "uuid": self.uuid, "model": self.model, "utilization": self.utilization,
                "memoryUsed": self.memory_used, "memoryTotal": self.memory_total}


class Nvml:
    """The GPUs as NVML reports them. `nvml` is the `pynvml` module (or anything with its functions)."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml

    @classmethod
    def open(cls) -> Nvml | None:
        """NVML, initialised; None where it cannot be (no driver, no GPU)."""
        import pynvml

        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as e:
            log.info("no GPU figures: NVML is not available (%s)", e)
            return None
        return cls(pynvml)

    def read(self) -> list[GpuReading]:
        n = self.nvml
        out = []
        for i in range(n.nvmlDeviceGetCount()):
            handle = n.nvmlDeviceGetHandleByIndex(i)
            memory = n.nvmlDeviceGetMemoryInfo(handle)
            out.append(GpuReading(i, _text(n.nvmlDeviceGetUUID(handle)), _text(n.nvmlDeviceGetName(handle)),
                                  float(n.nvmlDeviceGetUtilizationRates(handle).gpu), int(memory.used),
                                  int(memory.total)))
        return out

    def close(self) -> None:
        self.nvml.nvmlShutdown()


def _text(value: str | bytes) -> str:
    """Older nvidia-ml-py releases return bytes."""
    return value.decode() if isinstance(value, bytes) else value


def owners(assigned: Mapping[tuple[str, str], Sequence[int]]) -> dict[int, tuple[str, str]]:
    """GPU index → the (namespace, pod) whose CUDA_VISIBLE_DEVICES holds it."""
    return {index: pod for pod, indices in assigned.items() for index in indices}
