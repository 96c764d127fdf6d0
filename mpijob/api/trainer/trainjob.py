"""TrainJob admission rules beyond the schema: CRD defaults, Trainer's webhook checks, immutability,
and whether the referenced runtime can run here (docs/parity.md).
"""

from __future__ import annotations

from typing import Any

from mpijob.api import names
from mpijob.api.core.errors import Cause, invalid
from mpijob.api.core.quantity import is_quantity
from mpijob.api.core.structural import show
from mpijob.api.names import MAX_ENV
from mpijob.api.trainer import patches

# Trainer's bound on numNodes (an int32); what one machine can hold is the local cluster's admission's
# (`server/admission.check_machine`), computed from the machine
MAX_NUM_NODES = (1 << 31) - 1
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
MANAGED_BY = (names.MANAGED_BY_TRAINER, names.MANAGED_BY_MULTIKUEUE)
IMMUTABLE = ("runtimeRef", "trainer", "initializer", "activeDeadlineSeconds", "managedBy")
HOSTNAME_LIMIT = 63


def default(obj: dict) -> dict:
    """Apply the CRD defaults in place (runtimeRef apiGroup/kind, suspend, managedBy) and return obj."""
    spec = obj.setdefault("spec", {})
    ref = spec.get("runtimeRef")
    if isinstance(ref, dict):
        ref.setdefault("apiGroup", names.TRAINER_GROUP)
        ref.setdefault("kind", "ClusterTrainingRuntime")
    spec.setdefault("suspend", False)
    spec.setdefault("managedBy", MANAGED_BY[0])
    return obj


def quantity_causes(resources: Any, where: str) -> list[Cause]:
    causes = []
    for key in ("limits", "requests"):
        for name, q in ((resources or {}).get(key) or {}).items():
            if not is_quantity(q):
                causes.append(Cause(f"{where}.{key}[{name}]",
                                    f'Invalid value: {show(q)}: must be a quantity such as 2, "500m" or "4Gi"'))
    return causes


def name_causes(name: str) -> list[Cause]:
    """A TrainJob name is an RFC 1035 label of at most 63 characters (the CRD's CEL rules)."""
    if len(name) > 63:
        return [Cause("metadata.name", f'Invalid value: "{name}": must be no more than 63 characters '
                                       f"(it has {len(name)}); use a shorter name")]
    if not names.RFC1035_LABEL.match(name):
        return [Cause("metadata.name", f'Invalid value: "{name}": must be an RFC 1035 label: lower-case '
                                       "letters, digits and '-', starting with a letter and ending with a "
                                       "letter or digit (e.g. 'pi-2')")]
    return []


def causes(obj: dict, old: dict | None = None) -> list[Cause]:
    """Semantic problems of a structurally valid, defaulted TrainJob (and, on update, against `old`)."""
    out: list[Cause] = []
    spec = obj.get("spec") or {}
    ref = spec.get("runtimeRef")
    if not isinstance(ref, dict):
        out.append(Cause("spec.runtimeRef", "Required value: set spec.runtimeRef.name to a ClusterTrainingRuntime "
                                            "such as mpi-distributed", "FieldValueRequired"))
    else:
        if not ref.get("name"):
            out.append(Cause("spec.runtimeRef.name", "Required value: name the runtime to run on, e.g. "
                                                     "mpi-distributed", "FieldValueRequired"))
        if ref.get("kind") not in RUNTIME_KINDS:
            out.append(Cause("spec.runtimeRef.kind", f"Unsupported value: {show(ref.get('kind'))}: supported "
                                                     'values: "ClusterTrainingRuntime", "TrainingRuntime"',
                             "FieldValueNotSupported"))
        if ref.get("apiGroup") != names.TRAINER_GROUP:
            out.append(Cause("spec.runtimeRef.apiGroup", f"Unsupported value: {show(ref.get('apiGroup'))}: "
                                                         f'supported values: "{names.TRAINER_GROUP}"',
                             "FieldValueNotSupported"))
    if spec.get("managedBy") not in MANAGED_BY:
        out.append(Cause("spec.managedBy", f"Unsupported value: {show(spec.get('managedBy'))}: supported values: "
                                           + ", ".join(f'"{m}"' for m in MANAGED_BY), "FieldValueNotSupported"))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and ads < 1:
        out.append(Cause("spec.activeDeadlineSeconds", f"Invalid value: {ads}: must be at least 1 (seconds)"))
    out += _trainer_causes(spec.get("trainer"))
    out += patches.causes(obj, old)
    if old is not None:
        old_spec = old.get("spec") or {}
        for key in IMMUTABLE:
            if spec.get(key) != old_spec.get(key):
                out.append(Cause(f"spec.{key}", "Invalid value: field is immutable; delete the TrainJob and "
                                                "create it again to change it"))
    return out


def _trainer_causes(trainer: Any) -> list[Cause]:
    if not isinstance(trainer, dict):
        return []
    out: list[Cause] = []
    nodes = trainer.get("numNodes")
    if nodes is not None and not 1 <= nodes <= MAX_NUM_NODES:
        out.append(Cause("spec.trainer.numNodes", f"Invalid value: {nodes}: must be at least 1 and at most "
                                                  f"{MAX_NUM_NODES}; set numNodes to the number of nodes "
                                                  f"(1–{MAX_NUM_NODES})"))
    procs = trainer.get("numProcPerNode")
    if procs is not None and procs < 1:
        out.append(Cause("spec.trainer.numProcPerNode", f"Invalid value: {procs}: must be greater than or equal "
                                                        "to 1; set it to the MPI slots (ranks) per node"))
    env = trainer.get("env") or []
    if len(env) > MAX_ENV:
        out.append(Cause("spec.trainer.env", f"Too many: {len(env)}: must have at most {MAX_ENV} items",
                         "FieldValueTooMany"))
    seen: set[str] = set()
    for i, e in enumerate(env):
        name = e.get("name", "")
        where = f"spec.trainer.env[{i}].name"
        if name in names.RESERVED_ENV:
            out.append(Cause(where, f'Invalid value: "{name}": reserved: the MPI launcher sets it itself '
                                    "(hostfile, slots and ssh arguments come from the runtime); remove it from "
                                    "spec.trainer.env"))
        elif not names.C_IDENTIFIER.match(name):
            out.append(Cause(where, f"Invalid value: {show(name)}: must be a C identifier (letters, digits and "
                                    "'_', not starting with a digit), e.g. 'MY_VAR'"))
        if name in seen:
            out.append(Cause(where, f'Duplicate value: "{name}": each env name may appear once; merge the '
                                    "entries", "FieldValueDuplicate"))
        seen.add(name)
    out += quantity_causes(trainer.get("resourcesPerNode"), "spec.trainer.resourcesPerNode")
    return out


def _refuse(job: str, fld: str, message: str) -> Exception:
    return invalid("TrainJob", job, [Cause(fld, message)], names.TRAINER_GROUP)


def check_runtime_ref(trainjob: dict, runtime: dict | None, available: list[str] | tuple[str, ...] = ()) -> None:
    """Raise a 422 unless `runtime` (what spec.runtimeRef resolved to, None if missing) can run `trainjob`
    on the local cluster. `available` are the names of the runtimes of that kind, for the message."""
    job = (trainjob.get("metadata") or {}).get("name") or ""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    ref_name = ref.get("name") or ""
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    if runtime is None:
        choices = ", ".join(sorted(available)) if available else "none installed"
        raise _refuse(job, "spec.runtimeRef.name",
                      f'Invalid value: "{ref_name}": {kind} "{ref_name}" not found; available {kind}s: {choices}; '
                      "set spec.runtimeRef.name to one of them")
    spec = runtime.get("spec") or {}
    mpi = (spec.get("mlPolicy") or {}).get("mpi")
    if mpi is None:
        raise _refuse(job, "spec.runtimeRef.name",
                      f'Invalid value: "{ref_name}": mpijob local cluster runs MPI runtimes only (this runtime has '
                      "no spec.mlPolicy.mpi); use an MPI runtime such as mpi-distributed")
    impl = mpi.get("mpiImplementation") or names.OPEN_MPI
    if impl != names.OPEN_MPI:
        raise _refuse(job, "spec.runtimeRef.name",
                      f'Invalid value: "{ref_name}": mpiImplementation {impl} is not supported; use OpenMPI')
    rjobs = {rj.get("name"): rj for rj in ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []}
    if names.LAUNCHER not in rjobs:
        raise _refuse(job, "spec.runtimeRef.name",
                      f'Invalid value: "{ref_name}": the runtime has no "launcher" replicatedJob to run mpirun')
    trainer = (trainjob.get("spec") or {}).get("trainer") or {}
    launcher_as_node = bool(mpi.get("runLauncherAsNode"))
    num_nodes = int(trainer.get("numNodes") or (spec.get("mlPolicy") or {}).get("numNodes") or 1)
    if names.NODE not in rjobs and num_nodes >= 2:
        raise _refuse(job, "spec.trainer.numNodes",
                      f"Invalid value: {num_nodes}: must be 1 because runtime \"{ref_name}\" has no \"node\" "
                      "replicatedJob")
    # No image entrypoint runs here: a launcher with only args runs them as its command, as the entrypoints
    # of MPI Operator's base images do (`exec "$@"` after their set-up); with neither, nothing would run.
    if trainer.get("command") is None and trainer.get("args") is None:
        launcher = rjobs[names.LAUNCHER]
        containers = (((launcher.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec", {}).get(
            "containers") or []
        if not any(c.get("command") or c.get("args") for c in containers if c.get("name") == names.CONTAINER):
            raise _refuse(job, "spec.trainer.command",
                          f'Required value: runtime "{ref_name}" gives the launcher no command and the local '
                          "cluster does not run image entrypoints; set spec.trainer.command, e.g. "
                          '["mpirun", "python3", "train.py"]')
    nodes = (max(num_nodes - 1, 1) if launcher_as_node else num_nodes) if names.NODE in rjobs else 0
    longest = max([names.hostname(job, names.LAUNCHER, 0, 0)]
                  + [names.hostname(job, names.NODE, 0, nodes - 1)] * (nodes > 0), key=len)
    if len(longest) > HOSTNAME_LIMIT:
        room = len(job) - (len(longest) - HOSTNAME_LIMIT)
        raise _refuse(job, "metadata.name",
                      f'Invalid value: "{job}": pod hostname "{longest}" would be {len(longest)} characters, '
                      f"over the DNS label limit of {HOSTNAME_LIMIT}; use a name of at most {room} characters")
