"""Without root, the same cluster: a server run by an ordinary user (the `rootless` sandbox, chosen on its
own) gives every pod what a Trainer pod sees (its host name, /etc/mpi/hostfile, the job key, the
ServiceAccount at kube's path, a network of its job's own) and runs the README's example, the upstream
SDK, volumes and Open MPI 5 as the root sandbox does (docs/sandbox.md)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import CustomTrainer, TrainerClient
from kubernetes import client as k8s_client
from mpijob.api import names
from mpijob.api.sandbox_mode import GUARANTEES
from mpijob.controllers.kubelet.network import HOLDER_PREFIX, namespace_name
from mpijob.store.home import Home

from support import trainjob
from support.unprivileged import MPIJOB, UID, USERNS_REFUSED, unprivileged_server

REPO = Path(__file__).resolve().parents[2]
JOB_S = 120
# Where the kernel refuses user namespaces to every process (a chroot), the rootless sandbox cannot run;
# test_process_mode.py then checks that a server without root says so
pytestmark = pytest.mark.skipif(bool(USERNS_REFUSED), reason=USERNS_REFUSED)


@pytest.fixture(scope="module")
def home() -> Iterator[Home]:
    with unprivileged_server("mpijob-rootless-") as h:
        yield h


@pytest.fixture(scope="module")
def env(home: Home) -> dict[str, str]:
    return {**os.environ, "MPIJOB_HOME": str(home.root), "KUBECONFIG": str(home.kubeconfig)}


def mpijob(env: dict[str, str], *args: str, stdin: str | None = None, check: bool = True) -> str:
    r = subprocess.run([MPIJOB, *args], env=env, input=stdin, capture_output=True, text=True, timeout=JOB_S)
    assert r.returncode == 0 or not check, r.stdout + r.stderr
    return r.stdout + r.stderr


def run_job(env: dict[str, str], job: dict[str, Any]) -> str:
    """`mpijob run -f -` of `job`: what it printed (the launcher's log), once the job is Complete."""
    return mpijob(env, "run", "-f", "-", stdin=yaml.safe_dump(job))


def test_the_server_says_it_runs_rootless_and_what_holds(env: dict[str, str]) -> None:
    said = json.loads(mpijob(env, "server", "status", "-o", "json"))
    assert said["sandbox_mode"] == "rootless" and said["why"] == "", said
    held = said["guarantees"]
    assert set(held) == set(GUARANTEES)
    # the server's user is every pod's user on the machine, and it has no cgroups of its own to give
    assert not held["tenant_uids"] and not held["limits"], held
    assert all(v for k, v in held.items() if k not in ("tenant_uids", "limits")), held
    text = mpijob(env, "server", "status")
    assert "sandbox mode: rootless" in text
    assert f"no  {GUARANTEES['tenant_uids'][0]}" in text and f"yes {GUARANTEES['host_names'][0]}" in text


def test_the_readme_example_prints_trainer_host_names(env: dict[str, str]) -> None:
    out = mpijob(env, "run", "--replace", "-f", str(REPO / "examples" / "pi.yaml"))
    hosts = dict(re.findall(r"^rank (\d) of 4 on (\S+):", out, re.MULTILINE))
    assert hosts == {"0": "pi-launcher-0-0", "1": "pi-node-0-0", "2": "pi-node-0-1", "3": "pi-node-0-2"}, out
    assert "setpgid" not in out and "pi ~= 3.14159265358979" in out, out


PROBE = r"""
s=$(stat -f -c %T /run /dev/shm | tr '\n' ,)
k=$(stat -c '%a:%u' "$HOME/.ssh/id_rsa")
t=$(stat -c '%a:%u' /var/run/secrets/kubernetes.io/serviceaccount/token)
h=$(test -r /etc/mpi/hostfile && tr ' \n' '_,' < /etc/mpi/hostfile)
timeout 2 bash -c 'echo > /dev/tcp/1.1.1.1/53' 2>/dev/null && e=open || e=closed
a=$(python -c 'from kubernetes import client, config
config.load_incluster_config()
print(client.VersionApi().get_code().git_version)' 2>&1 | tail -1)
echo "probe rank=$OMPI_COMM_WORLD_RANK host=$(hostname) uid=$(id -u) user=$(id -un) home=$HOME tmpfs=$s key=$k" \
  "token=$t ns=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace) hostfile=$h pid1=$(cat /proc/1/comm)" \
  "egress=$e api=$a"
"""


def test_every_rank_sees_what_a_trainer_pod_sees(env: dict[str, str], home: Home) -> None:
    out = run_job(env, trainjob("rl-probe", ["mpirun", "bash", "-c", PROBE], num_nodes=3))
    rows = {f["rank"]: f for f in (dict(kv.split("=", 1) for kv in line.split()[1:])
                                   for line in out.splitlines() if line.startswith("probe "))}
    assert sorted(rows) == ["0", "1", "2"], out
    assert {r["host"] for r in rows.values()} == {"rl-probe-launcher-0-0", "rl-probe-node-0-0", "rl-probe-node-0-1"}
    for r in rows.values():
        uid = r["uid"]
        assert int(uid) >= 1_000_000_000 and r["user"] == "mpiuser" and r["home"] == "/home/mpiuser", r
        assert r["tmpfs"] == "tmpfs,tmpfs," and r["pid1"] == "sh", r  # its own /run, /dev/shm and PID namespace
        assert r["key"] == f"600:{uid}" and r["token"] == f"600:{uid}" and r["ns"] == "default", r
        assert r["egress"] == "closed" and r["api"].startswith("v1."), r  # only the API server, by its Service
    hosts = rows["0"]["hostfile"]  # the launcher's (it is a node too: runLauncherAsNode)
    want = [f"rl-probe-{h}.rl-probe_slots=1" for h in ("node-0-0", "node-0-1", "launcher-0-0")]
    assert hosts == ",".join(want) + ",", hosts
    # on the machine, what the pods were given and wrote is the server's user's
    jobs = list((home.root / "jobs").iterdir())
    assert jobs and all(p.stat().st_uid == UID for j in jobs for p in j.rglob("*") if not p.is_symlink())


def test_the_job_network_goes_with_the_job(env: dict[str, str], home: Home) -> None:
    run_job(env, trainjob("rl-net", ["mpirun", "true"], num_nodes=2))
    uid = json.loads(mpijob(env, "get", "trainjob", "rl-net", "-o", "json"))["metadata"]["uid"]
    holder = "@" + HOLDER_PREFIX + namespace_name(hashlib.sha256(str(home.root).encode()).hexdigest(), uid)
    deadline = time.monotonic() + 30  # the job is Complete once its launcher ended; its network goes at teardown
    while holder in Path("/proc/net/unix").read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert holder not in Path("/proc/net/unix").read_text()


def sdk_train() -> None:
    # Runs on every rank. The SDK pastes this into an unquoted bash heredoc: no dollar signs here.
    import os
    import socket

    print("sdk-rank", os.environ["OMPI_COMM_WORLD_RANK"], "on", socket.gethostname())


def test_the_upstream_sdk_trains_on_a_rootless_cluster(home: Home) -> None:
    previous = k8s_client.Configuration.get_default_copy()  # load_kube_config replaces the global default
    try:
        trainer = TrainerClient(KubernetesBackendConfig(config_file=str(home.kubeconfig), namespace="default"))
        name = trainer.train(runtime="mpi-distributed", trainer=CustomTrainer(func=sdk_train, num_nodes=2))
        job = trainer.wait_for_job_status(name, {"Complete"}, timeout=JOB_S, polling_interval=1)
        assert job.status == "Complete"
        logs = "\n".join(trainer.get_job_logs(name))
        ranks = dict(re.findall(r"^sdk-rank (\d) on (\S+)$", logs, re.MULTILINE))
        assert ranks == {"0": f"{name}-launcher-0-0", "1": f"{name}-node-0-0"}, logs
    finally:
        k8s_client.Configuration.set_default(previous)


def test_volumes_mount_at_paths_the_user_could_not_make(env: dict[str, str], home: Home) -> None:
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "rl-data"},
             "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}}
    mpijob(env, "create", "-f", "-", stdin=yaml.safe_dump(claim))
    shared = home.root.parent / "shared"  # a directory of the server's user's, made by the kubelet
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "rl-data"}},
               {"name": "scratch", "emptyDir": {}},
               {"name": "shared", "hostPath": {"path": str(shared), "type": "DirectoryOrCreate"}}]
    # /rl-data at the top of the machine's root, /etc/rl-scratch under a directory root owns
    mounts = [{"name": "data", "mountPath": "/rl-data"}, {"name": "scratch", "mountPath": "/etc/rl-scratch"},
              {"name": "shared", "mountPath": "/shared"}]
    patch = {"manager": "example.com/test", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": rjob, "template": {"spec": {"template": {"spec": {
            "volumes": volumes, "containers": [{"name": "node", "volumeMounts": mounts}]}}}}}
        for rjob in ("node", "launcher")]}}}}
    write = ("echo $OMPI_COMM_WORLD_RANK > /rl-data/rank-$OMPI_COMM_WORLD_RANK && touch /etc/rl-scratch/x"
             " && touch /shared/from-$(hostname) && echo rank-wrote-$OMPI_COMM_WORLD_RANK")
    job = trainjob("rl-vol", ["mpirun", "bash", "-c", write], num_nodes=2)
    job["spec"]["runtimePatches"] = [patch]
    out = run_job(env, job)
    assert sorted(re.findall(r"rank-wrote-\d", out)) == ["rank-wrote-0", "rank-wrote-1"], out
    (directory,) = (home.root / "volumes").iterdir()
    written = {p.name: p for p in directory.iterdir()}
    assert sorted(written) == ["rank-0", "rank-1"] and all(p.stat().st_uid == UID for p in written.values())
    hosted = sorted(p.name for p in shared.iterdir() if p.stat().st_uid == UID)
    assert hosted == ["from-rl-vol-launcher-0-0", "from-rl-vol-node-0-0"], hosted
    assert not Path("/rl-data").exists() and not Path("/etc/rl-scratch").exists()  # the pods' own, not the machine's


def runtime_like(env: dict[str, str], name: str, change: Any) -> None:
    """A ClusterTrainingRuntime `name`: mpi-distributed, changed by `change(runtime)`."""
    runtime = json.loads(mpijob(env, "get", "clustertrainingruntime", "mpi-distributed", "-o", "json"))
    runtime["metadata"] = {"name": name}
    change(runtime)
    mpijob(env, "create", "-f", "-", stdin=json.dumps(runtime))


@pytest.mark.parametrize("impl", [names.MPI_OPEN_MPI_5, names.MPI_MPICH, names.MPI_INTEL])
def test_every_mpi_implementation_runs_rootless(env: dict[str, str], impl: str) -> None:
    """Open MPI 5 needs the job network's eth0; Intel MPI's launcher reaches itself through its own sshd."""
    name = f"rl-{impl.lower()}"
    runtime_like(env, name, lambda r: r["metadata"].update(annotations={names.ANNOTATION_MPI_IMPLEMENTATION: impl}))
    rank = "$OMPI_COMM_WORLD_RANK" if impl == names.MPI_OPEN_MPI_5 else "$PMI_RANK"
    out = run_job(env, trainjob(name, ["mpirun", "bash", "-c", f'echo "impl rank={rank} host=$(hostname)"'],
                                runtime=name))
    assert sorted(re.findall(r"impl rank=(\d) host=(\S+)", out)) == [
        ("0", f"{name}-node-0-0"), ("1", f"{name}-launcher-0-0")], out


def test_an_sshd_as_root_is_refused_with_the_fix(env: dict[str, str]) -> None:
    def as_root(runtime: dict[str, Any]) -> None:
        for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
            rjob["template"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"runAsUser": 0}

    runtime_like(env, "rl-root", as_root)
    job = trainjob("rl-root", ["mpirun", "true"], runtime="rl-root")
    said = mpijob(env, "create", "-f", "-", stdin=yaml.safe_dump(job), check=False)
    assert "spec.runtimeRef.name" in said and "runAsUser 0" in said and "rootless" in said, said
    assert "not found" in mpijob(env, "get", "trainjob", "rl-root", check=False)  # nothing was created


def test_exec_port_forward_and_cp_enter_a_rootless_pod(env: dict[str, str], home: Home, tmp_path: Path) -> None:
    """kubectl gets inside a rootless pod as into a root one: the pod's uid and host name, its job's network,
    exit codes, files both ways (docs/debugging.md)."""
    serve = "python3 -m http.server 7200 --bind 127.0.0.1 >/dev/null 2>&1 & sleep 300"
    mpijob(env, "create", "-f", "-", stdin=yaml.safe_dump(trainjob("rl-exec", ["mpirun", "-n", "1", "sh", "-c", serve])))
    kubectl = ["kubectl", "--kubeconfig", env["KUBECONFIG"]]
    deadline = time.monotonic() + JOB_S
    node = ""
    while not node and time.monotonic() < deadline:
        pods = subprocess.run([*kubectl, "get", "pods", "-o", "name", "--field-selector=status.phase=Running"],
                              capture_output=True, text=True).stdout.split()
        node = next((p.split("/")[1] for p in pods if "rl-exec-node" in p), "")
        time.sleep(0.5)
    try:
        def run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*kubectl, *args], capture_output=True, text=True, timeout=60, **kw)

        said = run("exec", node, "--", "sh", "-c", "id -u; hostname; test -w /etc/hosts || echo ro; exit 7")
        uid, hostname, ro = said.stdout.split()
        assert said.returncode == 7 and int(uid) >= 1_000_000_000 and node.startswith(hostname) and ro == "ro", said
        (tmp_path / "f.txt").write_text("rootless\n")
        assert run("cp", str(tmp_path / "f.txt"), f"{node}:f.txt").returncode == 0
        assert run("exec", node, "--", "cat", "f.txt").stdout == "rootless\n"
        assert run("cp", f"{node}:f.txt", str(tmp_path / "back.txt")).returncode == 0
        assert (tmp_path / "back.txt").read_text() == "rootless\n"
        # the rank's server up first: kubectl ends a port-forward whose connection the pod refused
        up = run("exec", node, "--", "sh", "-c",
                 "for i in $(seq 100); do curl -s 127.0.0.1:7200 >/dev/null && exit 0; sleep 0.2; done; exit 1")
        assert up.returncode == 0, up
        forward = subprocess.Popen([*kubectl, "port-forward", f"pod/{node}", ":7200"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            assert forward.stdout is not None
            port = re.search(r"127\.0\.0\.1:(\d+)", forward.stdout.readline())
            assert port, forward
            got = subprocess.run(["curl", "-sS", f"http://127.0.0.1:{port[1]}/"], capture_output=True, text=True,
                                 timeout=30)
            assert "Directory listing" in got.stdout, got
        finally:
            forward.kill()
            forward.wait()
    finally:
        mpijob(env, "delete", "trainjob", "rl-exec", check=False)
