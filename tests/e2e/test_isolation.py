"""Two jobs running at the same time never see each other's hostfile, keys, files or pods.

Both launchers write a file into $HOME, then wait at a barrier (a directory of this machine's /tmp: a pod
cannot reach the host's network) so that both jobs are provably running at once and both files exist
before either looks around. Released, each learns the other job's node address and tries to reach its sshd,
beside its own job's.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support import condition, create, job_pods, launcher_of, pod_log, section, trainjob, wait_finished

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
    'touch "$BARRIER/$E2E_JOB"',
    'until test -e "$BARRIER/go"; do sleep 0.05; done',
    'own=$(awk \'NR==1 {print $1}\' /etc/mpi/hostfile); peer=$(cat "$BARRIER/peer-$E2E_JOB")',
    'echo "own-node $(timeout 5 bash -c \'exec 3<>/dev/tcp/$0/2222 && head -c 7 <&3\' "$own" 2>&1)"',
    'echo "peer-node $peer $(timeout 5 bash -c \'exec 3<>/dev/tcp/$0/2222 && echo open\' "$peer" 2>&1 | tail -1)"',
    "echo ---home---; ls -A \"$HOME\" | grep isolation- ; echo ---end-home---",
    f"mpirun bash -c {shlex.quote(RANK)}",
])


def _node_ip(api: httpx.Client, job: str) -> str:
    (node,) = [p for p in job_pods(api, job) if "-node-" in p["metadata"]["name"]]
    return node["status"]["podIP"]


@pytest.fixture(scope="module")
def logs(api: httpx.Client) -> Iterator[dict[str, str]]:
    barrier = Path(tempfile.mkdtemp(prefix="mpijob-barrier-"))
    barrier.chmod(0o777)  # the pods' users write here
    try:
        for job in JOBS:
            create(api, trainjob(job, ["bash", "-c", LAUNCHER], num_nodes=2, env={"BARRIER": str(barrier)}))
        deadline = time.monotonic() + 60
        while not all((barrier / job).exists() for job in JOBS) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all((barrier / job).exists() for job in JOBS), "both jobs must reach the barrier"
        for job, other in (JOBS, JOBS[::-1]):
            (barrier / f"peer-{job}").write_text(_node_ip(api, other))
        (barrier / "go").touch()
        done = {job: wait_finished(api, job) for job in JOBS}
    finally:
        shutil.rmtree(barrier, ignore_errors=True)
    out = {}
    for job in JOBS:
        out[job] = pod_log(api, launcher_of(job_pods(api, job))["metadata"]["name"])
        assert condition(done[job], "Complete") is not None, (done[job].get("status"), out[job])
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


def test_each_pod_has_its_own_address_on_the_pod_network(api: httpx.Client, logs: dict[str, str]) -> None:
    ips = [p["status"]["podIP"] for job in JOBS for p in job_pods(api, job)]
    assert len(set(ips)) == 4 and all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.244.0.0/16") for ip in ips)


def test_a_job_reaches_its_own_pods_and_not_the_other_jobs(logs: dict[str, str]) -> None:
    """Inside a job, the node's sshd answers; the other job's node, at its real address, cannot be reached."""
    for job in JOBS:
        assert re.search(r"^own-node SSH-2.0$", logs[job], re.MULTILINE), logs[job]
        peer = re.search(r"^peer-node (\S+) (.*)$", logs[job], re.MULTILINE)
        assert peer and ipaddress.ip_address(peer[1]), logs[job]
        assert "open" not in peer[2] and "Connection refused" in peer[2], peer[0]
