"""The bundled `mpi-distributed` runtime (runLauncherAsNode: true), numNodes 3, run for real once; each
test checks one part of what Trainer's MPI plugin promises (PARITY §1–2)."""

from __future__ import annotations

import base64
import re
import shlex
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mpijob.store.server_process import ServerInfo

from support import (
    JOBSET,
    RJOB,
    by_role,
    condition,
    create,
    job_pods,
    launcher_of,
    pod_log,
    section,
    trainjob,
    wait_finished,
)

JOB = "ee-lan"
GREETING = "hello from every rank"
RANK = ('touch "$HOME/probe-$OMPI_COMM_WORLD_RANK" && w=yes || w=no; '
        'echo "rank=$OMPI_COMM_WORLD_RANK size=$OMPI_COMM_WORLD_SIZE host=$(hostname) greeting=$GREETING '
        'user=$(whoami) uid=$(id -u) home=$HOME writable=$w"')
LAUNCHER = ("echo ---hostfile---; cat /etc/mpi/hostfile; echo ---end-hostfile---; "
            "echo hostfile-mode=$(stat -c %a /etc/mpi/hostfile); "
            f"mpirun bash -c {shlex.quote(RANK)}")
RANK_LINE = re.compile(r"^rank=(\d+) size=(\d+) host=(\S+) greeting=(.*) user=(\S+) uid=(\d+) home=(\S+) "
                       r"writable=(\w+)$", re.MULTILINE)


def test_server_runs_the_namespace_sandbox(server: ServerInfo) -> None:
    """What this file checks (/etc/mpi/hostfile, the namespace's UID, a private home) is the namespace
    sandbox's promise; the unprivileged process fallback is tested in tests/controllers."""
    assert server.sandbox_mode == "namespace", "run the e2e tests as root on a machine where unshare works"


@pytest.fixture(scope="module")
def run(api: httpx.Client) -> dict[str, Any]:
    """Run the job to the end; hand the tests the TrainJob, its pods and the launcher's log."""
    create(api, trainjob(JOB, ["bash", "-c", LAUNCHER], num_nodes=3, env={"GREETING": GREETING}))
    tj = wait_finished(api, JOB)
    pods = job_pods(api, JOB)
    return {"trainjob": tj, "pods": pods, "log": pod_log(api, launcher_of(pods)["metadata"]["name"])}


def test_job_completes(run: dict[str, Any]) -> None:
    tj = run["trainjob"]
    complete = condition(tj, "Complete")
    assert complete is not None, (tj.get("status"), run["log"])
    assert complete["reason"] == "AllJobsCompleted"
    assert complete["message"] == "jobset completed successfully"
    assert complete["lastTransitionTime"]
    assert condition(tj, "Failed") is None


def test_jobs_status_has_all_six_integers(run: dict[str, Any]) -> None:
    entries = {e["name"]: e for e in run["trainjob"]["status"]["jobsStatus"]}
    assert set(entries) == {"node", "launcher"}
    for entry in entries.values():
        for key in ("ready", "succeeded", "failed", "active", "suspended"):
            assert isinstance(entry[key], int) and entry[key] >= 0, entry
        assert entry["active"] == 0 and entry["failed"] == 0, entry
    assert entries["launcher"]["succeeded"] == 1


def test_launcher_sees_trainer_hostfile(run: dict[str, Any]) -> None:
    expected = f"{JOB}-node-0-0.{JOB} slots=1\n{JOB}-node-0-1.{JOB} slots=1\n{JOB}-launcher-0-0.{JOB} slots=1\n"
    assert section(run["log"], "hostfile") == expected
    assert "hostfile-mode=444" in run["log"]


def test_every_rank_runs_as_the_job_user_with_env_and_home(api: httpx.Client, run: dict[str, Any]) -> None:
    uids = api.get("/api/v1/namespaces/default").json()["metadata"]["annotations"]["openshift.io/sa.scc.uid-range"]
    ranks = {int(m[0]): m for m in RANK_LINE.findall(run["log"])}
    assert sorted(ranks) == [0, 1, 2], run["log"]
    hosts = {m[2] for m in ranks.values()}
    assert hosts == {f"{JOB}-node-0-0", f"{JOB}-node-0-1", f"{JOB}-launcher-0-0"}  # one rank per host
    for rank, size, _host, greeting, user, uid, home, writable in ranks.values():
        assert size == "3"
        assert greeting == GREETING  # trainer.env reached remote ranks too
        assert (user, uid) == ("mpiuser", uids.split("/")[0])  # its namespace's first UID (restricted-v2)
        assert home == "/home/mpiuser" and writable == "yes", rank


def test_hostfile_configmap(api: httpx.Client, run: dict[str, Any]) -> None:
    r = api.get(f"/api/v1/namespaces/default/configmaps/{JOB}-mpi-hostfile")
    assert r.status_code == 200, r.text
    cm = r.json()
    assert cm["data"]["hostfile"] == section(run["log"], "hostfile")
    _owned_by_trainjob(cm, run["trainjob"])


def test_ssh_secret(api: httpx.Client, run: dict[str, Any]) -> None:
    r = api.get(f"/api/v1/namespaces/default/secrets/{JOB}-mpi-ssh-auth")
    assert r.status_code == 200, r.status_code
    secret = r.json()
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert secret["immutable"] is True
    _owned_by_trainjob(secret, run["trainjob"])
    assert set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}
    private = serialization.load_pem_private_key(base64.b64decode(secret["data"]["ssh-privatekey"]), None)
    is_p521 = isinstance(private, ec.EllipticCurvePrivateKey) and private.curve.name == "secp521r1"
    assert is_p521, "ssh-privatekey is not an ECDSA P-521 PEM key"  # the key itself is never printed
    public = base64.b64decode(secret["data"]["ssh-publickey"]).decode()
    assert public.startswith("ecdsa-sha2-nistp521 "), public


def test_pods_carry_jobset_labels_hostname_and_subdomain(run: dict[str, Any]) -> None:
    pods = run["pods"]
    assert len(by_role(pods, "node")) == 2 and len(by_role(pods, "launcher")) == 1  # numNodes-1 nodes
    for pod in pods:
        meta, spec = pod["metadata"], pod["spec"]
        labels = meta["labels"]
        role, pod_index = labels[RJOB], labels["batch.kubernetes.io/job-completion-index"]
        assert labels[JOBSET] == JOB
        assert labels["jobset.sigs.k8s.io/replicatedjob-replicas"] == "1"
        assert labels["jobset.sigs.k8s.io/job-index"] == "0"
        assert spec["hostname"] == f"{JOB}-{role}-0-{pod_index}"
        assert spec["subdomain"] == JOB
        assert meta["name"].startswith(spec["hostname"])
        env = {e["name"]: e.get("value") for e in spec["containers"][0].get("env") or []}
        assert env.get("JOB_COMPLETION_INDEX") == pod_index
        assert [c["name"] for c in spec["containers"]] == ["node"]
        _owned_by_trainjob(pod, run["trainjob"])
    assert sorted(p["spec"]["hostname"] for p in by_role(pods, "node")) == [f"{JOB}-node-0-0", f"{JOB}-node-0-1"]
    launcher = launcher_of(pods)
    assert launcher["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"


def test_pods_succeeded_like_a_kubelet_reports(run: dict[str, Any]) -> None:
    for pod in run["pods"]:
        status = pod["status"]
        assert status["phase"] == "Succeeded", (pod["metadata"]["name"], status)
        [container] = status["containerStatuses"]
        terminated = container["state"]["terminated"]
        assert terminated["reason"] == "Completed" and terminated["exitCode"] == 0, terminated
        assert container["name"] == "node"


def _owned_by_trainjob(obj: dict[str, Any], tj: dict[str, Any]) -> None:
    refs = obj["metadata"].get("ownerReferences") or []
    assert [(r["kind"], r["name"], r["uid"], r.get("controller")) for r in refs] == [
        ("TrainJob", tj["metadata"]["name"], tj["metadata"]["uid"], True)], refs
