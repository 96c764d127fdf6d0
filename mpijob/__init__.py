"""mpijob: MPI TrainJobs on Kubeflow Trainer V2, and a real local cluster that runs them.

`from mpijob import Client, AsyncClient, TrainJob` gives the Python SDK (`mpijob.sdk`). The SDK is
imported on first use (module `__getattr__`), so `import mpijob` stays cheap for the CLI; its public
names are `mpijob.sdk.__all__`, listed there once.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mpijob._version import __version__ as __version__

if TYPE_CHECKING:  # for IDEs and type checkers; at run time the SDK loads lazily
    from mpijob.sdk import *  # noqa: F403 — the SDK's names, as `mpijob.X`


def _sdk() -> ModuleType:
    return importlib.import_module("mpijob.sdk")


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return [*sorted(_sdk().__all__), "__version__"]
    if not name.startswith("_") and name in _sdk().__all__:
        return getattr(_sdk(), name)
    raise AttributeError(f"module 'mpijob' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_sdk().__all__})
