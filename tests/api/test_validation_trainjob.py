"""Admission of TrainJobs: issue 3 item 10's bad inputs, defaults, immutability, runtime references."""

from __future__ import annotations

import copy

import pytest
from mpijob.api.core import resources as r
from mpijob.api.core.errors import ApiError
from mpijob.api.core.validation import admit
from mpijob.api.trainer.runtimes import bundled
from mpijob.api.trainer.trainjob import MAX_NUM_NODES, check_runtime_ref


def refused(obj: dict, old: dict | None = None, res=r.TRAINJOBS) -> ApiError:
    with pytest.raises(ApiError) as info:
        admit(res, obj, old)
    return info.value


def fields(err: ApiError) -> dict[str, str]:
    return {c.field: c.message for c in err.causes}


def test_num_nodes_zero_is_refused_naming_field_value_and_fix(make_trainjob):
    err = refused(make_trainjob(numNodes=0))
    assert err.code == 422 and err.reason == "Invalid"
    msg = fields(err)["spec.trainer.numNodes"]
    assert "Invalid value: 0" in msg and "set numNodes" in msg
    status = err.to_status()
    assert status["details"]["causes"][0]["field"] == "spec.trainer.numNodes"
    assert status["details"]["kind"] == "TrainJob" and status["details"]["group"] == "trainer.kubeflow.org"


def test_num_nodes_over_the_local_limit_is_refused(make_trainjob):
    err = refused(make_trainjob(numNodes=MAX_NUM_NODES + 1))
    assert f"Invalid value: {MAX_NUM_NODES + 1}" in fields(err)["spec.trainer.numNodes"]
    admit(r.TRAINJOBS, make_trainjob(numNodes=MAX_NUM_NODES))


@pytest.mark.parametrize("name", [
    "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots",
    "OMPI_MCA_plm_rsh_args", "PRTE_MCA_prte_default_hostfile", "PRTE_MCA_plm_ssh_args",
])
def test_reserved_mpi_env_is_refused_naming_the_variable(make_trainjob, name):
    err = refused(make_trainjob(env=[{"name": "OK", "value": "1"}, {"name": name, "value": "x"}]))
    msg = fields(err)["spec.trainer.env[1].name"]
    assert name in msg and "reserved" in msg and "remove it" in msg


def test_name_over_63_characters_is_refused_with_length_and_limit(make_trainjob):
    name = "a" * 64
    err = refused(make_trainjob(name=name))
    msg = fields(err)["metadata.name"]
    assert name in msg and "63" in msg and "64" in msg


def test_name_must_be_rfc1035(make_trainjob):
    err = refused(make_trainjob(name="1pi"))
    assert "RFC 1035" in fields(err)["metadata.name"]


def test_unknown_field_is_refused_with_a_suggestion(make_trainjob):
    tj = make_trainjob(numNodes=2)
    tj["spec"]["trainer"]["numNode"] = 2
    err = refused(tj)
    msg = fields(err)["spec.trainer.numNode"]
    assert 'unknown field "spec.trainer.numNode"' in msg and '"numNodes"' in msg


def test_unknown_top_level_spec_field_is_refused(make_trainjob):
    tj = make_trainjob()
    tj["spec"]["runtime"] = {"name": "x"}
    assert "spec.runtime" in fields(refused(tj))


def test_wrong_type_names_the_path_and_value(make_trainjob):
    err = refused(make_trainjob(numNodes="two"))
    assert fields(err)["spec.trainer.numNodes"] == 'Invalid value: "two": must be an integer'


def test_env_value_must_be_a_string(make_trainjob):
    err = refused(make_trainjob(env=[{"name": "A", "value": 1}]))
    assert "must be a string" in fields(err)["spec.trainer.env[0].value"]


def test_env_names_are_identifiers_and_unique(make_trainjob):
    err = refused(make_trainjob(env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"},
                                     {"name": "1-B", "value": "3"}]))
    f = fields(err)
    assert "Duplicate" in f["spec.trainer.env[1].name"]
    assert "C identifier" in f["spec.trainer.env[2].name"]


def test_too_many_env_entries(make_trainjob):
    env = [{"name": f"V{i}", "value": "x"} for i in range(129)]
    assert "at most 128" in fields(refused(make_trainjob(env=env)))["spec.trainer.env"]


def test_num_proc_per_node_at_least_one(make_trainjob):
    assert "Invalid value: 0" in fields(refused(make_trainjob(numProcPerNode=0)))["spec.trainer.numProcPerNode"]


def test_quantities_accept_numbers_and_strings_and_refuse_garbage(make_trainjob):
    admit(r.TRAINJOBS, make_trainjob(resourcesPerNode={"limits": {"cpu": 2, "memory": "4Gi", "nvidia.com/gpu": "1"},
                                                       "requests": {"cpu": 0.5}}))
    err = refused(make_trainjob(resourcesPerNode={"limits": {"cpu": "two"}}))
    assert '"two"' in fields(err)["spec.trainer.resourcesPerNode.limits[cpu]"]


def test_runtime_ref_name_required(make_trainjob):
    tj = make_trainjob()
    del tj["spec"]["runtimeRef"]["name"]
    assert "spec.runtimeRef.name" in fields(refused(tj))


def test_runtime_ref_kind_and_group_checked(make_trainjob):
    tj = make_trainjob()
    tj["spec"]["runtimeRef"].update(kind="Deployment", apiGroup="apps")
    f = fields(refused(tj))
    assert "Deployment" in f["spec.runtimeRef.kind"] and "apps" in f["spec.runtimeRef.apiGroup"]


def test_defaults_are_applied_and_input_not_mutated(make_trainjob):
    tj = make_trainjob(numNodes=2)
    before = copy.deepcopy(tj)
    out = admit(r.TRAINJOBS, tj)
    assert tj == before
    assert out["spec"]["runtimeRef"] == {"name": "mpi-distributed", "apiGroup": "trainer.kubeflow.org",
                                         "kind": "ClusterTrainingRuntime"}
    assert out["spec"]["suspend"] is False
    assert out["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"


def test_admitted_trainjob_conforms_to_upstream_crd(make_trainjob, assert_crd):
    out = admit(r.TRAINJOBS, make_trainjob(numNodes=2, numProcPerNode=2, command=["mpirun", "hostname"],
                                           env=[{"name": "A", "value": "1"}],
                                           resourcesPerNode={"limits": {"cpu": 1}}))
    assert_crd(out, "trainjobs")


def test_status_is_not_rejected(make_trainjob):
    tj = admit(r.TRAINJOBS, make_trainjob(numNodes=2))
    tj["status"] = {"conditions": [{"type": "Complete", "status": "True", "reason": "AllJobsCompleted",
                                    "message": "jobset completed successfully",
                                    "lastTransitionTime": "2025-01-01T00:00:00Z"}],
                    "jobsStatus": [{"name": "launcher", "ready": 0, "succeeded": 1, "failed": 0, "active": 0,
                                    "suspended": 0}]}
    assert admit(r.TRAINJOBS, tj, old=copy.deepcopy(tj))["status"] == tj["status"]


@pytest.mark.parametrize("key,value", [
    ("trainer", {"numNodes": 3}),
    ("runtimeRef", {"name": "other", "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"}),
    ("initializer", {"dataset": {"storageUri": "hf://x/y"}}),
])
def test_immutable_fields_refuse_change(make_trainjob, key, value):
    old = admit(r.TRAINJOBS, make_trainjob(numNodes=2))
    new = copy.deepcopy(old)
    new["spec"][key] = value
    assert "immutable" in fields(refused(new, old))[f"spec.{key}"]


@pytest.mark.parametrize("trainer", [{"numNodes": 3}, {"numNodes": 2, "command": ["mpirun", "date"]}])
def test_trainer_stays_immutable_while_suspended_as_upstream_keeps_it(make_trainjob, trainer):
    """Upstream's CRD puts `self == oldSelf` on spec.trainer with no condition on spec.suspend, and its
    webhook (`ValidateUpdate` → the JobSet plugin) relaxes only spec.runtimePatches for a suspended job
    (kubeflow/trainer 8c0f505: trainjob_types.go, plugins/jobset/jobset.go); so a suspended job's trainer
    is refused too, before and after the update."""
    old = admit(r.TRAINJOBS, make_trainjob(numNodes=2))
    old["spec"]["suspend"] = True
    old = admit(r.TRAINJOBS, old)
    new = copy.deepcopy(old)
    new["spec"]["trainer"] = {**new["spec"]["trainer"], **trainer}
    assert "field is immutable" in fields(refused(new, old))["spec.trainer"]
    new["spec"]["suspend"] = False
    assert "field is immutable" in fields(refused(new, old))["spec.trainer"]


def test_null_fields_are_dropped_not_stored(make_trainjob):
    """`null` is "unset": kube-apiserver drops a null field of a custom resource (its schema says no
    `nullable`) before defaulting, so a null defaulted field gets its default and the rest are absent."""
    tj = make_trainjob(numNodes=2)
    tj["spec"]["trainer"]["numNodes"] = None
    tj["spec"]["suspend"] = None
    tj["metadata"]["labels"] = None
    out = admit(r.TRAINJOBS, tj)
    assert "numNodes" not in out["spec"]["trainer"] and "labels" not in out["metadata"]
    assert out["spec"]["suspend"] is False  # the CRD's default, as for an absent field
    old = copy.deepcopy(out)
    again = copy.deepcopy(out)
    again["spec"]["activeDeadlineSeconds"] = None  # an update setting an immutable field to null changes nothing
    assert admit(r.TRAINJOBS, again, old) == out


def test_suspend_may_change(make_trainjob):
    old = admit(r.TRAINJOBS, make_trainjob(numNodes=2))
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = True
    assert admit(r.TRAINJOBS, new, old)["spec"]["suspend"] is True


def test_causes_are_collected_not_first_only(make_trainjob):
    tj = make_trainjob(name="x" * 70, numNodes="two")
    tj["spec"]["trainer"]["bogus"] = 1
    f = fields(refused(tj))
    assert {"metadata.name", "spec.trainer.numNodes", "spec.trainer.bogus"} <= set(f)


def test_wrong_kind_in_body_is_a_bad_request(make_trainjob):
    tj = make_trainjob()
    tj["kind"] = "Pod"
    assert refused(tj).code == 400


# --- check_runtime_ref -------------------------------------------------------------------------


def runtime_error(tj: dict, rt, available=()) -> ApiError:
    with pytest.raises(ApiError) as info:
        check_runtime_ref(tj, rt, available)
    return info.value


def test_unknown_runtime_names_the_available_ones(make_trainjob):
    tj = make_trainjob()
    tj["spec"]["runtimeRef"]["name"] = "nope"
    err = runtime_error(tj, None, ["mpi-distributed", "deepspeed-distributed"])
    assert err.code == 422
    msg = fields(err)["spec.runtimeRef.name"]
    assert '"nope"' in msg and "deepspeed-distributed, mpi-distributed" in msg


def test_known_mpi_runtime_passes(make_trainjob, deepspeed):
    check_runtime_ref(make_trainjob(numNodes=4, command=["mpirun", "hostname"]), bundled()[0])
    check_runtime_ref(make_trainjob(numNodes=2, command=["mpirun", "hostname"]), deepspeed)


def test_torch_runtime_is_refused_as_not_mpi(make_trainjob, torch_runtime):
    msg = fields(runtime_error(make_trainjob(command=["x"]), torch_runtime))["spec.runtimeRef.name"]
    assert "MPI runtimes only" in msg


def test_launcher_without_any_command_is_refused(make_trainjob):
    msg = fields(runtime_error(make_trainjob(numNodes=2), bundled()[0]))["spec.trainer.command"]
    assert "set spec.trainer.command" in msg


def test_hostname_too_long_for_the_pods_is_refused(make_trainjob):
    name = "a" * 60  # a valid TrainJob name, but "<name>-launcher-0-0" is not a DNS label
    msg = fields(runtime_error(make_trainjob(name=name, command=["x"]), bundled()[0]))["metadata.name"]
    assert "63" in msg and "at most 50 characters" in msg
    check_runtime_ref(make_trainjob(name="a" * 50, command=["x"]), bundled()[0])


def test_a_problem_is_reported_once(make_trainjob):
    tj = make_trainjob()
    tj["metadata"]["labels"] = {"team": 7}
    err = refused(tj)
    assert [c.field for c in err.causes] == ["metadata.labels.team"]
    assert "quote it" in err.causes[0].message


def train(a: int = 1):  # a user function the SDK ships into the job
    print("rank says hi", a)


def test_the_upstream_sdk_reads_the_bundled_runtime_and_its_trainjob_is_admitted():
    """The Kubeflow SDK 0.5.0 turns our runtime into a Runtime and builds an MPI TrainJob we admit."""
    from kubeflow.trainer.backends.kubernetes import utils
    from kubeflow.trainer.types import types
    from kubeflow_trainer_api import models
    from mpijob.api.trainer.plan import resolve

    cr = models.TrainerV1alpha1ClusterTrainingRuntime.from_dict(bundled()[0])
    runtime = types.Runtime(
        name=cr.metadata.name, kind=types.RuntimeKind(cr.kind),
        trainer=utils.get_runtime_trainer(cr.metadata.labels["trainer.kubeflow.org/framework"],
                                          cr.spec.template.spec.replicated_jobs, cr.spec.ml_policy))
    trainer = utils.get_trainer_cr_from_custom_trainer(
        runtime, types.CustomTrainer(func=train, num_nodes=3, resources_per_node={"cpu": 1},
                                     env={"GREETING": "hi"}))
    tj = models.TrainerV1alpha1TrainJob(
        apiVersion="trainer.kubeflow.org/v1alpha1", kind="TrainJob",
        metadata=models.IoK8sApimachineryPkgApisMetaV1ObjectMeta(name="sdk1"),
        spec=models.TrainerV1alpha1TrainJobSpec(
            runtimeRef=models.TrainerV1alpha1RuntimeRef(name=runtime.name, kind=runtime.kind.value),
            trainer=trainer)).to_dict()
    out = admit(r.TRAINJOBS, tj)
    check_runtime_ref(out, bundled()[0])
    plan = resolve(out, bundled()[0])
    launcher = plan.pods[-1]
    assert launcher.command[:3] == ["mpirun", "--hostfile", "/etc/mpi/hostfile"]
    assert plan.num_nodes == 3 and plan.node_replicas == 2
    assert {"name": "GREETING", "value": "hi"} in launcher.env
