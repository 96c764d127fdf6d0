"""The bundle's OpenShift SecurityContextConstraints for MPI pods, and who may use it.

MPI pods need nothing privileged: sshd listens on 2222 as the pod's own user, mpirun and the ranks are
ordinary processes. So the SCC grants nothing `restricted-v2` does not, and says so explicitly: no
privilege or escalation, every capability dropped (`NET_BIND_SERVICE` allowed only when asked, for an
sshd on a port below 1024), UIDs from the namespace's range (`MustRunAsRange`: OpenShift picks one, the
runtimes name none), SELinux labels assigned per namespace, and only the volume types a training job
mounts. Its `use` is granted to the team namespaces' ServiceAccounts, which the Job controller creates
the pods as.
"""

from __future__ import annotations

from mpijob.api import Obj, names
from mpijob.api.core.resources import CLUSTER_ROLES, ROLE_BINDINGS, SECURITY_CONTEXT_CONSTRAINTS
from mpijob.api.platform.options import Options
from mpijob.api.platform.runtimes import PART_OF

SCC_NAME = "mpijob-mpi"
NET_BIND_SERVICE = "NET_BIND_SERVICE"
VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
           "secret")  # the SSH Secret, the hostfile ConfigMap, the token, data on PVCs, /dev/shm as emptyDir
DESCRIPTION = ("MPI training pods (Kubeflow Trainer): non-root with the namespace's UIDs, no privilege, every "
               "capability dropped; sshd listens on an unprivileged port.")


def constraints(opts: Options) -> Obj:
    return {
        "apiVersion": SECURITY_CONTEXT_CONSTRAINTS.api_version, "kind": SECURITY_CONTEXT_CONSTRAINTS.kind,
        "metadata": {"name": SCC_NAME, "labels": {names.LABEL_PART_OF: PART_OF},
                     "annotations": {names.ANNOTATION_DESCRIPTION: DESCRIPTION}},
        "allowPrivilegedContainer": False,
        "allowPrivilegeEscalation": False,
        "allowHostDirVolumePlugin": False,
        "allowHostIPC": False,
        "allowHostNetwork": False,
        "allowHostPID": False,
        "allowHostPorts": False,
        "readOnlyRootFilesystem": False,
        "requiredDropCapabilities": ["ALL"],
        "allowedCapabilities": [NET_BIND_SERVICE] if opts.net_bind_service else None,
        "defaultAddCapabilities": None,
        "runAsUser": {"type": names.SCC_MUST_RUN_AS_RANGE},
        "seLinuxContext": {"type": names.SCC_MUST_RUN_AS},
        "fsGroup": {"type": names.SCC_MUST_RUN_AS},
        "supplementalGroups": {"type": names.SCC_RUN_AS_ANY},
        "seccompProfiles": ["runtime/default"],
        "volumes": list(VOLUMES),
        "users": [],
        "groups": [],
        "priority": None,
    }


def use_role() -> Obj:
    """OpenShift's convention for an SCC's grant: ClusterRole `system:openshift:scc:<name>`, verb `use`."""
    return {"apiVersion": CLUSTER_ROLES.api_version, "kind": CLUSTER_ROLES.kind,
            "metadata": {"name": f"{names.SCC_ROLE_PREFIX}{SCC_NAME}", "labels": {names.LABEL_PART_OF: PART_OF}},
            "rules": [{"apiGroups": [names.SECURITY_GROUP], "resources": [names.SCC_RESOURCE],
                       "resourceNames": [SCC_NAME], "verbs": ["use"]}]}


def render(opts: Options) -> list[Obj]:
    """The SCC, its `use` role, and a RoleBinding of it to each team namespace's ServiceAccounts."""
    out = [constraints(opts), use_role()]
    for team in opts.teams:
        out.append({
            "apiVersion": ROLE_BINDINGS.api_version, "kind": ROLE_BINDINGS.kind,
            "metadata": {"name": f"scc-{SCC_NAME}", "namespace": team.namespace,
                         "labels": {names.LABEL_PART_OF: PART_OF}},
            "roleRef": {"apiGroup": names.RBAC_GROUP, "kind": CLUSTER_ROLES.kind,
                        "name": f"{names.SCC_ROLE_PREFIX}{SCC_NAME}"},
            "subjects": [{"apiGroup": names.RBAC_GROUP, "kind": "Group",
                          "name": f"{names.SERVICE_ACCOUNTS_GROUP}:{team.namespace}"}],
        })
    return out
