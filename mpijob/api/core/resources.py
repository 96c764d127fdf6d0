"""The resource types the local cluster serves: one registry that routing, discovery and the store share."""

from __future__ import annotations

from dataclasses import dataclass, field

from mpijob.api import names


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # "status", "log"
    verbs: tuple[str, ...] = ("create", "delete", "get", "list", "patch", "update", "watch")
    categories: tuple[str, ...] = field(default=())

    @property
    def key(self) -> str:
        """Storage key: versions of one group share their objects."""
        return f"{self.group}/{self.plural}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """`plural.group`, as kube-apiserver names a resource in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def builtin(self) -> bool:
        """Compiled into kube-apiserver (strict decoding, strategic merge), not a custom resource."""
        return self.group in BUILTIN_GROUPS


BUILTIN_GROUPS = frozenset({"", names.RBAC_GROUP, names.NETWORKING_GROUP})


NAMESPACES = Resource("", "v1", "namespaces", "namespace", "Namespace", False, ("ns",), ("status",))
# kube's connect subresources of a pod: a session with it (`routes/connect.py`), authorized as `create`
CONNECT_SUBRESOURCES = ("exec", "attach", "portforward")
# `all`: kube's category of the workload kinds (`kubectl get all`); pods are the one of them served here
PODS = Resource("", "v1", "pods", "pod", "Pod", True, ("po",), ("status", "log", *CONNECT_SUBRESOURCES),
                categories=("all",))
EVENTS = Resource("", "v1", "events", "event", "Event", True, ("ev",))
SECRETS = Resource("", "v1", "secrets", "secret", "Secret", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",))
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True, ("sa",))
RESOURCE_QUOTAS = Resource("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", True, ("quota",), ("status",))
LIMIT_RANGES = Resource("", "v1", "limitranges", "limitrange", "LimitRange", True, ("limits",))
# Claims, bound to directories of this machine by the local provisioner (`mpijob.controllers.claims`)
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", names.PVC_KIND,
                                    True, ("pvc",), ("status",))
# The machine, registered by the local kubelet (`controllers/kubelet/node.py`) as a kubelet registers its Node
NODES = Resource("", "v1", "nodes", "node", "Node", False, ("no",), ("status",))
TRAINJOBS = Resource(names.TRAINER_GROUP, names.TRAINER_VERSION, "trainjobs", "trainjob", "TrainJob", True, (),
                     ("status",))
TRAINING_RUNTIMES = Resource(names.TRAINER_GROUP, names.TRAINER_VERSION, "trainingruntimes", "trainingruntime",
                             "TrainingRuntime", True)
CLUSTER_TRAINING_RUNTIMES = Resource(
    names.TRAINER_GROUP, names.TRAINER_VERSION, "clustertrainingruntimes", "clustertrainingruntime",
    "ClusterTrainingRuntime", False,
)

# RBAC (rbac.authorization.k8s.io/v1), enforced by `mpijob.api.core.rbac`.
ROLES = Resource(names.RBAC_GROUP, names.RBAC_VERSION, "roles", "role", "Role", True)
CLUSTER_ROLES = Resource(names.RBAC_GROUP, names.RBAC_VERSION, "clusterroles", "clusterrole", "ClusterRole", False)
ROLE_BINDINGS = Resource(names.RBAC_GROUP, names.RBAC_VERSION, "rolebindings", "rolebinding", "RoleBinding", True)
CLUSTER_ROLE_BINDINGS = Resource(names.RBAC_GROUP, names.RBAC_VERSION, "clusterrolebindings", "clusterrolebinding",
                                 "ClusterRoleBinding", False)
RBAC_KINDS = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
# NetworkPolicy (networking.k8s.io/v1): what the local network does with one is `mpijob.api.core.netpol`'s to say.
NETWORK_POLICIES = Resource(names.NETWORKING_GROUP, names.NETWORKING_VERSION, "networkpolicies", "networkpolicy",
                            "NetworkPolicy", True, ("netpol",))

# MPI Operator's MPIJob (kubeflow.org/v2beta1), served and run as-is for a migration's dual-support window
# (`mpijob.controllers.mpioperator`); its CRD names no short names, categories or printer columns.
MPIJOBS = Resource(names.MPI_OPERATOR_GROUP, names.MPI_OPERATOR_VERSION, "mpijobs", "mpijob", names.MPIJOB_KIND, True,
                   (), ("status",))

# OpenShift's SecurityContextConstraints: stored and served for platform bundles; pods are admitted with them
# beside the built-in SCCs (`mpijob.api.openshift.scc`, `mpijob.api.openshift.scc_stored`; schema and checks:
# `mpijob.api.openshift.scc_crd`).
SECURITY_CONTEXT_CONSTRAINTS = Resource(names.SECURITY_GROUP, names.SECURITY_VERSION, "securitycontextconstraints",
                                        "securitycontextconstraints", "SecurityContextConstraints", False, ("scc",))

# Kueue: v1beta2 is the storage (and preferred) version; v1beta1 is still served, converted on the way
# in and out by `mpijob.api.kueue.conversion`. Short names are the CRDs'.


def _kueue(version: str) -> tuple[Resource, ...]:
    return (
        Resource(names.KUEUE_GROUP, version, "resourceflavors", "resourceflavor", "ResourceFlavor", False,
                 ("flavor", "flavors", "rf")),
        Resource(names.KUEUE_GROUP, version, "clusterqueues", "clusterqueue", "ClusterQueue", False, ("cq",),
                 ("status",)),
        Resource(names.KUEUE_GROUP, version, "localqueues", "localqueue", "LocalQueue", True, ("queue", "queues", "lq"),
                 ("status",)),
        Resource(names.KUEUE_GROUP, version, "workloadpriorityclasses", "workloadpriorityclass",
                 "WorkloadPriorityClass", False, ("wpc",)),
        Resource(names.KUEUE_GROUP, version, "workloads", "workload", "Workload", True,
                 ("kwl", "kueueworkload", "kueueworkloads"), ("status",)),
        Resource(names.KUEUE_GROUP, version, "cohorts", "cohort", "Cohort", False, ("co",), ("status",)),
    )


RESOURCE_FLAVORS, CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOAD_PRIORITY_CLASSES, WORKLOADS, COHORTS = _kueue(
    names.KUEUE_VERSION)
KUEUE_V1BETA1: tuple[Resource, ...] = _kueue(names.KUEUE_V1BETA1)

ALL: tuple[Resource, ...] = (
    NAMESPACES,
    PODS,
    EVENTS,
    SECRETS,
    CONFIGMAPS,
    SERVICE_ACCOUNTS,
    RESOURCE_QUOTAS,
    LIMIT_RANGES,
    PERSISTENT_VOLUME_CLAIMS,
    NODES,
    TRAINJOBS,
    TRAINING_RUNTIMES,
    CLUSTER_TRAINING_RUNTIMES,
    MPIJOBS,
    *RBAC_KINDS,
    NETWORK_POLICIES,
    SECURITY_CONTEXT_CONSTRAINTS,
    RESOURCE_FLAVORS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    COHORTS,
    *KUEUE_V1BETA1,
)

_BY_PATH = {(r.group, r.version, r.plural): r for r in ALL}
_BY_VERSION_KIND = {(r.group, r.version, r.kind): r for r in ALL}
_STORAGE: dict[str, Resource] = {}
for _r in ALL:  # the first version listed of a resource is where its objects are stored
    _STORAGE.setdefault(_r.key, _r)
_BY_KIND = {(r.group, r.kind): r for r in _STORAGE.values()}


def lookup(group: str, version: str, plural: str) -> Resource | None:
    return _BY_PATH.get((group, version, plural))


def for_kind(api_version: str, kind: str) -> Resource | None:
    """The resource an object with this `apiVersion`/`kind` belongs to (that version when served)."""
    group, _, version = api_version.rpartition("/")
    return _BY_VERSION_KIND.get((group, version, kind)) or _BY_KIND.get((group, kind))


def storage(res: Resource) -> Resource:
    """The version `res`'s objects are stored in (`res` itself unless it is an older served version)."""
    return _STORAGE[res.key]


def served_versions() -> tuple[Resource, ...]:
    """One entry per stored resource: what a namespace deletion or a cascade must visit once."""
    return tuple(_STORAGE.values())


def groups() -> dict[str, list[str]]:
    """Served API groups and their versions, the core group as ""."""
    out: dict[str, list[str]] = {}
    for r in ALL:
        versions = out.setdefault(r.group, [])
        if r.version not in versions:
            versions.append(r.version)
    return out
