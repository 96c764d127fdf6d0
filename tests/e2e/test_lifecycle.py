"""Deleting a running TrainJob cascades to everything it owns; logs outlive the job and the server."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx
from mpijob.store import server_process
from mpijob.store.home import Home
from mpijob.store.server_process import ServerInfo

from support import (
    TRAINER,
    condition,
    create,
    job_dirs,
    job_pods,
    kubectl_runner,
    launcher_of,
    status_code,
    trainjob,
    wait_finished,
    wait_for,
    wait_launcher,
    wait_log,
    wait_no_processes,
)

CASCADE, LOGS = "ee-cascade", "ee-logs"
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}) ")


def test_deleting_a_running_trainjob_cascades(api: httpx.Client, home: Path) -> None:
    create(api, trainjob(CASCADE, ["mpirun", "bash", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60'],
                         num_nodes=2))
    wait_log(api, wait_launcher(api, CASCADE), lambda t: "rank 0 up" in t and "rank 1 up" in t)
    pods = [p["metadata"]["name"] for p in job_pods(api, CASCADE)]
    [job_dir] = job_dirs(home, CASCADE)
    owned = [f"/api/v1/namespaces/default/pods/{p}" for p in pods] + [
        f"/api/v1/namespaces/default/secrets/{CASCADE}-mpi-ssh-auth",
        f"/api/v1/namespaces/default/configmaps/{CASCADE}-mpi-hostfile",
    ]
    assert [status_code(api, path) for path in owned] == [200] * len(owned)

    r = api.request("DELETE", f"{TRAINER}/namespaces/default/trainjobs/{CASCADE}",
                    json={"propagationPolicy": "Background"})
    assert r.status_code in (200, 202), r.text

    wait_for(lambda: status_code(api, f"{TRAINER}/namespaces/default/trainjobs/{CASCADE}") == 404,
             "the TrainJob to be gone")
    wait_for(lambda: all(status_code(api, path) == 404 for path in owned), "pods, Secret and ConfigMap to be gone")
    wait_for(lambda: not job_dir.exists(), f"{job_dir} (keys, hostfile, homes) to be removed")
    assert job_dirs(home, CASCADE) == []
    wait_no_processes(CASCADE, pods=pods, job_dir=job_dir)


def test_logs_survive_the_job_and_a_server_restart(
    new_server: Callable[..., ServerInfo], connect: Callable[..., httpx.Client], tmp_path: Path
) -> None:
    info = new_server("logs")
    kubectl = kubectl_runner(info.kubeconfig, tmp_path / "kubectl-cache")
    with connect(info) as c:
        create(c, trainjob(LOGS, ["mpirun", "bash", "-c", 'echo "persist rank=$OMPI_COMM_WORLD_RANK"'], num_nodes=2))
        tj = wait_finished(c, LOGS)
        assert condition(tj, "Complete") is not None, tj.get("status")
        launcher = launcher_of(job_pods(c, LOGS))["metadata"]["name"]
    before = kubectl("logs", launcher).stdout
    assert sorted(re.findall(r"^persist rank=(\d)$", before, re.MULTILINE)) == ["0", "1"], before

    home = Home(info.home)
    assert server_process.stop(home, timeout=30)
    again = new_server("logs")
    assert again.pid != info.pid
    after = kubectl("logs", launcher).stdout
    assert after == before
    stamped = kubectl("logs", "--timestamps", launcher).stdout.splitlines()
    assert len(stamped) == len(before.splitlines())
    for line in stamped:
        assert RFC3339.match(line), line
    assert sorted(RFC3339.sub("", line) for line in stamped) == sorted(before.splitlines())
