"""Two jobs running at the same time never see each other's hostfile, keys or files.

Both launchers write a file into $HOME, then wait at a barrier (a TCP socket this test holds open) so
that both jobs are provably running at once and both files exist before either looks around.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shlex
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest
from e2e_support import (
    condition,
    create,
    job_pods,
    launcher_of,
    pod_log,
    section,
    trainjob,
    wait_finished,
)

JOBS = ("ee-iso-a", "ee-iso-b")
RANK = ('echo "rank=$OMPI_COMM_WORLD_RANK host=$(hostname) files=$(ls -A "$HOME" | grep isolation- | sort '
        '| tr "\\n" ,) key=$(md5sum < "$HOME/.ssh/authorized_keys" | cut -c1-32) '
        'keys=$(grep -c . "$HOME/.ssh/authorized_keys")"')
LAUNCHER = "\n".join([
    "set -e",
    "echo ---hostfile---; cat /etc/mpi/hostfile; echo ---end-hostfile---",
    "echo ---keys---; cat /home/mpiuser/.ssh/authorized_keys; echo ---end-keys---",
    "echo keyfile=$(base64 -w0 /home/mpiuser/.ssh/authorized_keys)",
    'echo "written by $E2E_JOB" > "$HOME/isolation-$E2E_JOB"',
    "exec 3<>/dev/tcp/127.0.0.1/$BARRIER_PORT",
    "echo at-barrier",
    "read -r go <&3",
    "echo ---home---; ls -A \"$HOME\" | grep isolation- ; echo ---end-home---",
    f"mpirun bash -c {shlex.quote(RANK)}",
])


class Barrier:
    """Accepts one connection per job and releases them all together."""

    def __init__(self, parties: int) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(60)
        self.port = self.sock.getsockname()[1]
        self.parties, self.arrived = parties, 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conns = []
        try:
            while len(conns) < self.parties:
                conns.append(self.sock.accept()[0])
                self.arrived = len(conns)
            for c in conns:
                c.sendall(b"go\n")
        except OSError:
            pass
        finally:
            for c in conns:
                c.close()

    def close(self) -> None:
        self.sock.close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def logs(api: httpx.Client) -> Iterator[dict[str, str]]:
    barrier = Barrier(len(JOBS))
    try:
        for job in JOBS:
            create(api, trainjob(job, ["bash", "-c", LAUNCHER], num_nodes=2, env={"BARRIER_PORT": str(barrier.port)}))
        done = {job: wait_finished(api, job) for job in JOBS}
    finally:
        barrier.close()
    out = {}
    for job in JOBS:
        out[job] = pod_log(api, launcher_of(job_pods(api, job))["metadata"]["name"])
        assert condition(done[job], "Complete") is not None, (done[job].get("status"), out[job])
    assert barrier.arrived == len(JOBS)  # both were running at once
    yield out


def test_each_launcher_sees_only_its_own_hostfile(logs: dict[str, str]) -> None:
    for job in JOBS:
        assert section(logs[job], "hostfile") == f"{job}-node-0-0.{job} slots=1\n{job}-launcher-0-0.{job} slots=1\n"
    assert section(logs[JOBS[0]], "hostfile") != section(logs[JOBS[1]], "hostfile")


def _public_key(api: httpx.Client, job: str) -> bytes:
    secret = api.get(f"/api/v1/namespaces/default/secrets/{job}-mpi-ssh-auth").json()
    return base64.b64decode(secret["data"]["ssh-publickey"])


def test_each_job_authorizes_only_its_own_key(api: httpx.Client, logs: dict[str, str]) -> None:
    keys = {job: _public_key(api, job).decode().strip() for job in JOBS}
    assert keys[JOBS[0]] != keys[JOBS[1]]
    for job in JOBS:
        assert [ln for ln in section(logs[job], "keys").splitlines() if ln] == [keys[job]]
        # every pod of the job, remote ranks included, holds the same file with exactly that one key
        ranks = re.findall(r"^rank=(\d+) host=(\S+) files=(\S*) key=(\w+) keys=(\d+)$", logs[job], re.MULTILINE)
        assert len(ranks) == 2, logs[job]
        launcher_file = base64.b64decode(re.search(r"^keyfile=(\S+)$", logs[job], re.MULTILINE)[1])
        assert {(r[3], r[4]) for r in ranks} == {(hashlib.md5(launcher_file).hexdigest(), "1")}, ranks


def test_authorized_keys_is_the_secrets_publickey_verbatim(api: httpx.Client, logs: dict[str, str]) -> None:
    """Upstream mounts the Secret's `ssh-publickey` as `authorized_keys`: the same bytes."""
    for job in JOBS:
        launcher_file = base64.b64decode(re.search(r"^keyfile=(\S+)$", logs[job], re.MULTILINE)[1])
        assert launcher_file == _public_key(api, job)


def test_files_in_one_jobs_home_are_invisible_to_the_other(logs: dict[str, str]) -> None:
    a, b = JOBS
    assert section(logs[a], "home").split() == [f"isolation-{a}"]
    assert section(logs[b], "home").split() == [f"isolation-{b}"]
    for job in JOBS:
        ranks = re.findall(r"^rank=\d+ host=(\S+) files=(\S*) ", logs[job], re.MULTILINE)
        seen = dict(ranks)
        assert seen == {f"{job}-launcher-0-0": f"isolation-{job},", f"{job}-node-0-0": ""}, logs[job]
