"""The vocabulary: every API group and version, label and annotation key, condition reason and object
name that Trainer, JobSet, Kueue, the Job controller and mpijob give a TrainJob's objects.

Each word is defined here once, as Kueue keeps `pkg/controller/constants` and the Kubeflow SDK its
`constants.py`, and imported everywhere else, so the controllers, the renderers, the validators and
every client agree on every string a program, `kubectl -l` or a dashboard may depend on
(docs/parity.md). `tests/api/test_vocabulary.py` fails when a word defined here is spelled out again
in another module of the package.
"""

from __future__ import annotations

import hashlib
import re

# -- API groups and versions ---------------------------------------------------------------------

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
TRAINER_API_VERSION = f"{TRAINER_GROUP}/{TRAINER_VERSION}"
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"  # Kueue's storage version, and the one every client of ours prefers
KUEUE_V1BETA1 = "v1beta1"  # still served, converted on the way in and out
KUEUE_API_VERSION = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
KUEUE_VISIBILITY_GROUP = f"visibility.{KUEUE_GROUP}"
KUEUE_VISIBILITY_PATH = f"/apis/{KUEUE_VISIBILITY_GROUP}/{KUEUE_VERSION}"
SCHEDULING_GROUP = "scheduling.k8s.io"
META_API_VERSION = "meta.k8s.io/v1"
MAX_ENV = 128  # the CRD's maxItems for trainer.env

# replicatedJob and container names (Trainer constants.Node / constants.Launcher)
NODE = "node"
LAUNCHER = "launcher"
CONTAINER = "node"  # every MPI container is named `node`, the launcher's too

# -- Trainer's labels and managers ---------------------------------------------------------------

LABEL_ANCESTOR = f"{TRAINER_GROUP}/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
LABEL_FRAMEWORK = f"{TRAINER_GROUP}/framework"
MANAGED_BY_TRAINER = f"{TRAINER_GROUP}/trainjob-controller"  # spec.managedBy values Trainer accepts
MANAGED_BY_MULTIKUEUE = f"{KUEUE_GROUP}/multikueue"
LABEL_APP_NAME = "app.kubernetes.io/name"

# -- Kueue's labels (pkg/controller/constants) and priority sources -------------------------------

LABEL_QUEUE_NAME = f"{KUEUE_GROUP}/queue-name"
LABEL_PRIORITY_CLASS = f"{KUEUE_GROUP}/priority-class"
LABEL_JOB_UID = f"{KUEUE_GROUP}/job-uid"
PRIORITY_SOURCE_KUEUE = f"{KUEUE_GROUP}/workloadpriorityclass"
PRIORITY_SOURCE_POD = f"{SCHEDULING_GROUP}/priorityclass"

# -- mpijob's own keys, added beside upstream's --------------------------------------------------

ANNOTATION_WAITING = "mpijob.io/waiting"  # the human "why waiting" of a TrainJob, for every client to show
ANNOTATION_CAPACITY = "mpijob.io/capacity"  # "machine": a default ClusterQueue whose quota follows the machine

# -- JobSet's and the Job controller's labels ----------------------------------------------------

LABEL_JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
LABEL_RJOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_RJOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
LABEL_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
LABEL_JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
LABEL_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"
ENV_COMPLETION_INDEX = "JOB_COMPLETION_INDEX"

# -- Condition types and reasons of a TrainJob (Trainer, JobSet, and ours) -------------------------

COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"
REASON_COMPLETED = "AllJobsCompleted"  # JobSet's
REASON_FAILED_JOBS = "FailedJobs"  # JobSet's
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"  # Trainer's activeDeadlineSeconds
REASON_RUNTIME_NOT_SUPPORTED = "TrainingRuntimeNotSupported"  # Trainer's
REASON_CONTROL_PLANE_RESTARTED = "ControlPlaneRestarted"  # ours: the local cluster's server went away mid-run
# kube's terminated reason (exit 137) of a container the kubelet could not find after a restart; here a pod
# whose supervisor is gone without recording its exit (the machine rebooted, or the supervisor was killed)
REASON_CONTAINER_STATUS_UNKNOWN = "ContainerStatusUnknown"
REASON_SUSPENDED = "Suspended"  # Trainer's, of the Suspended condition (and of the pods a suspension stops)
REASON_RESUMED = "Resumed"  # Trainer's, of the Suspended condition turning False
REASON_DELETED = "TrainJobDeleted"  # ours: the pods of a TrainJob deleted while it ran, until they go with it

# -- MPI plugin (Trainer pkg/constants) ----------------------------------------------------------

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
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

RFC1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def pod_suffix(uid: str, rjob: str, pod_index: int = 0) -> str:
    """Five suffix characters derived from the TrainJob uid, so a restarted controller re-creates the same names."""
    digest = hashlib.sha256(f"{uid}/{rjob}/{pod_index}".encode()).digest()
    return "".join(SUFFIX_ALPHABET[b % len(SUFFIX_ALPHABET)] for b in digest[:5])


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


# -- Progress (Trainer's TrainJobStatus plugin and status server) and why a job waits ---------------

# What the plugin gives a trainer container: the status endpoint, and where its CA and token are
ENV_TRAINER_SERVER_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_TRAINER_SERVER_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TRAINER_SERVER_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
TRAINER_STATUS_MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
TRAINER_STATUS_VOLUME = "kubeflow-trainer-token"
TRAINER_STATUS_TOKEN_FILE = "token"
TRAINER_STATUS_TOKEN_EXPIRATION = 3600  # the projected token's expirationSeconds
TRAINER_STATUS_MAX_BODY = 1 << 16  # the status server's request limit (64 KiB)
# The estimated start of a waiting job (RFC 3339), beside ANNOTATION_WAITING on its Workload
ANNOTATION_ESTIMATED_START = "mpijob.io/estimated-start"


def trainer_tls_configmap_name(job: str) -> str:
    """The ConfigMap holding the status server's `ca.crt` for a job's projected volume."""
    return f"{job}-tls-config"


def trainjob_status_path(namespace: str, name: str) -> str:
    """Where a job's pods POST their trainerStatus (the status server's `StatusUrl`)."""
    return f"/apis/{TRAINER_API_VERSION}/namespaces/{namespace}/trainjobs/{name}/status"


def trainjob_status_audience(namespace: str, name: str) -> str:
    """The audience of a job's status token (`TokenAudience`): it opens that job's endpoint and nothing else."""
    return f"{TRAINER_API_VERSION}/namespaces/{namespace}/trainjobs/{name}/status"


# -- Kueue condition types and reasons (apis/kueue/v1beta2 workload_types.go, clusterqueue_types.go) --

# A Workload's condition types; QUOTA_RESERVED and ADMITTED are also the reasons Kueue gives when they
# turn True, and PREEMPTED the Evicted reason of a preemption.
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
FINISHED = "Finished"

# Why a Workload's QuotaReserved is False. A workload whose ClusterQueue is inactive gets SUSPENDED.
REASON_PENDING = "Pending"
REASON_WAITING_FOR_QUOTA = "WaitingForQuota"
REASON_EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
REASON_NO_MATCHING_FLAVOR = "NoMatchingFlavor"
REASON_WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
REASON_MISCONFIGURED = "Misconfigured"
REASON_INADMISSIBLE = "Inadmissible"  # its LocalQueue is stopped

# Evicted reasons of a HoldAndDrain eviction (then there is no Preempted condition)
REASON_CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
REASON_LOCAL_QUEUE_STOPPED = "LocalQueueStopped"

# Preempted reasons: where the preemptor found its victims
REASON_IN_CLUSTER_QUEUE = "InClusterQueue"
REASON_IN_COHORT_RECLAMATION = "InCohortReclamation"
REASON_IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
REASON_IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

# The `Active` condition of a ClusterQueue and of a LocalQueue, and its reasons
ACTIVE = "Active"
REASON_READY = "Ready"
REASON_STOPPED = "Stopped"  # a stopped ClusterQueue's, and a stopped LocalQueue's
REASON_FLAVOR_NOT_FOUND = "FlavorNotFound"
REASON_ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
REASON_TOPOLOGY_NOT_FOUND = "TopologyNotFound"
REASON_CLUSTER_QUEUE_INACTIVE = "ClusterQueueIsInactive"  # a LocalQueue's, mirroring its ClusterQueue
REASON_CLUSTER_QUEUE_MISSING = "ClusterQueueDoesNotExist"  # a LocalQueue's

# -- Audit (audit.k8s.io/v1 Events, docs/security.md) ----------------------------------------------

AUDIT_API_VERSION = "audit.k8s.io/v1"
AUDIT_LEVEL_METADATA = "Metadata"  # who, what, when and the answer's code; never a request or response body
AUDIT_STAGE_COMPLETE = "ResponseComplete"
AUDIT_STAGE_PANIC = "Panic"  # kube-apiserver's stage for a request whose handler crashed (answered 500)
AUDIT_ID_HEADER = "Audit-Id"  # kube-apiserver's response header (Go canonicalises its `Audit-ID`)
# Who created a TrainJob: set by the server from the authenticated user at creation, never by a client,
# and immutable afterwards (OpenShift's `openshift.io/requester`, in our own domain: OpenShift sets that
# one on a Project, and its tools read it with that meaning).
ANNOTATION_REQUESTER = "mpijob.io/requester"
# The audit Event of a TrainJob's end carries its outcome beside the requester (Event.annotations).
AUDIT_ANNOTATION_CONDITION = "mpijob.io/condition"  # Complete or Failed
AUDIT_ANNOTATION_REASON = "mpijob.io/reason"  # the condition's reason (AllJobsCompleted, FailedJobs, …)
# The audit Event of a `kubectl exec` session: its command, readable (the requestURI holds it escaped), and
# how it ended (the exit code, or "client gone")
AUDIT_ANNOTATION_COMMAND = "mpijob.io/command"
AUDIT_ANNOTATION_EXIT_CODE = "mpijob.io/exit-code"
# The identity the Trainer controller writes a TrainJob's status as (Trainer's controller-manager
# ServiceAccount in upstream's manifests), with the groups a ServiceAccount token authenticates with.
TRAINER_CONTROLLER_NAMESPACE = "kubeflow-system"
# Trainer's ConfigMap there holding its version, which the upstream SDK reads and every authenticated user may
TRAINER_PUBLIC_CONFIGMAP = "kubeflow-trainer-public"
TRAINER_CONTROLLER_SA = "kubeflow-trainer-controller-manager"
TRAINER_CONTROLLER_USER = f"system:serviceaccount:{TRAINER_CONTROLLER_NAMESPACE}:{TRAINER_CONTROLLER_SA}"
TRAINER_CONTROLLER_GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{TRAINER_CONTROLLER_NAMESPACE}",
                             "system:authenticated")

# -- Quotas: ResourceQuota keys and LimitRange item types (core/v1; docs/security.md) --------------

QUOTA_REQUESTS = "requests."  # prefix of a quota key counting requests: requests.cpu, requests.nvidia.com/gpu
QUOTA_LIMITS = "limits."  # prefix of a quota key counting limits: limits.cpu, limits.memory
QUOTA_COUNT = "count/"  # prefix of an object count key: count/trainjobs.trainer.kubeflow.org
QUOTA_PODS = "pods"  # the number of pods not yet finished
LIMIT_TYPE_CONTAINER = "Container"
LIMIT_TYPE_POD = "Pod"


# -- RBAC and identities (kube-apiserver's authentication, RBAC bootstrap policy, service accounts) --

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_VERSION = "v1"
AUTHORIZATION_GROUP = "authorization.k8s.io"  # SelfSubjectAccessReview, SelfSubjectRulesReview
AUTHENTICATION_GROUP = "authentication.k8s.io"  # SelfSubjectReview (`kubectl auth whoami`)
AUTHORIZATION_VERSION = "v1"
MPIJOB_GROUP = "mpijob.io"  # mpijob's own API beside upstream's: users
MPIJOB_VERSION = "v1alpha1"
SYSTEM_MASTERS = "system:masters"  # the group every request of which is allowed, as in kube
SYSTEM_AUTHENTICATED = "system:authenticated"
SYSTEM_UNAUTHENTICATED = "system:unauthenticated"
SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:"  # + "<namespace>:<name>"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"  # + ":<namespace>" for one namespace's
DEFAULT_SERVICE_ACCOUNT = "default"
SERVICE_ACCOUNT_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"  # token, namespace, ca.crt
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LABEL_BOOTSTRAPPING = "kubernetes.io/bootstrapping"  # "rbac-defaults" on the bootstrap policy
ANNOTATION_RBAC_AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
LABEL_AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
LABEL_AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
LABEL_AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"
LABEL_KUEUE_BATCH_ADMIN = "rbac.kueue.x-k8s.io/batch-admin"  # Kueue's kueue-batch-admin-role selects these
LABEL_KUEUE_BATCH_USER = "rbac.kueue.x-k8s.io/batch-user"  # and kueue-batch-user-role these
LABEL_KUEUE_ROLE = "rbac.kueue.x-k8s.io/role"
LABEL_KUBEFLOW_AGGREGATE_TO_ADMIN = "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-admin"
LABEL_KUBEFLOW_AGGREGATE_TO_EDIT = "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit"
LABEL_KUBEFLOW_AGGREGATE_TO_VIEW = "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-view"

# -- Tenant UIDs: OpenShift's SecurityContextConstraints (api/openshift/scc.py; docs/security.md "Tenant UIDs") --

# A namespace's UIDs and groups, "<first>/<size>", as OpenShift's namespace controller allocates them;
# set by the server at creation and immutable (a client's value is replaced, a change restored).
ANNOTATION_UID_RANGE = "openshift.io/sa.scc.uid-range"
ANNOTATION_SUPPLEMENTAL_GROUPS = "openshift.io/sa.scc.supplemental-groups"
ANNOTATION_SCC = "openshift.io/scc"  # on a pod: the SCC that admitted it
SECURITY_GROUP = "security.openshift.io"  # RBAC: verb `use` on `securitycontextconstraints` names an SCC
SCC_RESOURCE = "securitycontextconstraints"
SCC_ROLE_PREFIX = "system:openshift:scc:"  # + the SCC's name: the ClusterRole that grants its use

# -- A pod's ServiceAccount (kube's ServiceAccount admission plugin, the kubelet's service env) ----

SERVICE_ACCOUNT_VOLUME_PREFIX = "kube-api-access-"  # + five suffix characters: the projected volume
SERVICE_ACCOUNT_TOKEN_PATH = "token"  # the bound token, in the projected volume
SERVICE_ACCOUNT_NAMESPACE_PATH = "namespace"  # the pod's namespace (downward API)
SERVICE_ACCOUNT_TOKEN_EXPIRATION = 3607  # the admission plugin's expirationSeconds
PROJECTED_DEFAULT_MODE = 0o644  # 420, the projected volume's defaultMode as kube writes it
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"  # the ConfigMap kube's root-ca-cert-publisher puts in every namespace
ANNOTATION_DESCRIPTION = "kubernetes.io/description"
ROOT_CA_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
                       "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
                       "guaranteed across distributions of Kubernetes clusters.")  # kube's, verbatim
# What the kubelet puts in every container's environment for the `kubernetes` Service of `default`
# (client-go's `rest.InClusterConfig` reads the first two).
KUBERNETES_SERVICE_HOST = "KUBERNETES_SERVICE_HOST"
KUBERNETES_SERVICE_PORT = "KUBERNETES_SERVICE_PORT"

# -- NetworkPolicy (networking.k8s.io/v1; what the local network does with one: api/core/netpol.py) -----

NETWORKING_GROUP = "networking.k8s.io"
NETWORKING_VERSION = "v1"

# -- Why a job failed, and what every job did (api/trainer/failures.py, store/history.py; docs/troubleshooting.md,
# docs/history.md) -------------------------------------------------------------------------------------

# The class of a failure. The TrainJob's `Failed` condition keeps upstream's reason (FailedJobs); the class
# begins its message, is the reason of the Warning Event of the failure, and the `failure` of its record.
FAILURE_SSH_AUTH = "SSHAuthenticationRefused"
FAILURE_HOST_UNRESOLVABLE = "HostNotResolvable"
FAILURE_SSHD_NOT_READY = "SSHDNotReady"
REASON_OOM_KILLED = "OOMKilled"  # kube's terminated reason of a container the kernel OOM-killed; a class too
FAILURE_SIGNALED = "RankKilledBySignal"
FAILURE_COMMAND_NOT_FOUND = "CommandNotFound"
FAILURE_NOT_ENOUGH_SLOTS = "NotEnoughSlots"
FAILURE_DAEMON_LOST = "MPIDaemonLost"
FAILURE_NCCL = "NCCLError"
FAILURE_ONE_SIDED = "OneSidedUnavailable"  # an MPI window across pods, which Open MPI 4.1 cannot make
FAILURE_PROGRAM = "ProgramFailed"  # none of the above: the program itself exited non-zero
# mpijob.io's read-only job records (`mpijob history`), and a record's states besides COMPLETE and FAILED
JOB_RECORDS = "jobrecords"
JOB_RECORD_KIND = "JobRecord"
RECORD_PENDING, RECORD_RUNNING, RECORD_DELETED = "Pending", "Running", "Deleted"

# -- Observability: Prometheus, the resource metrics API, the machine's Node (docs/metrics.md) -----

METRICS_PATH = "/metrics"  # Prometheus' text exposition; RBAC `nonResourceURLs` decides who may read it
METRICS_GROUP = "metrics.k8s.io"  # metrics-server's resource metrics API: PodMetrics, NodeMetrics (`kubectl top`)
METRICS_VERSION = "v1beta1"
METRICS_READER_ROLE = "metrics-reader"  # the ClusterRole granting `get` on /metrics (kube-prometheus ships one)
AGGREGATED_METRICS_READER_ROLE = "system:aggregated-metrics-reader"  # metrics-server's, into view/edit/admin
# A PodMetrics' GPUs as NVML reports them (JSON list), beside metrics-server's cpu and memory `usage`
ANNOTATION_GPUS = "mpijob.io/gpus"
# The well-known labels a kubelet gives its Node
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_OS = "kubernetes.io/os"
LABEL_ARCH = "kubernetes.io/arch"
LABEL_CONTROL_PLANE = "node-role.kubernetes.io/control-plane"

# -- The dashboard (docs/dashboard.md): served by the local cluster, logged in by a one-time ticket --------

DASHBOARD_PATH = "/dashboard"  # the page and its assets; /dashboard/api/ is its session and what kube has no API for
DASHBOARD_API = f"{DASHBOARD_PATH}/api"
SESSION_COOKIE = "__Host-mpijob-session"  # __Host-: Secure, Path=/, no Domain, or the browser refuses it
CSRF_HEADER = "X-CSRF-Token"  # every write with the session cookie carries the session's token in it
LOGIN_FRAGMENT = "#login="  # the login link: the ticket rides in the fragment, which no request or log sees

# -- MPI implementations (docs/mpi-implementations.md) ---------------------------------------------------
# Trainer's CRD admits only mpiImplementation OpenMPI, so a runtime for another MPI says so beside the
# spec: this annotation names the implementation (MPI Operator's words, plus Open MPI 5), which decides
# the hostfile format and launcher variables, and, on the local cluster (which ignores images), which of
# the machine's MPI installs the pods run.
ANNOTATION_MPI_IMPLEMENTATION = "mpijob.io/mpi-implementation"
MPI_OPEN_MPI_5 = "OpenMPI5"
MPI_INTEL = "Intel"  # MPI Operator's value of mpiImplementation
MPI_MPICH = "MPICH"  # MPI Operator's value of mpiImplementation
MPI_IMPLEMENTATIONS = (OPEN_MPI, MPI_OPEN_MPI_5, MPI_MPICH, MPI_INTEL)
# The launcher variables MPI Operator sets for Intel MPI and MPICH (pkg/controller/mpi_job_controller.go).
# MPICH's Hydra (5.0.2) reads HYDRA_LAUNCHER_EXTRA_ARGS, not MPI Operator's HYDRA_LAUNCH_EXTRA_ARGS: both are set.
I_MPI_HOSTFILE = "I_MPI_HYDRA_HOST_FILE"
I_MPI_SSH_ARGS = "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS"
I_MPI_PERHOST = "I_MPI_PERHOST"
HYDRA_HOSTFILE = "HYDRA_HOST_FILE"
HYDRA_SSH_ARGS = "HYDRA_LAUNCH_EXTRA_ARGS"
HYDRA_LAUNCHER_SSH_ARGS = "HYDRA_LAUNCHER_EXTRA_ARGS"
# The interface whose address Hydra's proxies call back to (its default is the host name, which in the
# process sandbox is the machine's and need not resolve: a fresh Debian root does not list it).
I_MPI_IFACE = "I_MPI_HYDRA_IFACE"
HYDRA_IFACE = "HYDRA_IFACE"
FAILURE_MPI_NOT_INSTALLED = "MPINotInstalled"  # the class of a job whose runtime's MPI install is missing

# -- MPI Operator (kubeflow.org/v2beta1 MPIJob, legacy; docs/migration.md) ------------------------------
MPI_OPERATOR_GROUP = "kubeflow.org"
MPI_OPERATOR_VERSION = "v2beta1"
MPI_OPERATOR_API_VERSION = f"{MPI_OPERATOR_GROUP}/{MPI_OPERATOR_VERSION}"
MPIJOB_KIND = "MPIJob"
REPLICA_LAUNCHER = "Launcher"  # the keys of spec.mpiReplicaSpecs
REPLICA_WORKER = "Worker"
# spec.launcherCreationPolicy: create the launcher once every worker is Ready (else "AtStartup")
LAUNCHER_WAIT_FOR_WORKERS = "WaitForWorkersReady"
MANAGED_BY_MPI_OPERATOR = f"{MPI_OPERATOR_GROUP}/mpi-operator"  # runPolicy.managedBy: MPI Operator's own controller
# Served and run as-is by the local cluster (mpijob/controllers/mpioperator/; docs/migration.md): MPI
# Operator's labels (pkg/apis/kubeflow/v2beta1/constants.go), the launcher/worker role values, and the
# names of what its controller creates for a job (pkg/controller/mpi_job_controller.go)
MPI_OPERATOR_NAME = "mpi-operator"  # the value of LABEL_MPI_OPERATOR_NAME
LABEL_MPI_OPERATOR_NAME = "training.kubeflow.org/operator-name"
LABEL_MPI_JOB_NAME = "training.kubeflow.org/job-name"
LABEL_MPI_JOB_ROLE = "training.kubeflow.org/job-role"  # "launcher" | "worker"
LABEL_MPI_REPLICA_INDEX = "training.kubeflow.org/replica-index"
MPI_ROLE_WORKER = "worker"  # the worker role (the launcher's is LAUNCHER)
ENV_MPI_JOB_ROLE = "K_MPI_JOB_ROLE"  # every container's role, in its env
# The label MPI Operator's manifests aggregate its edit role into kubeflow-mpijobs-admin with
LABEL_KUBEFLOW_AGGREGATE_TO_MPIJOBS_ADMIN = "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-mpijobs-admin"
MPIJOB_SSH_VOLUME = "ssh-auth"
MPIJOB_CONFIG_VOLUME = "mpi-job-config"
# Its conditions' reasons (pkg/controller/mpi_job_controller_status.go)
MPIJOB_CREATED, MPIJOB_RUNNING, MPIJOB_SUCCEEDED = "MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"
MPIJOB_FAILED, MPIJOB_SUSPENDED, MPIJOB_RESUMED = "MPIJobFailed", "MPIJobSuspended", "MPIJobResumed"
# What the local cluster answers every write of an MPIJob with, as kube-apiserver warns of a deprecated version
MPIJOB_DEPRECATED = (f"{MPI_OPERATOR_API_VERSION} {MPIJOB_KIND} is deprecated; convert it to a TrainJob: "
                     "mpijob convert -f <file>")


def mpijob_worker_name(job: str, index: int) -> str:
    """A worker pod's name and hostname: `<job>-worker-<i>`."""
    return f"{job}-{MPI_ROLE_WORKER}-{index}"


def mpijob_launcher_hostname(job: str) -> str:
    """The launcher's hostname (its Job's name): `<job>-launcher`."""
    return f"{job}-{LAUNCHER}"


def mpijob_host(hostname: str, job: str, namespace: str) -> str:
    """A pod's hostfile/DNS name through the job's headless Service: `<hostname>.<job>.<namespace>.svc`."""
    return f"{hostname}.{job}.{namespace}.svc"


def mpijob_ssh_secret_name(job: str) -> str:
    return f"{job}-ssh"


def mpijob_config_name(job: str) -> str:
    """The ConfigMap holding the hostfile (key `hostfile`)."""
    return f"{job}-config"


# -- Platform bundle (`mpijob platform render`, docs/platform.md) ---------------------------------------
# The pod annotation Istio's sidecar injector reads ("false": no sidecar; its proxy breaks mpirun's ssh)
ANNOTATION_ISTIO_INJECT = "sidecar.istio.io/inject"
# Multus: the secondary networks (NetworkAttachmentDefinitions) a pod is attached to, e.g. an RDMA network
ANNOTATION_MULTUS_NETWORKS = "k8s.v1.cni.cncf.io/networks"
# The node label NVIDIA's GPU feature discovery sets to the GPU model (a ResourceFlavor's nodeLabels)
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
SECURITY_VERSION = "v1"  # security.openshift.io/v1: SecurityContextConstraints
SECURITY_API_VERSION = f"{SECURITY_GROUP}/{SECURITY_VERSION}"
# What the bundle's objects carry so an administrator can list (and prune) them: app.kubernetes.io/part-of
LABEL_PART_OF = "app.kubernetes.io/part-of"

# -- Pre-flight checks (`mpijob doctor`, docs/doctor.md) --------------------------------------------------
JOBSET_GROUP = "jobset.x-k8s.io"  # JobSet's API, which Trainer builds on (the local cluster does its work itself)
LABEL_ISTIO_INJECTION = "istio-injection"  # a namespace label: "enabled" has Istio inject its sidecar into pods
LABEL_ISTIO_REVISION = "istio.io/rev"  # a namespace label naming the Istio revision that injects its pods
LABEL_NAMESPACE_NAME = "kubernetes.io/metadata.name"  # the label kube gives every namespace: its name
# OpenShift AI's namespace label: Kueue manages every job there, and a job without a queue-name is refused
LABEL_OPENSHIFT_KUEUE_MANAGED = "kueue.openshift.io/managed"
KUEUE_DEFAULT_LOCAL_QUEUE = "default"  # Kueue's LocalQueueDefaulting: the namespace's queue for unlabelled jobs

# -- Runtime patches and node placement (api/trainer/patches.py, api/core/placement.py; docs/placement.md) -----------
# What kube-scheduler says of a pod it cannot place: the pod's condition, its reason, and the Event's
POD_SCHEDULED = "PodScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_FAILED_SCHEDULING = "FailedScheduling"
SCHEDULER = "default-scheduler"  # kube-scheduler's name: a pod's spec.schedulerName, its Events' source
# The node labels NVIDIA's GPU feature discovery sets beside LABEL_GPU_PRODUCT: how many GPUs, MiB each
LABEL_GPU_COUNT = "nvidia.com/gpu.count"
LABEL_GPU_MEMORY = "nvidia.com/gpu.memory"
# Trainer's initializer steps and containers: a runtime patch may not set their env (nor the node's)
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"  # what a cordoned node's pods must tolerate

# -- Stored SecurityContextConstraints in pod admission (api/openshift/scc_stored.py; docs/security.md "Tenant UIDs") --
# The strategy types of an SCC: runAsUser takes all four, seLinuxContext, fsGroup and supplementalGroups the
# first and the last
SCC_MUST_RUN_AS = "MustRunAs"
SCC_MUST_RUN_AS_RANGE = "MustRunAsRange"
SCC_MUST_RUN_AS_NON_ROOT = "MustRunAsNonRoot"
SCC_RUN_AS_ANY = "RunAsAny"

# -- Volumes and PersistentVolumeClaims (api/core/volumes.py, controllers/claims.py; docs/volumes.md) ---------
PVC_KIND = "PersistentVolumeClaim"
# What kube's PVC protection controller keeps on a claim a pod may still use, so deleting it waits
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
# What kube's PV controller writes on a claim it bound, and the provisioner it asked for the volume
ANNOTATION_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANNOTATION_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANNOTATION_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
LOCAL_PROVISIONER = "mpijob.io/local-path"  # the local cluster's provisioner: a directory under $MPIJOB_HOME
LOCAL_STORAGE_CLASS = "local-path"  # the class name a claim may give to ask for it by name
REASON_PROVISIONING_SUCCEEDED = "ProvisioningSucceeded"  # the provisioner's Event on a claim it bound
REASON_FAILED_MOUNT = "FailedMount"  # the kubelet's Event on a pod whose volume it could not set up
CLAIM_BOUND, CLAIM_PENDING = "Bound", "Pending"  # a claim's status.phase
READ_WRITE_ONCE = "ReadWriteOnce"
READ_ONLY_MANY = "ReadOnlyMany"
READ_WRITE_MANY = "ReadWriteMany"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
# hostPath volume types, checked as the kubelet checks them ("" checks nothing)
HOST_PATH_DIRECTORY_OR_CREATE = "DirectoryOrCreate"
HOST_PATH_DIRECTORY = "Directory"
HOST_PATH_FILE_OR_CREATE = "FileOrCreate"
HOST_PATH_FILE = "File"
HOST_PATH_SOCKET = "Socket"
HOST_PATH_CHAR_DEVICE = "CharDevice"
HOST_PATH_BLOCK_DEVICE = "BlockDevice"
MEDIUM_MEMORY = "Memory"  # an emptyDir on a tmpfs


def volume_name(claim_uid: str) -> str:
    """The PersistentVolume a claim is bound to, named as kube's dynamic provisioning names it."""
    return f"pvc-{claim_uid}"

# -- MPIJobs through Kueue (api/kueue/owners.py, controllers/kueue/integrations.py; docs/migration.md) ------
KUEUE_CREATED_WORKLOAD = "CreatedWorkload"  # Kueue's job reconciler's Event when it makes a job's Workload
MPIJOB_SUCCEEDED_CONDITION = "Succeeded"  # MPI Operator's condition type of a job that succeeded
MPIJOB_SUSPENDED_MESSAGE, MPIJOB_RESUMED_MESSAGE = "MPIJob suspended", "MPIJob resumed"  # MPI Operator's words

# -- A bound on every phase of a run, and stalls (api/trainer/bounds.py, controllers/trainer/watchdog.py;
# docs/troubleshooting.md "Wire-up timeout", "Stalled") -------------------------------------------------
# Durations ("90s", "5m", "1m30s", or seconds) on a TrainJob, an MPIJob or their runtime (the job's win):
ANNOTATION_READY_TIMEOUT = "mpijob.io/ready-timeout"  # every node accepting the job key
ANNOTATION_WIREUP_TIMEOUT = "mpijob.io/wireup-timeout"  # mpirun started → every rank running
ANNOTATION_EXIT_GRACE = "mpijob.io/exit-grace"  # every rank ended and the log quiet → mpirun must have exited
ANNOTATION_STALL_TIMEOUT = "mpijob.io/stall-timeout"  # no output and no CPU this long: the job looks stalled
ANNOTATION_ON_STALL = "mpijob.io/on-stall"  # what a stall does: ON_STALL_WARN (the default) or ON_STALL_FAIL
ON_STALL_WARN, ON_STALL_FAIL = "warn", "fail"
FAILURE_WIREUP_TIMEOUT = "WireUpTimeout"  # a class: mpirun started, but not every rank ran within the bound
# The class of a job failed for looking stalled (ANNOTATION_ON_STALL: fail), and, either way, the reason of
# its Warning Event and a TrainJob's condition type while it looks stalled; the condition's reasons:
FAILURE_STALLED = "Stalled"
REASON_NO_PROGRESS = "NoOutputNoCPU"
REASON_PROGRESSING = "ProgressResumed"
# mpirun still running after its ranks had all ended and the log had gone quiet: ended, the job's outcome the ranks'
REASON_LAUNCHER_HUNG = "LauncherDidNotExit"
REASON_UNHEALTHY = "Unhealthy"  # the kubelet's Warning Event of a pod whose readiness probe fails

# -- Bare pods: a Pod no job owns (`kubectl run`), run by the local kubelet (api/core/bare_pods.py,
# api/core/restarts.py, controllers/kubelet/bare_pods.py; docs/bare-pods.md) -----------------------------
RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER = "Always", "OnFailure", "Never"  # a pod's restartPolicy
REASON_CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"  # the kubelet's waiting reason while a restart backs off
REASON_BACK_OFF = "BackOff"  # its Warning Event then
REASON_SCHEDULED = "Scheduled"  # kube-scheduler's Event on a pod it bound
# the kubelet's Events on a container it made, started, or stops
REASON_CREATED, REASON_STARTED, REASON_KILLING = "Created", "Started", "Killing"
# a terminated container's reasons besides REASON_OOM_KILLED, by its exit code (0 or not)
REASON_CONTAINER_COMPLETED, REASON_CONTAINER_ERROR = "Completed", "Error"
