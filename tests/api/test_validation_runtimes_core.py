"""Admission of runtimes (bundled and upstream) and of core kinds (secrets, configmaps, pods, namespaces)."""

from __future__ import annotations

import base64
import copy

import pytest
from mpijob.api.core import resources as r
from mpijob.api.core.errors import ApiError
from mpijob.api.core.validation import admit
from mpijob.api.trainer.runtimes import BUNDLED_NAME, bundled


def fields_of(res, obj, old=None) -> dict[str, str]:
    with pytest.raises(ApiError) as info:
        admit(res, obj, old)
    assert info.value.code == 422
    return {c.field: c.message for c in info.value.causes}


def test_bundled_runtime_shape_and_admission(assert_crd):
    (rt,) = bundled()
    assert rt["metadata"] == {"name": BUNDLED_NAME, "labels": {"trainer.kubeflow.org/framework": "mpi"}}
    assert rt["spec"]["mlPolicy"] == {"numNodes": 1, "mpi": {
        "mpiImplementation": "OpenMPI", "numProcPerNode": 1, "runLauncherAsNode": True,
        "sshAuthMountPath": "/home/mpiuser/.ssh"}}
    node, launcher = rt["spec"]["template"]["spec"]["replicatedJobs"]
    assert (node["name"], launcher["name"]) == ("node", "launcher")
    nc = node["template"]["spec"]["template"]["spec"]["containers"][0]
    lc = launcher["template"]["spec"]["template"]["spec"]["containers"][0]
    assert nc["name"] == lc["name"] == "node"
    assert nc["command"][0] == "/usr/sbin/sshd" and "-De" in nc["args"]
    assert nc["readinessProbe"]["tcpSocket"]["port"] == 2222
    assert launcher["dependsOn"] == [{"name": "node", "status": "Ready"}]
    assert launcher["template"]["metadata"]["labels"] == {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    for rjob in (node, launcher):  # OpenShift-compatible: no runAsUser or fsGroup, so its pods run as their
        spec = rjob["template"]["spec"]["template"]["spec"]  # namespace's UIDs (api/openshift/scc.py)
        assert "securityContext" not in spec and "securityContext" not in spec["containers"][0]
    assert admit(r.CLUSTER_TRAINING_RUNTIMES, rt) == rt  # already carries every default
    assert_crd(rt, "clustertrainingruntimes")
    assert bundled()[0] is not rt  # fresh copies


@pytest.mark.parametrize("fixture", ["deepspeed", "mlx", "torch_runtime"])
def test_upstream_runtimes_pass_admission_unchanged(request, fixture, assert_crd):
    rt = request.getfixturevalue(fixture)
    out = admit(r.CLUSTER_TRAINING_RUNTIMES, rt)
    assert out["spec"]["template"] == rt["spec"]["template"]
    assert_crd(out, "clustertrainingruntimes")


def test_namespaced_training_runtime_admitted(deepspeed, assert_crd):
    rt = copy.deepcopy(deepspeed)
    rt["kind"] = "TrainingRuntime"
    rt["metadata"]["namespace"] = "default"
    assert_crd(admit(r.TRAINING_RUNTIMES, rt), "trainingruntimes")


def test_mpi_defaults_follow_the_crd(deepspeed):
    rt = copy.deepcopy(deepspeed)
    rt["spec"]["mlPolicy"]["mpi"] = {}
    mpi = admit(r.CLUSTER_TRAINING_RUNTIMES, rt)["spec"]["mlPolicy"]["mpi"]
    assert mpi == {"mpiImplementation": "OpenMPI", "numProcPerNode": 1, "runLauncherAsNode": False,
                   "sshAuthMountPath": "/root/.ssh"}


def test_mpi_runtime_needs_node_when_launcher_is_not_a_node(deepspeed):
    rt = copy.deepcopy(deepspeed)
    rt["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
    rt["spec"]["template"]["spec"]["replicatedJobs"] = rt["spec"]["template"]["spec"]["replicatedJobs"][1:]
    rt["spec"]["template"]["spec"]["replicatedJobs"][0].pop("dependsOn")
    assert '"node"' in fields_of(r.CLUSTER_TRAINING_RUNTIMES, rt)["spec.template.spec.replicatedJobs"]


def test_mpi_runtime_needs_launcher(deepspeed):
    rt = copy.deepcopy(deepspeed)
    rt["spec"]["template"]["spec"]["replicatedJobs"] = rt["spec"]["template"]["spec"]["replicatedJobs"][:1]
    assert '"launcher"' in fields_of(r.CLUSTER_TRAINING_RUNTIMES, rt)["spec.template.spec.replicatedJobs"]


def test_runtime_bad_values(deepspeed):
    rt = copy.deepcopy(deepspeed)
    rt["spec"]["mlPolicy"]["mpi"].update(mpiImplementation="LAM", numProcPerNode=0)
    rt["spec"]["mlPolicy"]["torch"] = {}
    f = fields_of(r.CLUSTER_TRAINING_RUNTIMES, rt)
    assert "LAM" in f["spec.mlPolicy.mpi.mpiImplementation"]
    assert ">= 1" in f["spec.mlPolicy.mpi.numProcPerNode"]
    assert "only one" in f["spec.mlPolicy"]


def test_runtime_unknown_field_deep_in_the_pod_template(deepspeed):
    rt = copy.deepcopy(deepspeed)
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "comand"] = ["x"]
    f = fields_of(r.CLUSTER_TRAINING_RUNTIMES, rt)
    key = "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].comand"
    assert '"command"' in f[key]


def test_runtime_depends_on_must_name_an_earlier_job(deepspeed):
    rt = copy.deepcopy(deepspeed)
    rt["spec"]["template"]["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "nodes", "status": "Ready"}]
    assert '"nodes"' in fields_of(r.CLUSTER_TRAINING_RUNTIMES, rt)[
        "spec.template.spec.replicatedJobs[1].dependsOn[0].name"]


# --- core kinds --------------------------------------------------------------------------------


def secret(**kw) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}, **kw}


def test_secret_data_must_be_base64():
    assert "base64" in fields_of(r.SECRETS, secret(data={"k": "not base64!"}))["data[k]"]


def test_secret_string_data_is_folded_into_data():
    out = admit(r.SECRETS, secret(stringData={"k": "v"}))
    assert out["data"] == {"k": base64.b64encode(b"v").decode()} and "stringData" not in out
    assert out["type"] == "Opaque"


def test_immutable_secret_refuses_data_change():
    old = admit(r.SECRETS, secret(immutable=True, data={"k": "dg=="}))
    new = copy.deepcopy(old)
    new["data"]["k"] = "dw=="
    assert "immutable" in fields_of(r.SECRETS, new, old)["data"]
    again = copy.deepcopy(old)
    again["metadata"]["labels"] = {"a": "b"}
    assert admit(r.SECRETS, again, old)["metadata"]["labels"] == {"a": "b"}


def test_configmap_values_must_be_strings_and_immutability_holds():
    cm = {"metadata": {"name": "c", "namespace": "default"}, "data": {"hostfile": 3}}
    assert "must be a string" in fields_of(r.CONFIGMAPS, cm)["data[hostfile]"]
    old = admit(r.CONFIGMAPS, {"metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": True})
    new = copy.deepcopy(old)
    new["data"] = {"a": "2"}
    assert "immutable" in fields_of(r.CONFIGMAPS, new, old)["data"]


def test_core_names_are_dns_subdomains_and_namespaces_labels():
    assert "DNS-1123 subdomain" in fields_of(r.CONFIGMAPS, {"metadata": {"name": "Bad_Name"}})["metadata.name"]
    assert admit(r.CONFIGMAPS, {"metadata": {"name": "a.b-c"}})["metadata"]["name"] == "a.b-c"
    assert "DNS-1123 label" in fields_of(r.NAMESPACES, {"metadata": {"name": "a.b"}})["metadata.name"]
    assert "Required value" in fields_of(r.SECRETS, {"metadata": {}})["metadata.name"]


def test_labels_and_annotations_are_string_maps():
    f = fields_of(r.CONFIGMAPS, {"metadata": {"name": "c", "labels": {"a": 1, "bad key!": "x"},
                                              "annotations": {"n": True}}})
    assert "must be a string" in f["metadata.labels.a"]
    assert "label key" in f["metadata.labels.bad key!"]
    assert "must be a string" in f["metadata.annotations.n"]


def test_pod_needs_named_containers():
    assert "at least one container" in fields_of(r.PODS, {"metadata": {"name": "p"}, "spec": {}})["spec.containers"]
    assert admit(r.PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "node", "image": "x"}]}})


@pytest.mark.parametrize("res", [r.CLUSTER_TRAINING_RUNTIMES, r.TRAINING_RUNTIMES])
def test_null_mpi_fields_get_their_defaults(res):
    """`mlPolicy.mpi.numProcPerNode: null` once reached the `>= 1` check as None (a 500): a null field is
    dropped first, as kube-apiserver drops it, and the CRD default applies."""
    (rt,) = bundled()
    rt["kind"] = res.kind
    mpi = rt["spec"]["mlPolicy"]["mpi"]
    mpi.update(numProcPerNode=None, runLauncherAsNode=None, sshAuthMountPath=None, mpiImplementation=None)
    rt["spec"]["mlPolicy"]["numNodes"] = None
    out = admit(res, rt)
    assert out["spec"]["mlPolicy"]["mpi"] == {"mpiImplementation": "OpenMPI", "numProcPerNode": 1,
                                              "runLauncherAsNode": False, "sshAuthMountPath": "/root/.ssh"}
    assert "numNodes" not in out["spec"]["mlPolicy"]


def test_null_fields_of_a_core_kind_are_dropped():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": None},
          "data": None, "binaryData": {"k": "dg=="}}
    assert admit(r.CONFIGMAPS, cm) == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                       "binaryData": {"k": "dg=="}}


def test_nullable_fields_of_an_scc_keep_their_null():
    """OpenShift's SecurityContextConstraints mark some fields `nullable` (priority, volumes, ...): kube keeps
    a null there, and drops it elsewhere."""
    scc = {"apiVersion": "security.openshift.io/v1", "kind": "SecurityContextConstraints",
           "metadata": {"name": "s", "labels": None}, "priority": None, "allowHostDirVolumePlugin": False,
           "allowHostIPC": False, "allowHostNetwork": False, "allowHostPID": False, "allowHostPorts": False,
           "allowPrivilegedContainer": False, "readOnlyRootFilesystem": False, "userNamespaceLevel": None,
           "runAsUser": {"type": "RunAsAny"}, "seLinuxContext": {"type": "RunAsAny"},
           "fsGroup": {"type": "RunAsAny"}, "supplementalGroups": {"type": "RunAsAny"}}
    out = admit(r.SECURITY_CONTEXT_CONSTRAINTS, scc)
    assert "priority" in out and out["priority"] is None
    assert "userNamespaceLevel" not in out and "labels" not in out["metadata"]
