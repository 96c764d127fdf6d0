"""A failing rank or a killed node fails the whole job quickly, names the culprit, and leaves nothing
running. "Quickly" is asserted loosely (< 10 s, while the other ranks would sleep 30–60 s); the issue's
target is 2 seconds."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from support import (
    by_role,
    condition,
    create,
    job_dirs,
    job_pods,
    launcher_of,
    pod_log,
    sshd_of,
    trainjob,
    wait_finished,
    wait_launcher,
    wait_log,
    wait_no_processes,
    wait_ranks_seen,
)

QUICKLY = 10.0  # seconds; loose on purpose (2 cores, shared machine)
RANK_JOB = "ee-rank-fail"
NODE_JOB = "ee-node-kill"


@pytest.fixture(scope="module")
def rank_failure(api: httpx.Client, home: Path) -> dict[str, Any]:
    script = "if [ $OMPI_COMM_WORLD_RANK = 1 ]; then exit 3; fi; sleep 30"
    started = time.monotonic()
    create(api, trainjob(RANK_JOB, ["mpirun", "bash", "-c", script], num_nodes=3))
    tj = wait_finished(api, RANK_JOB, timeout=60)
    elapsed = time.monotonic() - started
    pods = job_pods(api, RANK_JOB)
    return {"trainjob": tj, "elapsed": elapsed, "pods": pods, "dirs": job_dirs(home, RANK_JOB),
            "log": pod_log(api, launcher_of(pods)["metadata"]["name"])}


def test_failing_rank_fails_the_job_quickly(rank_failure: dict[str, Any]) -> None:
    failed = condition(rank_failure["trainjob"], "Failed")
    assert failed is not None, (rank_failure["trainjob"].get("status"), rank_failure["log"])
    assert failed["reason"] == "FailedJobs"
    assert condition(rank_failure["trainjob"], "Complete") is None
    assert rank_failure["elapsed"] < QUICKLY, rank_failure["elapsed"]  # the other ranks sleep 30 s


def test_failing_rank_message_names_rank_or_pod_and_exit_code(rank_failure: dict[str, Any]) -> None:
    """The rank when mpirun reported it (Open MPI 4.1 sometimes exits before printing which process
    failed), else the launcher pod; always the exit code."""
    message = condition(rank_failure["trainjob"], "Failed")["message"]  # type: ignore[index]
    launcher = launcher_of(rank_failure["pods"])["metadata"]["name"]
    assert re.search(r"\brank 1\b", message) or launcher in message, message
    assert re.search(r"\bcode 3\b", message), message
    assert message.startswith("ProgramFailed: "), message  # docs/troubleshooting.md#program-failed


def test_failing_rank_launcher_pod_reports_error(rank_failure: dict[str, Any]) -> None:
    launcher = launcher_of(rank_failure["pods"])
    assert launcher["status"]["phase"] == "Failed"
    terminated = launcher["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["reason"] == "Error" and terminated["exitCode"] != 0, terminated
    for pod in rank_failure["pods"]:
        assert pod["status"]["phase"] in ("Succeeded", "Failed"), pod["status"]  # nothing left Running


def test_failing_rank_leaves_no_process(rank_failure: dict[str, Any]) -> None:
    [job_dir] = rank_failure["dirs"]
    wait_no_processes(RANK_JOB, pods=[p["metadata"]["name"] for p in rank_failure["pods"]], job_dir=job_dir)


@pytest.fixture(scope="module")
def node_kill(api: httpx.Client, home: Path) -> dict[str, Any]:
    """Kill the sshd of node-0-1 with SIGKILL while every rank sleeps."""
    script = 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60'
    create(api, trainjob(NODE_JOB, ["mpirun", "bash", "-c", script], num_nodes=3))
    launcher = wait_launcher(api, NODE_JOB)
    wait_log(api, launcher, lambda t: all(f"rank {r} up" in t for r in range(3)))
    pods = job_pods(api, NODE_JOB)
    [job_dir] = job_dirs(home, NODE_JOB)
    victim = next(p for p in by_role(pods, "node") if p["spec"]["hostname"] == f"{NODE_JOB}-node-0-1")
    pid = sshd_of(job_dir, victim["spec"]["hostname"])
    running = wait_ranks_seen(NODE_JOB, [p["metadata"]["name"] for p in pods], job_dir, 3)
    assert any(line.startswith(f"{pid} ") for line in running), running  # the scan sees the sshds too
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    tj = wait_finished(api, NODE_JOB, timeout=60)
    return {"trainjob": tj, "elapsed": time.monotonic() - killed, "victim": victim["metadata"]["name"],
            "pods": {p["metadata"]["name"]: p for p in job_pods(api, NODE_JOB)}, "dir": job_dir}


def test_killed_node_fails_the_job_naming_the_node_pod(node_kill: dict[str, Any]) -> None:
    failed = condition(node_kill["trainjob"], "Failed")
    assert failed is not None, node_kill["trainjob"].get("status")
    assert node_kill["victim"] in failed["message"], failed["message"]
    assert failed["message"].startswith("MPIDaemonLost: "), failed["message"]  # its daemon went with it
    assert node_kill["elapsed"] < QUICKLY, node_kill["elapsed"]
    assert node_kill["pods"][node_kill["victim"]]["status"]["phase"] == "Failed"


def test_killed_node_reports_the_signal(node_kill: dict[str, Any]) -> None:
    """The node's container (sshd) died of SIGKILL: a kubelet reports exit code 137 / signal 9."""
    terminated = node_kill["pods"][node_kill["victim"]]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 137 or terminated.get("signal") == 9, terminated
    message = condition(node_kill["trainjob"], "Failed")["message"]  # type: ignore[index]
    assert re.search(r"SIGKILL|signal 9\b|\b137\b", message), message


def test_killed_node_leaves_no_process(node_kill: dict[str, Any]) -> None:
    wait_no_processes(NODE_JOB, pods=list(node_kill["pods"]), job_dir=node_kill["dir"])
