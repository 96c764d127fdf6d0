"""MPI Operator's MPIJob (kubeflow.org/v2beta1) converted to a Trainer TrainJob, a TrainingRuntime when the
job needs one, and a report saying, for every field the MPIJob sets, where it went or why it was dropped.

An MPIJob describes its pods in full; a TrainJob names a runtime that describes them and carries only
what changes from job to job (command, size, env, resources). So the MPIJob is split: what a TrainJob
has a field for goes there, the pod templates go into a namespaced TrainingRuntime named after the job,
and what neither has is dropped with the reason (docs/migration.md). A job whose pods are exactly those
of the bundled `mpi-distributed` runtime gets no runtime of its own. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from mpijob.api import names
from mpijob.api.core.errors import Cause, invalid
from mpijob.api.core.structural import show
from mpijob.api.mpioperator.pod_templates import LAUNCHER_INDEX, NODE_INDEX, bundled_node, convert_template
from mpijob.api.mpioperator.report import DROPPED, MAPPED, RUNTIME, VERDICTS, Conversion, Line, Mapping, is_set
from mpijob.api.trainer.runtimes import BUNDLED_NAME

__all__ = ["DROPPED", "MAPPED", "RUNTIME", "VERDICTS", "Conversion", "Mapping", "convert"]

AT_STARTUP = "AtStartup"
CREATION_POLICIES = (AT_STARTUP, names.LAUNCHER_WAIT_FOR_WORKERS)
IMPLEMENTATIONS = (names.OPEN_MPI, names.MPI_INTEL, names.MPI_MPICH)
MANAGED_BY = {names.MANAGED_BY_MPI_OPERATOR: names.MANAGED_BY_TRAINER,
              names.MANAGED_BY_MULTIKUEUE: names.MANAGED_BY_MULTIKUEUE}
SPEC_FIELDS = ("slotsPerWorker", "runLauncherAsWorker", "sshAuthMountPath", "launcherCreationPolicy",
               "mpiImplementation", "runPolicy", "mpiReplicaSpecs")
RUN_POLICY_FIELDS = ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit",
                     "schedulingPolicy", "suspend", "managedBy")
SCHEDULING_FIELDS = ("minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds")
REPLICA_FIELDS = ("replicas", "restartPolicy", "template")
MPI_POLICY = "spec.mlPolicy.mpi"

_GANG = ("gang admission is Kueue's: it admits a TrainJob's pods all together or not at all, so there is no "
         "PodGroup to size; on a cluster without Kueue, put a podGroupPolicy in the runtime")
_SERVER_SET = "written by the API server for the MPIJob; the TrainJob gets its own"


class Converter:
    """One conversion: the objects being built, the report lines and the problems found."""

    def __init__(self, mpijob: dict) -> None:
        self.src = mpijob
        self.lines: list[Line] = []
        self.causes: list[Cause] = []
        meta = mpijob["metadata"] if isinstance(mpijob.get("metadata"), dict) else {}
        self.name = meta.get("name") or ""
        self.namespace = meta.get("namespace") or ""
        self.labels: dict[str, str] = {}
        self.annotations: dict[str, str] = {}
        self.spec: dict[str, Any] = {}  # the TrainJob's spec beside trainer
        self.trainer: dict[str, Any] = {}
        self.templates: list[dict[str, Any]] = [{"spec": {}}, {"spec": {}}]  # node, launcher pod templates
        self.mpi: dict[str, Any] = {}
        self.runtime_annotations: dict[str, str] = {}
        self.depends = False
        self.launcher_as_worker = False
        self.implementation_name = names.OPEN_MPI

    # -- bookkeeping --------------------------------------------------------------------------------

    def add(self, fld: str, verdict: str, to: str = "", why: str = "", bundled_at: str | None = None) -> None:
        self.lines.append(Line(Mapping(fld, verdict, to, why), bundled_at))

    def bad(self, fld: str, value: Any, message: str, reason: str = "FieldValueInvalid") -> None:
        self.causes.append(Cause(fld, f"Invalid value: {show(value)}: {message}", reason))

    def _int(self, fld: str, value: Any, least: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            self.bad(fld, value, f"must be an integer of at least {least}")
            return None
        return value

    # -- the MPIJob, top down -----------------------------------------------------------------------

    def run(self) -> None:
        src = self.src
        if src.get("kind") != names.MPIJOB_KIND:
            self.bad("kind", src.get("kind"), f"convert takes MPI Operator's {names.MPIJOB_KIND} "
                     f"({names.MPI_OPERATOR_API_VERSION}); pass a file of MPIJobs")
            return
        if src.get("apiVersion") != names.MPI_OPERATOR_API_VERSION:
            self.bad("apiVersion", src.get("apiVersion"), f"only {names.MPI_OPERATOR_API_VERSION} MPIJobs are "
                     "converted; upgrade older MPIJobs to v2beta1 first (MPI Operator's own upgrade notes)")
            return
        self.add("apiVersion", MAPPED, "apiVersion", f"becomes {names.TRAINER_API_VERSION}")
        self.add("kind", MAPPED, "kind", "becomes TrainJob")
        if is_set(src.get("metadata")):  # first: its labels meet the queue and priority of the spec
            self.metadata(src["metadata"])
        for key, value in src.items():
            if key in ("apiVersion", "kind", "metadata") or not is_set(value):
                continue
            if key == "spec":
                self.spec_fields(value)
            elif key == "status":
                self.add("status", DROPPED, why="written by MPI Operator; Trainer writes the TrainJob's own")
            else:
                self.add(key, DROPPED, why="not a field of an MPIJob")
        if not self.name:
            self.causes.append(Cause("metadata.name", "Required value: the TrainJob and its runtime are named "
                                     "after the MPIJob; set metadata.name", "FieldValueRequired"))
        if not isinstance(src.get("spec"), dict):
            self.causes.append(Cause("spec.mpiReplicaSpecs", "Required value: an MPIJob needs spec.mpiReplicaSpecs "
                                     "with a Launcher and a Worker", "FieldValueRequired"))

    def metadata(self, meta: Any) -> None:
        if not isinstance(meta, dict):
            self.bad("metadata", meta, "must be a mapping with at least name")
            return
        for key, value in meta.items():
            if not is_set(value):
                continue
            fld = f"metadata.{key}"
            if key in ("name", "namespace"):
                self.add(fld, MAPPED, fld, "the generated TrainingRuntime, if any, takes it too")
            elif key in ("labels", "annotations") and isinstance(value, dict):
                (self.labels if key == "labels" else self.annotations).update(value)
                self.add(fld, MAPPED, fld)
            elif key == "generateName":
                self.add(fld, DROPPED, why="the TrainingRuntime must be named before the TrainJob refers to it; "
                         "set metadata.name")
            elif key in ("ownerReferences", "finalizers"):
                self.add(fld, DROPPED, why="they refer to the MPIJob's owner and controllers; add them to the "
                         "TrainJob by hand if something should own it")
            else:
                self.add(fld, DROPPED, why=_SERVER_SET)

    def spec_fields(self, spec: dict) -> None:
        for key, value in spec.items():
            if key not in SPEC_FIELDS and is_set(value):
                self.bad(f"spec.{key}", value, f"not a field of an MPIJob spec (it has: {', '.join(SPEC_FIELDS)}); "
                         "remove it")
        slots = spec.get("slotsPerWorker")
        if is_set(slots) and self._int("spec.slotsPerWorker", slots, 1) is not None:
            self.trainer["numProcPerNode"] = slots
            self.add("spec.slotsPerWorker", MAPPED, "spec.trainer.numProcPerNode",
                     "the slots of each host in the hostfile, as slotsPerWorker gave them")
        self.mpi["numProcPerNode"] = slots if isinstance(slots, int) and slots >= 1 else 1
        self.launcher_as_worker = spec.get("runLauncherAsWorker") is True
        self.mpi["runLauncherAsNode"] = self.launcher_as_worker
        if is_set(spec.get("runLauncherAsWorker")):
            self.add("spec.runLauncherAsWorker", RUNTIME, f"{MPI_POLICY}.runLauncherAsNode",
                     "the launcher is also a host: the last line of the hostfile" if self.launcher_as_worker
                     else "the launcher runs mpirun only and is no host of the hostfile",
                     bundled_at="runLauncherAsNode: true" if self.launcher_as_worker else None)
        mount = spec.get("sshAuthMountPath")
        self.mpi["sshAuthMountPath"] = mount if is_set(mount) else names.DEFAULT_SSH_AUTH_MOUNT_PATH
        if is_set(mount):
            self.add("spec.sshAuthMountPath", RUNTIME, f"{MPI_POLICY}.sshAuthMountPath",
                     "where Trainer mounts the job's SSH key in every node container",
                     bundled_at=f"sshAuthMountPath: {mount}" if mount == bundled_node()[0]["sshAuthMountPath"]
                     else None)
        self.implementation(spec.get("mpiImplementation"))
        self.creation_policy(spec.get("launcherCreationPolicy"))
        if is_set(spec.get("runPolicy")):
            self.run_policy(spec["runPolicy"])
        self.replicas(spec.get("mpiReplicaSpecs"))

    def implementation(self, impl: Any) -> None:
        self.mpi["mpiImplementation"] = names.OPEN_MPI
        self.implementation_name = names.OPEN_MPI
        if not is_set(impl):
            return
        fld = "spec.mpiImplementation"
        if impl not in IMPLEMENTATIONS:
            self.bad(fld, impl, f"supported values: {', '.join(IMPLEMENTATIONS)}", "FieldValueNotSupported")
        elif impl == names.OPEN_MPI:
            self.add(fld, RUNTIME, f"{MPI_POLICY}.mpiImplementation", "Trainer's MPI policy names the MPI",
                     bundled_at=f"mpiImplementation: {impl}")
        else:
            self.implementation_name = impl
            self.runtime_annotations[names.ANNOTATION_MPI_IMPLEMENTATION] = impl
            self.add(fld, RUNTIME, f"metadata.annotations[{names.ANNOTATION_MPI_IMPLEMENTATION}]",
                     f"Trainer's CRD admits only {names.OPEN_MPI} in {MPI_POLICY}.mpiImplementation; the annotation "
                     "picks the hostfile format and launcher variables of the other MPIs "
                     "(docs/mpi-implementations.md)")

    def creation_policy(self, policy: Any) -> None:
        self.depends = policy == names.LAUNCHER_WAIT_FOR_WORKERS
        if not is_set(policy):
            return
        fld = "spec.launcherCreationPolicy"
        if policy not in CREATION_POLICIES:
            self.bad(fld, policy, f"supported values: {', '.join(CREATION_POLICIES)}", "FieldValueNotSupported")
        elif self.depends:
            self.add(fld, RUNTIME, f"spec.template.spec.replicatedJobs[{LAUNCHER_INDEX}].dependsOn",
                     "the launcher starts once every node is Ready (JobSet dependsOn node Ready)",
                     bundled_at="launcher dependsOn node Ready")
        else:
            self.add(fld, RUNTIME, f"spec.template.spec.replicatedJobs[{LAUNCHER_INDEX}]",
                     "no dependsOn: the launcher starts with the nodes and ssh retries (ConnectionAttempts=10); "
                     "the local cluster starts it once every node's sshd accepts the key anyway")

    def run_policy(self, policy: Any) -> None:
        if not isinstance(policy, dict):
            self.bad("spec.runPolicy", policy, "must be a mapping")
            return
        for key, value in policy.items():
            if not is_set(value):
                continue
            fld = f"spec.runPolicy.{key}"
            if key not in RUN_POLICY_FIELDS:
                self.bad(fld, value, f"not a field of runPolicy (it has: {', '.join(RUN_POLICY_FIELDS)}); remove it")
            elif key == "cleanPodPolicy":
                self.add(fld, DROPPED, why="a TrainJob has no cleanup policy: when the launcher finishes, the job "
                         "ends and its still-running pods are stopped (what Running, the default, did); finished "
                         "pods stay until the TrainJob is deleted")
            elif key == "ttlSecondsAfterFinished":
                self.add(fld, DROPPED, why="a TrainJob has no TTL; delete finished TrainJobs yourself "
                         "(kubectl delete trainjob NAME)")
            elif key == "backoffLimit":
                self.add(fld, DROPPED, why="Trainer's MPI runtimes do not retry: the first failure fails the TrainJob "
                         "(on a cluster, a JobSet failurePolicy.maxRestarts in the runtime restarts the whole job; "
                         "the local cluster refuses it)")
            elif key == "activeDeadlineSeconds":
                if self._int(fld, value, 1) is not None:
                    self.spec["activeDeadlineSeconds"] = value
                    self.add(fld, MAPPED, "spec.activeDeadlineSeconds", "counted from the job's start; Failed with "
                             f"{names.REASON_DEADLINE_EXCEEDED} when it passes")
            elif key == "suspend":
                self.spec["suspend"] = bool(value)
                self.add(fld, MAPPED, "spec.suspend")
            elif key == "managedBy":
                if value not in MANAGED_BY:
                    self.bad(fld, value, f"MPI Operator accepts {', '.join(MANAGED_BY)}; remove it or use one of them")
                else:
                    self.spec["managedBy"] = MANAGED_BY[value]
                    self.add(fld, MAPPED, "spec.managedBy", f"becomes {MANAGED_BY[value]}")
            elif key == "schedulingPolicy":
                self.scheduling(value)

    def scheduling(self, policy: Any) -> None:
        if not isinstance(policy, dict):
            self.bad("spec.runPolicy.schedulingPolicy", policy, "must be a mapping")
            return
        for key, value in policy.items():
            if not is_set(value):
                continue
            fld = f"spec.runPolicy.schedulingPolicy.{key}"
            if key not in SCHEDULING_FIELDS:
                self.bad(fld, value, f"not a field of schedulingPolicy (it has: {', '.join(SCHEDULING_FIELDS)}); "
                         "remove it")
            elif key == "queue":
                self.label(fld, names.LABEL_QUEUE_NAME, value, "the TrainJob waits in the Kueue LocalQueue of this "
                           "name in its namespace (Volcano's queues are not read); create one if it is missing")
            elif key == "priorityClass":
                self.label(fld, names.LABEL_PRIORITY_CLASS, value, "Kueue reads the job's priority from the "
                           "WorkloadPriorityClass this label names; a PriorityClass of pods of that name is not "
                           "enough: create a WorkloadPriorityClass of the same name and value")
            else:
                self.add(fld, DROPPED, why=_GANG)

    def label(self, fld: str, key: str, value: Any, why: str) -> None:
        if key in self.labels and self.labels[key] != value:
            self.bad(fld, value, f"metadata.labels[{key}] already says {self.labels[key]!r}; make them equal or "
                     "remove one")
            return
        self.labels[key] = value
        self.add(fld, MAPPED, f"metadata.labels[{key}]", why)

    # -- replica specs ------------------------------------------------------------------------------
    # (their pod templates: `pod_templates`)

    def replicas(self, specs: Any) -> None:
        fld = "spec.mpiReplicaSpecs"
        if not isinstance(specs, dict):
            self.causes.append(Cause(fld, f"Required value: got {show(specs)}; an MPIJob needs a Launcher and a "
                                     "Worker replica spec", "FieldValueRequired"))
            return
        for rtype in specs:
            if rtype not in (names.REPLICA_LAUNCHER, names.REPLICA_WORKER):
                self.bad(f"{fld}.{rtype}", rtype, f"replica types are {names.REPLICA_LAUNCHER} and "
                         f"{names.REPLICA_WORKER}; rename or remove it")
        for rtype in (names.REPLICA_LAUNCHER, names.REPLICA_WORKER):
            spec = specs.get(rtype)
            where = f"{fld}.{rtype}"
            if not isinstance(spec, dict):
                how = ("the launcher runs mpirun" if rtype == names.REPLICA_LAUNCHER
                       else "the workers are the hosts mpirun reaches over ssh")
                self.causes.append(Cause(where, f"Required value: {how}; add spec.mpiReplicaSpecs.{rtype} with a "
                                         "template", "FieldValueRequired"))
                continue
            for key, value in spec.items():
                if key not in REPLICA_FIELDS and is_set(value):
                    self.bad(f"{where}.{key}", value, f"not a field of a replica spec (it has: "
                             f"{', '.join(REPLICA_FIELDS)}); remove it")
            self.replica_count(rtype, spec.get("replicas"))
            if is_set(spec.get("restartPolicy")):
                self.add(f"{where}.restartPolicy", DROPPED, why="Trainer has no restart policy per replica: a failed "
                         "pod fails the TrainJob")
            convert_template(self, rtype, spec.get("template"))

    def replica_count(self, rtype: str, replicas: Any) -> None:
        fld = f"spec.mpiReplicaSpecs.{rtype}.replicas"
        if rtype == names.REPLICA_LAUNCHER:
            if replicas is not None and replicas != 1:
                self.bad(fld, replicas, "an MPIJob has exactly one launcher; set it to 1 or remove it")
            elif replicas is not None:
                self.add(fld, MAPPED, f"replicatedJob {names.LAUNCHER}", "Trainer runs exactly one launcher pod")
            return
        workers = 1 if replicas is None else self._int(fld, replicas, 1)
        if workers is None:
            return
        nodes = workers + (1 if self.launcher_as_worker else 0)
        self.trainer["numNodes"] = nodes
        if replicas is not None:
            self.add(fld, MAPPED, "spec.trainer.numNodes", f"{nodes}: the hosts of the hostfile, the launcher "
                     "included" if self.launcher_as_worker else "")

    # -- the objects --------------------------------------------------------------------------------

    def fits_bundled(self) -> bool:
        """Whether the bundled mpi-distributed runtime runs this job as its own runtime would."""
        policy, node = bundled_node()
        worker = self.templates[NODE_INDEX]["spec"].get("containers", [{}])[0]
        return (self.implementation_name == names.OPEN_MPI
                and self.mpi["sshAuthMountPath"] == policy["sshAuthMountPath"]
                and self.launcher_as_worker == policy["runLauncherAsNode"]
                and self.depends
                and all(worker.get(k) == node.get(k) for k in ("command", "args"))
                and all(ln.bundled is not None for ln in self.lines if ln.mapping.verdict == RUNTIME))

    def trainjob(self, runtime_ref: dict) -> dict:
        meta: dict[str, Any] = {"name": self.name}
        if self.namespace:
            meta["namespace"] = self.namespace
        if self.labels:
            meta["labels"] = dict(self.labels)
        if self.annotations:
            meta["annotations"] = dict(self.annotations)
        return {"apiVersion": names.TRAINER_API_VERSION, "kind": "TrainJob", "metadata": meta,
                "spec": {"runtimeRef": runtime_ref, **self.spec, "trainer": self.trainer}}

    def runtime(self) -> dict:
        meta: dict[str, Any] = {"name": self.name}
        if self.namespace:
            meta["namespace"] = self.namespace
        meta["labels"] = {names.LABEL_FRAMEWORK: "mpi"}
        if self.runtime_annotations:
            meta["annotations"] = dict(self.runtime_annotations)
        node = {"name": names.NODE, "template": {"spec": {"template": self.templates[NODE_INDEX]}}}
        launcher: dict[str, Any] = {"name": names.LAUNCHER, "template": {
            "metadata": {"labels": {names.LABEL_ANCESTOR: names.ANCESTOR_TRAINER}},
            "spec": {"template": self.templates[LAUNCHER_INDEX]}}}
        if self.depends:
            launcher = {"name": names.LAUNCHER, "dependsOn": [{"name": names.NODE, "status": "Ready"}],
                        "template": launcher["template"]}
        return {
            "apiVersion": names.TRAINER_API_VERSION, "kind": "TrainingRuntime", "metadata": meta,
            "spec": {
                "mlPolicy": {"numNodes": self.trainer.get("numNodes", 1), "mpi": dict(self.mpi)},
                "template": {"spec": {
                    "network": {"publishNotReadyAddresses": True},
                    "successPolicy": {"operator": "All", "targetReplicatedJobs": [names.LAUNCHER]},
                    "replicatedJobs": [node, launcher],
                }},
            },
        }


def convert(mpijob: dict, *, always_runtime: bool = False) -> Conversion:
    """The TrainJob (and TrainingRuntime) that run `mpijob` under Trainer, with the report.

    Raises a 422 `ApiError` naming every field that cannot be converted; nothing is returned then.
    With `always_runtime`, a runtime is generated even when the bundled one would do (to run the job
    exactly as written).
    """
    if not isinstance(mpijob, dict):
        raise invalid(names.MPIJOB_KIND, "", [Cause("", f"Invalid value: {show(mpijob)}: expected an MPIJob "
                                                        "object (a mapping with apiVersion, kind, metadata, spec)")],
                      names.MPI_OPERATOR_GROUP)
    conv = Converter(mpijob)
    conv.run()
    if conv.causes:
        raise invalid(names.MPIJOB_KIND, conv.name, conv.causes, names.MPI_OPERATOR_GROUP)
    if not always_runtime and conv.fits_bundled():
        report = [Mapping(ln.mapping.field, MAPPED, f"ClusterTrainingRuntime {BUNDLED_NAME}: {ln.bundled}",
                          f"the bundled runtime already has it{'; ' + ln.mapping.why if ln.mapping.why else ''}")
                  if ln.mapping.verdict == RUNTIME else ln.mapping for ln in conv.lines]
        return Conversion(conv.trainjob({"name": BUNDLED_NAME}), None, report)
    ref = {"name": conv.name, "apiGroup": names.TRAINER_GROUP, "kind": "TrainingRuntime"}
    return Conversion(conv.trainjob(ref), conv.runtime(), [ln.mapping for ln in conv.lines])
