"""The server is killed with SIGKILL while a job runs, then started again in the same home.

Policy (mpijob/controllers/manager.py): a job that had started is not re-adopted; it ends `Failed` with
reason `ControlPlaneRestarted`, its processes are gone, its logs stay readable, and new jobs run.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import httpx
from e2e_support import (
    TRAINER,
    condition,
    create,
    get_trainjob,
    job_dirs,
    job_pods,
    kubectl_runner,
    launcher_of,
    pod_log,
    trainjob,
    wait_finished,
    wait_launcher,
    wait_log,
    wait_no_processes,
    wait_ranks_seen,
)

from mpijob.store.supervisor import ServerInfo

JOB, AFTER = "ee-restart", "ee-after-restart"
SLEEPER = 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60'


def _kill_server(info: ServerInfo) -> None:
    os.kill(info.pid, signal.SIGKILL)
    try:
        os.waitpid(info.pid, 0)  # our child (supervisor.start): reap it so it is really gone
    except ChildProcessError:
        pass


def test_kill_9_then_start_fails_the_job_truthfully(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client], tmp_path: Path
) -> None:
    info = new_server("restart")
    with connect(info) as c:
        create(c, trainjob(JOB, ["mpirun", "bash", "-c", SLEEPER], num_nodes=2))
        launcher = wait_launcher(c, JOB)
        wait_log(c, launcher, lambda t: "rank 0 up" in t and "rank 1 up" in t)
        pods = [p["metadata"]["name"] for p in job_pods(c, JOB)]
        assert {p["status"]["phase"] for p in job_pods(c, JOB)} == {"Running"}
        [job_dir] = job_dirs(info.home, JOB)
    wait_ranks_seen(JOB, pods, job_dir, 2)  # the process scan below is not blind

    _kill_server(info)
    wait_no_processes(JOB, pods=pods, job_dir=job_dir)  # nothing of the job outlives its control plane

    again = new_server("restart")  # same MPIJOB_HOME
    assert again.pid != info.pid and again.home == info.home
    with connect(again) as c:
        listed = c.get(f"{TRAINER}/namespaces/default/trainjobs").json()["items"]
        assert JOB in [j["metadata"]["name"] for j in listed]
        tj = get_trainjob(c, JOB)
        failed = condition(tj, "Failed")
        assert failed is not None, tj.get("status")
        assert failed["reason"] == "ControlPlaneRestarted"
        assert "restart" in failed["message"]
        after = job_pods(c, JOB)
        assert sorted(p["metadata"]["name"] for p in after) == sorted(pods)
        for pod in after:
            assert pod["status"]["phase"] == "Failed", pod["status"]
            assert "terminated" in pod["status"]["containerStatuses"][0]["state"]
        wait_no_processes(JOB, pods=pods, job_dir=job_dir, timeout=0.5)

        kubectl = kubectl_runner(again.kubeconfig, tmp_path / "kubectl-cache")
        logs = kubectl("logs", launcher_of(after)["metadata"]["name"]).stdout
        assert "rank 0 up" in logs and "rank 1 up" in logs

        create(c, trainjob(AFTER, ["mpirun", "bash", "-c", 'echo "after rank $OMPI_COMM_WORLD_RANK"'], num_nodes=2))
        done = wait_finished(c, AFTER)
        log = pod_log(c, launcher_of(job_pods(c, AFTER))["metadata"]["name"])
        assert condition(done, "Complete") is not None, (done.get("status"), log)
        assert "after rank 0" in log and "after rank 1" in log
