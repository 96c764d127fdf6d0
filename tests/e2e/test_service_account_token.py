"""Every pod gets its ServiceAccount where Kubernetes puts it, and a program in a pod talks to the
cluster as kube's own client library does: `kubernetes.config.load_incluster_config()` reads
`KUBERNETES_SERVICE_HOST`/`_PORT` and the token and CA at `/var/run/secrets/kubernetes.io/serviceaccount`,
and RBAC decides as for anyone else: denied until `view` is bound to the namespace's `default` account.

The token is bound to its pod: it works while that pod exists and stops when the pod is deleted. A
ServiceAccount with `automountServiceAccountToken: false` gives its pods no token at all. (Namespace
sandbox: the shared server runs as root; the process sandbox puts the files in the pod's directory.)
"""

from __future__ import annotations

import json
import shlex
import ssl
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from support import condition, create, job_dirs, job_pods, launcher_of, pod_log, section, trainjob, wait_finished

SA = "/var/run/secrets/kubernetes.io/serviceaccount"
PROGRAM = f'''
import os, stat
from kubernetes import client, config
from kubernetes.client.rest import ApiException
print("---sa---")
print("env", os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
if not os.path.exists("{SA}/token"):
    print("token absent", os.path.exists("{SA}"))
else:
    st = os.stat("{SA}/token")
    print("token", oct(stat.S_IMODE(st.st_mode)), "mine" if st.st_uid == os.getuid() else st.st_uid, os.getuid())
    print("namespace", open("{SA}/namespace").read())
    print("ca", open("{SA}/ca.crt").read().startswith("-----BEGIN CERTIFICATE-----"))
    config.load_incluster_config()
    namespace = open("{SA}/namespace").read()
    try:
        pods = client.CoreV1Api().list_namespaced_pod(namespace)
        print("list allowed", " ".join(sorted(p.metadata.name for p in pods.items)))
    except ApiException as e:
        print("list denied", e.status, e.reason)
print("---end-sa---")
'''
# A rank on the node pod sees the same volume and variables as its container.
RANK = f'if test -r {SA}/token; then echo "rank token $(cat {SA}/namespace) $KUBERNETES_SERVICE_HOST"; fi'
SCRIPT = f"python -c {shlex.quote(PROGRAM)}\nmpirun sh -c {shlex.quote(RANK)}"

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def namespace(kubectl: Kubectl) -> str:
    ns = f"sa-token-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", ns)
    return ns


def _run(api: httpx.Client, name: str, ns: str) -> tuple[dict[str, Any], str, str]:
    """Run the program in a TrainJob's launcher: (its launcher pod, the lines it printed, its whole log)."""
    create(api, trainjob(name, ["bash", "-c", SCRIPT], num_nodes=1), ns)
    tj = wait_finished(api, name, ns)
    launcher = launcher_of(job_pods(api, name, ns))
    log = pod_log(api, launcher["metadata"]["name"], ns)
    assert condition(tj, "Complete"), (tj["status"], log)
    return launcher, section(log, "sa"), log


def _token_client(server: Any, token: str) -> httpx.Client:
    ca = (server.home / "tls" / "ca.crt").read_text()
    return httpx.Client(base_url=server.url, verify=ssl.create_default_context(cadata=ca),
                        headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _whoami(c: httpx.Client) -> httpx.Response:
    return c.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                  json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})


def _pod_token(home: Path, job: str, ns: str, launcher: dict[str, Any]) -> str:
    (job_dir,) = job_dirs(home, job, ns)
    return (job_dir / "pods" / launcher["spec"]["hostname"] / "serviceaccount" / "token").read_text()


def test_a_pod_lists_pods_with_its_token_once_its_account_may(api: httpx.Client, server: Any, home: Path,
                                                              kubectl: Kubectl, namespace: str) -> None:
    launcher, said, log = _run(api, "sa-denied", namespace)
    lines = said.splitlines()
    assert "env 10.96.0.1 443" in lines  # the `kubernetes` Service, in the job's own network: a relay to us
    uids = api.get(f"/api/v1/namespaces/{namespace}").json()["metadata"]["annotations"]["openshift.io/sa.scc.uid-range"]
    assert f"token 0o600 mine {uids.split('/')[0]}" in lines  # the pod's user (its namespace's), and only it
    assert f"namespace {namespace}" in lines and "ca True" in lines
    assert "list denied 403 Forbidden" in lines, said
    assert f"rank token {namespace} 10.96.0.1" in log  # a rank on the node pod too

    # The pod object shows what a cluster's shows: its account and the projected volume, mounted read-only.
    spec = launcher["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    (volume,) = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
    assert [list(s) for s in volume["projected"]["sources"]] == [["serviceAccountToken"], ["configMap"],
                                                                  ["downwardAPI"]]
    assert {"mountPath": SA, "name": volume["name"], "readOnly": True} in spec["containers"][0]["volumeMounts"]
    shown = json.loads(kubectl("get", "pod", launcher["metadata"]["name"], "-n", namespace, "-o", "json").stdout)
    assert shown["spec"]["volumes"] == spec["volumes"]

    # The token is the account's, bound to this pod.
    token = _pod_token(home, "sa-denied", namespace, launcher)
    with _token_client(server, token) as c:
        r = _whoami(c)
        assert r.status_code == 201, r.text
        user = r.json()["status"]["userInfo"]
        assert user["username"] == f"system:serviceaccount:{namespace}:default"
        assert f"system:serviceaccounts:{namespace}" in user["groups"]

        kubectl("create", "rolebinding", "pods-view", "--clusterrole=view", f"--serviceaccount={namespace}:default",
                "-n", namespace)
        allowed, said, _ = _run(api, "sa-allowed", namespace)
        listed = next(line for line in said.splitlines() if line.startswith("list "))
        assert listed.startswith("list allowed "), said
        assert allowed["metadata"]["name"] in listed.split() and launcher["metadata"]["name"] in listed.split()

        # Deleting the pod (with its TrainJob) revokes its token.
        kubectl("delete", "trainjob", "sa-denied", "-n", namespace, "--wait=true")
        kubectl("wait", "--for=delete", f"pod/{launcher['metadata']['name']}", "-n", namespace, "--timeout=60s")
        assert _whoami(c).status_code == 401


def test_an_account_that_does_not_automount_gives_its_pods_no_token(api: httpx.Client, kubectl: Kubectl,
                                                                     namespace: str) -> None:
    kubectl("patch", "serviceaccount", "default", "-n", namespace, "-p", '{"automountServiceAccountToken": false}')
    try:
        launcher, said, log = _run(api, "sa-unmounted", namespace)
    finally:
        kubectl("patch", "serviceaccount", "default", "-n", namespace, "-p", '{"automountServiceAccountToken": null}')
    assert "token absent False" in said.splitlines(), said  # not even the directory: kube mounts nothing
    assert "env 10.96.0.1 443" in said.splitlines()  # the Service variables do not depend on the token
    assert "rank token" not in log
    spec = launcher["spec"]
    assert spec["serviceAccountName"] == "default"
    assert not [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
    assert all(m["mountPath"] != SA for m in spec["containers"][0]["volumeMounts"])


def test_a_pod_whose_account_does_not_exist_cannot_be_created(api: httpx.Client, namespace: str) -> None:
    """As kube's ServiceAccount admission refuses the pod, the job fails before any pod exists, saying why."""
    r = api.get("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/mpi-distributed")
    assert r.status_code == 200, r.text
    runtime = r.json()
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "mpi-missing-account", "namespace": namespace}
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["serviceAccountName"] = "missing"
    r = api.post(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainingruntimes", json=runtime)
    assert r.status_code == 201, r.text
    job = trainjob("sa-missing", ["true"], num_nodes=1)
    job["spec"]["runtimeRef"] = {"name": "mpi-missing-account", "kind": "TrainingRuntime"}
    create(api, job, namespace)
    failed = condition(wait_finished(api, "sa-missing", namespace), "Failed")
    assert failed is not None and "serviceaccount \"missing\" not found" in failed["message"], failed
    assert f"error looking up service account {namespace}/missing" in failed["message"]
    assert job_pods(api, "sa-missing", namespace) == []
