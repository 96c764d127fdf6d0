"""`mpijob.api.mpioperator.convert`: MPI Operator's MPIJobs become TrainJobs (and TrainingRuntimes) that
upstream's CRDs accept and the local cluster can plan, with a report that accounts for every field."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpijob.api import names
from mpijob.api.core.errors import ApiError
from mpijob.api.mpioperator.convert import DROPPED, MAPPED, RUNTIME, VERDICTS, Conversion, convert
from mpijob.api.trainer.plan import resolve
from mpijob.api.trainer.runtimes import BUNDLED_NAME, bundled

from support import UPSTREAM

EXAMPLES = sorted((UPSTREAM / "mpi-operator").glob("example_*.yaml"))
OURS = Path(__file__).resolve().parents[2] / "examples" / "mpijob"
UID = "0b7c5b1e-1111-2222-3333-444455556666"
Crd = Callable[[dict, str], None]  # the `assert_crd` fixture: (object, "trainjobs" | "trainingruntimes")


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def leaves(node: Any, path: str = "") -> list[str]:
    """The concrete path of every field set in `node` (null, [] and {} are unset, as kube has them)."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in leaves(v, f"{path}[{i}]")]
    return [] if node is None else [path]


def covers(fld: str, leaf: str) -> bool:
    return leaf == fld or leaf.startswith((fld + ".", fld + "["))


def at(obj: Any, path: str) -> Any:
    """The value at a report path: `a.b[0].c`, `metadata.labels[kueue.x-k8s.io/queue-name]`."""
    for name, index in re.findall(r"([^.\[\]]+)|\[([^\]]+)\]", path):
        obj = obj[int(index)] if index.isdigit() else obj[index or name]
    return obj


def runtime_of(conv: Conversion) -> dict:
    return conv.runtime if conv.runtime is not None else bundled()[0]


def plan_of(conv: Conversion):
    tj = copy.deepcopy(conv.trainjob)
    tj["metadata"]["uid"] = UID
    return resolve(tj, runtime_of(conv))


def line(conv: Conversion, fld: str):
    (found,) = [m for m in conv.report if m.field == fld]
    return found


def assert_accounted(mpijob: dict, conv: Conversion) -> None:
    """Every field set in the MPIJob is in exactly one report line, and each line points where it says."""
    fields = [m.field for m in conv.report]
    assert len(fields) == len(set(fields)), fields
    for leaf in leaves(mpijob):
        owners = [f for f in fields if covers(f, leaf)]
        assert len(owners) == 1, (leaf, owners)
    for m in conv.report:
        assert m.verdict in VERDICTS
        assert any(covers(m.field, leaf) for leaf in leaves(mpijob)), f"{m.field} is not set in the MPIJob"
        if m.verdict == DROPPED:
            assert m.to == "" and len(m.why) > 20, m
        if m.verdict == RUNTIME:
            assert conv.runtime is not None and m.why, m
            at(conv.runtime, m.to)  # the moved field is where the line says
        if m.verdict == MAPPED and m.to.startswith(("spec.", "metadata.")):
            at(conv.trainjob, m.to)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
@pytest.mark.parametrize("always_runtime", [False, True])
def test_every_upstream_example_converts_to_valid_objects(path: Path, always_runtime: bool, assert_crd: Crd) -> None:
    mpijob = load(path)
    conv = convert(copy.deepcopy(mpijob), always_runtime=always_runtime)
    assert_crd(conv.trainjob, "trainjobs")
    assert conv.runtime is not None  # upstream's examples all have a launcher that is no worker
    assert_crd(conv.runtime, "trainingruntimes")
    assert conv.trainjob["spec"]["runtimeRef"] == {"name": mpijob["metadata"]["name"],
                                                   "apiGroup": names.TRAINER_GROUP, "kind": "TrainingRuntime"}
    assert conv.runtime["metadata"]["name"] == mpijob["metadata"]["name"]
    rjobs = conv.runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert [rj["name"] for rj in rjobs] == [names.NODE, names.LAUNCHER]
    for rj in rjobs:
        assert [c["name"] for c in rj["template"]["spec"]["template"]["spec"]["containers"]] == [names.CONTAINER]
    assert rjobs[1]["template"]["metadata"]["labels"] == {names.LABEL_ANCESTOR: names.ANCESTOR_TRAINER}
    assert conv.runtime["metadata"]["labels"] == {names.LABEL_FRAMEWORK: "mpi"}
    assert_accounted(mpijob, conv)

    workers = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    plan = plan_of(conv)  # the local cluster can run what it says
    assert plan.node_replicas == workers and not plan.launcher_as_node
    assert plan.hostfile.count("\n") == workers


def test_slots_per_worker_becomes_num_proc_per_node_and_the_hostfile_slots() -> None:
    mpijob = load(UPSTREAM / "mpi-operator" / "example_pi.yaml")
    mpijob["spec"]["slotsPerWorker"] = 4
    conv = convert(mpijob)
    assert conv.trainjob["spec"]["trainer"]["numProcPerNode"] == 4
    assert conv.runtime["spec"]["mlPolicy"]["mpi"]["numProcPerNode"] == 4
    assert line(conv, "spec.slotsPerWorker").to == "spec.trainer.numProcPerNode"
    assert plan_of(conv).hostfile == "".join(f"pi-node-0-{i}.pi slots=4\n" for i in range(2))


def test_queue_and_priority_class_become_kueue_labels() -> None:
    mpijob = load(UPSTREAM / "mpi-operator" / "example_pi.yaml")
    mpijob["spec"]["runPolicy"]["schedulingPolicy"] = {"queue": "team-a", "priorityClass": "high",
                                                       "minAvailable": 3, "scheduleTimeoutSeconds": 60}
    conv = convert(mpijob)
    labels = conv.trainjob["metadata"]["labels"]
    assert labels[names.LABEL_QUEUE_NAME] == "team-a" and labels[names.LABEL_PRIORITY_CLASS] == "high"
    assert "WorkloadPriorityClass" in line(conv, "spec.runPolicy.schedulingPolicy.priorityClass").why
    for gang in ("minAvailable", "scheduleTimeoutSeconds"):
        m = line(conv, f"spec.runPolicy.schedulingPolicy.{gang}")
        assert m.verdict == DROPPED and "Kueue" in m.why
    assert_accounted(mpijob, conv)


@pytest.mark.parametrize("impl", [names.MPI_INTEL, names.MPI_MPICH])
def test_intel_and_mpich_are_named_by_the_runtime_annotation(impl: str) -> None:
    example = "example_pi-intel.yaml" if impl == names.MPI_INTEL else "example_pi-mpich.yaml"
    conv = convert(load(UPSTREAM / "mpi-operator" / example))
    assert conv.runtime["metadata"]["annotations"] == {names.ANNOTATION_MPI_IMPLEMENTATION: impl}
    assert conv.runtime["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] == names.OPEN_MPI  # all Trainer's CRD admits
    m = line(conv, "spec.mpiImplementation")
    assert m.verdict == RUNTIME and at(conv.runtime, m.to) == impl
    # their launcher gives only args, for the image's entrypoint: kept, and the report says what that means
    args = line(conv, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].args")
    assert "command" not in conv.trainjob["spec"]["trainer"] and "entrypoint" in args.why


def test_wait_for_workers_ready_makes_the_launcher_depend_on_ready_nodes() -> None:
    mpijob = load(UPSTREAM / "mpi-operator" / "example_pi.yaml")
    mpijob["spec"]["launcherCreationPolicy"] = names.LAUNCHER_WAIT_FOR_WORKERS
    conv = convert(mpijob)
    launcher = conv.runtime["spec"]["template"]["spec"]["replicatedJobs"][1]
    assert launcher["dependsOn"] == [{"name": names.NODE, "status": "Ready"}]
    assert [p.depends_on_nodes_ready for p in plan_of(conv).pods if p.is_launcher] == [True]
    mpijob["spec"]["launcherCreationPolicy"] = "AtStartup"
    conv = convert(mpijob)
    assert "dependsOn" not in conv.runtime["spec"]["template"]["spec"]["replicatedJobs"][1]
    assert line(conv, "spec.launcherCreationPolicy").verdict == RUNTIME


def test_clean_pod_policy_ttl_and_backoff_are_dropped_with_their_reason(assert_crd: Crd) -> None:
    mpijob = load(UPSTREAM / "mpi-operator" / "example_pi.yaml")
    mpijob["spec"]["runPolicy"].update({"backoffLimit": 3, "activeDeadlineSeconds": 900, "suspend": True,
                                        "managedBy": names.MANAGED_BY_MULTIKUEUE})
    conv = convert(mpijob)
    clean = line(conv, "spec.runPolicy.cleanPodPolicy")
    assert clean.verdict == DROPPED and "no cleanup policy" in clean.why
    assert line(conv, "spec.runPolicy.ttlSecondsAfterFinished").verdict == DROPPED
    assert "retry" in line(conv, "spec.runPolicy.backoffLimit").why
    spec = conv.trainjob["spec"]
    assert (spec["activeDeadlineSeconds"], spec["suspend"], spec["managedBy"]) == (900, True,
                                                                                   names.MANAGED_BY_MULTIKUEUE)
    mpijob["spec"]["runPolicy"]["managedBy"] = names.MANAGED_BY_MPI_OPERATOR
    assert convert(mpijob).trainjob["spec"]["managedBy"] == names.MANAGED_BY_TRAINER
    assert_crd(convert(mpijob).trainjob, "trainjobs")


def test_a_job_shaped_like_the_bundled_runtime_needs_no_runtime_and_runs_the_same(assert_crd: Crd) -> None:
    mpijob = load(OURS / "hello.yaml")
    conv = convert(copy.deepcopy(mpijob))
    assert conv.runtime is None and conv.trainjob["spec"]["runtimeRef"] == {"name": BUNDLED_NAME}
    assert conv.trainjob["spec"]["trainer"]["numNodes"] == 3  # 2 workers + the launcher
    assert {m.verdict for m in conv.report} == {MAPPED}
    assert_accounted(mpijob, conv)
    assert_crd(conv.trainjob, "trainjobs")

    own = convert(copy.deepcopy(mpijob), always_runtime=True)  # as the local cluster runs an MPIJob as is
    assert own.runtime is not None and own.trainjob["spec"]["runtimeRef"]["kind"] == "TrainingRuntime"
    assert_crd(own.runtime, "trainingruntimes")
    assert_accounted(mpijob, own)
    a, b = plan_of(conv), plan_of(own)
    assert (a.hostfile, a.slots, a.launcher_as_node, a.ssh_auth_mount_path) == \
           (b.hostfile, b.slots, b.launcher_as_node, b.ssh_auth_mount_path)
    assert [(p.name, p.command, p.args, p.env, p.runs_sshd, p.depends_on_nodes_ready) for p in a.pods] == \
           [(p.name, p.command, p.args, p.env, p.runs_sshd, p.depends_on_nodes_ready) for p in b.pods]


@pytest.mark.parametrize("change", [
    {"sshAuthMountPath": "/root/.ssh"}, {"runLauncherAsWorker": False}, {"launcherCreationPolicy": "AtStartup"},
    {"mpiImplementation": names.MPI_MPICH},
])
def test_a_job_unlike_the_bundled_runtime_gets_its_own(change: dict) -> None:
    mpijob = load(OURS / "hello.yaml")
    mpijob["spec"].update(change)
    conv = convert(mpijob)
    assert conv.runtime is not None and conv.trainjob["spec"]["runtimeRef"]["name"] == "hello"
    assert_accounted(mpijob, conv)


def test_resources_follow_the_hosts() -> None:
    """Worker resources are every host's (resourcesPerNode) when the launcher is a host, else the nodes' own."""
    mpijob = load(OURS / "hello.yaml")
    limits = {"limits": {"cpu": "1", "memory": "1Gi"}}
    mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = limits
    conv = convert(copy.deepcopy(mpijob))
    assert conv.trainjob["spec"]["trainer"]["resourcesPerNode"] == limits
    assert {p.resources["limits"]["memory"] for p in plan_of(conv).pods} == {"1Gi"}  # the launcher's too

    mpijob["spec"]["runLauncherAsWorker"] = False
    conv = convert(mpijob)
    assert "resourcesPerNode" not in conv.trainjob["spec"]["trainer"]
    m = line(conv, "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources")
    assert m.verdict == RUNTIME and at(conv.runtime, m.to) == limits
    assert [bool(p.resources) for p in plan_of(conv).pods] == [True, True, False]  # nodes, not the launcher


def test_launcher_env_goes_to_trainer_env_unless_trainer_refuses_it(assert_crd: Crd) -> None:
    mpijob = load(UPSTREAM / "mpi-operator" / "example_pi.yaml")
    launcher = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    launcher["containers"][0]["env"] = [{"name": "A", "value": "1"}, {"name": names.OMPI_RSH_ARGS, "value": "-v"}]
    launcher["containers"].append({"name": "sidecar", "image": "busybox"})
    launcher["nodeSelector"] = {"gpu": "a100"}
    launcher["restartPolicy"] = "Always"
    conv = convert(mpijob)
    assert conv.trainjob["spec"]["trainer"]["env"] == [{"name": "A", "value": "1"}]
    pod = conv.runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["env"] == [{"name": names.OMPI_RSH_ARGS, "value": "-v"}]
    assert pod["containers"][1] == {"name": "sidecar", "image": "busybox"}
    assert pod["nodeSelector"] == {"gpu": "a100"} and "restartPolicy" not in pod
    assert line(conv, "spec.mpiReplicaSpecs.Launcher.template.spec.restartPolicy").verdict == DROPPED
    assert_accounted(mpijob, conv)
    assert_crd(conv.runtime, "trainingruntimes")


def _bad(mutate) -> ApiError:
    mpijob = load(UPSTREAM / "mpi-operator" / "example_pi.yaml")
    mutate(mpijob)
    with pytest.raises(ApiError) as err:
        convert(mpijob)
    assert err.value.code == 422
    return err.value


def _set(path: str, value: Any):
    def mutate(obj: dict) -> None:
        *parents, last = path.split(".")
        for key in parents:
            obj = obj.setdefault(key, {})
        if value is None:
            del obj[last]
        else:
            obj[last] = value
    return mutate


@pytest.mark.parametrize("mutate, fld, words", [
    (_set("kind", "TrainJob"), "kind", ['"TrainJob"', "MPIJob"]),
    (_set("apiVersion", "kubeflow.org/v1"), "apiVersion", ['"kubeflow.org/v1"', "v2beta1"]),
    (_set("metadata.name", None), "metadata.name", ["set metadata.name"]),
    (_set("spec.mpiReplicaSpecs.Worker", None), "spec.mpiReplicaSpecs.Worker", ["add spec.mpiReplicaSpecs.Worker"]),
    (_set("spec.mpiReplicaSpecs.Launcher", None), "spec.mpiReplicaSpecs.Launcher", ["mpirun"]),
    (_set("spec.mpiReplicaSpecs.Launcher.replicas", 2), "spec.mpiReplicaSpecs.Launcher.replicas", ["2", "set it to 1"]),
    (_set("spec.mpiReplicaSpecs.Worker.replicas", 0), "spec.mpiReplicaSpecs.Worker.replicas", ["0", "at least 1"]),
    (_set("spec.mpiReplicaSpecs.Chief", {"replicas": 1}), "spec.mpiReplicaSpecs.Chief", ["Launcher and Worker"]),
    (_set("spec.mpiImplementation", "MVAPICH"), "spec.mpiImplementation", ['"MVAPICH"', "Intel"]),
    (_set("spec.slotPerWorker", 2), "spec.slotPerWorker", ["slotsPerWorker", "remove it"]),
    (_set("spec.runPolicy.managedBy", "me"), "spec.runPolicy.managedBy", ['"me"', names.MANAGED_BY_MPI_OPERATOR]),
    (_set("spec.launcherCreationPolicy", "Later"), "spec.launcherCreationPolicy", [names.LAUNCHER_WAIT_FOR_WORKERS]),
])
def test_bad_input_is_refused_naming_the_field_the_value_and_the_fix(mutate, fld: str, words: list[str]) -> None:
    err = _bad(mutate)
    (cause,) = [c for c in err.causes if c.field == fld]
    for word in words:
        assert word in cause.message, cause.message


def test_a_queue_label_that_disagrees_with_schedulingpolicy_is_refused() -> None:
    def mutate(obj: dict) -> None:
        obj["metadata"]["labels"] = {names.LABEL_QUEUE_NAME: "a"}
        obj["spec"]["runPolicy"]["schedulingPolicy"] = {"queue": "b"}

    (cause,) = _bad(mutate).causes
    assert cause.field == "spec.runPolicy.schedulingPolicy.queue" and "'a'" in cause.message


def test_something_other_than_an_object_is_refused() -> None:
    with pytest.raises(ApiError) as err:
        convert(["not", "an", "object"])  # type: ignore[arg-type]
    assert err.value.code == 422 and "expected an MPIJob" in str(err.value)
