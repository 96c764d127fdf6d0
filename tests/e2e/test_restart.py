"""The server is killed with SIGKILL while jobs run, then started again in the same home.

Policy (docs/restarts.md): every pod is held by a supervisor of its own (controllers/kubelet/shim.py),
so the pods run on; the restarted server re-adopts them and the job ends as if nothing had happened,
its log whole, with an Event noting the restart. A pod that ended while no server ran ends the job with
its real exit; a job deleted meanwhile has its pods stopped; pods a reboot took leave the job Failed,
saying so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from mpijob.api import Obj
from mpijob.api.core.resources import TRAINJOBS, WORKLOADS, Resource
from mpijob.api.kueue.adapters import workload_name
from mpijob.controllers import conditions as cond
from mpijob.store.objects import Store
from mpijob.store.server_process import ServerInfo

from support import (
    TRAINER,
    condition,
    create,
    events_of,
    job_dirs,
    job_pods,
    job_processes,
    launcher_of,
    pod_log,
    trainjob,
    wait_finished,
    wait_for,
    wait_launcher,
    wait_log,
    wait_no_processes,
)

TICKS = 24
TICKER = f'for i in $(seq 1 {TICKS}); do echo "rank $OMPI_COMM_WORLD_RANK tick $i"; sleep 0.5; done'


def _kill_server(info: ServerInfo) -> None:
    os.kill(info.pid, signal.SIGKILL)
    try:
        os.waitpid(info.pid, 0)  # our child (server_process.start): reap it so it is really gone
    except ChildProcessError:
        pass


def _supervisors(job_dir: Path) -> list[Path]:
    return sorted(job_dir.glob("pods/*/supervisor"))


def _started(c: httpx.Client, name: str, command: str, ready: str) -> tuple[list[str], str]:
    create(c, trainjob(name, ["mpirun", "bash", "-c", command], num_nodes=2))
    launcher = wait_launcher(c, name)
    wait_log(c, launcher, lambda t: ready in t)
    return [p["metadata"]["name"] for p in job_pods(c, name)], launcher


@pytest.mark.parametrize("sandbox", ["namespace", "process"])
def test_a_job_running_across_kill_9_completes_with_its_log_whole(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client], sandbox: str
) -> None:
    name = f"ee-restart-run-{sandbox}"
    env = {"MPIJOB_SANDBOX": sandbox}
    info = new_server(f"restart-run-{sandbox}", env=env)
    assert info.sandbox_mode == sandbox
    with connect(info) as c:
        pods, launcher = _started(c, name, TICKER, "tick 2")
    _kill_server(info)
    assert job_processes(name, pods=pods), "the job's processes died with the server"

    again = new_server(f"restart-run-{sandbox}", env=env)  # same MPIJOB_HOME
    with connect(again) as c:
        wait_for(lambda: _restarts(c, name), "the restart's Event")
    _kill_server(again)  # and once more, while it still runs
    again = new_server(f"restart-run-{sandbox}", env=env)
    with connect(again) as c:
        done = wait_finished(c, name, timeout=60)
        log = pod_log(c, launcher)
        assert condition(done, "Complete"), (done["status"], log)
        lines = log.splitlines()
        for rank in (0, 1):  # every line there, exactly once: none lost or doubled across the restarts
            assert [ln for ln in lines if ln.startswith(f"rank {rank} ")] == \
                [f"rank {rank} tick {i}" for i in range(1, TICKS + 1)], log
        (noted,) = _restarts(c, name)  # one Event, counted twice (as client-go's recorder counts repeats)
        assert noted["type"] == "Normal" and "re-adopted" in noted["message"] and noted["count"] == 2, noted
    wait_no_processes(name, pods=pods)


def _restarts(c: httpx.Client, name: str) -> list[Obj]:
    return [e for e in events_of(c, name) if e["reason"] == "ControlPlaneRestarted"]


def test_a_job_that_ended_while_no_server_ran_ends_with_its_real_exit(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    name = "ee-restart-ended"
    info = new_server("restart-ended")
    with connect(info) as c:
        pods, _ = _started(c, name, 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 2; exit 3', "rank 1 up")
        [job_dir] = job_dirs(info.home, name)
    _kill_server(info)
    launcher_dir = next(d for d in _supervisors(job_dir) if "launcher" in d.parent.name)
    wait_for(lambda: (launcher_dir / "exit.json").exists() or None, "the launcher's exit record", timeout=30)

    again = new_server("restart-ended")
    with connect(again) as c:
        done = wait_finished(c, name, timeout=60)
        failed = condition(done, "Failed")
        assert failed and failed["reason"] == "FailedJobs", done["status"]
        assert re.match(r"ProgramFailed: rank [01] exited with code 3", failed["message"]), failed  # both exit 3
        state = launcher_of(job_pods(c, name))["status"]["containerStatuses"][0]["state"]["terminated"]
        assert state["exitCode"] != 0 and state["reason"] != "ContainerStatusUnknown", state
    wait_no_processes(name, pods=pods)


def test_a_job_deleted_while_no_server_ran_has_its_pods_stopped_at_start(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    name = "ee-restart-deleted"
    info = new_server("restart-deleted")
    with connect(info) as c:
        pods, _ = _started(c, name, 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60', "rank 1 up")
    _kill_server(info)
    assert job_processes(name, pods=pods)
    store = Store(info.home / "cluster.db")  # what a deletion the server never saw leaves: no TrainJob
    store.delete(TRAINJOBS, "default", name)
    store.close()

    new_server("restart-deleted")
    wait_no_processes(name, pods=pods, timeout=15)


def test_pods_a_reboot_took_leave_the_job_failed_saying_so(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    name = "ee-restart-reboot"
    info = new_server("restart-reboot")
    with connect(info) as c:
        pods, _ = _started(c, name, 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60', "rank 1 up")
        [job_dir] = job_dirs(info.home, name)
    _kill_server(info)
    # A reboot, as the next server finds it: every supervisor gone with its pod, none with an exit
    # record, and their state written during another boot.
    for d in _supervisors(job_dir):
        state = json.loads((d / "state.json").read_text())
        os.kill(state["shim"], signal.SIGKILL)
        (d / "state.json").write_text(json.dumps({**state, "boot_id": "an-earlier-boot"}))
    wait_no_processes(name, pods=pods, timeout=15)

    again = new_server("restart-reboot")
    with connect(again) as c:
        done = wait_finished(c, name, timeout=60)
        failed = condition(done, "Failed")
        assert failed and "the machine restarted" in failed["message"], done["status"]
        for pod in job_pods(c, name):
            state = pod["status"]["containerStatuses"][0]["state"]["terminated"]
            assert (state["reason"], state["exitCode"]) == ("ContainerStatusUnknown", 137), state

        after = "ee-after-reboot"
        create(c, trainjob(after, ["mpirun", "bash", "-c", 'echo "after rank $OMPI_COMM_WORLD_RANK"'], num_nodes=2))
        done = wait_finished(c, after)
        assert condition(done, "Complete"), done["status"]


@pytest.mark.parametrize("code", [0, 3])
def test_a_job_whose_server_never_returns_leaves_nothing_running_once_it_ends(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client], code: int
) -> None:
    name = f"ee-restart-orphan-{code}"
    info = new_server(f"restart-orphan-{code}")
    with connect(info) as c:
        pods, _ = _started(c, name, f'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 2; exit {code}', "rank 1 up")
    _kill_server(info)
    # The launcher ends; with no server to tear the job down, its node pods stop themselves soon after
    # (shim.ORPHANED), sshd and all.
    wait_no_processes(name, pods=pods, timeout=30)

    again = new_server(f"restart-orphan-{code}")  # what the supervisors recorded is the job's end
    with connect(again) as c:
        done = wait_finished(c, name, timeout=60)
        if code == 0:
            assert condition(done, "Complete"), done["status"]
        else:  # every pod had ended: mpirun's failure is the cause, not the nodes that stopped after it
            failed = condition(done, "Failed")
            assert failed and re.match(r"ProgramFailed: rank [01] exited with code 3", failed["message"]), failed


def test_an_mpijob_running_across_kill_9_succeeds(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    """MPI Operator's MPIJob, run as it is, is re-adopted the same way."""
    name = "ee-restart-mpijob"
    mpi = "/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs"
    worker = {"name": "w", "image": "mpioperator/openmpi", "command": ["/usr/sbin/sshd"], "args": ["-De"]}
    launcher = {"name": "l", "image": "mpioperator/openmpi", "command": ["mpirun", "bash", "-c", TICKER]}
    job = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name},
           "spec": {"slotsPerWorker": 1, "sshAuthMountPath": "/home/mpiuser/.ssh", "mpiReplicaSpecs": {
               "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
               "Worker": {"replicas": 2, "template": {"spec": {"containers": [worker]}}}}}}
    info = new_server("restart-mpijob")
    with connect(info) as c:
        assert c.post(mpi, json=job).status_code == 201
        pod = wait_for(lambda: next((p["metadata"]["name"] for p in c.get(
            "/api/v1/namespaces/default/pods", params={"labelSelector": "training.kubeflow.org/job-role=launcher"}
        ).json()["items"]), None), "the launcher pod")
        wait_log(c, pod, lambda t: "tick 2" in t)
    _kill_server(info)

    again = new_server("restart-mpijob")
    with connect(again) as c:
        def succeeded() -> dict | None:
            conditions = (c.get(f"{mpi}/{name}").json().get("status") or {}).get("conditions") or []
            return next((x for x in conditions if x["type"] in ("Succeeded", "Failed") and x["status"] == "True"),
                        None)
        ended = wait_for(succeeded, "the MPIJob to end", timeout=60)
        log = pod_log(c, pod)
        assert ended["type"] == "Succeeded", (ended, log)
        for rank in (0, 1):
            assert [ln for ln in log.splitlines() if ln.startswith(f"rank {rank} ")] == \
                [f"rank {rank} tick {i}" for i in range(1, TICKS + 1)], log


def test_a_job_caught_while_starting_starts_again(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    name = "ee-restart-starting"
    info = new_server("restart-starting")
    with connect(info) as c:
        pods, _ = _started(c, name, 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60', "rank 1 up")
        [job_dir] = job_dirs(info.home, name)
    _kill_server(info)
    # What a server killed between starting the nodes and the launcher leaves: node pods running, and
    # no supervisor ever started for the launcher.
    launcher_dir = next(d for d in _supervisors(job_dir) if "launcher" in d.parent.name)
    os.kill(json.loads((launcher_dir / "state.json").read_text())["shim"], signal.SIGKILL)
    for record in launcher_dir.iterdir():
        record.unlink()

    again = new_server("restart-starting")
    with connect(again) as c:
        launcher = wait_launcher(c, name)  # the same pod, its log appended to: each rank up once per run
        wait_log(c, launcher, lambda t: t.count("rank 0 up") == 2 and t.count("rank 1 up") == 2)
        job = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/{name}"
        assert condition(c.get(job).json(), "Failed") is None  # it runs again, not failed
        c.delete(job)
    wait_no_processes(name, pods=pods, timeout=30)


def _in_store(info: ServerInfo, res: Resource, name: str, change: Callable[[Obj], None], status: bool = False) -> None:
    """Change a stored object as a server would have, had it lived a moment longer."""
    store = Store(info.home / "cluster.db")
    obj = store.get(res, "default", name)
    change(obj)
    store.update(res, obj, status=status)
    store.close()


def _evicted(wl: Obj) -> None:
    wl["status"].pop("admission", None)
    cond.set_condition(wl, "Evicted", True, "Preempted", "Preempted to accommodate a higher priority Workload")
    for held in ("QuotaReserved", "Admitted"):
        cond.set_condition(wl, held, False, "Preempted", "Preempted to accommodate a higher priority Workload")


@pytest.fixture
def marker() -> Iterator[Path]:
    """A path a job's ranks can see (the machine's /tmp, 0755), created by the test between two runs."""
    top = Path(tempfile.mkdtemp(prefix="mpijob-e2e-"))
    top.chmod(0o755)
    yield top / "second-run"
    shutil.rmtree(top)


def _runs(marker: Path, first: str) -> str:
    """A rank's command: says "up" and does `first` until `marker` exists; then says "again" and ends."""
    return (f'if [ -e {marker} ]; then echo "rank $OMPI_COMM_WORLD_RANK again"; '
            f'else echo "rank $OMPI_COMM_WORLD_RANK up"; {first}; fi')


# The first run: fails on its own ("ended"), or takes a while to stop ("stopping"); the second succeeds.
FIRST_RUN = {"ended": "sleep 1; exit 3", "stopping": "trap 'sleep 3; exit 143' TERM; sleep 60 & wait"}


@pytest.mark.parametrize("first", FIRST_RUN)
def test_a_job_kueue_evicted_as_the_server_died_runs_again_not_failed(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client], marker: Path, first: str
) -> None:
    """The server died after Kueue evicted the job's Workload, before its run was torn down and its pods
    deleted: the next server finishes the requeue, and the job runs again once re-admitted (which may be
    while the old run still stops). What the stopped launcher exited with is not the job's end."""
    name = f"ee-restart-evicted-{first}"
    info = new_server(f"restart-evicted-{first}")
    with connect(info) as c:
        pods, launcher = _started(c, name, _runs(marker, FIRST_RUN[first]), "rank 1 up")
        workload = workload_name(c.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").json())
    _kill_server(info)
    _in_store(info, WORKLOADS, workload, _evicted, status=True)
    if first == "ended":
        wait_no_processes(name, pods=pods, timeout=30)  # every pod ended, as a teardown leaves them
    marker.touch()

    again = new_server(f"restart-evicted-{first}")
    with connect(again) as c:
        done = wait_finished(c, name, timeout=60)
        log = pod_log(c, launcher)
        assert condition(done, "Complete"), (done["status"], log)
        assert sorted(log.splitlines()) == ["rank 0 again", "rank 1 again"], log  # a new pod: a new log


def test_a_job_suspended_while_no_server_ran_is_stopped_at_start(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client]
) -> None:
    name = "ee-restart-suspended"
    info = new_server("restart-suspended")
    with connect(info) as c:
        pods, _ = _started(c, name, 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60', "rank 1 up")
    _kill_server(info)
    _in_store(info, TRAINJOBS, name, lambda tj: tj["spec"].update(suspend=True))

    again = new_server("restart-suspended")
    with connect(again) as c:
        wait_no_processes(name, pods=pods, timeout=30)
        wait_for(lambda: not job_pods(c, name) or None, "the suspended job's pods deleted")
        tj = c.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").json()
        assert condition(tj, "Suspended") and not condition(tj, "Failed") and not condition(tj, "Complete"), tj


def _fork_server(server: int) -> int:
    """The pid of the server's supervisors' fork server (`shim.serve`)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and b"mpijob.controllers.kubelet.shim" in _proc(entry / "cmdline") \
                and _proc(entry / "stat").rpartition(b")")[2].split()[1] == str(server).encode():
            return int(entry.name)
    raise AssertionError(f"no fork server under server {server}")


def _proc(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_a_rerun_caught_while_starting_is_not_taken_for_its_earlier_run(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client], marker: Path
) -> None:
    """Suspended, then resumed, a job runs again in the same pods' directories. The server dies after the
    re-run started its nodes and before its launcher: the next server must not take the earlier run's
    launcher (whose supervisor is long gone) for the re-run's, lost without an exit status."""
    name = "ee-restart-rerun"
    path = f"{TRAINER}/namespaces/default/trainjobs/{name}"
    patch = {"headers": {"Content-Type": "application/merge-patch+json"}}
    info = new_server("restart-rerun")
    with connect(info) as c:
        pods, launcher = _started(c, name, _runs(marker, "sleep 60"), "rank 1 up")
        [job_dir] = job_dirs(info.home, name)
        assert c.patch(path, json={"spec": {"suspend": True}}, **patch).status_code == 200
        wait_no_processes(name, pods=pods, timeout=30)
        marker.touch()
        states = {d.parent.name: d / "state.json" for d in _supervisors(job_dir)}
        forks = _fork_server(info.pid)
        resumed = time.time()
        assert c.patch(path, json={"spec": {"suspend": False}}, **patch).status_code == 200

        def new(state: Path) -> bool:
            try:
                return state.stat().st_mtime >= resumed
            except FileNotFoundError:
                return False

        # The re-run's nodes have started: hold its launcher back (its sshd handshakes take far longer
        # than this loop), by stopping the fork server that would start its supervisor.
        first = next(p for p in states if "launcher" in p)
        wait_for(lambda: all(new(s) for p, s in states.items() if p != first) or None,
                 "the re-run's node pods", interval=0.001)
        os.kill(forks, signal.SIGSTOP)
        assert not new(states[first]), "the re-run's launcher started already: the test missed its moment"
    _kill_server(info)
    os.kill(forks, signal.SIGKILL)

    again = new_server("restart-rerun")
    with connect(again) as c:
        done = wait_finished(c, name, timeout=60)
        log = pod_log(c, launcher)
        assert condition(done, "Complete"), (done["status"], log)  # the re-run started again, and ran
        assert sorted(log.splitlines()) == ["rank 0 again", "rank 1 again"], log
    wait_no_processes(name, pods=pods, timeout=30)
