"""`mpijob debug stacks JOB`: every rank's stack of a running job, read by the server with py-spy and eu-stack,
merged, the odd one out first, on real MPI jobs: an mpi4py job whose rank 3 sleeps in a Python function while
ranks 0-2 wait in `comm.Barrier()`, and a C program whose rank 2 sleeps in a named function while the others
wait in `MPI_Barrier` (compiled here with Debian's mpicc). Only a user who may `kubectl exec` in the namespace
may read them (a `view` user gets 403, an `edit` user the stacks); every request is in the audit log with its
user; a job that is not running is a 409, one that does not exist a 404. In the process sandbox (no PID
namespace) and on a server without root (the rootless sandbox) the same. The merge itself: tests/api/test_stacks.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob.cli.exitcodes import Exit
from mpijob.cli.main import app
from mpijob.client.debug import stacks_path
from typer.testing import CliRunner

from support import TRAINER, add_user, create, https_client, trainjob, wait_finished, wait_for
from support.unprivileged import unprivileged_server

PY_JOB, C_JOB, ENDED_JOB = "ds-python", "ds-native", "ds-ended"
PROGRAM = '''
import time
from mpi4py import MPI


def read_batch():
    time.sleep(900)  # rank 3 never gets its batch: the others wait for it


comm = MPI.COMM_WORLD
if comm.Get_rank() == 3:
    read_batch()
comm.Barrier()
'''
C_PROGRAM = r'''
#include <mpi.h>
#include <unistd.h>

static void wait_for_input(void) { sleep(900); }  /* rank 2 never gets its input */

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 2) wait_for_input();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
'''


def _job(name: str, command: list[str]) -> dict[str, Any]:
    job = trainjob(name, command, num_nodes=2)
    job["spec"]["trainer"]["numProcPerNode"] = 2  # 4 ranks on 2 pods: ranks of one pod share their stack too
    return job


def _programs() -> Path:
    """The two programs, where the pods (running as their namespace's user) can read and run them."""
    where = Path(tempfile.mkdtemp(prefix="debug-stacks-", dir="/tmp"))
    where.chmod(0o755)
    (where / "prog.py").write_text(PROGRAM)
    (where / "prog.c").write_text(C_PROGRAM)
    subprocess.run(["mpicc", "-g", "-O0", "-o", str(where / "prog"), str(where / "prog.c")], check=True, timeout=120)
    for f in where.iterdir():
        f.chmod(0o755)
    return where


def _settled(c: httpx.Client, name: str, odd: int, namespace: str = "default") -> dict[str, Any]:
    """The job's stacks once all 4 ranks run and have reached where the program holds them: rank `odd` alone in
    the program's function, the other three together in MPI_Barrier (until then a rank may still be starting:
    on a loaded machine rank `odd` was seen alone still importing mpi4py while the others waited)."""
    holds = "read_batch" if name == PY_JOB else "wait_for_input"
    last: dict[str, Any] = {}

    def settled() -> dict[str, Any] | None:
        nonlocal last
        r = c.post(stacks_path(namespace, name))
        last = r.json() if r.headers.get("content-type", "").startswith("application/json") else {"text": r.text}
        groups = last.get("groups") or []
        if r.status_code != 200 or last.get("ranks") != 4 or [g["rankList"] for g in groups] != [
                [odd], sorted({0, 1, 2, 3} - {odd})]:
            return None
        if holds not in _functions(groups[0]) or _functions(groups[1])[-1:] != ["MPI_Barrier"]:
            return None
        return last

    try:
        return wait_for(settled, f"{name}'s ranks in place", timeout=180, interval=1.0)
    except AssertionError as e:
        job = c.get(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}").json()
        ended = [cd for cd in (job.get("status") or {}).get("conditions") or [] if cd.get("status") == "True"]
        raise AssertionError(f"{e}; the last answer: {json.dumps(last)[:3000]}; the job's conditions: "
                             f"{json.dumps(ended)[:3000]}") from None


def _functions(group: dict[str, Any]) -> list[str]:
    return [f["function"] for f in group["frames"]]


def _cli(home: Path, *args: str, kubeconfig: Path | None = None) -> Any:
    env = {"MPIJOB_HOME": str(home), "KUBECONFIG": str(kubeconfig) if kubeconfig else None}
    return CliRunner().invoke(app, list(args), env=env)


@pytest.fixture(scope="module")
def jobs(api: httpx.Client) -> Iterator[Path]:
    """Both jobs running; deleted at the end (their odd ranks would sleep for 15 minutes)."""
    where = _programs()
    create(api, _job(PY_JOB, ["mpirun", "python", str(where / "prog.py")]))
    create(api, _job(C_JOB, ["mpirun", str(where / "prog")]))
    try:
        yield where
    finally:
        for name in (PY_JOB, C_JOB):
            api.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")
        shutil.rmtree(where, ignore_errors=True)


def test_python_ranks_the_odd_one_first_naming_its_function_the_others_in_mpi_barrier(
        api: httpx.Client, server: Any, jobs: Path) -> None:
    dump = _settled(api, PY_JOB, odd=3)
    odd, waiting = dump["groups"]
    assert odd["title"] == "rank 3 (1 of 4)" and odd["tools"] == ["py-spy+eu-stack"], odd
    assert _functions(odd)[:2] == ["<module>", "read_batch"] and odd["frames"][1]["where"].startswith("prog.py:")
    assert "clock_nanosleep" in _functions(odd), odd  # time.sleep's native call, below the Python frames
    assert waiting["ranks"] == "0-2" and waiting["title"] == "ranks 0-2 (3 of 4)", waiting
    assert _functions(waiting)[0] == "<module>" and _functions(waiting)[-1] == "MPI_Barrier", waiting
    assert dump["errors"] == [] and dump["kind"] == "StackDump"

    r = _cli(server.home, "debug", "stacks", PY_JOB)
    assert r.exit_code == 0, r.output
    text = r.stdout
    assert text.startswith(f"trainjob default/{PY_JOB}: 4 ranks read in "), text
    odd_at, rest_at = text.index("\nrank 3 (1 of 4) in "), text.index("\nranks 0-2 (3 of 4) in ")
    assert odd_at < text.index("    read_batch (prog.py:") < rest_at < text.index("    MPI_Barrier (libmpi"), text


def test_json_output_is_the_servers_answer(server: Any, jobs: Path, api: httpx.Client) -> None:
    _settled(api, PY_JOB, odd=3)
    r = _cli(server.home, "debug", "stacks", PY_JOB, "-o", "json", "-n", "default")
    assert r.exit_code == 0, r.output
    dump = json.loads(r.stdout)
    assert dump["metadata"]["name"] == PY_JOB and dump["ranks"] == 4 and dump["seconds"] > 0
    assert [g["rankList"] for g in dump["groups"]] == [[3], [0, 1, 2]], dump
    pods = [p for g in dump["groups"] for p in g["pods"]]
    assert pods and all(p.startswith(f"{PY_JOB}-") for p in pods), pods


def test_a_c_program_rank_in_a_named_function_and_the_others_in_mpi_barrier(api: httpx.Client, jobs: Path) -> None:
    odd, waiting = _settled(api, C_JOB, odd=2)["groups"]
    assert odd["tools"] == ["eu-stack"] and _functions(odd)[:2] == ["main", "wait_for_input"], odd
    assert odd["frames"][1]["where"] == f"{jobs}/prog.c:5", odd  # built with -g: its source line
    assert "sleep" in _functions(odd), odd
    assert waiting["ranks"] == "0-1,3" and _functions(waiting) == ["main", "MPI_Barrier"], waiting


def test_reading_stacks_takes_exec_rights_and_is_audited(api: httpx.Client, server: Any, jobs: Path,
                                                         kubectl: Callable[..., Any]) -> None:
    _settled(api, PY_JOB, odd=3)
    viewer, editor = add_user(server.home, "ds-viewer"), add_user(server.home, "ds-editor")
    kubectl("create", "rolebinding", "ds-viewer-view", "--clusterrole=view", "--user=ds-viewer", "-n", "default")
    kubectl("create", "rolebinding", "ds-editor-edit", "--clusterrole=edit", "--user=ds-editor", "-n", "default")
    refused = _cli(server.home, "debug", "stacks", PY_JOB, kubeconfig=viewer)
    assert refused.exit_code == Exit.FORBIDDEN, refused.output
    assert 'User "ds-viewer" cannot create resource "pods/exec" in API group "" in the namespace "default"' \
        in refused.stderr, refused.stderr
    allowed = _cli(server.home, "debug", "stacks", PY_JOB, "-o", "json", kubeconfig=editor)
    assert allowed.exit_code == 0 and json.loads(allowed.stdout)["ranks"] == 4, allowed.output

    events = [json.loads(line) for line in (server.home / "audit.log").read_text().splitlines()]
    asked = [(e["user"].get("username"), e["responseStatus"]["code"], (e.get("annotations") or {}))
             for e in events if e["requestURI"] == stacks_path("default", PY_JOB)]
    assert ("ds-viewer", 403, {}) in asked, asked
    assert any(user == "ds-editor" and code == 200 and "4 ranks in " in notes.get("mpijob.io/stacks", "")
               for user, code, notes in asked), asked


def test_a_job_not_running_is_a_conflict_and_an_unknown_one_not_found(api: httpx.Client, server: Any) -> None:
    create(api, trainjob(ENDED_JOB, ["true"], num_nodes=1))
    wait_finished(api, ENDED_JOB)
    r = api.post(stacks_path("default", ENDED_JOB))
    assert r.status_code == 409 and "no rank of it runs now: it has ended (Complete)" in r.json()["message"], r.text
    missing = _cli(server.home, "debug", "stacks", "ds-no-such-job")
    assert missing.exit_code == Exit.NOT_FOUND and 'trainjobs.trainer.kubeflow.org "ds-no-such-job" not found' \
        in missing.stderr, missing.output
    api.delete(f"{TRAINER}/namespaces/default/trainjobs/{ENDED_JOB}")


def test_the_process_sandbox_too(new_server: Callable[..., Any], connect: Callable[..., httpx.Client],
                                 jobs: Path) -> None:
    """No PID namespace there: Open MPI's daemons daemonize out of their pods' trees; the ranks are found below
    them by their pods' markers, and read by the machine's own pids. (The C program, one rank a pod: a pod runs as
    its namespace's user there, which may not reach a Python installed under /root.)"""
    info = new_server("stacks-process", env={"MPIJOB_SANDBOX": "process"})
    assert info.sandbox_mode == "process"
    with connect(info) as c:
        create(c, trainjob(C_JOB, ["mpirun", str(jobs / "prog")], num_nodes=4))
        try:
            odd, waiting = _settled(c, C_JOB, odd=2)["groups"]
            assert _functions(odd)[:2] == ["main", "wait_for_input"], odd
            assert _functions(waiting) == ["main", "MPI_Barrier"] and len(waiting["pods"]) == 3, waiting
        finally:
            c.delete(f"{TRAINER}/namespaces/default/trainjobs/{C_JOB}")


def test_a_server_without_root_reads_its_ranks_too(jobs: Path) -> None:
    """An ordinary user's server traces its ranks as the owner of their user namespaces (the rootless sandbox;
    where the kernel refuses user namespaces, as in a chroot, it runs the process sandbox and reads them the
    same)."""
    with unprivileged_server("stacks-rootless-") as home, https_client(home.kubeconfig) as c:
        create(c, _job(PY_JOB, ["mpirun", "python", str(jobs / "prog.py")]))
        try:
            odd, waiting = _settled(c, PY_JOB, odd=3)["groups"]
            assert _functions(odd)[:2] == ["<module>", "read_batch"] and "clock_nanosleep" in _functions(odd), odd
            assert _functions(waiting)[-1] == "MPI_Barrier", waiting
        finally:
            c.delete(f"{TRAINER}/namespaces/default/trainjobs/{PY_JOB}")
