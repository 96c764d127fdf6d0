"""What the local cluster does with each field of a TrainJob, a (Cluster)TrainingRuntime and the Kueue kinds.

Rule: nothing accepted is silently ignored. Every field is *honoured* as Trainer, JobSet, Kueue and the
kubelet honour it, *warned* (accepted, with a `Warning` header naming it, as kube-apiserver warns, for
what is harmless on one machine: pod affinity, image pulls), or *refused* with a 422 that names it
and says why (what would change the job's outcome, or what Kueue admits, if it were dropped: volumes,
hooks, flavor fungibility, hierarchical cohorts). A TrainJob's runtime patch is judged field by field
with the verdict of the same field of a runtime.

A refused field may list `honoured` values: the ones that ask for what the local cluster does anyway
(Kueue's defaults, such as `whenCanBorrow: MayStopSearch`), so that a stored object, defaults filled in,
can be sent back unchanged. Kueue objects are checked in their stored (v1beta2) form after defaulting;
every refused Kueue field has the same name in v1beta1, so a v1beta1 client reads its own field name.

Paths are written as `kubectl explain` walks them, with `[]` after a list: `spec.trainer.env[].name`.
A rule covers its field and everything below it unless a longer rule says otherwise; a field no rule
covers is refused. `tests/api/test_field_inventory.py` walks the served schemas and checks that every
field path has a rule and that each verdict holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mpijob.api import volumes
from mpijob.api.errors import Cause
from mpijob.api.names import (
    CONTAINER,
    LABEL_PRIORITY_CLASS,
    LABEL_QUEUE_NAME,
    LAUNCHER,
    LOCAL_STORAGE_CLASS,
    MANAGED_BY_MPI_OPERATOR,
    MEDIUM_MEMORY,
    MPIJOB_KIND,
    NODE,
    PVC_KIND,
)

HONOURED, WARNED, REFUSED = "honoured", "warned", "refused"
UNMOUNTABLE = ("this type of volume is not provided by the local cluster, which mounts persistentVolumeClaim, hostPath, "
               "emptyDir, configMap, secret, downwardAPI and projected volumes; for NFS or another share, mount it on "
               "this machine and use a hostPath volume to it (docs/volumes.md)")
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
    # runtime the job runs is the patched one (api/patches.py), and both must say the same.
    "spec.runtimePatches": _h(),
}
PATCHED = "spec.runtimePatches[].trainingRuntimeSpec"  # a runtime's `spec`, inside a TrainJob's patch

_JOB = "spec.template.spec.replicatedJobs[].template"
_POD = f"{_JOB}.spec.template.spec"
_CTR = f"{_POD}.containers[]"
_ONE_MACHINE = "no effect on one machine: every pod runs on this machine"
_NOT_RUN = "not run by the local cluster"
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
    f"{_POD}.nodeSelector": _h(),  # placement on the machine's Node (api/placement.py)
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
    # Volumes (api/volumes.py, docs/volumes.md): the types the local cluster mounts are honoured, any other refused
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
    f"{_POD}.initContainers": _r(f"init containers are {_NOT_RUN} yet"),
    f"{_POD}.ephemeralContainers": _r(f"ephemeral containers are {_NOT_RUN}"),
    f"{_POD}.activeDeadlineSeconds": _r("use the TrainJob's spec.activeDeadlineSeconds"),
    # what a pod stopped from outside has between SIGTERM to its workload and SIGKILL (docs/checkpointing.md)
    f"{_POD}.terminationGracePeriodSeconds": _h(),
    f"{_POD}.hostAliases": _r("the pod's /etc/hosts is Trainer's host names only; remove hostAliases"),
    f"{_CTR}": _w(f"{_NOT_RUN} on one machine"),
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
    f"{_CTR}.lifecycle": _r(f"lifecycle hooks are {_NOT_RUN} yet"),
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
_UNCOUNTED = "so the local cluster would admit the workload with less quota than Kueue reserves"

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
                                      f"{_UNCOUNTED}; add them to the container's requests and remove initContainers"),
    f"{_TEMPLATE}.overhead": _r(f"Kueue counts pod overhead and the local cluster does not, {_UNCOUNTED}; add it "
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
_QUEUED_AS_IS = (f"the job is queued by Kueue as it is: choose its LocalQueue with the label {LABEL_QUEUE_NAME} and its "
             f"priority with {LABEL_PRIORITY_CLASS} (a WorkloadPriorityClass)")
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
_MPI_REPLICAS = re.compile(r"^spec\.mpiReplicaSpecs\.[^.]+")

# --- PersistentVolumeClaim (core/v1): bound to a directory of this machine (controllers/claims.py) ----------

_NO_PVS = "the local cluster serves no PersistentVolumes: its provisioner binds every claim to a directory of its own"
_NOT_COPIED = "claims are not cloned or restored from snapshots by the local cluster; copy the data in with a job and "

PERSISTENT_VOLUME_CLAIM: dict[str, Rule] = {
    **_META,
    "spec.accessModes": _h(),
    "spec.resources": _w("recorded as the claim's capacity, not enforced: a local volume is a directory of this "
                         "machine's disk"),
    "spec.storageClassName": _h(),  # every class is bound locally; one the local cluster does not name is warned
    "spec.volumeName": _h(),  # the provisioner writes it; a claim created with one is refused (api/volumes.py)
    "spec.volumeMode": _r("block volumes are not provided by the local cluster; remove volumeMode or set it to "
                          f"{volumes.FILESYSTEM}", honoured=(volumes.FILESYSTEM,)),
    "spec.selector": _r(f"{_NO_PVS}; remove selector"),
    "spec.dataSource": _r(f"{_NOT_COPIED}remove dataSource"),
    "spec.dataSourceRef": _r(f"{_NOT_COPIED}remove dataSourceRef"),
    "spec.volumeAttributesClassName": _r("volume attributes classes are not served by the local cluster; remove "
                                         "volumeAttributesClassName"),
}

RULES: dict[str, dict[str, Rule]] = {"TrainJob": TRAINJOB, "TrainingRuntime": RUNTIME,
                                     "ClusterTrainingRuntime": RUNTIME, "ResourceFlavor": RESOURCE_FLAVOR,
                                     "ClusterQueue": CLUSTER_QUEUE, "LocalQueue": LOCAL_QUEUE,
                                     "WorkloadPriorityClass": WORKLOAD_PRIORITY_CLASS, "Cohort": COHORT,
                                     "Workload": WORKLOAD, MPIJOB_KIND: MPIJOB,
                                     PVC_KIND: PERSISTENT_VOLUME_CLAIM}


def desired_changed(obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """Whether a write changes what the user asks for (all but metadata and status: a WorkloadPriorityClass
    has no spec). Only such writes are checked, so a controller's status update of an object stored
    before a rule existed still passes."""
    if old is None:
        return True
    return any(obj.get(k) != old.get(k) for k in {*obj, *old} - {"metadata", "status", "apiVersion", "kind"})


def rule_for(kind: str, path: str) -> tuple[str, Rule] | None:
    """The rule that covers a field path (its own, else its nearest ancestor's) and the path it is for."""
    if kind == "TrainJob" and path.startswith(f"{PATCHED}."):  # a patched field: the runtime's verdict
        found = rule_for("ClusterTrainingRuntime", "spec" + path[len(PATCHED):])
        if found and found[0].startswith("spec.template"):
            return PATCHED + found[0][len("spec"):], found[1]
    rules = RULES[kind]
    while True:
        if path in rules:
            return path, rules[path]
        if not path:
            return None
        cut = max(path.rfind("."), path.rfind("[]"))
        path = path[:cut] if cut > 0 else ""


@dataclass
class Findings:
    causes: list[Cause]
    warnings: list[str]


def check(kind: str, obj: dict[str, Any]) -> Findings:
    """The refused fields (as 422 causes) and warned fields (as warning texts) an object sets."""
    found = Findings([], [])
    if kind not in RULES:
        return found
    seen: set[str] = set()
    for where, path, value in _set_fields(obj):
        if kind == MPIJOB_KIND:  # a replica type is a map key: its rules are written for any (`*`)
            path = _MPI_REPLICAS.sub("spec.mpiReplicaSpecs.*", path)
        covered = rule_for(kind, path)
        rule_path, rule = covered if covered else (path, _r("not supported by the local cluster"))
        at = _concrete(where, rule_path) if rule.verdict == REFUSED else where  # a refusal names its rule's field
        if rule.verdict == HONOURED or at in seen or (rule_path == path and value in rule.honoured):
            continue
        seen.add(at)
        if rule.verdict == REFUSED:
            found.causes.append(Cause(at, f"Forbidden: {rule.why}", "FieldValueForbidden"))
        else:
            found.warnings.append(f"{at}: {rule.why}")
    found.warnings += _unrun_steps(kind, obj) + _claim_class(kind, obj)
    found.causes += _volume_causes(kind, obj)
    found.causes += _unrun_containers(kind, obj) + _uncounted_containers(kind, obj) + _mpijob_sidecars(kind, obj)
    return found


def _set_fields(node: Any, where: str = "", path: str = "") -> Iterator[tuple[str, str, Any]]:
    """`(concrete path, rule path, value)` of every field set to something (empty lists and maps are unset)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _set_fields(value, f"{where}.{key}" if where else key, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _set_fields(item, f"{where}[{i}]", f"{path}[]")
    elif node is not None:
        yield where, path, node


def _concrete(where: str, rule_path: str) -> str:
    """The prefix of a concrete path (`a[2].b.c`) that a rule path (`a[].b`) names."""
    depth = rule_path.count(".") + rule_path.count("[]")
    parts, i = [], 0
    for token in where.replace("[", ".[").split("."):
        if i == depth + 1:
            break
        parts.append(token)
        i += 1
    return ".".join(parts).replace(".[", "[")


def _replicated_jobs(kind: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    if kind not in ("TrainingRuntime", "ClusterTrainingRuntime"):
        return []
    return (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("replicatedJobs") or []


def _unrun_steps(kind: str, obj: dict[str, Any]) -> list[str]:
    """ReplicatedJobs other than the MPI launcher and nodes (initializers) are stored, not run."""
    return [f"spec.template.spec.replicatedJobs[{i}]: replicatedJob {rj.get('name')!r} is {_NOT_RUN}: only "
            f"'{LAUNCHER}' and '{NODE}' run here" for i, rj in enumerate(_replicated_jobs(kind, obj))
            if rj.get("name") not in (LAUNCHER, NODE)]


def _unrun_containers(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """A pod runs its `node` container only (Trainer's MPI container); a sidecar would silently not run."""
    out = []
    for i, rj in enumerate(_replicated_jobs(kind, obj)):
        if rj.get("name") not in (LAUNCHER, NODE):
            continue
        pod = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        out += [Cause(f"spec.template.spec.replicatedJobs[{i}].template.spec.template.spec.containers[{k}]",
                      f"Forbidden: only the container named {CONTAINER!r} runs on the local cluster; "
                      f"{c.get('name')!r} would not: remove it", "FieldValueForbidden")
                for k, c in enumerate(pod.get("containers") or []) if c.get("name") != CONTAINER]
    return out


def _uncounted_containers(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """The scheduler counts the first container of a Workload's pod set; Kueue sums them all."""
    if kind != "Workload":
        return []
    out = []
    for i, pod_set in enumerate(((obj.get("spec") or {}).get("podSets")) or []):
        spec = ((pod_set or {}).get("template") or {}).get("spec") or {}
        for j in range(1, len(spec.get("containers") or [])):
            out.append(Cause(f"spec.podSets[{i}].template.spec.containers[{j}]",
                             "Forbidden: Kueue counts every container's requests and the local cluster counts the "
                             f"first container's only, {_UNCOUNTED}; put the pod's whole request in one container",
                             "FieldValueForbidden"))
    return out


def _mpijob_sidecars(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """MPI Operator runs every container of a replica's pod; the local cluster runs the first one only."""
    if kind != MPIJOB_KIND:
        return []
    out = []
    for replica, spec in (((obj.get("spec") or {}).get("mpiReplicaSpecs")) or {}).items():
        pod = (((spec or {}).get("template") or {}).get("spec")) or {}
        out += [Cause(f"spec.mpiReplicaSpecs.{replica}.template.spec.containers[{k}]",
                      f"Forbidden: only the first container of a pod runs on the local cluster; {c.get('name')!r} "
                      "would not: remove it", "FieldValueForbidden")
                for k, c in enumerate(pod.get("containers") or []) if k > 0]
    return out


def _claim_class(kind: str, obj: dict[str, Any]) -> list[str]:
    """A claim naming a StorageClass the local cluster does not have is bound locally all the same: said."""
    name = (obj.get("spec") or {}).get("storageClassName") if kind == PVC_KIND else None
    if not name or name == LOCAL_STORAGE_CLASS:
        return []
    return [f'spec.storageClassName: "{name}" is not a StorageClass of the local cluster: the claim is bound to a '
            f'directory of this machine, as its "{LOCAL_STORAGE_CLASS}" class binds one']


def _dig(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _pod_templates(kind: str, obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """`(path, pod spec, whole)` of each pod template an object holds; a runtime patch's is not whole (its
    mounts may name the runtime's volumes)."""
    rjob_pod = ("template", "spec", "template", "spec")
    if kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        for i, rj in enumerate(_replicated_jobs(kind, obj)):
            yield f"spec.template.spec.replicatedJobs[{i}].template.spec.template.spec", _dig(rj, *rjob_pod), True
    elif kind == "TrainJob":
        for k, patch in enumerate(_dig(obj, "spec", "runtimePatches") or []):
            rjobs = _dig(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs") or []
            for i, rj in enumerate(rjobs):
                yield (f"spec.runtimePatches[{k}].trainingRuntimeSpec.template.spec.replicatedJobs[{i}].template.spec"
                       ".template.spec", _dig(rj, *rjob_pod), False)
    elif kind == MPIJOB_KIND:
        for replica, spec in (_dig(obj, "spec", "mpiReplicaSpecs") or {}).items():
            yield f"spec.mpiReplicaSpecs.{replica}.template.spec", _dig(spec, "template", "spec"), True


def _volume_causes(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """Each pod template's volumes and mounts, as kube-apiserver checks a pod's (`api/volumes.py`)."""
    return [cause for where, spec, whole in _pod_templates(kind, obj) if isinstance(spec, dict)
            for cause in volumes.pod_causes(spec, where, whole)]
