"""Rendered Secret, ConfigMap and Pods: PARITY §2 names and shapes, checked against published Kubernetes
models (strict schema from the upstream Python models + the `kubernetes` client's deserializer), and the
generated key pair checked with the real OpenSSH `ssh-keygen`."""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import os
import re
import subprocess

import jsonschema
import pytest
from kubernetes.client import ApiClient
from mpijob.api.core.structural import strip_nulls
from mpijob.api.trainer.plan import generate_ssh_keypair, resolve
from mpijob.api.trainer.render import (
    automounts,
    owner_reference,
    render_hostfile_configmap,
    render_pod,
    render_secret,
    render_tls_configmap,
    service_account_name,
)
from mpijob.api.trainer.runtimes import bundled
from mpijob.api.trainer.schema import _simplify


class _Response:
    def __init__(self, obj: dict):
        self.data = json.dumps(obj)


def k8s(obj: dict, kind: str):
    """Deserialize with the official client, as a client of the local cluster would."""
    return ApiClient().deserialize(_Response(obj), kind)


def assert_strict(obj: dict, model_name: str) -> None:
    from kubeflow_trainer_api import models

    schema = _simplify(getattr(models, model_name).model_json_schema(by_alias=True))
    errors = [f"{list(e.absolute_path)}: {e.message}"
              for e in jsonschema.Draft202012Validator(schema).iter_errors(strip_nulls(obj))]
    assert errors == []


@pytest.fixture(scope="module")
def keypair() -> tuple[str, str]:
    return generate_ssh_keypair()


@pytest.fixture
def job(make_trainjob):
    tj = make_trainjob(numNodes=3, command=["mpirun", "hostname"], env=[{"name": "A", "value": "1"}])
    return tj, resolve(tj, bundled()[0]), owner_reference(tj)


def test_owner_reference(make_trainjob):
    tj = make_trainjob()
    assert owner_reference(tj) == {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "pi",
                                   "uid": tj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def test_secret(job, keypair):
    _, plan, owner = job
    private, public = keypair
    s = render_secret(plan, private, public, owner)
    assert s["metadata"]["name"] == "pi-mpi-ssh-auth" and s["metadata"]["namespace"] == "default"
    assert s["type"] == "kubernetes.io/ssh-auth" and s["immutable"] is True
    assert s["metadata"]["ownerReferences"] == [owner]
    assert base64.b64decode(s["data"]["ssh-privatekey"]).decode() == private
    assert base64.b64decode(s["data"]["ssh-publickey"]).decode() == public
    assert_strict(s, "IoK8sApiCoreV1Secret")
    assert k8s(s, "V1Secret").type == "kubernetes.io/ssh-auth"


def test_hostfile_configmap(job):
    _, plan, owner = job
    cm = render_hostfile_configmap(plan, owner)
    assert cm["metadata"]["name"] == "pi-mpi-hostfile" and cm["metadata"]["ownerReferences"] == [owner]
    assert cm["data"] == {"hostfile": "pi-node-0-0.pi slots=1\npi-node-0-1.pi slots=1\npi-launcher-0-0.pi slots=1\n"}
    assert_strict(cm, "IoK8sApiCoreV1ConfigMap")
    assert k8s(cm, "V1ConfigMap").data["hostfile"].endswith("\n")


def test_launcher_pod(job):
    _, plan, owner = job
    launcher = plan.pods[-1]
    pod = render_pod(plan, launcher, owner)
    assert_strict(pod, "IoK8sApiCoreV1Pod")
    v1 = k8s(pod, "V1Pod")
    assert v1.metadata.name == launcher.name and v1.metadata.owner_references[0].uid == owner["uid"]
    assert v1.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] == "launcher"
    assert (v1.spec.hostname, v1.spec.subdomain, v1.spec.restart_policy) == ("pi-launcher-0-0", "pi", "Never")
    assert v1.status.phase == "Pending"
    (c,) = v1.spec.containers
    assert c.name == "node" and c.command == ["mpirun", "hostname"] and c.security_context is None
    assert {e.name: e.value for e in c.env}["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    mounts = {m.name: m.mount_path for m in c.volume_mounts}
    token = next(n for n in mounts if n.startswith("kube-api-access-"))
    assert mounts == {"mpi-ssh-auth": "/home/mpiuser/.ssh", "mpi-hostfile": "/etc/mpi",
                      token: "/var/run/secrets/kubernetes.io/serviceaccount"}
    volumes = {v.name: v for v in v1.spec.volumes}
    assert volumes["mpi-hostfile"].config_map.name == "pi-mpi-hostfile"
    assert [(i.key, i.path, i.mode) for i in volumes["mpi-hostfile"].config_map.items] == [
        ("hostfile", "hostfile", 0o444)]
    secret = volumes["mpi-ssh-auth"].secret
    assert secret.secret_name == "pi-mpi-ssh-auth"
    assert [(i.key, i.path) for i in secret.items] == [
        ("ssh-privatekey", "id_rsa"), ("ssh-publickey", "id_rsa.pub"), ("ssh-publickey", "authorized_keys")]


def test_node_pod(job):
    _, plan, owner = job
    pod = render_pod(plan, plan.pods[1], owner)
    assert_strict(pod, "IoK8sApiCoreV1Pod")
    v1 = k8s(pod, "V1Pod")
    (c,) = v1.spec.containers
    assert c.command == ["/usr/sbin/sshd"] and c.readiness_probe.tcp_socket.port == 2222
    assert [m.name for m in c.volume_mounts][:1] == ["mpi-ssh-auth"]  # no hostfile on nodes
    assert [m.name for m in c.volume_mounts][1].startswith("kube-api-access-")
    assert v1.spec.hostname == "pi-node-0-1"
    assert {e.name: e.value for e in c.env}["JOB_COMPLETION_INDEX"] == "1"
    assert v1.metadata.labels["batch.kubernetes.io/job-completion-index"] == "1"


def test_an_admitted_pod_shows_the_ids_its_scc_decided(job):
    """As OpenShift's SCC admission writes into the pod it admits: the ids it runs as, and which SCC."""
    _, plan, owner = job
    launcher = dataclasses.replace(plan.pods[-1], run_as_user=1000660000, run_as_group=1000660000,
                                   fs_group=1000660000, scc="restricted-v2")
    pod = render_pod(plan, launcher, owner)
    assert_strict(pod, "IoK8sApiCoreV1Pod")
    assert pod["metadata"]["annotations"]["openshift.io/scc"] == "restricted-v2"
    assert pod["spec"]["containers"][0]["securityContext"] == {"runAsUser": 1000660000, "runAsGroup": 1000660000}
    assert pod["spec"]["securityContext"] == {"fsGroup": 1000660000}
    assert "securityContext" not in render_pod(plan, dataclasses.replace(launcher, fs_group=None), owner)["spec"]


def test_every_pod_gets_trainers_progress_variables_and_volume(make_trainjob):
    """Trainer's TrainJobStatus plugin: the endpoint and the paths of its CA and token, upserted over the
    job's own env, and the projected volume with the job-audience token and the CA ConfigMap."""
    tj = make_trainjob(numNodes=2, command=["mpirun", "true"],
                       env=[{"name": "KUBEFLOW_TRAINER_SERVER_URL", "value": "mine"}])
    plan, owner = resolve(tj, bundled()[0]), owner_reference(tj)
    url = "https://10.96.0.1:443/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/pi/status"
    for planned in plan.pods:
        pod = render_pod(plan, planned, owner, status_url=url)
        assert_strict(pod, "IoK8sApiCoreV1Pod")
        (c,) = k8s(pod, "V1Pod").spec.containers
        env = [(e.name, e.value) for e in c.env or [] if e.name.startswith("KUBEFLOW_TRAINER_")]
        assert env == [("KUBEFLOW_TRAINER_SERVER_URL", url),
                       ("KUBEFLOW_TRAINER_SERVER_CA_CERT", "/var/run/secrets/kubeflow/trainer/ca.crt"),
                       ("KUBEFLOW_TRAINER_SERVER_TOKEN", "/var/run/secrets/kubeflow/trainer/token")]
        assert {(m.name, m.mount_path, m.read_only) for m in c.volume_mounts} >= {
            ("kubeflow-trainer-token", "/var/run/secrets/kubeflow/trainer", True)}
        (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "kubeflow-trainer-token"]
        assert volume["projected"]["sources"] == [
            {"serviceAccountToken": {"audience": "trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/pi/status",
                                     "expirationSeconds": 3600, "path": "token"}},
            {"configMap": {"name": "pi-tls-config", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]
    assert "kubeflow-trainer-token" not in str(render_pod(plan, plan.pods[0], owner))  # no server, nothing to report to
    cm = render_tls_configmap(plan, owner, "PEM")
    assert (cm["metadata"]["name"], cm["data"], cm["metadata"]["ownerReferences"]) == ("pi-tls-config",
                                                                                      {"ca.crt": "PEM"}, [owner])
    assert_strict(cm, "IoK8sApiCoreV1ConfigMap")


def test_render_does_not_share_state_with_the_plan(job):
    _, plan, owner = job
    pod = render_pod(plan, plan.pods[0], owner)
    pod["spec"]["containers"][0]["env"].append({"name": "X", "value": "y"})
    pod["metadata"]["labels"]["x"] = "y"
    again = render_pod(plan, plan.pods[0], owner)
    assert "x" not in again["metadata"]["labels"]
    assert all(e["name"] != "X" for e in again["spec"]["containers"][0]["env"])


def test_keypair_is_ecdsa_p521_readable_by_openssh(keypair, tmp_path):
    private, public = keypair
    assert private.startswith("-----BEGIN EC PRIVATE KEY-----")
    assert public.startswith("ecdsa-sha2-nistp521 ") and public.endswith("\n")
    key = tmp_path / "id_rsa"
    key.write_text(private)
    os.chmod(key, 0o600)
    derived = subprocess.run(["ssh-keygen", "-y", "-f", str(key)], capture_output=True, text=True, timeout=30,
                             check=True).stdout
    assert derived.split()[:2] == public.split()[:2]
    fingerprint = subprocess.run(["ssh-keygen", "-l", "-f", str(key)], capture_output=True, text=True, timeout=30,
                                 check=True).stdout
    assert fingerprint.startswith("521 ") and "(ECDSA)" in fingerprint
    assert generate_ssh_keypair()[1] != public  # fresh per call


SA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def _token_volumes(pod: dict) -> list[dict]:
    return [v for v in pod["spec"]["volumes"] if v["name"].startswith("kube-api-access-")]


def test_every_pod_mounts_its_service_account_token_as_kube_admission_does(job):
    """The projected volume kube's ServiceAccount admission adds, word for word (`kubectl get pod -o
    yaml` on a cluster shows the same), mounted read-only in every container; the name's suffix is
    Kubernetes' alphabet and stable across renders."""
    _, plan, owner = job
    for planned in plan.pods:
        pod = render_pod(plan, planned, owner, {"metadata": {"name": "default", "namespace": "default"}})
        assert_strict(pod, "IoK8sApiCoreV1Pod")
        assert pod["spec"]["serviceAccountName"] == pod["spec"]["serviceAccount"] == "default"
        (volume,) = _token_volumes(pod)
        assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
        assert volume["projected"] == {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                            "path": "namespace"}]}},
            ],
        }
        for c in pod["spec"]["containers"]:
            assert {"mountPath": SA_PATH, "name": volume["name"], "readOnly": True} in c["volumeMounts"]
        assert render_pod(plan, planned, owner) == pod  # the same name every time
        v1 = k8s(pod, "V1Pod")
        assert v1.spec.service_account_name == "default"
        assert {v.name for v in v1.spec.volumes if v.projected} == {volume["name"]}
    names = {_token_volumes(render_pod(plan, p, owner))[0]["name"] for p in plan.pods}
    assert len(names) == len(plan.pods)


def test_automount_follows_kube_rule_pod_first_then_service_account():
    assert automounts({}, None) and automounts({}, {"metadata": {}})
    assert not automounts({}, {"automountServiceAccountToken": False})
    assert automounts({"automountServiceAccountToken": True}, {"automountServiceAccountToken": False})
    assert not automounts({"automountServiceAccountToken": False}, {"automountServiceAccountToken": True})
    assert service_account_name({}) == "default"
    assert service_account_name({"serviceAccountName": "trainer"}) == "trainer"
    assert service_account_name({"serviceAccount": "old"}) == "old"


def test_a_pod_that_does_not_automount_gets_no_token_volume(make_trainjob):
    runtime = copy.deepcopy(bundled()[0])
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["serviceAccountName"] = "trainer"
    tj = make_trainjob(numNodes=1)
    plan = resolve(tj, runtime)
    owner = owner_reference(tj)
    pod = render_pod(plan, plan.pods[-1], owner, {"automountServiceAccountToken": False})
    assert pod["spec"]["serviceAccountName"] == "trainer" and not _token_volumes(pod)
    assert all(m["mountPath"] != SA_PATH for c in pod["spec"]["containers"] for m in c["volumeMounts"])
    assert _token_volumes(render_pod(plan, plan.pods[-1], owner, {}))


def test_a_container_that_mounts_the_path_itself_is_left_alone(job):
    """kube skips a container with its own mount at the token path, and adds no volume if none needs it."""
    _, plan, owner = job
    planned = plan.pods[-1]
    spec = copy.deepcopy(planned.pod_spec)
    spec["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": SA_PATH}]
    pod = render_pod(plan, dataclasses.replace(planned, pod_spec=spec), owner)
    assert not _token_volumes(pod)
    assert [m for m in pod["spec"]["containers"][0]["volumeMounts"] if m["mountPath"] == SA_PATH] == [
        {"name": "mine", "mountPath": SA_PATH}]
