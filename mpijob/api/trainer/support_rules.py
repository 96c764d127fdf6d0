"""The rule tables of `support.py`: per kind and field path, whether the local cluster honours, warns about
or refuses a field, and why.

Trainer's kinds first (a TrainJob, a (Cluster)TrainingRuntime), then Kueue's, MPI Operator's MPIJob and
the PersistentVolumeClaim. Paths are written as `kubectl explain` walks them, with `[]` after a list; a
rule covers its field and everything below it unless a longer rule says otherwise (`support.rule_for`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpijob.api.core import volumes
from mpijob.api.names import (
    LABEL_PRIORITY_CLASS,
    LABEL_QUEUE_NAME,
    MANAGED_BY_MPI_OPERATOR,
    MEDIUM_MEMORY,
    MPIJOB_KIND,
    PVC_KIND,
)

HONOURED, WARNED, REFUSED = "honoured", "warned", "refused"
UNMOUNTABLE = ("this type of volume is not provided by the local cluster, which mounts persistentVolumeClaim, "
               "hostPath, emptyDir, configMap, secret, downwardAPI and projected volumes; for NFS or another share, "
               "mount it on this machine and use a hostPath volume to it (docs/volumes.md)")
_RESOURCE_FIELDS = "resource fields are not written into downwardAPI volumes by the local cluster; use fieldRef"


@dataclass(frozen=True)
class Rule:
    verdict: str
    why: str = ""  # for warned and refused fields: what the user should know, and the fix
    honoured: tuple[Any, ...] = ()  # values of this very field that are honoured whatever the verdict


def _h(why: str = "") -> Rule:
    return Rule(HONOURED, why)


def _w(why: str) -> Rule:
    return Rule(WARNED, why)


def _r(why: str, honoured: tuple[Any, ...] = ()) -> Rule:
    return Rule(REFUSED, why, honoured)


_OBJECT = {"apiVersion": _h(), "kind": _h(), "metadata": _h()}
_META = {**_OBJECT, "status": _h()}  # for kinds with a status

TRAINJOB: dict[str, Rule] = {
    **_META,
    "spec.runtimeRef": _h(),
    "spec.suspend": _h(),
    "spec.activeDeadlineSeconds": _h(),
    "spec.managedBy": _h(),
    "spec.trainer.command": _h(),
    "spec.trainer.args": _h(),
    "spec.trainer.env": _h(),
    "spec.trainer.env[].valueFrom": _r("env from a Secret, ConfigMap or field is not resolved by the local cluster "
                                       "yet; give the value itself"),
    "spec.trainer.numNodes": _h(),
    "spec.trainer.numProcPerNode": _h(),
    "spec.trainer.resourcesPerNode": _h(),
    "spec.trainer.image": _w("recorded on the pods, not pulled: the local cluster runs this machine's programs"),
    "spec.initializer": _r("dataset and model initializers do not run on the local cluster yet; fetch the data "
                           "in the training command, or run on a cluster with Trainer"),
    # Each patched field of the runtime has the verdict of the same field of a runtime (`rule_for`): the
    # runtime the job runs is the patched one (api/trainer/patches.py), and both must say the same.
    "spec.runtimePatches": _h(),
}
PATCHED = "spec.runtimePatches[].trainingRuntimeSpec"  # a runtime's `spec`, inside a TrainJob's patch

_JOB = "spec.template.spec.replicatedJobs[].template"
_POD = f"{_JOB}.spec.template.spec"
_CTR = f"{_POD}.containers[]"
_ONE_MACHINE = "no effect on one machine: every pod runs on this machine"
NOT_RUN = "not run by the local cluster"
_EVERY_NODE = "every node's sshd accepts the job's key"

RUNTIME: dict[str, Rule] = {
    **_OBJECT,
    "spec.mlPolicy": _h(),  # MPI runs; other frameworks are stored and their jobs fail TrainingRuntimeNotSupported
    "spec.podGroupPolicy": _w("gang scheduling: the local cluster admits a job's pods all together anyway"),
    "spec.template.metadata": _w("labels and annotations of the JobSet: the local cluster makes no JobSet"),
    "spec.template.spec": _w("JobSet behaviour the local cluster does not reproduce"),
    "spec.template.spec.replicatedJobs[].name": _h(),
    "spec.template.spec.replicatedJobs[].replicas": _h(),
    "spec.template.spec.replicatedJobs[].dependsOn": _w(f"the launcher always waits until {_EVERY_NODE}"),
    "spec.template.spec.network": _h(),
    "spec.template.spec.successPolicy": _w("a job succeeds when its launcher does, as Trainer's MPI runtimes say "
                                           "(operator All, targetReplicatedJobs [launcher])"),
    "spec.template.spec.startupPolicy": _w(f"nodes start first and the launcher waits until {_EVERY_NODE}"),
    "spec.template.spec.failurePolicy": _r("restarts are not made by the local cluster yet: the first failure "
                                           "ends the job; remove failurePolicy"),
    f"{_JOB}.metadata": _h(),
    f"{_JOB}.spec": _w("Job behaviour the local cluster does not reproduce"),
    f"{_JOB}.spec.template.metadata": _h(),
    f"{_JOB}.spec.backoffLimit": _r("retries are not made by the local cluster yet: the first failure ends the "
                                    "job; remove backoffLimit"),
    f"{_JOB}.spec.activeDeadlineSeconds": _r("use the TrainJob's spec.activeDeadlineSeconds"),
    f"{_POD}": _w(_ONE_MACHINE),
    f"{_POD}.nodeSelector": _h(),  # placement on the machine's Node (api/core/placement.py)
    f"{_POD}.nodeName": _h(),
    f"{_POD}.tolerations": _h(),
    f"{_POD}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": _h(),
    f"{_POD}.schedulingGates": _r("scheduling gates are not lifted by anything on the local cluster: the pods "
                                  "would never start; remove schedulingGates"),
    f"{_POD}.imagePullSecrets": _w("images are not pulled by the local cluster: it runs this machine's programs"),
    f"{_POD}.securityContext.runAsUser": _h(),
    f"{_POD}.securityContext.runAsGroup": _h(),
    f"{_POD}.securityContext.fsGroup": _h(),
    f"{_POD}.serviceAccountName": _h(),
    f"{_POD}.automountServiceAccountToken": _h(),
    # Volumes (api/core/volumes.py, docs/volumes.md): the types the local cluster mounts are honoured, any other refused
    f"{_POD}.volumes[]": _r(UNMOUNTABLE),
    **{f"{_POD}.volumes[].{field}": _h() for field in ("name", *volumes.SOURCES)},
    f"{_POD}.volumes[].emptyDir.medium": _r("the local cluster provides an emptyDir on this machine's disk or, with "
                                            f"medium {MEDIUM_MEMORY}, on a tmpfs; remove medium or set it to "
                                            f"{MEDIUM_MEMORY}", honoured=("", MEDIUM_MEMORY)),
    f"{_POD}.volumes[].downwardAPI.items[].resourceFieldRef": _r(_RESOURCE_FIELDS),
    f"{_POD}.volumes[].projected.sources[].downwardAPI.items[].resourceFieldRef": _r(_RESOURCE_FIELDS),
    f"{_POD}.volumes[].projected.sources[].serviceAccountToken": _r(
        "ServiceAccount tokens are projected by the local cluster only at kube's own path; read "
        "/var/run/secrets/kubernetes.io/serviceaccount/token"),
    f"{_POD}.volumes[].projected.sources[].clusterTrustBundle": _r("the local cluster serves no ClusterTrustBundles; "
                                                                    "put the certificates in a ConfigMap"),
    f"{_POD}.volumes[].projected.sources[].podCertificate": _r("pod certificates are not issued by the local cluster; "
                                                                "put the certificate in a Secret"),
    f"{_POD}.initContainers": _r(f"init containers are {NOT_RUN} yet"),
    f"{_POD}.ephemeralContainers": _r(f"ephemeral containers are {NOT_RUN}"),
    f"{_POD}.activeDeadlineSeconds": _r("use the TrainJob's spec.activeDeadlineSeconds"),
    # what a pod stopped from outside has between SIGTERM to its workload and SIGKILL (docs/checkpointing.md)
    f"{_POD}.terminationGracePeriodSeconds": _h(),
    f"{_POD}.hostAliases": _r("the pod's /etc/hosts is Trainer's host names only; remove hostAliases"),
    f"{_CTR}": _w(f"{NOT_RUN} on one machine"),
    f"{_CTR}.name": _h(),
    f"{_CTR}.command": _h(),
    f"{_CTR}.args": _h(),
    f"{_CTR}.env": _h(),
    f"{_CTR}.env[].valueFrom": TRAINJOB["spec.trainer.env[].valueFrom"],
    f"{_CTR}.envFrom": _r("env from a Secret or ConfigMap is not resolved by the local cluster yet; list the "
                          "variables in env"),
    f"{_CTR}.resources": _h(),
    f"{_CTR}.workingDir": _h(),
    f"{_CTR}.ports": _h(),
    f"{_CTR}.readinessProbe": _w("readiness is the local cluster's: a node is ready once its sshd accepts the "
                                 "job's key, the launcher as soon as it runs"),
    f"{_CTR}.securityContext.runAsUser": _h(),
    f"{_CTR}.securityContext.runAsGroup": _h(),
    f"{_CTR}.image": TRAINJOB["spec.trainer.image"],
    f"{_CTR}.volumeMounts": _h(),
    f"{_CTR}.volumeMounts[].mountPropagation": _r("mounts do not propagate between a pod and this machine on the local "
                                                  "cluster; remove mountPropagation", honoured=("None",)),
    f"{_CTR}.volumeMounts[].subPathExpr": _r("subPathExpr is not expanded by the local cluster; use subPath"),
    f"{_CTR}.volumeMounts[].recursiveReadOnly": _r("a readOnly mount is read-only, not recursively so, on the local "
                                                   "cluster; remove recursiveReadOnly", honoured=("Disabled",)),
    f"{_CTR}.volumeDevices": _r("raw block devices are not given to pods by the local cluster; mount a filesystem "
                                "volume with volumeMounts"),
    f"{_CTR}.lifecycle": _r(f"lifecycle hooks are {NOT_RUN} yet"),
}

# --- Kueue (kueue.x-k8s.io/v1beta2, the stored form) -------------------------------------------

_FUNGIBILITY = ("the local cluster assigns flavors as Kueue does by default: it stops at the first flavor that fits, "
                "borrowing if need be, and tries the next flavor rather than preempt")
_AFS = ("admission fair sharing (ordering a queue by its LocalQueues' recent usage) is not done by the local cluster: "
        "workloads are ordered by priority, then creation time")

RESOURCE_FLAVOR: dict[str, Rule] = {
    **_OBJECT,
    "spec.nodeLabels": _w(f"{_ONE_MACHINE}: Kueue's node selection for this flavor changes nothing here"),
    "spec.nodeTaints": _w(f"{_ONE_MACHINE}: Kueue's node selection for this flavor changes nothing here"),
    "spec.nodeTaints[].effect": _r("Kueue admits a job to a flavor with a NoSchedule or NoExecute taint only if its "
                                   "pods tolerate the taint, and the local cluster does not match tolerations; "
                                   "remove the taint (every pod runs on this machine) or make it PreferNoSchedule",
                                   honoured=("PreferNoSchedule",)),
    "spec.tolerations": _w(f"{_ONE_MACHINE}: the tolerations Kueue adds to admitted pods change nothing here"),
    "spec.topologyName": _h(),  # no Topology exists here: a ClusterQueue listing the flavor is inactive, as in Kueue
}

CLUSTER_QUEUE: dict[str, Rule] = {
    **_META,
    "spec.resourceGroups": _h(),
    "spec.cohortName": _h(),
    "spec.queueingStrategy": _h(),
    "spec.namespaceSelector": _h(),
    "spec.preemption": _h(),
    "spec.fairSharing": _h(),
    "spec.stopPolicy": _h(),
    "spec.admissionChecksStrategy": _h(),  # no AdmissionCheck exists here: the queue is inactive, as in Kueue
    "spec.flavorFungibility": _r(f"{_FUNGIBILITY}; remove flavorFungibility"),
    "spec.flavorFungibility.whenCanBorrow": _r(f"{_FUNGIBILITY}; remove whenCanBorrow or set it to MayStopSearch "
                                               "(v1beta1: Borrow)", honoured=("MayStopSearch",)),
    "spec.flavorFungibility.whenCanPreempt": _r(f"{_FUNGIBILITY}; remove whenCanPreempt or set it to TryNextFlavor "
                                                "(v1beta1: Preempt is MayStopSearch)", honoured=("TryNextFlavor",)),
    "spec.flavorFungibility.preference": _r(f"{_FUNGIBILITY}; remove preference"),
    "spec.admissionScope": _r(f"{_AFS}; remove admissionScope"),
    "spec.admissionScope.admissionMode": _r(f"{_AFS}; remove admissionScope or set admissionMode to "
                                            "NoAdmissionFairSharing", honoured=("NoAdmissionFairSharing",)),
    "spec.concurrentAdmissionPolicy": _r("concurrent admission (a workload pursuing several flavors at once and "
                                         "migrating to a preferred one) is not done by the local cluster: a "
                                         "workload is admitted to one flavor and stays there; remove "
                                         "concurrentAdmissionPolicy"),
}

LOCAL_QUEUE: dict[str, Rule] = {
    **_META,
    "spec.clusterQueue": _h(),
    "spec.stopPolicy": _h(),
    "spec.fairSharing": _w("no effect: a LocalQueue's weight is used only by admission fair sharing (ClusterQueue "
                           "spec.admissionScope), which the local cluster does not do"),
}

WORKLOAD_PRIORITY_CLASS: dict[str, Rule] = {**_OBJECT, "value": _h(), "description": _h()}

COHORT: dict[str, Rule] = {
    **_META,
    "spec.parentName": _r("cohorts are flat on the local cluster: a cohort is the ClusterQueues whose "
                          "spec.cohortName names it, and one cohort never lends to another; remove parentName"),
    "spec.resourceGroups": _r("quota held by a Cohort object is not lent by the local cluster; give it to the "
                              "cohort's ClusterQueues (their spec.resourceGroups, with lendingLimit to keep some "
                              "back) and remove resourceGroups here"),
    "spec.fairSharing": _w("no effect: a cohort's weight only weighs it against sibling cohorts under a parent "
                           "cohort, and cohorts are flat on the local cluster"),
}

_TEMPLATE = "spec.podSets[].template.spec"
UNCOUNTED = "so the local cluster would admit the workload with less quota than Kueue reserves"

WORKLOAD: dict[str, Rule] = {
    **_META,
    "spec.active": _h(),
    "spec.queueName": _h(),
    "spec.priority": _h(),
    "spec.priorityClassRef": _h(),
    "spec.podSets": _h(),
    # As in Kueue, nothing runs from a Workload's pod template: only what Kueue counts or matches matters.
    "spec.podSets[].minCount": _r("partial admission is not done by the local cluster: a pod set is admitted with "
                                  "all its count pods or not at all; remove minCount"),
    "spec.podSets[].topologyRequest": _r("topology-aware scheduling is not done by the local cluster (it serves no "
                                         "Topology); remove topologyRequest"),
    f"{_TEMPLATE}.initContainers": _r(f"Kueue counts init containers' requests and the local cluster does not, "
                                      f"{UNCOUNTED}; add them to the container's requests and remove initContainers"),
    f"{_TEMPLATE}.overhead": _r(f"Kueue counts pod overhead and the local cluster does not, {UNCOUNTED}; add it "
                                "to the container's requests and remove overhead"),
    f"{_TEMPLATE}.resourceClaims": _r("devices claimed through dynamic resource allocation are not counted by the "
                                      "local cluster; request them in the container's resources.requests"),
    f"{_TEMPLATE}.containers[].resources.claims": _r("devices claimed through dynamic resource allocation are not "
                                                     "counted by the local cluster; request them in "
                                                     "resources.requests"),
    f"{_TEMPLATE}.nodeSelector": _r("Kueue matches a pod set's node selector against ResourceFlavor nodeLabels to "
                                    "choose a flavor and the local cluster does not; remove nodeSelector"),
    f"{_TEMPLATE}.affinity.nodeAffinity": _r("Kueue matches a pod set's node affinity against ResourceFlavor "
                                             "nodeLabels to choose a flavor and the local cluster does not; remove "
                                             "nodeAffinity"),
    "spec.maximumExecutionTimeSeconds": _r("Kueue deactivates a Workload admitted for longer than this and the local "
                                           "cluster does not; use the TrainJob's spec.activeDeadlineSeconds"),
    "spec.preemptionGates": _r("preemption gates are not implemented by the local cluster: the workload would "
                               "preempt at once; remove preemptionGates"),
}

# --- MPI Operator's MPIJob (kubeflow.org/v2beta1), run as-is through its TrainJob form -------------
# (`mpijob.api.mpioperator.convert`, `mpijob.controllers.mpioperator`). Its pod templates are judged as a
# runtime's are, since that is where they go; the map of replica specs is walked as `*`.

_MPI_TEMPLATE = "spec.mpiReplicaSpecs.*.template"
_QUEUED_AS_IS = (f"the job is queued by Kueue as it is: choose its LocalQueue with the label {LABEL_QUEUE_NAME} "
                 f"and its priority with {LABEL_PRIORITY_CLASS} (a WorkloadPriorityClass)")
_NO_RESTARTS = "pods are not restarted by the local cluster: the first failure ends the job"

MPIJOB: dict[str, Rule] = {
    **_META,
    "spec.slotsPerWorker": _h(),
    "spec.runLauncherAsWorker": _h(),
    "spec.sshAuthMountPath": _h(),
    "spec.mpiImplementation": _h(),
    "spec.launcherCreationPolicy": _h(),  # either way mpirun starts once every worker accepts the job's key
    "spec.mpiReplicaSpecs": _h(),
    "spec.mpiReplicaSpecs.*.replicas": _h(),
    "spec.mpiReplicaSpecs.*.restartPolicy": _w(f"{_NO_RESTARTS}; remove restartPolicy"),
    "spec.runPolicy.suspend": _h(),  # its Workload inactive, its pods stopped, as MPI Operator and Kueue do
    "spec.runPolicy.managedBy": _r("the local cluster runs only the MPIJobs MPI Operator itself would; remove "
                                   "managedBy", honoured=(MANAGED_BY_MPI_OPERATOR,)),
    "spec.runPolicy.cleanPodPolicy": _w("when the launcher ends, the local cluster stops the workers and keeps "
                                        "every pod, terminated, until the MPIJob is deleted"),
    "spec.runPolicy.ttlSecondsAfterFinished": _w("a finished MPIJob is kept until it is deleted"),
    "spec.runPolicy.backoffLimit": _r(f"{_NO_RESTARTS}; remove backoffLimit"),
    "spec.runPolicy.activeDeadlineSeconds": _r("deadlines of MPIJobs are not enforced by the local cluster; "
                                               "convert it to a TrainJob (mpijob convert), whose "
                                               "spec.activeDeadlineSeconds is"),
    "spec.runPolicy.schedulingPolicy": _w(f"gang scheduling: the local cluster starts a job's pods all together "
                                          f"anyway; {_QUEUED_AS_IS}"),
    **{_MPI_TEMPLATE + path[len(f"{_JOB}.spec.template"):]: rule for path, rule in RUNTIME.items()
       if path.startswith(f"{_JOB}.spec.template")},
}

# --- PersistentVolumeClaim (core/v1): bound to a directory of this machine (controllers/claims.py) ----------

_NO_PVS = "the local cluster serves no PersistentVolumes: its provisioner binds every claim to a directory of its own"
_NOT_COPIED = "claims are not cloned or restored from snapshots by the local cluster; copy the data in with a job and "

PERSISTENT_VOLUME_CLAIM: dict[str, Rule] = {
    **_META,
    "spec.accessModes": _h(),
    "spec.resources": _w("recorded as the claim's capacity, not enforced: a local volume is a directory of this "
                         "machine's disk"),
    "spec.storageClassName": _h(),  # every class is bound locally; one the local cluster does not name is warned
    "spec.volumeName": _h(),  # the provisioner writes it; a claim created with one is refused (api/core/volumes.py)
    "spec.volumeMode": _r("block volumes are not provided by the local cluster; remove volumeMode or set it to "
                          f"{volumes.FILESYSTEM}", honoured=(volumes.FILESYSTEM,)),
    "spec.selector": _r(f"{_NO_PVS}; remove selector"),
    "spec.dataSource": _r(f"{_NOT_COPIED}remove dataSource"),
    "spec.dataSourceRef": _r(f"{_NOT_COPIED}remove dataSourceRef"),
    "spec.volumeAttributesClassName": _r("volume attributes classes are not served by the local cluster; remove "
                                         "volumeAttributesClassName"),
}

# --- A Pod no job owns (core/v1), run as one process tree by the local kubelet (api/core/bare_pods.py) ----------
# A pod template's field has the verdict it has in a runtime, at the Pod's own path; what differs for a bare pod
# (its restart policy is the kubelet's to honour, no job sets a deadline for it, no sshd makes it ready) is said here.

_SPEC = f"{_POD}."
_UNSHARED = "a pod on the local cluster has namespaces of its own; it cannot share this machine's "
_PROBES = "probes are not run for a bare pod by the local cluster: it is Ready once its container runs"

POD: dict[str, Rule] = {
    **_META,
    **{"spec" + path[len(_POD):]: rule for path, rule in RUNTIME.items() if path == _POD or path.startswith(_SPEC)},
    "spec.restartPolicy": _h(),
    "spec.hostname": _h(),
    "spec.serviceAccount": _h(),  # the deprecated twin of serviceAccountName, which kube fills in
    "spec.dnsPolicy": Rule(WARNED, "a pod uses this machine's resolver: the local cluster runs no cluster DNS",
                           ("ClusterFirst",)),  # what `kubectl run` sends: a kubelet without cluster DNS does the same
    "spec.activeDeadlineSeconds": _r("a bare pod's deadline is not enforced by the local cluster yet; remove "
                                     "activeDeadlineSeconds, or run the program as a TrainJob with one"),
    "spec.initContainers": _r(f"init containers are {NOT_RUN} yet; run their commands first in the container's "
                              "own command (sh -c 'setup && exec main')"),
    "spec.hostAliases": _r("a bare pod's /etc/hosts names itself only; remove hostAliases"),
    **{f"spec.{field}": _r(f"{_UNSHARED}{what}; remove {field}", honoured=(False,))
       for field, what in (("hostNetwork", "network"), ("hostPID", "processes"), ("hostIPC", "IPC"))},
    "spec.containers[]": _w("not honoured by the local cluster, which runs the container as a process tree on "
                            "this machine"),
    "spec.containers[].stdin": _h(),
    "spec.containers[].securityContext.privileged": _r("a pod's processes get no privileges on the local cluster; "
                                                       "remove privileged", honoured=(False,)),
    **{f"spec.containers[].{probe}": _w(_PROBES) for probe in ("readinessProbe", "livenessProbe", "startupProbe")},
}

RULES: dict[str, dict[str, Rule]] = {"TrainJob": TRAINJOB, "TrainingRuntime": RUNTIME,
                                     "ClusterTrainingRuntime": RUNTIME, "ResourceFlavor": RESOURCE_FLAVOR,
                                     "ClusterQueue": CLUSTER_QUEUE, "LocalQueue": LOCAL_QUEUE,
                                     "WorkloadPriorityClass": WORKLOAD_PRIORITY_CLASS, "Cohort": COHORT,
                                     "Workload": WORKLOAD, MPIJOB_KIND: MPIJOB,
                                     PVC_KIND: PERSISTENT_VOLUME_CLAIM, "Pod": POD}
