"""What an administrator chooses when rendering the platform bundle: teams, quotas, GPU types, images.

Every option has a default that renders a complete, applicable bundle; every parser here turns one
command-line value into typed options or raises `OptionError` naming the option, the value and the
fix, so the CLI (or a program) can say exactly what to change before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mpijob.api import names
from mpijob.api.core.labels import is_qualified_name
from mpijob.api.core.quantity import parse_quantity

GPU = "nvidia.com/gpu"  # the device plugin's resource (also spelled in kubelet/capacity.py and client/builder.py)
CPU, MEMORY = "cpu", "memory"
DEFAULT_TEAM = "team-a"
DEFAULT_COHORT = "mpi"
DEFAULT_QUOTA: Mapping[str, str] = MappingProxyType({CPU: "64", MEMORY: "256Gi", GPU: "8"})
FAIR, CLASSIC = "fair", "classic"
PREEMPTION_MODES = (FAIR, CLASSIC)

# The implementations a runtime can be rendered for, and the image each uses unless told otherwise.
OPEN_MPI_4, OPEN_MPI_5 = names.OPEN_MPI, names.MPI_OPEN_MPI_5
IMPLEMENTATIONS = (OPEN_MPI_4, OPEN_MPI_5, names.MPI_MPICH, names.MPI_INTEL)
DEFAULT_IMAGES: Mapping[str, str] = MappingProxyType({
    OPEN_MPI_4: "mpioperator/openmpi",  # MPI Operator's images: Debian's Open MPI 4.1, sshd for mpiuser on 2222
    OPEN_MPI_5: "registry.example.com/mpi/openmpi5",  # no upstream image ships Open MPI 5: build one (docs)
    names.MPI_MPICH: "mpioperator/mpich",
    names.MPI_INTEL: "mpioperator/intel",
})
# GPU runtimes need CUDA and NCCL in the image: Trainer's DeepSpeed image has them beside Open MPI 4.
DEFAULT_GPU_IMAGE = "ghcr.io/kubeflow/trainer/deepspeed-runtime"


class OptionError(ValueError):
    """A value an option cannot take: `option` as typed on the command line, the value, and the fix."""

    def __init__(self, option: str, value: object, problem: str, fix: str) -> None:
        self.option, self.value, self.problem, self.fix = option, value, problem, fix
        super().__init__(f"{option} {value!r}: {problem}; {fix}")


@dataclass(frozen=True)
class Team:
    """A team: its name (its ClusterQueue, its groups) and the namespace its jobs run in."""

    name: str
    namespace: str


@dataclass(frozen=True)
class Options:
    """Everything `render` needs; the defaults make a one-team, CPU-only bundle."""

    teams: tuple[Team, ...] = (Team(DEFAULT_TEAM, DEFAULT_TEAM),)
    quotas: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # team → resource → quantity
    weights: Mapping[str, str] = field(default_factory=dict)  # team → fairSharing.weight
    gpu_types: tuple[str, ...] = ()
    gpus_per_node: int = 1
    cohort: str = DEFAULT_COHORT
    preemption: str = FAIR
    net_bind_service: bool = False
    ssh_port: int = 2222
    run_as_user: int | None = None  # None: OpenShift gives each namespace's pods a UID of its range
    images: Mapping[str, str] = field(default_factory=lambda: DEFAULT_IMAGES)
    gpu_image: str = DEFAULT_GPU_IMAGE
    rdma_network: str = "rdma-net"
    rdma_resource: str = "rdma/hca"
    rdma_device: str = "mlx5_0:1"
    admin_group: str = "mpi-platform-admins"
    auditor_group: str = "mpi-auditors"
    trainer_namespace: str = names.TRAINER_CONTROLLER_NAMESPACE

    def quota(self, team: Team) -> Mapping[str, str]:
        """The team's nominal quota: the default, overridden per resource by `--quota`."""
        own = self.quotas.get(team.name, {})
        base = {k: v for k, v in DEFAULT_QUOTA.items() if k != GPU or self.gpu_types}
        return {**base, **own}

    def weight(self, team: Team) -> str:
        return self.weights.get(team.name, "1")


# -- parsing one command-line value ---------------------------------------------------------------------


def _dns_label(option: str, value: str, what: str) -> str:
    if not value or len(value) > 63 or not names.DNS1123_LABEL.match(value):
        raise OptionError(option, value, f"the {what} must be a DNS-1123 label (lower-case letters, digits and "
                                         "'-', at most 63, starting and ending with a letter or digit)",
                          f"use e.g. {DEFAULT_TEAM}")
    return value


def parse_team(value: str) -> Team:
    """`NAME[:NAMESPACE]`; the namespace defaults to the name."""
    name, _, namespace = value.partition(":")
    _dns_label("--team", name, "team name")
    _dns_label("--team", namespace or name, "namespace")
    return Team(name, namespace or name)


def parse_quota(value: str, teams: Iterable[Team]) -> tuple[str, dict[str, str]]:
    """`TEAM=RESOURCE:QUANTITY[,RESOURCE:QUANTITY...]` for a team named by `--team`."""
    known = [t.name for t in teams]
    team, sep, rest = value.partition("=")
    example = f"use e.g. --quota {known[0] if known else DEFAULT_TEAM}=cpu:64,memory:256Gi,{GPU}:8"
    if not sep or not rest:
        raise OptionError("--quota", value, "must be TEAM=RESOURCE:QUANTITY[,RESOURCE:QUANTITY...]", example)
    if team not in known:
        raise OptionError("--quota", value, f"team {team!r} is not one of the teams ({', '.join(known)})",
                          "add it with --team or name one of those")
    quota: dict[str, str] = {}
    for item in rest.split(","):
        resource, sep, amount = item.strip().partition(":")
        if not sep or not resource or not is_qualified_name(resource):
            raise OptionError("--quota", value, f"{item!r} is not RESOURCE:QUANTITY", example)
        try:
            if parse_quantity(amount) < 0:
                raise ValueError("negative")
        except ValueError:
            raise OptionError("--quota", value, f"{amount!r} is not a quantity for {resource}",
                              'write a number with an optional suffix, e.g. 64, "500m", "256Gi"') from None
        quota[resource] = amount
    return team, quota


def parse_weight(value: str, teams: Iterable[Team]) -> tuple[str, str]:
    """`TEAM=WEIGHT`: the team's fair-sharing weight (a quantity, e.g. 2 or 0.5)."""
    known = [t.name for t in teams]
    team, sep, weight = value.partition("=")
    if not sep or team not in known:
        raise OptionError("--weight", value, f"must be TEAM=WEIGHT for one of the teams ({', '.join(known)})",
                          f"use e.g. --weight {known[0] if known else DEFAULT_TEAM}=2")
    try:
        if parse_quantity(weight) < 0:
            raise ValueError("negative")
    except ValueError:
        raise OptionError("--weight", value, f"{weight!r} is not a non-negative number",
                          "use e.g. 1 (an equal share), 2 (twice the share) or 0 (lends only)") from None
    return team, weight


def parse_gpu_type(value: str) -> str:
    """A GPU type, e.g. `a100`: it names a ResourceFlavor, so it must be a DNS-1123 label."""
    if not value or len(value) > 63 or not names.DNS1123_LABEL.match(value):
        raise OptionError("--gpu-type", value, "a GPU type names a ResourceFlavor: lower-case letters, digits and '-'",
                          "use e.g. --gpu-type a100 --gpu-type h100")
    return value


def parse_image(value: str) -> tuple[str, str]:
    """`IMPLEMENTATION=IMAGE`, e.g. `MPICH=registry.example.com/mpich:4.2`, or `gpu=IMAGE`."""
    impl, sep, image = value.partition("=")
    choices = [*IMPLEMENTATIONS, "gpu"]
    if not sep or impl not in choices or not image or any(c.isspace() for c in image):
        raise OptionError("--image", value, f"must be IMPLEMENTATION=IMAGE with IMPLEMENTATION one of "
                                            f"{', '.join(choices)}",
                          "use e.g. --image MPICH=registry.example.com/mpich:4.2")
    return impl, image


def check_port(option: str, port: int) -> int:
    """A port a non-root process may listen on (sshd runs as the pod's arbitrary UID)."""
    if not 1024 <= port <= 65535:
        raise OptionError(option, port, "sshd runs as a non-root user, which can only listen on ports 1024-65535",
                          "use 2222 (what Trainer's and MPI Operator's images use)")
    return port


def check_preemption(mode: str) -> str:
    if mode not in PREEMPTION_MODES:
        raise OptionError("--preemption", mode, f"must be one of {', '.join(PREEMPTION_MODES)}",
                          f"use {FAIR} (Kueue's fair sharing enabled) or {CLASSIC} (borrowWithinCohort)")
    return mode


def check_gpus_per_node(count: int) -> int:
    if count < 1:
        raise OptionError("--gpus-per-node", count, "a GPU runtime asks for at least one GPU per node",
                          "use e.g. 8 for an 8-GPU server")
    return count


def check_group(option: str, group: str) -> str:
    if not group or any(c.isspace() for c in group):
        raise OptionError(option, group, "a group name must be non-empty and hold no spaces",
                          "use the group your identity provider sends, e.g. mpi-platform-admins")
    return group


def build(teams: Iterable[str] = (), quotas: Iterable[str] = (), weights: Iterable[str] = (),
          gpu_types: Iterable[str] = (), images: Iterable[str] = (), **rest: Any) -> Options:
    """Options from command-line values (each repeatable option as the list of its values); other
    keyword arguments are `Options` fields, checked here."""
    parsed = tuple(parse_team(t) for t in teams) or Options.teams
    dupes = sorted({t.name for t in parsed if [p.name for p in parsed].count(t.name) > 1}
                   | {t.namespace for t in parsed if [p.namespace for p in parsed].count(t.namespace) > 1})
    if dupes:
        raise OptionError("--team", dupes[0], "two teams have this name or namespace",
                          "give every team its own name and namespace")
    quota_map: dict[str, dict[str, str]] = {}
    for q in quotas:
        team, quota = parse_quota(q, parsed)
        quota_map.setdefault(team, {}).update(quota)
    weight_map = dict(parse_weight(w, parsed) for w in weights)
    types = tuple(dict.fromkeys(parse_gpu_type(g) for g in gpu_types))
    image_map = dict(DEFAULT_IMAGES)
    gpu_image = str(rest.pop("gpu_image", DEFAULT_GPU_IMAGE))
    for value in images:
        impl, image = parse_image(value)
        if impl == "gpu":
            gpu_image = image
        else:
            image_map[impl] = image
    if "ssh_port" in rest:
        check_port("--ssh-port", int(rest["ssh_port"]))
    if rest.get("run_as_user") is not None and int(rest["run_as_user"]) < 1:
        raise OptionError("--run-as-user", rest["run_as_user"], "the runtimes run as non-root",
                          "use the UID the image's user has (1000 in MPI Operator's and Trainer's images)")
    if "preemption" in rest:
        check_preemption(str(rest["preemption"]))
    if "gpus_per_node" in rest:
        check_gpus_per_node(int(rest["gpus_per_node"]))
    if "cohort" in rest:
        _dns_label("--cohort", str(rest["cohort"]), "cohort name")
    for key in ("admin_group", "auditor_group"):
        if key in rest:
            check_group(f"--{key.replace('_', '-')}", str(rest[key]))
    return Options(teams=parsed, quotas=quota_map, weights=weight_map, gpu_types=types,
                   images=MappingProxyType(image_map), gpu_image=gpu_image, **rest)
