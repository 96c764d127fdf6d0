"""The inventory: every field of the kinds the local cluster runs, as its served OpenAPI schema lists them,
is honoured (and a named test proves it), warned (the warning names it), or refused (a 422 names it).

The walk goes over the schemas the server serves (`/openapi/v2`), so a field upstream adds to a model
or a CRD fails here until someone decides what the local cluster does with it. The Kueue kinds' refusals
and warnings are checked field by field in tests/api/kueue/test_kueue_support.py."""

from __future__ import annotations

import ast
import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from mpijob.api import names
from mpijob.api.core import resources as r
from mpijob.api.core.errors import ApiError
from mpijob.api.core.openapi import walk
from mpijob.api.core.validation import admit
from mpijob.api.trainer.runtimes import bundled
from mpijob.api.trainer.support import check, rule_for
from mpijob.api.trainer.support_rules import HONOURED, REFUSED, RULES, WARNED
from mpijob.server import openapi

TESTS = Path(__file__).resolve().parents[1]
TRAINER_KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
KUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Cohort", "Workload")
SCHED = "controllers/scheduler"
CRUD = "server/test_kueue_http.py::test_v1beta1_create_is_stored_as_v1beta2_and_read_back_in_either"
STATUS = "controllers/scheduler/test_queueing_inactive.py::test_a_change_of_the_active_condition_alone_is_written"
KUEUE_OBJECT = {"apiVersion": CRUD, "kind": CRUD, "metadata": CRUD}
KUEUE_META = {**KUEUE_OBJECT, "status": STATUS}
JOB = "spec.template.spec.replicatedJobs[].template"
POD = f"{JOB}.spec.template.spec"
CTR = f"{POD}.containers[]"
E2E = "e2e/test_trainjob_fields.py"
VOL = "e2e/test_volumes.py"
VOL_FILES = "test_config_map_secret_downward_api_and_projected_files_have_their_contents_and_modes"

# Each honoured rule and the test that shows the local cluster doing what upstream does with it.
PROOF = {
    "TrainJob": {
        "apiVersion": "server/test_http_crud.py", "kind": "server/test_http_crud.py",
        "metadata": "server/test_http_crud.py", "status": "api/test_validation_trainjob.py::test_status_is_not_rejected",
        "spec.runtimeRef": "e2e/test_upstream_runtime.py::test_deepspeed_runtime_applied_unchanged_runs_a_job",
        "spec.suspend": "e2e/test_queueing.py::test_suspend_stops_and_frees_then_resume_runs_again",
        "spec.activeDeadlineSeconds": f"{E2E}::test_active_deadline_fails_the_job_and_restarts_on_resume",
        "spec.managedBy": "api/test_validation_trainjob.py",
        "spec.trainer.command": "e2e/test_launcher_as_node.py::test_job_completes",
        "spec.trainer.args": "api/test_plan.py::test_fields_go_where_trainer_puts_them",
        "spec.trainer.env": "e2e/test_launcher_as_node.py::test_every_rank_runs_as_the_job_user_with_env_and_home",
        "spec.trainer.numNodes": "e2e/test_launcher_separate.py::test_n_nodes_plus_a_launcher_outside_the_hostfile",
        "spec.trainer.numProcPerNode": "api/test_plan.py::test_slots_rule",
        "spec.trainer.resourcesPerNode": "e2e/test_queueing.py::test_pods_asking_for_whole_cpus_get_disjoint_cores",
        "spec.runtimePatches": "e2e/test_runtime_patches.py::test_patched_labels_annotations_placement_and_ids_reach_the_pods",
    },
    "Runtime": {
        "apiVersion": "server/test_http_crud.py", "kind": "server/test_http_crud.py",
        "metadata": "server/test_http_crud.py",
        "spec.mlPolicy": "api/test_plan.py::test_launcher_as_node_counts_and_hostfile",
        "spec.template.spec.replicatedJobs[].name": "api/test_plan.py::test_names_hosts_labels_and_determinism",
        "spec.template.spec.replicatedJobs[].replicas": "api/test_plan.py::test_launcher_as_node_counts_and_hostfile",
        "spec.template.spec.network": "e2e/test_launcher_as_node.py::test_pods_carry_jobset_labels_hostname_and_subdomain",
        f"{JOB}.metadata": "api/test_plan.py::test_fields_go_where_trainer_puts_them",
        f"{JOB}.spec.template.metadata": "api/test_render.py::test_launcher_pod",
        f"{POD}.securityContext.runAsUser": "api/test_plan.py::test_security_context_container_beats_pod",
        f"{POD}.securityContext.runAsGroup": "api/test_plan.py::test_security_context_container_beats_pod",
        f"{POD}.securityContext.fsGroup": f"{E2E}::test_the_pods_fs_group_is_a_group_of_every_rank",
        f"{POD}.serviceAccountName": "api/test_render.py::test_a_pod_that_does_not_automount_gets_no_token_volume",
        f"{POD}.nodeSelector": "e2e/test_node_placement.py::test_a_node_selector_the_node_lacks_waits_until_the_node_is_labelled",
        f"{POD}.nodeName": "api/test_placement.py::test_node_name_must_be_the_node",
        f"{POD}.tolerations": "e2e/test_node_placement.py::test_a_taint_holds_the_job_and_a_toleration_lets_it_run",
        f"{POD}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution":
            "api/test_placement.py::test_required_node_affinity_operators",
        f"{POD}.automountServiceAccountToken":
            "api/test_render.py::test_automount_follows_kube_rule_pod_first_then_service_account",
        f"{CTR}.name": "api/test_validation_runtimes_core.py::test_pod_needs_named_containers",
        f"{CTR}.command": "e2e/test_upstream_runtime.py::test_deepspeed_runtime_applied_unchanged_runs_a_job",
        f"{CTR}.args": "api/test_plan.py::test_fields_go_where_trainer_puts_them",
        f"{CTR}.env": "api/test_plan.py::test_env_order_and_mpi_variables",
        f"{CTR}.resources": "api/test_plan.py::test_slots_from_runtime_gpu_resources",
        f"{CTR}.workingDir": f"{E2E}::test_the_runtimes_working_dir_is_where_the_command_runs",
        f"{CTR}.ports": "api/test_render.py::test_node_pod",
        f"{CTR}.securityContext.runAsUser": "api/test_plan.py::test_security_context_container_beats_pod",
        f"{CTR}.securityContext.runAsGroup":
            "e2e/test_launcher_as_node.py::test_every_rank_runs_as_the_job_user_with_env_and_home",
        f"{POD}.volumes[].name": f"{VOL}::test_every_rank_writes_into_a_shared_claim_and_the_launcher_reads_them",
        f"{POD}.volumes[].persistentVolumeClaim":
            f"{VOL}::test_every_rank_writes_into_a_shared_claim_and_the_launcher_reads_them",
        f"{POD}.volumes[].hostPath": f"{VOL}::test_a_host_path_reaches_the_machines_directory_and_its_type_is_checked",
        f"{POD}.volumes[].emptyDir": f"{VOL}::test_empty_dirs_are_each_pods_own_and_a_memory_one_is_a_sized_tmpfs",
        f"{POD}.volumes[].configMap": f"{VOL}::{VOL_FILES}",
        f"{POD}.volumes[].secret": f"{VOL}::{VOL_FILES}",
        f"{POD}.volumes[].downwardAPI": f"{VOL}::{VOL_FILES}",
        f"{POD}.volumes[].projected": f"{VOL}::{VOL_FILES}",
        f"{CTR}.volumeMounts": f"{VOL}::test_a_read_only_mount_refuses_writes_and_a_sub_path_shows_part_of_the_claim",
        f"{POD}.terminationGracePeriodSeconds":
            "e2e/test_graceful_stop.py::test_a_rank_ignoring_sigterm_is_killed_when_the_grace_period_ends",
    },
}

PROOF |= {
    "ResourceFlavor": {**KUEUE_OBJECT, "spec.topologyName":
                       "e2e/test_kueue_inactive.py::test_flavor_topology_holds_the_job_until_the_queue_lists_another_flavor"},
    "ClusterQueue": {
        **KUEUE_META,
        "spec.resourceGroups": f"{SCHED}/test_sched_admission.py::test_second_flavor_used_when_first_is_full",
        "spec.cohortName": f"{SCHED}/test_sched_cohorts.py::test_borrow_unused_quota_of_the_cohort",
        "spec.queueingStrategy": f"{SCHED}/test_sched_admission.py::test_strict_fifo_head_blocks_its_queue",
        "spec.namespaceSelector": f"{SCHED}/test_sched_queues.py::test_namespace_selector_match_labels_and_expressions",
        "spec.preemption": f"{SCHED}/test_sched_preemption.py::test_lower_priority_preempts_a_lower_priority_workload",
        "spec.fairSharing": f"{SCHED}/test_sched_fairsharing.py::test_the_queue_with_the_lower_share_after_admission_goes_first",
        "spec.stopPolicy": f"{SCHED}/test_sched_queues.py::test_hold_and_drain_evicts_admitted_workloads",
        "spec.admissionChecksStrategy":
            "e2e/test_kueue_inactive.py::test_missing_admission_check_holds_the_job_until_removed",
    },
    "LocalQueue": {
        **KUEUE_META,
        "spec.clusterQueue": f"{SCHED}/test_sched_queues.py::test_missing_cluster_queue",
        "spec.stopPolicy": "e2e/test_kueue_fields.py::test_a_stopped_local_queue_holds_its_jobs_until_started",
    },
    "WorkloadPriorityClass": {
        **KUEUE_OBJECT,
        "value": "e2e/test_queueing.py::test_higher_priority_preempts_and_the_victim_runs_again",
        "description": CRUD,  # Kueue stores it, and so do we
    },
    "Cohort": KUEUE_META,
    "Workload": {
        **KUEUE_META,
        "spec.active": f"{E2E}::test_a_job_created_suspended_has_an_inactive_workload_and_starts_when_unsuspended",
        "spec.queueName": f"{SCHED}/test_sched_limits.py::test_positions_in_cluster_queue_and_local_queue",
        "spec.priority": f"{SCHED}/test_sched_admission.py::test_priority_then_creation_order",
        "spec.priorityClassRef": "e2e/test_queueing.py::test_higher_priority_preempts_and_the_victim_runs_again",
        "spec.podSets": f"{SCHED}/test_sched_admission.py::test_admission_carries_flavors_and_whole_job_usage",
    },
}

# MPI Operator's MPIJob: its own fields, and its pod templates, which run as a runtime's do (the same proofs)
_MPI_E2E = "e2e/test_mpijob_v2beta1.py"
_MPI_RUN = f"{_MPI_E2E}::test_an_mpijob_runs_as_is_under_mpi_operators_names"
_MPI_HELLO = f"{_MPI_E2E}::test_the_mpijob_examples_run_and_print_what_their_trainjob_forms_print"
_MPI_NAMING = "api/test_mpijob_naming.py"
PROOF["MPIJob"] = {
    "apiVersion": _MPI_RUN, "kind": _MPI_RUN, "metadata": _MPI_RUN, "status": _MPI_RUN,
    "spec.slotsPerWorker": f"{_MPI_NAMING}::test_workers_and_launcher_get_mpi_operators_names_hosts_and_labels",
    "spec.runLauncherAsWorker": _MPI_HELLO,
    "spec.sshAuthMountPath": f"{_MPI_NAMING}::test_rendered_objects_carry_mpi_operators_secret_config_map_and_volume_names",
    "spec.mpiImplementation": f"{_MPI_NAMING}::test_a_hydra_hostfile_is_renamed_in_its_own_format",
    "spec.launcherCreationPolicy": _MPI_HELLO,
    "spec.mpiReplicaSpecs": _MPI_RUN,
    "spec.mpiReplicaSpecs.*.replicas": _MPI_RUN,
    "spec.runPolicy.suspend":
        "e2e/test_mpijob_kueue.py::test_the_users_run_policy_suspend_holds_stops_and_resumes_the_job",
    **{"spec.mpiReplicaSpecs.*.template" + path[len(f"{JOB}.spec.template"):]: proof
       for path, proof in PROOF["Runtime"].items() if path.startswith(f"{JOB}.spec.template")},
}

# A value for each refused or warned rule, set on a valid object: the refusal or warning must name it.
SAMPLE: dict[str, dict[str, Any]] = {
    "TrainJob": {
        "spec.trainer.env[].valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
        "spec.trainer.image": "pytorch/pytorch:2.5",
        "spec.initializer": {"dataset": {"storageUri": "hf://org/data"}},
    },
    "Runtime": {
        "spec.podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": 60}},
        "spec.template.metadata": {"labels": {"team": "a"}},
        "spec.template.spec": {"suspend": True},
        "spec.template.spec.replicatedJobs[].dependsOn": [{"name": "node", "status": "Ready"}],
        "spec.template.spec.successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
        "spec.template.spec.startupPolicy": {"startupPolicyOrder": "InOrder"},
        "spec.template.spec.failurePolicy": {"maxRestarts": 3},
        f"{JOB}.spec": {"ttlSecondsAfterFinished": 60},
        f"{JOB}.spec.backoffLimit": 4,
        f"{JOB}.spec.activeDeadlineSeconds": 600,
        POD: {"priorityClassName": "high"},
        f"{POD}.schedulingGates": [{"name": "example.com/gate"}],
        f"{POD}.imagePullSecrets": [{"name": "registry"}],
        f"{POD}.volumes[]": {"name": "share", "nfs": {"server": "nas.example.com", "path": "/exports/data"}},
        f"{POD}.volumes[].emptyDir.medium": "HugePages",
        f"{POD}.volumes[].downwardAPI.items[].resourceFieldRef": {"resource": "limits.cpu"},
        f"{POD}.volumes[].projected.sources[].downwardAPI.items[].resourceFieldRef": {"resource": "limits.memory"},
        f"{POD}.volumes[].projected.sources[].serviceAccountToken": {"path": "token", "audience": "vault"},
        f"{POD}.volumes[].projected.sources[].clusterTrustBundle": {"path": "ca.pem", "name": "corp-ca"},
        f"{POD}.volumes[].projected.sources[].podCertificate": {"signerName": "example.com/s", "keyType": "ED25519"},
        f"{POD}.initContainers": [{"name": "fetch", "image": "busybox"}],
        f"{POD}.ephemeralContainers": [{"name": "debug", "image": "busybox"}],
        f"{POD}.activeDeadlineSeconds": 600,
        f"{POD}.hostAliases": [{"ip": "10.0.0.1", "hostnames": ["db"]}],
        CTR: {"imagePullPolicy": "Always"},
        f"{CTR}.env[].valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
        f"{CTR}.envFrom": [{"configMapRef": {"name": "settings"}}],
        f"{CTR}.image": "busybox",
        f"{CTR}.readinessProbe": {"tcpSocket": {"port": 2222}},
        f"{CTR}.volumeMounts[].mountPropagation": "HostToContainer",
        f"{CTR}.volumeMounts[].subPathExpr": "$(POD_NAME)",
        f"{CTR}.volumeMounts[].recursiveReadOnly": "Enabled",
        f"{CTR}.volumeDevices": [{"name": "disk", "devicePath": "/dev/xvda"}],
        f"{CTR}.lifecycle": {"preStop": {"exec": {"command": ["true"]}}},
    },
}


def _table(kind: str) -> str:
    return "TrainJob" if kind == "TrainJob" else "Runtime"


@cache
def _served() -> dict[str, Any]:
    return json.loads(openapi.v2_json())


def _resource(kind: str) -> r.Resource:
    group = {**dict.fromkeys(TRAINER_KINDS, names.TRAINER_API_VERSION), names.MPIJOB_KIND: names.MPI_OPERATOR_API_VERSION}
    res = r.for_kind(group.get(kind, names.KUEUE_API_VERSION), kind)
    assert res is not None, kind
    return res


def _paths(kind: str) -> list[str]:
    """Every field path of the kind's served schema, lists marked `[]` as the rules write them."""
    res = _resource(kind)
    marked: dict[str, str] = {"": ""}
    out = []
    for path, schema in walk(_served(), res.group, res.version, kind):
        parent, _, field = path.rpartition(".")
        mine = f"{marked[parent]}.{field}" if parent else field
        marked[path] = mine + ("[]" if schema.get("type") == "array" else "")
        out.append(mine)
    return out


def _base(kind: str) -> dict[str, Any]:
    if kind == "TrainJob":
        return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "inv"},
                "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 1}}}
    runtime = copy.deepcopy(bundled()[0])
    runtime["kind"] = kind
    if kind == "TrainingRuntime":
        runtime["metadata"]["namespace"] = "default"
    return runtime


_ITEM = {"env": {"name": "A"}, "volumes": {"name": "A"}, "volumeMounts": {"name": "A", "mountPath": "/a"},
         "items": {"path": "a"}}


def _put(obj: dict[str, Any], path: str, value: Any) -> str:
    """Set `path` (rule form) in `obj` to `value`; the concrete path set (`a[1].b`)."""
    node: Any = obj
    concrete = []
    tokens = path.split(".")
    for i, token in enumerate(tokens):
        name, is_list = token.removesuffix("[]"), token.endswith("[]")
        last = i == len(tokens) - 1
        if last and not is_list:
            if isinstance(value, dict) and isinstance(node.get(name), dict):
                node[name].update(value)
            else:
                node[name] = value
            concrete.append(name)
            break
        if is_list:
            items = node.setdefault(name, [])
            if not items:  # an item with its required fields, so the sample alone is judged
                items.append(copy.deepcopy(_ITEM.get(name, {})))
            index = len(items) - 1  # the launcher's replicatedJob in the bundled runtime
            concrete.append(f"{name}[{index}]")
            if last:
                items[index].update(value)
                break
            node = items[index]
        else:
            node = node.setdefault(name, {})
            concrete.append(name)
    return ".".join(concrete)


def _defined(proof: str) -> bool:
    """Whether `file::test` (or a whole test file) exists."""
    file, _, name = proof.partition("::")
    path = TESTS / file
    if not path.is_file():
        return False
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return not name or any(isinstance(n, ast.FunctionDef) and n.name == name for n in ast.walk(tree))


@pytest.mark.parametrize("kind", TRAINER_KINDS + KUEUE_KINDS + (names.MPIJOB_KIND,))
def test_every_served_field_has_a_verdict(kind: str) -> None:
    paths = _paths(kind)
    assert "spec.trainer.env[].valueFrom" in paths or kind != "TrainJob"  # the walk reaches deep fields
    assert len(paths) > {"TrainJob": 30, "TrainingRuntime": 500, "ClusterTrainingRuntime": 500}.get(kind, 5), paths
    parents = {p.rsplit(".", 1)[0] for p in paths if "." in p} | {p.rsplit(".", 1)[0].removesuffix("[]") for p in paths}
    leaves = [p for p in paths if p not in parents and p.removesuffix("[]") not in parents]
    missing = [p for p in leaves if rule_for(kind, p) is None]  # a field with fields is covered by theirs
    assert missing == [], f"{kind} fields with no rule in mpijob/api/trainer/support_rules.py: {missing[:20]}"
    unused = [p for p in RULES[kind] if p not in paths and p.removesuffix("[]") not in paths]
    assert unused == [], f"{kind} rules for fields the served schema does not have: {unused}"


@pytest.mark.parametrize("table", ["TrainJob", "Runtime", *KUEUE_KINDS, names.MPIJOB_KIND])
def test_every_honoured_rule_names_a_test_that_proves_it(table: str) -> None:
    rules = RULES["ClusterTrainingRuntime" if table == "Runtime" else table]
    honoured = {p for p, rule in rules.items() if rule.verdict == HONOURED}
    assert honoured == set(PROOF[table]), honoured ^ set(PROOF[table])
    assert [p for p in PROOF[table].values() if not _defined(p)] == []


@pytest.mark.parametrize("kind", TRAINER_KINDS)
def test_every_refused_field_is_refused_and_every_warned_one_warned(kind: str) -> None:
    rules = RULES[kind]
    samples = SAMPLE[_table(kind)]
    assert set(samples) == {p for p, rule in rules.items() if rule.verdict in (REFUSED, WARNED)}
    res = _resource(kind)
    for path, value in samples.items():
        obj = _base(kind)
        at = _put(obj, path, copy.deepcopy(value))
        if rules[path].verdict == REFUSED:
            with pytest.raises(ApiError) as err:
                admit(res, obj)
            assert err.value.code == 422 and any(c.field == at for c in err.value.causes), (path, err.value.causes)
        else:
            admit(res, obj)
            assert any(w.startswith(at) for w in check(kind, obj).warnings), (path, check(kind, obj).warnings)
