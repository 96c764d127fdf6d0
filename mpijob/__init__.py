"""mpijob: MPI TrainJobs on Kubeflow Trainer V2, and a real local cluster that runs them.

`from mpijob import Client, AsyncClient, TrainJob` gives the Python SDK (`mpijob.sdk`). The SDK is
imported on first use (module `__getattr__`), so `import mpijob` stays cheap for the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mpijob._version import __version__


if TYPE_CHECKING:  # for IDEs and type checkers; at run time these load lazily
    from mpijob.sdk import (
        AsyncClient,
        Client,
        Forbidden,
        InvalidInput,
        JobFailed,
        MpijobError,
        NotFound,
        QuotaExceeded,
        ServerUnavailable,
        Timeout,
        TrainJob,
    )


def __getattr__(name: str) -> Any:
    if name in _SDK_NAMES:
        from mpijob import sdk

        return getattr(sdk, name)
    raise AttributeError(f"module 'mpijob' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AsyncClient", "Client", "Forbidden", "InvalidInput", "JobFailed", "MpijobError", "NotFound", "QuotaExceeded",
    "ServerUnavailable", "Timeout", "TrainJob", "__version__",
]
_SDK_NAMES = frozenset(__all__) - {"__version__"}
