"""What the local cluster adds to MPI's environment in every pod (a trainer.env entry of the same name wins),
and why each is needed on one machine."""

from __future__ import annotations

import sys
from pathlib import Path

# Local-cluster additions to every pod's environment (a trainer.env entry of the same name wins): an
# aborting job kills its ranks at once rather than after a grace period, so a failed rank fails the whole
# job within the 2 seconds the local cluster promises; and mpirun tags each output line with its rank
# (`[1,3]<stdout>:`), which `mpijob logs --rank` reads.
#
# Ranks are not bound to cores: a pod's CPU set is the affinity it starts with (`taskset`, for whole-CPU
# requests), which Open MPI's binding ignores (4.1 and 5 bind to cores of the whole machine: a pod on core
# 1 had its rank moved to core 0), and the ranks of two pods of one machine would each bind to core 0.
# Unbound, a rank keeps its pod's CPU set; `--bind-to` on mpirun's command line or trainer.env still win.
LOCAL_MCA = {
    "OMPI_MCA_odls_base_sigkill_timeout": "0",
    "OMPI_MCA_orte_tag_output": "1",
    "OMPI_MCA_hwloc_base_binding_policy": "none",  # Open MPI 4.1
    "PRTE_MCA_hwloc_default_binding_policy": "none",  # Open MPI 5 (PRRTE)
}
# In the namespace sandbox, MPI's session directories go to the pod's own /dev/shm, not the machine's /tmp
# that pods share: named by PID (Open MPI 5's `prted.<pid>`), those of pods in their own PID namespaces
# collide, and one left by a killed run under another user's UID made the next daemon exit 213.
PRIVATE_SESSION_MCA = {
    "OMPI_MCA_orte_tmpdir_base": "/dev/shm",
    "PRTE_MCA_prte_tmpdir_base": "/dev/shm",
}
# In the process sandbox every pod has a temporary directory of its own, `$TMPDIR` (`process_tmpdir`), where
# MPI keeps its session directories. Under the machine's /tmp the pods of a job, whose host name is the
# machine's, shared Open MPI 4's `ompi.<host>.<uid>/jf.<job family>`, made for one daemon per host: now and
# then a daemon exited after daemonizing, unseen, and its mpirun waited for it for ever (bench/hangs.py: 11 of
# 300 jobs under load, 0 of 300 with a directory per pod). Open MPI passes its MCA variables on to every
# daemon, so the variable is TMPDIR, which each pod's sshd gives its own sessions.
TMPDIR = "TMPDIR"
POD_TMP = "tmp"  # in the pod's directory
# In the process sandbox pods have no network of their own: MPI traffic stays on the host's loopback.
LOOPBACK_MCA = {
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
    "PRTE_MCA_oob_tcp_if_include": "lo",
}
# Open MPI busy-polls while a rank waits; when a job's ranks outnumber its cores that starves the rank
# being waited for (mpi4py's ringtest: 26 s instead of 0.15 s). Added then, unless trainer.env sets it.
YIELD_WHEN_IDLE = "OMPI_MCA_mpi_yield_when_idle"


# Open MPI's shared-memory transport keeps each rank's segment in /dev/shm, named by host name, user, job and
# local rank (`vader_segment.<host>.<uid>.<job>.<local rank>`, Open MPI 5's `sm_segment` alike). In the process
# sandbox every pod's host name is the machine's: with 2 ranks a pod, the ranks of one local rank on two pods
# mapped one segment, and now and then one died of SIGSEGV under load. A pod's sessions (its daemon, the ranks
# it starts) keep them in its TMPDIR instead. Not the launcher's own environment: mpirun passes its MCA
# variables on to every daemon, which would make that one directory for all again; the ranks mpirun starts
# itself, on the launcher, are the job's only ones left in /dev/shm.
SHM_BACKING = ("OMPI_MCA_btl_vader_backing_directory", "OMPI_MCA_btl_sm_backing_directory")


def process_tmpdir(pod_dir: Path) -> dict[str, str]:
    """A process-sandbox pod's own temporary directory (`TMPDIR`), not the /tmp every pod shares."""
    return {TMPDIR: str(pod_dir / POD_TMP)}


def process_shm(pod_dir: Path) -> dict[str, str]:
    """Where a process-sandbox pod's sessions keep Open MPI's shared-memory segments (`SHM_BACKING`)."""
    return dict.fromkeys(SHM_BACKING, str(pod_dir / POD_TMP))
# Open MPI's daemons start each rank through the local cluster's rank agent (`rank_agent.py`), which reads
# the rank's output where it runs: Open MPI 4's variable and Open MPI 5's (PRRTE's). Each daemon splits the
# value at spaces, so an agent whose paths hold one cannot be given: its ranks' output goes through mpirun.
RANK_AGENT_MCA = ("OMPI_MCA_orte_fork_agent", "PRTE_MCA_odls_base_exec_agent")


def rank_agent_env(launch: str, agent: str, directory: str) -> dict[str, str]:
    """The variables that start every rank through `launch` (`rank_agent.LAUNCH`) and `agent`, writing into
    `directory` (paths as pods see them); none when a path holds a space."""
    argv = ["/bin/sh", launch, sys.executable, agent, directory]
    if any(" " in a or "\t" in a for a in argv):
        return {}
    return dict.fromkeys(RANK_AGENT_MCA, " ".join(argv))
