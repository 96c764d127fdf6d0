"""Volumes on the local cluster, as a program in a pod sees them: a PersistentVolumeClaim bound to a
directory of this machine and shared by every pod that mounts it, kept across jobs and server restarts;
readOnly and subPath mounts; emptyDirs per pod (a tmpfs for medium Memory); configMap, secret and
downwardAPI files with their modes; hostPath; a job waiting for its claim; volumes from a runtime, from
runtimePatches and from an MPIJob (docs/volumes.md)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from mpijob.api import names
from mpijob.api.trainer.runtimes import bundled
from mpijob.store import server_process
from mpijob.store.home import Home
from mpijob.store.server_process import ServerInfo

from support import TRAINER, condition, create, job_pods, launcher_of, pod_log, trainjob, wait_finished, wait_for

NS = "vol-e2e"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
Obj = dict
HOME = "/home/mpiuser"
PVCS = "/api/v1/namespaces/{ns}/persistentvolumeclaims"


@pytest.fixture(scope="module")
def namespace(api: httpx.Client) -> Iterator[tuple[int, int]]:
    """The module's namespace; its first UID and group (what its pods run as, and own claims as)."""
    r = api.post("/api/v1/namespaces", json={"metadata": {"name": NS}})
    assert r.status_code in (201, 409), r.text
    annotations = api.get(f"/api/v1/namespaces/{NS}").json()["metadata"]["annotations"]
    yield (int(annotations[names.ANNOTATION_UID_RANGE].split("/")[0]),
           int(annotations[names.ANNOTATION_SUPPLEMENTAL_GROUPS].split("/")[0]))
    api.delete(f"/api/v1/namespaces/{NS}")


def claim(name: str, size: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteMany",)) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}}


def bound(c: httpx.Client, name: str, ns: str = NS) -> Obj:
    """The claim, once Bound."""

    def probe() -> Obj | None:
        got = c.get(PVCS.format(ns=ns) + f"/{name}").json()
        return got if (got.get("status") or {}).get("phase") == "Bound" else None

    return wait_for(probe, f"claim {ns}/{name} to be Bound")


def make_claim(c: httpx.Client, obj: Obj, ns: str = NS) -> Obj:
    r = c.post(PVCS.format(ns=ns), json=obj)
    assert r.status_code == 201, r.text
    return bound(c, obj["metadata"]["name"], ns)


def with_volumes(job: Obj, volumes: list[Obj], mounts: list[Obj], rjobs: tuple[str, ...] = ("node", "launcher")) -> Obj:
    """`job` with a runtime patch giving the pods of `rjobs` these volumes and their container these mounts."""
    pod = {"volumes": volumes, "containers": [{"name": "node", "volumeMounts": mounts}]}
    entries = [{"name": r, "template": {"spec": {"template": {"spec": pod}}}} for r in rjobs]
    job["spec"]["runtimePatches"] = [{"manager": "example.com/volumes-e2e",
                                      "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": entries}}}}]
    return job


def run(c: httpx.Client, job: Obj, ns: str = NS) -> str:
    """Run `job` to its end; its launcher's log (the job must complete)."""
    create(c, job, ns)
    done = wait_finished(c, job["metadata"]["name"], ns)
    log = pod_log(c, launcher_of(job_pods(c, job["metadata"]["name"], ns))["metadata"]["name"], ns)
    assert condition(done, "Complete"), (done.get("status"), log)
    return log


def pvc_volume(claim_name: str, name: str = "data", **source: object) -> Obj:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name, **source}}


def test_a_claim_is_bound_to_a_directory_of_its_namespace_and_kubectl_shows_it(
        api: httpx.Client, kubectl: Kubectl, home: Path, namespace: tuple[int, int]) -> None:
    uid, gid = namespace
    got = make_claim(api, claim("shown", "2Gi", ("ReadWriteOnce", "ReadWriteMany")))
    volume = f"pvc-{got['metadata']['uid']}"
    assert got["spec"]["volumeName"] == volume
    assert got["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                             "capacity": {"storage": "2Gi"}}
    assert names.PVC_PROTECTION_FINALIZER in got["metadata"]["finalizers"]
    directory = home / "volumes" / volume
    st = directory.stat()
    assert (st.st_uid, st.st_gid, oct(st.st_mode & 0o7777)) == (uid, gid, "0o2770")
    table = kubectl("get", "pvc", "-n", NS, "shown").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
                                "VOLUMEATTRIBUTESCLASS", "AGE"], table
    assert table[1].split()[:6] == ["shown", "Bound", volume, "2Gi", "RWO,RWX", "<unset>"], table
    described = kubectl("describe", "pvc", "-n", NS, "shown").stdout
    assert names.REASON_PROVISIONING_SUCCEEDED in described and str(directory) in described, described

    kubectl("delete", "pvc", "-n", NS, "shown")  # no pod uses it: it goes, and its data with it
    wait_for(lambda: not directory.exists(), f"{directory} to be removed")
    assert api.get(PVCS.format(ns=NS) + "/shown").status_code == 404


def test_every_rank_writes_into_a_shared_claim_and_the_launcher_reads_them(
        api: httpx.Client, namespace: tuple[int, int]) -> None:
    make_claim(api, claim("shared"))
    write = 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)" > /home/mpiuser/shared/rank-$OMPI_COMM_WORLD_RANK'
    job = with_volumes(trainjob("vol-shared", ["bash", "-c", f"mpirun bash -c '{write}' && cat ~/shared/rank-*"]),
                       [pvc_volume("shared")], [{"name": "data", "mountPath": f"{HOME}/shared"}])
    log = run(api, job)
    ranks = sorted(line.split()[1:] for line in log.splitlines())  # every rank's file, read by the launcher
    assert [r[0] for r in ranks] == ["0", "1"], log
    assert {r[2] for r in ranks} == {"vol-shared-node-0-0", "vol-shared-launcher-0-0"}, log


def test_a_read_only_mount_refuses_writes_and_a_sub_path_shows_part_of_the_claim(
        api: httpx.Client, namespace: tuple[int, int]) -> None:
    make_claim(api, claim("parts"))
    script = ("echo hello > ~/part/note && cat ~/whole/results/note && "
              "{ touch ~/whole/nope 2>&1 || echo refused; } && { touch ~/ro-claim/nope 2>&1 || echo refused too; }")
    job = with_volumes(trainjob("vol-ro", ["bash", "-c", script], num_nodes=1),
                       [pvc_volume("parts"), pvc_volume("parts", "frozen", readOnly=True)],
                       [{"name": "data", "mountPath": f"{HOME}/part", "subPath": "results"},
                        {"name": "data", "mountPath": f"{HOME}/whole", "readOnly": True},
                        {"name": "frozen", "mountPath": f"{HOME}/ro-claim"}], rjobs=("launcher",))
    log = run(api, job)
    lines = log.splitlines()
    assert lines[0] == "hello", log
    assert "Read-only file system" in lines[1] and lines[2] == "refused", log
    assert "Read-only file system" in lines[3] and lines[4] == "refused too", log


def test_empty_dirs_are_each_pods_own_and_a_memory_one_is_a_sized_tmpfs(
        api: httpx.Client, namespace: tuple[int, int]) -> None:
    _, gid = namespace
    rank = ('touch ~/scratch/$(hostname); echo "$OMPI_COMM_WORLD_RANK sees $(ls ~/scratch) '
            "$(stat -f -c %T ~/fast) $(($(stat -f -c '%b * %S' ~/fast))) $(stat -c %g:%a ~/scratch)\"")
    job = with_volumes(trainjob("vol-empty", ["mpirun", "bash", "-c", rank]),
                       [{"name": "scratch", "emptyDir": {}}, {"name": "fast", "emptyDir": {"medium": "Memory",
                                                                                         "sizeLimit": "64Mi"}}],
                       [{"name": "scratch", "mountPath": f"{HOME}/scratch"}, {"name": "fast", "mountPath": f"{HOME}/fast"}])
    log = run(api, job)
    seen = sorted(line.split(" ", 1)[1] for line in log.splitlines())  # each pod sees only its own file
    assert seen == [f"sees vol-empty-{pod}-0-0 tmpfs {64 << 20} {gid}:2777" for pod in ("launcher", "node")], log


def test_config_map_secret_downward_api_and_projected_files_have_their_contents_and_modes(
        api: httpx.Client, namespace: tuple[int, int]) -> None:
    _, gid = namespace
    api.post(f"/api/v1/namespaces/{NS}/configmaps", json={"metadata": {"name": "settings"},
                                                         "data": {"lr": "0.1", "epochs": "3"}})
    api.post(f"/api/v1/namespaces/{NS}/secrets", json={"metadata": {"name": "creds"},
                                                      "stringData": {"token": "s3cret", "unused": "x"}})
    volumes = [
        {"name": "cfg", "configMap": {"name": "settings"}},
        {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400,
                                     "items": [{"key": "token", "path": "api/token"}]}},
        {"name": "maybe", "configMap": {"name": "absent", "optional": True}},
        {"name": "info", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}, "mode": 0o600},
            {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        {"name": "all", "projected": {"defaultMode": 0o400, "sources": [
            {"configMap": {"name": "settings", "items": [{"key": "lr", "path": "cfg/lr"}]}},
            {"downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
    ]
    mounts = [{"name": "cfg", "mountPath": f"{HOME}/train"}, {"name": "creds", "mountPath": f"{HOME}/creds"},
              {"name": "maybe", "mountPath": f"{HOME}/maybe"}, {"name": "info", "mountPath": f"{HOME}/podinfo"},
              {"name": "all", "mountPath": f"{HOME}/all"}]
    script = ("cd ~/train && stat -c '%n %a %g' lr epochs && cat lr && echo; "
              "cd ~/creds && stat -c '%n %a' api/token && cat api/token && echo && ls; ls -A ~/maybe | wc -l; "
              "cd ~/podinfo && stat -c '%n %a' name ns && cat name && echo && cat ns && echo && "
              "grep '^jobset.sigs.k8s.io/replicatedjob-name=' labels; touch ~/train/x 2>&1 | grep -c Read-only; "
              "cat ~/all/cfg/lr && echo && stat -c %a ~/all/name && ls ~/all")
    job = with_volumes(trainjob("vol-files", ["bash", "-c", script], num_nodes=1), volumes, mounts, rjobs=("launcher",))
    log = run(api, job).splitlines()
    launcher = launcher_of(job_pods(api, "vol-files", NS))["metadata"]["name"]
    assert log[:3] == [f"lr 644 {gid}", f"epochs 644 {gid}", "0.1"], log
    assert log[3:6] == ["api/token 440", "s3cret", "api"], log  # fsGroup adds group read, as the kubelet does
    assert log[6] == "0", log  # an optional ConfigMap that does not exist: an empty volume
    assert log[7:11] == ["name 640", "ns 644", launcher, NS], log
    assert log[11:13] == ['jobset.sigs.k8s.io/replicatedjob-name="launcher"', "1"], log  # read-only
    assert log[13:] == ["0.1", "440", "cfg", "name"], log  # projected: its sources' files at its defaultMode


def test_a_host_path_reaches_the_machines_directory_and_its_type_is_checked(
        api: httpx.Client, home: Path, namespace: tuple[int, int]) -> None:
    uid, _ = namespace
    shared = Path("/tmp") / f"mpijob-e2e-hostpath-{os.getpid()}"
    made = shared / "made"
    try:
        job = with_volumes(trainjob("vol-host", ["bash", "-c", "id -u > ~/nfs/written-by && ls ~/made"], num_nodes=1),
                           [{"name": "nfs", "hostPath": {"path": str(shared), "type": "DirectoryOrCreate"}},
                            {"name": "made", "hostPath": {"path": str(made), "type": "DirectoryOrCreate"}}],
                           [{"name": "nfs", "mountPath": f"{HOME}/nfs"}, {"name": "made", "mountPath": f"{HOME}/made"}],
                           rjobs=("launcher",))
        shared.mkdir(mode=0o777)
        os.chmod(shared, 0o777)  # the machine's share, writable by the pod's user
        run(api, job)
        assert (shared / "written-by").read_text().strip() == str(uid)
        assert made.is_dir()  # DirectoryOrCreate made it, as the kubelet does

        missing = shared / "missing"
        wrong = with_volumes(trainjob("vol-host-missing", ["true"], num_nodes=1),
                             [{"name": "nfs", "hostPath": {"path": str(missing), "type": "Directory"}}],
                             [{"name": "nfs", "mountPath": f"{HOME}/nfs"}], rjobs=("launcher",))
        create(api, wrong, NS)
        failed = condition(wait_finished(api, "vol-host-missing", NS), "Failed")
        assert failed is not None
        assert (f'MountVolume.SetUp failed for volume "nfs" : hostPath type check failed: {missing} is not a '
                "directory") in failed["message"], failed

        # the server's own files (its database holds every Secret) sit in a directory closed to the pod's user:
        # a hostPath, bound as root, must not open it
        prying = with_volumes(trainjob("vol-host-pry", ["cat", f"{HOME}/home/cluster.db"], num_nodes=1),
                              [{"name": "home", "hostPath": {"path": str(home)}}],
                              [{"name": "home", "mountPath": f"{HOME}/home"}], rjobs=("launcher",))
        create(api, prying, NS)
        failed = condition(wait_finished(api, "vol-host-pry", NS), "Failed")
        assert failed is not None and f"uid {uid} may not enter" in failed["message"], failed
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)


def test_a_job_waits_pending_for_its_missing_claim_and_runs_once_it_is_created(
        api: httpx.Client, kubectl: Kubectl, namespace: tuple[int, int]) -> None:
    write = "echo ok-$OMPI_COMM_WORLD_RANK > ~/data/r$OMPI_COMM_WORLD_RANK"
    job = with_volumes(trainjob("vol-late", ["bash", "-c", f"mpirun bash -c '{write}' && cat ~/data/r0 ~/data/r1"]),
                       [pvc_volume("late")], [{"name": "data", "mountPath": f"{HOME}/data"}])
    create(api, job, NS)
    message = 'persistentvolumeclaim "late" not found'

    def pending() -> list[Obj]:
        pods = job_pods(api, "vol-late", NS)
        said = [c for p in pods for c in p["status"].get("conditions") or []
                if c["type"] == "PodScheduled" and c["status"] == "False" and message in c.get("message", "")]
        return pods if len(pods) == 2 and len(said) == 2 else []

    pods = wait_for(pending, "both pods Pending on the missing claim")
    assert all(p["status"]["phase"] == "Pending" for p in pods)
    described = kubectl("describe", "pod", "-n", NS, pods[0]["metadata"]["name"]).stdout
    assert "FailedScheduling" in described and f"0/1 nodes are available: {message}." in described, described
    assert condition(api.get(f"{TRAINER}/namespaces/{NS}/trainjobs/vol-late").json(), "Failed") is None

    make_claim(api, claim("late"))  # no resubmission: the job starts once its claim is bound
    done = wait_finished(api, "vol-late", NS)
    log = pod_log(api, launcher_of(job_pods(api, "vol-late", NS))["metadata"]["name"], NS)
    assert condition(done, "Complete"), (done.get("status"), log)
    assert log.split() == ["ok-0", "ok-1"], log


def test_a_namespaced_runtime_with_volumes_runs_and_a_deleted_claim_waits_for_its_pods(
        api: httpx.Client, home: Path, namespace: tuple[int, int]) -> None:
    got = make_claim(api, claim("kept"))
    runtime = bundled()[0]
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "with-data", "namespace": NS}
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]["spec"]
        pod["volumes"] = [pvc_volume("kept")]
        pod["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": f"{HOME}/data"}]
    r = api.post(f"{TRAINER}/namespaces/{NS}/trainingruntimes", json=runtime)
    assert r.status_code == 201, r.text
    job = trainjob("vol-runtime", ["bash", "-c", "echo started > ~/data/flag; sleep 3; mpirun cat ~/data/flag"])
    job["spec"]["runtimeRef"] = {"name": "with-data", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"}
    create(api, job, NS)
    directory = home / "volumes" / f"pvc-{got['metadata']['uid']}"
    wait_for((directory / "flag").exists, "the job to write into its claim")
    r = api.delete(PVCS.format(ns=NS) + "/kept")  # in use: kept, Terminating, until its pods are done
    assert r.status_code == 200 and r.json()["metadata"]["deletionTimestamp"], r.text
    assert api.get(PVCS.format(ns=NS) + "/kept").status_code == 200 and directory.is_dir()
    done = wait_finished(api, "vol-runtime", NS)
    log = pod_log(api, launcher_of(job_pods(api, "vol-runtime", NS))["metadata"]["name"], NS)
    assert condition(done, "Complete"), (done.get("status"), log)
    assert log.split() == ["started", "started"], log
    wait_for(lambda: api.get(PVCS.format(ns=NS) + "/kept").status_code == 404, "the released claim to go")
    wait_for(lambda: not directory.exists(), "its directory to go")


def test_an_mpijob_mounts_a_claim(api: httpx.Client, kubectl: Kubectl, namespace: tuple[int, int]) -> None:
    make_claim(api, claim("mpi-data"))
    mount = [{"name": "data", "mountPath": f"{HOME}/data"}]
    worker = {"name": "mpi-worker", "image": "mpioperator/openmpi", "command": ["/usr/sbin/sshd"],
              "args": ["-De", "-p", "2222"], "volumeMounts": mount}
    launcher = {"name": "mpi-launcher", "image": "mpioperator/openmpi", "volumeMounts": mount,
                "command": ["bash", "-c", ("mpirun -n 2 bash -c 'hostname > ~/data/$OMPI_COMM_WORLD_RANK' && "
                                          "cat ~/data/0 ~/data/1")]}
    volumes = [pvc_volume("mpi-data")]
    manifest = yaml.safe_dump({
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "vol-mpijob"},
        "spec": {"slotsPerWorker": 1, "sshAuthMountPath": f"{HOME}/.ssh", "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher], "volumes": volumes}}},
            "Worker": {"replicas": 2, "template": {"spec": {"containers": [worker], "volumes": volumes}}}}}})
    kubectl("apply", "-n", NS, "-f", "-", input=manifest)
    kubectl("wait", "-n", NS, "--for=condition=Succeeded", "mpijob/vol-mpijob", "--timeout=120s", timeout=150)
    pods = json.loads(kubectl("get", "pods", "-n", NS, "-l", "training.kubeflow.org/job-name=vol-mpijob",
                              "-o", "json").stdout)["items"]
    launcher_pod = next(p["metadata"]["name"] for p in pods if "launcher" in p["metadata"]["name"])
    assert kubectl("logs", "-n", NS, launcher_pod).stdout.split() == ["vol-mpijob-worker-0", "vol-mpijob-worker-1"]


def test_data_outlives_its_job_and_a_server_restart(new_server: Callable[..., ServerInfo],
                                                    connect: Callable[..., httpx.Client]) -> None:
    info = new_server("volumes-restart")
    with connect(info) as c:
        first = make_claim(c, claim("results"), "default")
        mounts = [{"name": "data", "mountPath": f"{HOME}/results"}]
        run(c, with_volumes(trainjob("write", ["mpirun", "bash", "-c",
                                              "echo epoch-$OMPI_COMM_WORLD_RANK >> ~/results/log"]),
                            [pvc_volume("results")], mounts), "default")
        read = with_volumes(trainjob("read", ["bash", "-c", "sort ~/results/log"], num_nodes=1),
                            [pvc_volume("results")], mounts, rjobs=("launcher",))
        assert run(c, read, "default").split() == ["epoch-0", "epoch-1"]
    server_process.stop(Home(info.home), timeout=20)

    again = new_server("volumes-restart")  # the same MPIJOB_HOME
    with connect(again) as c:
        kept = bound(c, "results", "default")
        assert kept["spec"]["volumeName"] == first["spec"]["volumeName"]
        read["metadata"]["name"] = "read-again"
        assert run(c, read, "default").split() == ["epoch-0", "epoch-1"]


def test_a_process_sandbox_refuses_a_job_with_volumes(new_server: Callable[..., ServerInfo],
                                                      connect: Callable[..., httpx.Client]) -> None:
    info = new_server("volumes-process", env={"MPIJOB_SANDBOX": "process"})
    with connect(info) as c:
        job = with_volumes(trainjob("vol", ["true"]), [{"name": "s", "emptyDir": {}}],
                           [{"name": "s", "mountPath": "/scratch"}])
        r = c.post(f"{TRAINER}/namespaces/default/trainjobs", json=job)
        assert r.status_code == 422, r.text
        (cause,) = r.json()["details"]["causes"]  # named where the volumes come from: the job's runtime patch
        assert cause["field"] == "spec.runtimePatches", cause
        assert "volumes are mounted only by the namespace and rootless sandboxes" in cause["message"], cause
        assert c.get(f"{TRAINER}/namespaces/default/trainjobs/vol").status_code == 404
