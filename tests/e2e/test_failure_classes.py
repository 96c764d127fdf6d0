"""Every class of failure comes from a real job failing that way (docs/troubleshooting.md): its TrainJob's
`Failed` condition keeps upstream's reason and says the class, the pod, rank and host, the fix and the
guide's section; its Warning Event and its history record carry the class. The OOM kill is produced by
tests/controllers/test_oom.py, a lost node by tests/e2e/test_failures.py, the program's own failure by
both, a window across pods under Open MPI 4 by tests/e2e/test_one_sided.py; the rest here. That each
launch class is earned (programs printing these tools' words themselves stay `ProgramFailed`), with Open
MPI 5's, MPICH's and Intel MPI's own reports, is tests/e2e/test_failure_provenance.py."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob.api import names
from mpijob.api.trainer.failures import ANCHORS

from support import (
    TAG,
    condition,
    create,
    events_of,
    https_client,
    job_pods,
    launcher_of,
    trainjob,
    wait_finished,
    wait_for,
    wait_launcher,
    wait_log,
)

RECORDS = f"/apis/{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}/namespaces/default/{names.JOB_RECORDS}"
# The key mpirun's ssh offers: named by the ssh config the launcher uses (the pod's own, or `-F` in process mode).
REPLACE_KEY = ('cfg=/etc/ssh/ssh_config; case "$OMPI_MCA_plm_rsh_agent" in *-F*) cfg=${OMPI_MCA_plm_rsh_agent##*-F };; '
               'esac; key=$(awk \'/IdentityFile/ {print $2}\' $cfg); ssh-keygen -q -t ed25519 -N "" -f /tmp/other-$$ '
               '&& cat /tmp/other-$$ > "$key" && rm -f /tmp/other-$$*; mpirun hostname')
# NCCL cannot run on this machine (no GPU, no NCCL): a rank prints the line NCCL itself prints when it cannot
# connect to a peer, and PyTorch's error after it, and fails as such a rank does.
NCCL_RANK = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then echo "$(hostname):4242:4300 [0] include/socket.h:409 NCCL '
             'WARN Net : Connect to 10.244.1.2<43215> failed : Connection refused"; echo "RuntimeError: NCCL error '
             'in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version '
             '2.14.3" >&2; exit 1; fi; sleep 30')
JOBS = {
    "fc-ssh": (["bash", "-c", REPLACE_KEY], names.FAILURE_SSH_AUTH),
    "fc-dns": (["bash", "-c", ('echo "fc-dns-node-0-7.fc-dns slots=1" > /tmp/fc-dns-$$; '
                "mpirun --hostfile /tmp/fc-dns-$$ -n 1 hostname")], names.FAILURE_HOST_UNRESOLVABLE),
    "fc-cmd": (["mpirun", "no-such-program-fc"], names.FAILURE_COMMAND_NOT_FOUND),
    "fc-slots": (["mpirun", "-n", "50", "hostname"], names.FAILURE_NOT_ENOUGH_SLOTS),
    "fc-signal": (["mpirun", "bash", "-c", 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then kill -SEGV $$; fi; sleep 30'],
                  names.FAILURE_SIGNALED),
    "fc-nccl": (["mpirun", "bash", "-c", NCCL_RANK], names.FAILURE_NCCL),
}
DAEMON_JOB = "fc-daemon"


def _orted(job: str) -> tuple[int, str]:
    """An Open MPI daemon of `job` on a node (found by the job's tag, which reaches every session) and the pod
    it runs in (its cgroup's name, `mpijob/<cluster>/<job uid>-<pod>`, less the job's uid)."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
            cgroup = (entry / "cgroup").read_text()
        except OSError:
            continue
        if Path(argv[0].decode()).name == "orted" and f"{TAG}={job}".encode() in environ:
            lines = cgroup.splitlines()
            name = next(ln for ln in lines if ":memory:" in ln or ln.startswith("0::")).rsplit("/", 1)[1]
            uid, _, pod = name.partition(f"-{job}-")
            assert len(uid) == 36, name  # a job's uid
            return int(entry.name), f"{job}-{pod}"
    raise AssertionError(f"no orted of {job} running")


def _outcome(api: httpx.Client, name: str) -> dict[str, Any]:
    tj = wait_finished(api, name, timeout=120)
    records = api.get(RECORDS).json()["items"]
    return {"trainjob": tj, "failed": condition(tj, "Failed"), "pods": job_pods(api, name),
            "events": [e for e in events_of(api, name) if e["type"] == "Warning"],
            "record": next((r for r in records if r["metadata"]["uid"] == tj["metadata"]["uid"]), None)}


@pytest.fixture(scope="module")
def failed(api: httpx.Client) -> dict[str, dict[str, Any]]:
    """Every job started at once, then the daemon of a running one killed; each one's end."""
    for name, (command, _) in JOBS.items():
        create(api, trainjob(name, command, num_nodes=2))
    create(api, trainjob(DAEMON_JOB, ["mpirun", "bash", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK up"; sleep 60'],
                         num_nodes=3))
    wait_log(api, wait_launcher(api, DAEMON_JOB), lambda t: all(f"rank {r} up" in t for r in range(3)), timeout=120)
    pid, pod = wait_for(lambda: _orted(DAEMON_JOB), "an orted of the daemon job")
    os.kill(pid, signal.SIGKILL)
    out = {name: _outcome(api, name) for name in [*JOBS, DAEMON_JOB]}
    out[DAEMON_JOB]["killed_in"] = pod
    return out


def _check(found: dict[str, Any], cls: str) -> str:
    """The condition, the Event and the record agree on the class; the message links to its section."""
    failed = found["failed"]
    assert failed is not None, found["trainjob"].get("status")
    message = failed["message"]
    assert failed["reason"] == names.REASON_FAILED_JOBS, failed  # upstream's reason stays
    assert message.startswith(f"{cls}: "), message
    assert "Fix: " in message and message.endswith(f"See docs/troubleshooting.md#{ANCHORS[cls]}"), message
    assert [e["reason"] for e in found["events"]] == [cls], found["events"]
    assert found["record"] is not None and found["record"]["failure"] == cls, found["record"]
    assert found["record"]["message"] == message and found["record"]["state"] == "Failed"
    return message


def _pod(found: dict[str, Any], role: str, index: int = 0) -> str:
    pods = [p for p in found["pods"] if p["metadata"]["labels"].get(names.LABEL_RJOB_NAME) == role]
    return str(sorted(pods, key=lambda p: p["metadata"]["name"])[index]["metadata"]["name"])


def test_ssh_key_refused(failed: dict[str, dict[str, Any]]) -> None:
    found = failed["fc-ssh"]
    message = _check(found, names.FAILURE_SSH_AUTH)
    assert _pod(found, "node") in message and "host fc-ssh-node-0-0.fc-ssh" in message, message
    assert launcher_of(found["pods"])["metadata"]["name"] in message and "fc-ssh-mpi-ssh-auth" in message


def test_host_name_not_resolvable(failed: dict[str, dict[str, Any]]) -> None:
    message = _check(failed["fc-dns"], names.FAILURE_HOST_UNRESOLVABLE)
    assert "was given host fc-dns-node-0-7.fc-dns, which is not a pod of this job" in message, message


def test_command_not_found(failed: dict[str, dict[str, Any]]) -> None:
    message = _check(failed["fc-cmd"], names.FAILURE_COMMAND_NOT_FOUND)
    # the rank and host Open MPI reports first: whichever daemon got there first
    assert re.search(r"the program 'no-such-program-fc' on (launcher|node) pod \S+ \(host \S+\) for rank \d",
                     message), message


def test_not_enough_slots(failed: dict[str, dict[str, Any]]) -> None:
    message = _check(failed["fc-slots"], names.FAILURE_NOT_ENOUGH_SLOTS)
    assert "asked for 50 processes, but the hostfile offers 2 slots (2 hosts)" in message, message


def test_rank_killed_by_a_signal(failed: dict[str, dict[str, Any]]) -> None:
    """The rank, its pod and host as mpirun reported them; Open MPI 4.1 sometimes exits before it prints
    which process failed, passing the rank's signal on as its own status: then the launcher's."""
    found = failed["fc-signal"]
    message = _check(found, names.FAILURE_SIGNALED)
    reported = f"rank 1 on node pod {_pod(found, 'node')} (host fc-signal-node-0-0.fc-signal) exited on signal 11"
    launcher = launcher_of(found["pods"])["metadata"]["name"]
    passed_on = f"launcher pod {launcher} (host fc-signal-launcher-0-0.fc-signal) exited with signal 11 (SIGSEGV)"
    assert reported in message or passed_on in message, message


def test_nccl_error(failed: dict[str, dict[str, Any]]) -> None:
    found = failed["fc-nccl"]
    message = _check(found, names.FAILURE_NCCL)
    assert "rank 1 on node pod" in message and _pod(found, "node") in message, message
    assert "reported an NCCL error: fc-nccl-node-0-0:4242:4300 [0]" in message, message


def test_open_mpi_daemon_lost(failed: dict[str, dict[str, Any]]) -> None:
    found = failed[DAEMON_JOB]
    message = _check(found, names.FAILURE_DAEMON_LOST)
    assert f"mpirun lost the Open MPI daemon on node pod {found['killed_in']}" in message, message


@pytest.fixture(scope="module")
def not_ready(servers: Any) -> dict[str, Any]:
    """A server whose nodes get a millisecond to accept the job key: no sshd starts that fast, so the node is
    not ready in time, as on a machine too loaded to start sshd within the (default 60 s) deadline."""
    info = servers.start("not-ready", env={"MPIJOB_READY_TIMEOUT": "0.001"})
    with https_client(info.kubeconfig) as api:
        create(api, trainjob("fc-not-ready", ["mpirun", "hostname"], num_nodes=2))
        return _outcome(api, "fc-not-ready")


def test_sshd_not_ready_in_time(not_ready: dict[str, Any]) -> None:
    message = _check(not_ready, names.FAILURE_SSHD_NOT_READY)
    assert f"the sshd of node pod {_pod(not_ready, 'node')}" in message, message
    assert "did not answer on port 2222 within 0.001s" in message, message
    launcher = launcher_of(not_ready["pods"])
    assert "startTime" not in launcher.get("status", {}), launcher["status"]  # the launcher never started
