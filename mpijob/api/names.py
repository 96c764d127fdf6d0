"""Names, labels and well-known constants that Trainer, JobSet and the Job controller give a TrainJob's objects.

They live in one place so the controllers, the renderers and the validators agree on every string a
user program or `kubectl -l` may depend on (PARITY §2).
"""

from __future__ import annotations

import hashlib
import re

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_API_VERSION = f"{TRAINER_GROUP}/v1alpha1"
MAX_ENV = 128  # the CRD's maxItems for trainer.env

# replicatedJob and container names (Trainer constants.Node / constants.Launcher)
NODE = "node"
LAUNCHER = "launcher"
CONTAINER = "node"  # every MPI container is named `node`, the launcher's too

LABEL_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
LABEL_FRAMEWORK = "trainer.kubeflow.org/framework"

LABEL_JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
LABEL_RJOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_RJOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
LABEL_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
LABEL_JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
LABEL_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"
ENV_COMPLETION_INDEX = "JOB_COMPLETION_INDEX"

# MPI plugin (Trainer pkg/constants)
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE_KEY = "hostfile"
HOSTFILE_PATH = f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"
HOSTFILE_VOLUME = "mpi-hostfile"
SSH_VOLUME = "mpi-ssh-auth"
SSH_SECRET_TYPE = "kubernetes.io/ssh-auth"
SSH_PRIVATE_KEY = "ssh-privatekey"
SSH_PUBLIC_KEY = "ssh-publickey"
SSH_PRIVATE_FILE = "id_rsa"
SSH_PUBLIC_FILE = "id_rsa.pub"
SSH_AUTHORIZED_KEYS = "authorized_keys"
SSH_DEFAULT_MODE = 0o400
SSH_PRIVATE_FILE_MODE = 0o640
SSH_PUBLIC_FILE_MODE = 0o644
HOSTFILE_MODE = 0o444
RSH_ARGS = "-o ConnectionAttempts=10"

DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
OPEN_MPI = "OpenMPI"

# The four names Trainer sets on the launcher and refuses in trainer.env, and the Open MPI 5 (PRRTE)
# twins we also set because PRRTE ignores the ORTE names.
OMPI_HOSTFILE = "OMPI_MCA_orte_default_hostfile"
OMPI_KEEP_FQDN = "OMPI_MCA_orte_keep_fqdn_hostnames"
OMPI_SLOTS = "OMPI_MCA_orte_set_default_slots"
OMPI_RSH_ARGS = "OMPI_MCA_plm_rsh_args"
PRTE_HOSTFILE = "PRTE_MCA_prte_default_hostfile"
PRTE_KEEP_FQDN = "PRTE_MCA_prte_keep_fqdn_hostnames"
PRTE_SLOTS = "PRTE_MCA_prte_set_default_slots"
PRTE_SSH_ARGS = "PRTE_MCA_plm_ssh_args"
RESERVED_ENV: frozenset[str] = frozenset(
    {OMPI_HOSTFILE, OMPI_KEEP_FQDN, OMPI_SLOTS, OMPI_RSH_ARGS, PRTE_HOSTFILE, PRTE_KEEP_FQDN, PRTE_SLOTS, PRTE_SSH_ARGS}
)

# Kubernetes' random-suffix alphabet (no vowels, no look-alikes), so our suffixes look like the real ones.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

RFC1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def pod_suffix(uid: str, rjob: str, pod_index: int = 0) -> str:
    """Five suffix characters derived from the TrainJob uid, so a restarted controller re-creates the same names."""
    digest = hashlib.sha256(f"{uid}/{rjob}/{pod_index}".encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def hostname(job: str, rjob: str, job_index: int, pod_index: int) -> str:
    return f"{job}-{rjob}-{job_index}-{pod_index}"


def host(job: str, rjob: str, job_index: int, pod_index: int, subdomain: str | None = None) -> str:
    """The hostfile/DNS name `<job>-<rjob>-<jobIdx>-<podIdx>.<subdomain>` (JobSet's pod endpoint)."""
    return f"{hostname(job, rjob, job_index, pod_index)}.{subdomain or job}"


def pod_name(job: str, rjob: str, job_index: int, pod_index: int, uid: str) -> str:
    return f"{hostname(job, rjob, job_index, pod_index)}-{pod_suffix(uid, rjob, pod_index)}"


def ssh_secret_name(job: str) -> str:
    return f"{job}-mpi-ssh-auth"


def hostfile_configmap_name(job: str) -> str:
    return f"{job}-mpi-hostfile"
