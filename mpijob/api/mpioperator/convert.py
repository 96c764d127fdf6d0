"""MPI Operator's MPIJob (kubeflow.org/v2beta1) converted to a Trainer TrainJob, a TrainingRuntime when the
job needs one, and a report saying, for every field the MPIJob sets, where it went or why it was dropped.

An MPIJob describes its pods in full; a TrainJob names a runtime that describes them and carries only
what changes from job to job (command, size, env, resources). So the MPIJob is split: what a TrainJob
has a field for goes there, the pod templates go into a namespaced TrainingRuntime named after the job,
and what neither has is dropped with the reason (docs/migration.md). A job whose pods are exactly those
of the bundled `mpi-distributed` runtime gets no runtime of its own. Pure: no I/O.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from mpijob.api import names
from mpijob.api.errors import Cause, invalid
from mpijob.api.runtimes import BUNDLED_NAME, bundled
from mpijob.api.schema import show

MAPPED, RUNTIME, DROPPED = "mapped", "runtime", "dropped"
VERDICTS = (MAPPED, RUNTIME, DROPPED)
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
BUNDLED_NODE_FIELDS = ("image", "command", "args", "ports", "readinessProbe")  # what mpi-distributed's node sets
NODE_INDEX, LAUNCHER_INDEX = 0, 1  # the runtime's replicatedJobs: node first, as upstream's MPI runtimes
MPI_POLICY = "spec.mlPolicy.mpi"

_GANG = ("gang admission is Kueue's: it admits a TrainJob's pods all together or not at all, so there is no "
         "PodGroup to size; on a cluster without Kueue, put a podGroupPolicy in the runtime")
_SERVER_SET = "written by the API server for the MPIJob; the TrainJob gets its own"
_LAUNCHER_FIELD = ("a TrainJob carries only the launcher's image, command, args, env and resources: the rest of "
                   "its container is the runtime's")
_WORKER_FIELD = "the workers' pod template is the runtime's node replicatedJob: a TrainJob changes only the launcher"
_ENTRYPOINT = ("with no command, the image's entrypoint runs these args (MPI Operator's Intel and MPICH images "
               "set their MPI up there, then exec them); the local cluster, which runs no image entrypoints, runs "
               "the args themselves")
_KEY = ("renamed node: Trainer mounts the SSH key only into containers named node and applies spec.trainer "
        "to them")


@dataclass(frozen=True)
class Mapping:
    """One line of the report: where an MPIJob field went."""

    field: str  # the MPIJob's path, concrete: spec.mpiReplicaSpecs.Worker.template.spec.containers[0].image
    verdict: str  # MAPPED (into the TrainJob or onto the bundled runtime) | RUNTIME | DROPPED
    to: str  # where it went: a TrainJob path, a runtime path, a label; "" when dropped
    why: str  # for runtime and dropped lines (and non-obvious mapped ones): the reason, in one sentence


@dataclass(frozen=True)
class Conversion:
    trainjob: dict
    runtime: dict | None  # a namespaced TrainingRuntime named after the job, when the job needs one
    report: list[Mapping]


@dataclass
class _Line:
    mapping: Mapping
    bundled: str | None = None  # a runtime line whose value mpi-distributed already has: where it has it


def _rjob(index: int, rest: str = "") -> str:
    """A path into the generated runtime's pod template of replicatedJob `index`."""
    return f"spec.template.spec.replicatedJobs[{index}].template.spec.template{rest}"


def _set(value: Any) -> bool:
    """Whether a field is set (kube treats null, empty lists and empty maps as unset)."""
    return value is not None and value != [] and value != {}


def _bundled_node() -> tuple[dict, dict]:
    """mpi-distributed's MPI policy and node container, what a job must match to run on it as is."""
    spec = bundled()[0]["spec"]
    (node,) = [rj for rj in spec["template"]["spec"]["replicatedJobs"] if rj["name"] == names.NODE]
    return spec["mlPolicy"]["mpi"], node["template"]["spec"]["template"]["spec"]["containers"][0]


class _Converter:
    """One conversion: the objects being built, the report lines and the problems found."""

    def __init__(self, mpijob: dict) -> None:
        self.src = mpijob
        self.lines: list[_Line] = []
        self.causes: list[Cause] = []
        meta = mpijob.get("metadata") if isinstance(mpijob.get("metadata"), dict) else {}
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
        self.lines.append(_Line(Mapping(fld, verdict, to, why), bundled_at))

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
        if _set(src.get("metadata")):  # first: its labels meet the queue and priority of the spec
            self.metadata(src["metadata"])
        for key, value in src.items():
            if key in ("apiVersion", "kind", "metadata") or not _set(value):
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
            if not _set(value):
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
        for key in spec:
            if key not in SPEC_FIELDS and _set(spec[key]):
                self.bad(f"spec.{key}", spec[key], f"not a field of an MPIJob spec (it has: {', '.join(SPEC_FIELDS)}); "
                         "remove it")
        slots = spec.get("slotsPerWorker")
        if _set(slots) and self._int("spec.slotsPerWorker", slots, 1) is not None:
            self.trainer["numProcPerNode"] = slots
            self.add("spec.slotsPerWorker", MAPPED, "spec.trainer.numProcPerNode",
                     "the slots of each host in the hostfile, as slotsPerWorker gave them")
        self.mpi["numProcPerNode"] = slots if isinstance(slots, int) and slots >= 1 else 1
        self.launcher_as_worker = spec.get("runLauncherAsWorker") is True
        self.mpi["runLauncherAsNode"] = self.launcher_as_worker
        if _set(spec.get("runLauncherAsWorker")):
            self.add("spec.runLauncherAsWorker", RUNTIME, f"{MPI_POLICY}.runLauncherAsNode",
                     "the launcher is also a host: the last line of the hostfile" if self.launcher_as_worker
                     else "the launcher runs mpirun only and is no host of the hostfile",
                     bundled_at="runLauncherAsNode: true" if self.launcher_as_worker else None)
        mount = spec.get("sshAuthMountPath")
        self.mpi["sshAuthMountPath"] = mount if _set(mount) else names.DEFAULT_SSH_AUTH_MOUNT_PATH
        if _set(mount):
            self.add("spec.sshAuthMountPath", RUNTIME, f"{MPI_POLICY}.sshAuthMountPath",
                     "where Trainer mounts the job's SSH key in every node container",
                     bundled_at=f"sshAuthMountPath: {mount}" if mount == _bundled_node()[0]["sshAuthMountPath"]
                     else None)
        self.implementation(spec.get("mpiImplementation"))
        self.creation_policy(spec.get("launcherCreationPolicy"))
        if _set(spec.get("runPolicy")):
            self.run_policy(spec["runPolicy"])
        self.replicas(spec.get("mpiReplicaSpecs"))

    def implementation(self, impl: Any) -> None:
        self.mpi["mpiImplementation"] = names.OPEN_MPI
        self.implementation_name = names.OPEN_MPI
        if not _set(impl):
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
        if not _set(policy):
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
            if not _set(value):
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
            if not _set(value):
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
                if key not in REPLICA_FIELDS and _set(value):
                    self.bad(f"{where}.{key}", value, f"not a field of a replica spec (it has: "
                             f"{', '.join(REPLICA_FIELDS)}); remove it")
            self.replica_count(rtype, spec.get("replicas"))
            if _set(spec.get("restartPolicy")):
                self.add(f"{where}.restartPolicy", DROPPED, why="Trainer has no restart policy per replica: a failed "
                         "pod fails the TrainJob")
            self.template(rtype, spec.get("template"))

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

    def template(self, rtype: str, template: Any) -> None:
        where = f"spec.mpiReplicaSpecs.{rtype}.template"
        index = LAUNCHER_INDEX if rtype == names.REPLICA_LAUNCHER else NODE_INDEX
        containers = ((template or {}).get("spec") or {}).get("containers") if isinstance(template, dict) else None
        if not containers or not isinstance(containers, list) or not isinstance(containers[0], dict):
            self.causes.append(Cause(f"{where}.spec.containers", "Required value: a pod template with at least one "
                                     "container; the first one is the MPI container", "FieldValueRequired"))
            return
        out = self.templates[index]
        for key, value in template.items():
            if not _set(value):
                continue
            if key == "metadata" and isinstance(value, dict):
                for mkey, mvalue in value.items():
                    if not _set(mvalue):
                        continue
                    if mkey in ("labels", "annotations"):
                        out.setdefault("metadata", {})[mkey] = copy.deepcopy(mvalue)
                        self.add(f"{where}.metadata.{mkey}", RUNTIME, _rjob(index, f".metadata.{mkey}"),
                                 "a pod template of the runtime")
                    else:
                        self.add(f"{where}.metadata.{mkey}", DROPPED, why="the Job controller names its pods")
            elif key == "spec":
                self.pod_spec(rtype, index, value)
            else:
                self.add(f"{where}.{key}", DROPPED, why="not a field of a pod template")

    def pod_spec(self, rtype: str, index: int, pod: dict) -> None:
        where = f"spec.mpiReplicaSpecs.{rtype}.template.spec"
        out = self.templates[index]["spec"]
        for key, value in pod.items():
            if not _set(value) or key == "containers":
                continue
            if key == "restartPolicy" and value == "Always":
                self.add(f"{where}.{key}", DROPPED, why="a JobSet's Jobs take OnFailure or Never; left out, JobSet "
                         "picks for them")
                continue
            out[key] = copy.deepcopy(value)
            self.add(f"{where}.{key}", RUNTIME, _rjob(index, f".spec.{key}"), "a pod template field of the runtime")
        containers = pod["containers"]
        out["containers"] = [{} for _ in containers]
        self.main_container(rtype, index, containers[0], out["containers"][0])
        for k, c in enumerate(containers[1:], 1):
            out["containers"][k] = copy.deepcopy(c)
            self.add(f"{where}.containers[{k}]", RUNTIME, _rjob(index, f".spec.containers[{k}]"),
                     f"a second container runs beside {names.CONTAINER} on a cluster; the local cluster runs only "
                     f"the one named {names.CONTAINER}")

    def main_container(self, rtype: str, index: int, c: dict, out: dict) -> None:
        where = f"spec.mpiReplicaSpecs.{rtype}.template.spec.containers[0]"
        at = _rjob(index, ".spec.containers[0]")
        out["name"] = names.CONTAINER
        launcher = rtype == names.REPLICA_LAUNCHER
        node = _bundled_node()[1]
        for key, value in c.items():
            if not _set(value):
                continue
            fld = f"{where}.{key}"
            if key == "name":
                self.add(fld, RUNTIME, f"{at}.name", _KEY, bundled_at=f"container {names.CONTAINER}")
            elif launcher and key in ("image", "command", "args"):
                self.trainer[key] = copy.deepcopy(value)
                if key == "image":
                    out["image"] = value
                why = "Trainer applies it to the launcher's node container" if key == "image" else ""
                if key == "args" and not _set(c.get("command")):
                    why = _ENTRYPOINT
                self.add(fld, MAPPED, f"spec.trainer.{key}", why)
            elif launcher and key == "env" and isinstance(value, list):
                self.launcher_env(where, at, value, out)
            elif key == "resources":
                self.resources(fld, at, rtype, value, out)
            else:
                out[key] = copy.deepcopy(value)
                same = not launcher and key in BUNDLED_NODE_FIELDS and node.get(key) == value
                why = _LAUNCHER_FIELD if launcher else _WORKER_FIELD
                if key == "args" and not _set(c.get("command")):
                    why = f"{_WORKER_FIELD}; {_ENTRYPOINT}"
                self.add(fld, RUNTIME, f"{at}.{key}", why,
                         bundled_at=f"node container {key}" if same else None)

    def launcher_env(self, where: str, at: str, env: list, out: dict) -> None:
        for j, var in enumerate(env):
            fld = f"{where}.env[{j}]"
            name = var.get("name") if isinstance(var, dict) else None
            if name in names.RESERVED_ENV or (isinstance(var, dict) and _set(var.get("valueFrom"))):
                out.setdefault("env", []).append(copy.deepcopy(var))
                self.add(fld, RUNTIME, f"{at}.env[{len(out['env']) - 1}]",
                         "Trainer refuses it in spec.trainer.env (it sets that variable itself)"
                         if name in names.RESERVED_ENV else "a value from a Secret, ConfigMap or field stays on the "
                         "launcher container (the local cluster refuses valueFrom)")
            else:
                self.trainer.setdefault("env", []).append(copy.deepcopy(var))
                self.add(fld, MAPPED, f"spec.trainer.env[{len(self.trainer['env']) - 1}]",
                         "it reaches the launcher, and the nodes too when the launcher is a node")

    def resources(self, fld: str, at: str, rtype: str, value: Any, out: dict) -> None:
        """Worker resources become resourcesPerNode when the launcher is a host (Trainer then applies them to
        every host); otherwise each stays on its own pod template, as resourcesPerNode would reach only the
        launcher."""
        if not self.launcher_as_worker:
            out["resources"] = copy.deepcopy(value)
            self.add(fld, RUNTIME, f"{at}.resources", "spec.trainer.resourcesPerNode would reach the launcher only "
                     "(it is no host), so each pod template keeps its own")
            return
        worker = self._worker_resources()
        if rtype == names.REPLICA_WORKER or value == worker:
            self.trainer["resourcesPerNode"] = copy.deepcopy(worker if worker else value)
            self.add(fld, MAPPED, "spec.trainer.resourcesPerNode", "the resources of every host, the launcher "
                     "included (it is a node)")
        else:
            out["resources"] = copy.deepcopy(value)
            self.add(fld, RUNTIME, f"{at}.resources", "it differs from the Worker's, which spec.trainer."
                     "resourcesPerNode merges over it key by key (the launcher is a node)")

    def _worker_resources(self) -> Any:
        try:
            return self.src["spec"]["mpiReplicaSpecs"][names.REPLICA_WORKER]["template"]["spec"]["containers"][0] \
                .get("resources")
        except (KeyError, TypeError, IndexError, AttributeError):
            return None

    # -- the objects --------------------------------------------------------------------------------

    def fits_bundled(self) -> bool:
        """Whether the bundled mpi-distributed runtime runs this job as its own runtime would."""
        policy, node = _bundled_node()
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
    conv = _Converter(mpijob)
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
