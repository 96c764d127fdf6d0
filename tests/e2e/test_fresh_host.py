"""A host where no service ever ran: pods rely on nothing a service manager leaves behind.

The server runs in a private mount namespace of the test whose `/run` is an empty tmpfs (no
`/run/sshd`, which Debian creates only when the ssh service starts), with an empty environment (no
`HOME`, no `LANG`), in both sandbox modes. A 2-node job must start its sshds, reach every rank and see
a writable `/dev/shm`, a `HOME` that exists, and a user name for its uid. The host's
`/etc/resolv.conf` is made a link into `/run`, as systemd-resolved makes it: pods keep name resolution.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpijob.store import server_process
from mpijob.store.home import Home

from support import condition, create, https_client, pod_log, trainjob, wait_finished, wait_for, wait_launcher

PROBE = r'''echo "rank $OMPI_COMM_WORLD_RANK user=$(id -un) home_exists=$(test -d "$HOME" && echo yes)"
echo "rank $OMPI_COMM_WORLD_RANK shm=$(touch /dev/shm/probe-$OMPI_COMM_WORLD_RANK && echo writable)"
echo "rank $OMPI_COMM_WORLD_RANK $(grep -h nameserver /etc/resolv.conf)"'''
STUB = "/run/systemd/resolve/stub-resolv.conf"
NAMESERVER = "nameserver 127.0.0.53"


@pytest.fixture(params=["namespace", "process"])
def bare_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Home]:
    """A server started in a private mount namespace with an empty /run and an empty environment."""
    if os.geteuid() != 0:
        pytest.fail("this test hides the host's /run in a mount namespace: run the suite as root (CI does)")
    home = Home(tmp_path / "home").ensure()
    env = [f"PATH={os.environ['PATH']}", f"MPIJOB_HOME={home.root}", f"MPIJOB_SANDBOX={request.param}"]
    etc = tmp_path / "etc"  # the host's /etc, but with resolv.conf a link into /run
    shutil.copytree("/etc", etc, symlinks=True, ignore_dangling_symlinks=True)
    (etc / "resolv.conf").unlink()
    (etc / "resolv.conf").symlink_to(STUB)
    script = (f"mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p {os.path.dirname(STUB)} && "
              f"echo '{NAMESERVER}' > {STUB} && mount --bind {etc} /etc && exec env -i \"$@\"")
    with open(home.server_log, "ab") as out:
        proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "bare",
             *env, sys.executable, "-m", "mpijob.server"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
        )
    try:
        wait_for(lambda: proc.poll() is not None or server_process.status(home), "the server to be ready", timeout=60)
        assert proc.poll() is None, home.server_log.read_text()
        info = server_process.status(home)
        assert info is not None and info.sandbox_mode == request.param
        yield home
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_job_runs_where_no_service_ever_ran(bare_server: Home) -> None:
    with https_client(bare_server.kubeconfig) as api:
        create(api, trainjob("fresh", ["mpirun", "bash", "-c", PROBE], num_nodes=2))
        launcher = wait_launcher(api, "fresh")
        tj = wait_finished(api, "fresh")
        text = pod_log(api, launcher)
    assert condition(tj, "Complete"), (tj.get("status"), text)
    lines = text.splitlines()
    for rank in (0, 1):
        user = next((ln for ln in lines if ln.startswith(f"rank {rank} user=")), "")
        assert user and "user= " not in user and user.endswith("home_exists=yes"), text
        assert f"rank {rank} shm=writable" in lines, text
        assert f"rank {rank} {NAMESERVER}" in lines, text
