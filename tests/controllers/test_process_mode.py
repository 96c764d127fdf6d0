"""The fallback where user namespaces are off: a server run by a non-root user in the `process` sandbox
says so in `server status`, and still runs a real multi-node MPI job end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from mpijob.api import sandbox_mode
from mpijob.store.home import Home

from support import unprivileged as support_unprivileged
from support.unprivileged import MPIJOB, USER

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def unprivileged_server() -> Iterator[Home]:
    """A non-root server told to use the process sandbox, as where user namespaces are off."""
    with support_unprivileged.unprivileged_server("mpijob-fallback-", {sandbox_mode.ENV: "process"}) as home:
        yield home


def _hung(env: dict[str, str], home: Home) -> str:
    """What a job that hangs leaves to look at: its description, its processes, the server's log."""
    describe = subprocess.run([MPIJOB, "describe", "trainjob", "fallback"], env=env, capture_output=True, text=True,
                              timeout=30)
    ps = subprocess.run(["ps", "-ww", "-u", USER, "-o", "pid,ppid,stat,etime,args"], capture_output=True, text=True)
    log = home.server_log.read_text(errors="replace")[-6000:] if home.server_log.exists() else "(none)"
    return f"--- describe:\n{describe.stdout}{describe.stderr}\n--- processes:\n{ps.stdout}\n--- server log:\n{log}"


def test_unprivileged_server_uses_process_mode_and_runs_a_job(unprivileged_server: Home, tmp_path: Path) -> None:
    home = unprivileged_server
    env = {**os.environ, "MPIJOB_HOME": str(home.root)}
    env.pop("KUBECONFIG", None)

    status = subprocess.run([MPIJOB, "server", "status", "-o", "json"], env=env, capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    said = json.loads(status.stdout)
    assert said["sandbox_mode"] == "process" and sandbox_mode.ENV in said["why"], said
    assert not any(said["guarantees"].values()), said  # none of the namespace sandboxes' holds here

    job = yaml.safe_load((REPO / "examples" / "hello.yaml").read_text())
    job["metadata"]["name"] = "fallback"
    job["spec"]["trainer"]["command"][-1] += " user=$(id -un) session=$OMPI_FILE_LOCATION"
    # the rank on the last node reports progress with the upstream SDK: the variables name the pod's own files
    job["spec"]["trainer"]["command"][-1] += (
        '; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && python -c "from kubeflow.trainer import update_trainjob_status as u; '
        'print(\'reported\', u(progress_percent=50))"; true')
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    try:
        run = subprocess.run([MPIJOB, "run", "-f", str(path)], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"the job did not end in 120 s\n{_hung(env, home)}\n--- mpijob run printed:\n"
                    f"{(hung.stdout or b'').decode(errors='replace')}{(hung.stderr or b'').decode(errors='replace')}")
    assert run.returncode == 0, run.stdout + run.stderr
    nodes = job["spec"]["trainer"]["numNodes"]
    ranks = {line.split()[0] for line in run.stdout.splitlines() if line.startswith("rank=")}
    assert ranks == {f"rank={i}" for i in range(nodes)}
    assert run.stdout.count("greeting=hello-from-mpijob") == nodes  # trainer.env reached every rank
    if os.geteuid() == 0:
        assert f"user={USER}" in run.stdout  # ran as the server's own (unprivileged) user
    assert "reported True" in run.stdout, run.stdout
    # Each pod's MPI session directory is its own ($TMPDIR), not under the /tmp every pod shares: there the
    # daemons of one job, all on this machine's host name, raced for Open MPI 4's job-family directory, and one
    # that lost died unseen while its mpirun waited for ever (bench/hangs.py: 11 of 300 jobs under load)
    sessions = re.findall(r"session=(\S*)", run.stdout)
    pods = {Path(s).relative_to(home.root / "jobs").parts[:3] for s in sessions}  # job dir, "pods", pod
    assert len(sessions) == nodes and len(pods) == nodes, sessions
    got = subprocess.run([MPIJOB, "get", "trainjob", "fallback", "-o", "json"], env=env, capture_output=True, text=True)
    assert json.loads(got.stdout)["status"]["trainerStatus"]["progressPercentage"] == 50, got.stdout


@pytest.mark.skipif(not support_unprivileged.USERNS_REFUSED, reason="user namespaces work here: tests/e2e/test_rootless.py "
                    "runs the rootless sandbox instead")
def test_where_user_namespaces_are_refused_a_server_without_root_says_why() -> None:
    """Where the kernel refuses user namespaces (a chroot, a sysctl), a server without root, not told which
    sandbox to use, falls back to the process sandbox and says why, with what would allow them."""
    with support_unprivileged.unprivileged_server("mpijob-refused-") as home:
        env = {**os.environ, "MPIJOB_HOME": str(home.root)}
        said = json.loads(subprocess.run([MPIJOB, "server", "status", "-o", "json"], env=env, capture_output=True,
                                         text=True, check=True).stdout)
    assert said["sandbox_mode"] == "process", said
    assert "user namespaces" in said["why"] and "Operation not permitted" in said["why"], said


def test_exec_in_the_process_sandbox_runs_as_the_server_in_the_pods_directory(unprivileged_server: Home) -> None:
    """There is no namespace to enter: the command runs as the server's user, with the container's environment,
    in the pod's home directory; what it leaves running ends with the session (nothing would end it after)."""
    env = {**os.environ, "MPIJOB_HOME": str(unprivileged_server.root)}
    env.pop("KUBECONFIG", None)
    job = yaml.safe_load((REPO / "examples" / "hello.yaml").read_text())
    job["metadata"]["name"] = "px"
    job["spec"]["trainer"]["command"] = ["sleep", "300"]
    subprocess.run([MPIJOB, "create", "-f", "-"], env=env, input=yaml.safe_dump(job), text=True, check=True,
                   capture_output=True)
    kubectl = ["kubectl", "--kubeconfig", str(unprivileged_server.kubeconfig)]
    launcher = ""
    for _ in range(120):
        pods = subprocess.run([*kubectl, "get", "pods", "-o", "name", "--field-selector=status.phase=Running"],
                              capture_output=True, text=True).stdout.split()
        launcher = next((p.split("/")[1] for p in pods if "px-launcher" in p), "")
        if launcher:
            break
        time.sleep(0.5)
    try:
        said = subprocess.run([*kubectl, "exec", launcher, "--", "sh", "-c",
                               'id -un; pwd; echo "$GREETING"; sleep 400 & exit 2'],
                              capture_output=True, text=True, timeout=60)
        user, cwd, greeting = said.stdout.split()
        assert said.returncode == 2 and greeting == "hello-from-mpijob", said
        assert cwd.startswith(str(unprivileged_server.root)) and cwd.endswith("/home"), said
        if os.geteuid() == 0:
            assert user == USER, said
        time.sleep(1.5)  # SIGHUP, then SIGKILL a second later
        left = subprocess.run(["pgrep", "-f", "sleep 400"], capture_output=True, text=True).stdout
        assert not left, left
    finally:
        subprocess.run([MPIJOB, "delete", "trainjob", "px"], env=env, capture_output=True)
