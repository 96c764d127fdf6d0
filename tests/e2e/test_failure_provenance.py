"""Each failure class is earned (docs/troubleshooting.md, api/trainer/launch_log.py): a class that blames the launch
comes only from what mpirun, ssh or the MPI daemons said, never from a program that prints the same words.
Real jobs whose programs print every launch error's wording themselves and exit non-zero, as a rank under
Open MPI 4 (tagged), Open MPI 5 (untagged) and MPICH, and as the launcher's own command, each fail as
`ProgramFailed` with their exit code and last line; so does `ls /x`, under mpirun and alone. The launcher's
own command not found (127) or not executable (126) is `CommandNotFound`; a rank really signalled is
`RankKilledBySignal` from Open MPI 5's and Hydra's own reports, and a host Intel MPI could not reach that is
no pod of the job is `HostNotResolvable` from Intel MPI's own line. All jobs run at once on the
session's server; the true positives of every launch class stay in test_failure_classes.py."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mpijob.api import names
from mpijob.api.trainer import runtimes

from support import TRAINER, condition, create, events_of, job_pods, launcher_of, trainjob, wait_finished, wait_for

RUNTIMES = f"{TRAINER}/namespaces/default/trainingruntimes"
LS = "ls: cannot access '/x': No such file or directory"
# What ssh, mpirun (ORTE, PRRTE) and Hydra print when a launch fails, as a program prints it: one line each.
# (Not mpiexec's own `[mpiexec@host] ... Launch proxy failed.`: untagged, that line is Hydra's by its shape,
# and tells apart only once the runner says which MPI ran; tests/api/test_failure_classifier.py.)
WORDS = [
    "identity_sign: private key /home/mpiuser/.ssh/id_rsa contents do not match public",
    "mpiuser@fp-node-0-0.fp: Permission denied (publickey).",
    "ssh: Could not resolve hostname x: Name or service not known",
    "ssh: connect to host fp-node-0-0.fp port 2222: Connection refused",
    "There are not enough slots available in the system to satisfy the 9 slots",
    "mpirun was unable to find the specified executable file, and therefore",
    "bash: line 1: trian.py: command not found",
    "ORTE has lost communication with a remote daemon.",
    "ORTE was unable to reliably start one or more daemons.",
    "A daemon failed to report back after being spawned. This could",
    "mpirun noticed that process rank 1 with PID 43 on node fp-node-0-0.fp exited on signal 9 (Killed).",
    "[proxy:0:1@fp-node-0-1.fp] HYD_spawn (hydra_spawn.c:177): execvp error on file pi (No such file or directory)",
    LS,  # the last line: the summary must quote it
]
SAY = "printf '%s\\n' " + " ".join(shlex.quote(w) for w in WORDS) + " >&2"
# rank 1 says it all and exits 3; rank 0 waits a little, so rank 1's is the first non-zero exit
RANK_1_SAYS = f'r=${{OMPI_COMM_WORLD_RANK:-$PMI_RANK}}; if [ "$r" = 1 ]; then {SAY}; exit 3; fi; sleep 5'
RANK_1_SEGV = 'r=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}; if [ "$r" = 1 ]; then kill -SEGV $$; fi; sleep 5'
OPEN_MPI_5, MPICH, INTEL = "fp-openmpi5", "fp-mpich", "fp-intel"
IMPLEMENTATIONS = {OPEN_MPI_5: names.MPI_OPEN_MPI_5, MPICH: names.MPI_MPICH, INTEL: names.MPI_INTEL}
# name: (command, runtime, the class, what its message must say)
JOBS: dict[str, tuple[list[str], str, str, list[str]]] = {
    # Open MPI 4 tags every rank's line: each is the program's
    "fp-rank": (["mpirun", "bash", "-c", RANK_1_SAYS], "mpi-distributed", names.FAILURE_PROGRAM, ["code 3", LS]),
    # Open MPI 5 tags none: only the shape of mpirun's own report tells it from the rank's lines
    "fp-rank5": (["mpirun", "bash", "-c", RANK_1_SAYS], OPEN_MPI_5, names.FAILURE_PROGRAM,
                 ["rank 1 exited with code 3", LS]),
    # Hydra tags every rank, and passes the failing rank's exit code on as mpiexec's own
    "fp-rank-mpich": (["mpirun", "bash", "-c", RANK_1_SAYS], MPICH, names.FAILURE_PROGRAM, ["code 3", f"rank 1: {LS}"]),
    # the launcher's own command: no rank at all
    "fp-launcher": (["bash", "-c", f"{SAY}; exit 3"], "mpi-distributed", names.FAILURE_PROGRAM,
                    [f"exited with code 3: {LS}"]),
    "fp-ls": (["ls", "/x"], "mpi-distributed", names.FAILURE_PROGRAM, [f"exited with code 2: {LS}"]),
    # one rank: ls writes its message in pieces, and two ranks' pieces at once are not what this test is about
    "fp-mpirun-ls": (["mpirun", "-n", "1", "ls", "/x"], "mpi-distributed", names.FAILURE_PROGRAM, ["code 2", LS]),
    "fp-mpich-ls": (["mpirun", "-n", "1", "ls", "/x"], MPICH, names.FAILURE_PROGRAM,
                    [f"exited with code 2: rank 0: {LS}"]),
    # a rank really killed: Open MPI 5 wraps mpirun's sentence over two lines (and, like Open MPI 4, sometimes
    # exits before it prints it, passing the signal on as its own: then the launcher's), Hydra has a banner
    "fp-signal5": (["mpirun", "bash", "-c", RANK_1_SEGV], OPEN_MPI_5, names.FAILURE_SIGNALED,
                   ["signal 11", "crashed"]),
    "fp-signal-mpich": (["mpirun", "bash", "-c", RANK_1_SEGV], MPICH, names.FAILURE_SIGNALED,
                        ["exited on signal 11 (Segmentation fault)"]),
    # Intel MPI keeps ssh's words to itself; its own names the host, which is no pod of the job
    "fp-dns-intel": (["bash", "-c", 'echo "fp-node-0-7.fp:1" > /tmp/fp-dns-$$; mpirun -f /tmp/fp-dns-$$ -n 1 hostname'],
                     INTEL, names.FAILURE_HOST_UNRESOLVABLE, ["was given host fp-node-0-7.fp, which is not a pod"]),
    # the launcher's own command that could not be run: the shell's 127 and 126
    "fp-127": (["bash", "-c", "no-such-launcher-fp"], "mpi-distributed", names.FAILURE_COMMAND_NOT_FOUND,
               ["exited with code 127", "no-such-launcher-fp: command not found", "Check the spelling"]),
    "fp-126": (["bash", "-c", "/tmp"], "mpi-distributed", names.FAILURE_COMMAND_NOT_FOUND,
               ["exited with code 126", "/tmp: Is a directory", "chmod +x"]),
}


def _runtime(name: str) -> dict[str, Any]:
    """The bundled `mpi-distributed` as a namespaced TrainingRuntime naming another MPI implementation."""
    rt = runtimes.bundled()[0]
    return {**rt, "kind": "TrainingRuntime",
            "metadata": {"name": name, "annotations": {names.ANNOTATION_MPI_IMPLEMENTATION: IMPLEMENTATIONS[name]}}}


def _job(name: str, command: list[str], runtime: str) -> dict[str, Any]:
    tj = trainjob(name, command, num_nodes=2, runtime=runtime)
    if runtime in IMPLEMENTATIONS:
        tj["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    return tj


@pytest.fixture(scope="module")
def failed(api: httpx.Client) -> Iterator[dict[str, dict[str, Any]]]:
    """Every job started at once; each one's Failed condition, Warning Events and launcher pod."""
    for name in IMPLEMENTATIONS:
        api.delete(f"{RUNTIMES}/{name}")
        r = api.post(RUNTIMES, json=_runtime(name))
        assert r.status_code == 201, r.text
    for name, (command, runtime, _, _) in JOBS.items():
        create(api, _job(name, command, runtime))
    out = {}
    for name in JOBS:
        tj = wait_finished(api, name, timeout=180)
        out[name] = {"trainjob": tj, "failed": condition(tj, "Failed"), "launcher": launcher_of(job_pods(api, name)),
                     "events": [e["reason"] for e in events_of(api, name) if e["type"] == "Warning"]}
    yield out
    # the jobs before their runtimes: a TrainJob whose runtime is gone fails the upstream SDK's list_jobs
    jobs = [f"{TRAINER}/namespaces/default/trainjobs/{name}" for name in JOBS]
    for job in jobs:
        api.delete(job)
    wait_for(lambda: all(api.get(job).status_code == 404 for job in jobs), "the module's TrainJobs gone")
    for name in IMPLEMENTATIONS:
        api.delete(f"{RUNTIMES}/{name}")


@pytest.mark.parametrize("name", list(JOBS))
def test_each_class_is_earned(failed: dict[str, dict[str, Any]], name: str) -> None:
    found, (_, _, cls, says) = failed[name], JOBS[name]
    assert found["failed"] is not None, found["trainjob"].get("status")
    message = found["failed"]["message"]
    assert message.startswith(f"{cls}: "), message
    for words in says:
        assert words in message, (words, message)
    assert found["events"] == [cls], found["events"]


def test_the_exit_code_is_the_launchers(failed: dict[str, dict[str, Any]]) -> None:
    """The code each message names is the one the launcher pod's status reports: nothing made up."""
    for name, found in failed.items():
        if JOBS[name][2] not in (names.FAILURE_PROGRAM, names.FAILURE_COMMAND_NOT_FOUND):
            continue  # named by a signal or a host, not by an exit code
        state = found["launcher"]["status"]["containerStatuses"][0]["state"]["terminated"]
        codes = {int(c) for c in re.findall(r"exited with code (\d+)", found["failed"]["message"])}
        assert state["exitCode"] in codes, (name, state, found["failed"]["message"])
