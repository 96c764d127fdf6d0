"""The launcher's log is what the ranks printed, as on a Trainer cluster, for kubectl, the `kubernetes`
client and the upstream Kubeflow SDK; `mpijob logs --rank` still knows each line's rank; a user who
asks for Open MPI's tags gets them."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from kubeflow.trainer import TrainerClient
from mpijob.store.server_process import ServerInfo

from support import condition, create, job_pods, launcher_of, pod_log, trainjob, wait_finished

MPIJOB = str(Path(sys.executable).parent / "mpijob")
# printf, not echo: the exact bytes, spaces, a tab and brackets included
PRINT = r"""printf 'verbatim %s:  two  spaces\tand [a,b]<stdout>: brackets \n' "$OMPI_COMM_WORLD_RANK" """
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def _expected(rank: int) -> str:
    return f"verbatim {rank}:  two  spaces\tand [a,b]<stdout>: brackets "


def _run(api: httpx.Client, name: str, command: list[str], env: dict[str, str] | None = None) -> str:
    create(api, trainjob(name, command, num_nodes=2, env=env))
    tj = wait_finished(api, name)
    assert condition(tj, "Complete"), tj.get("status")
    return str(launcher_of(job_pods(api, name))["metadata"]["name"])


def _mpijob(server: ServerInfo, *args: str) -> str:
    r = subprocess.run([MPIJOB, "--kubeconfig", str(server.kubeconfig), *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_every_client_reads_the_ranks_lines_verbatim(api: httpx.Client, kubectl: Kubectl, server: ServerInfo,
                                                     trainer: TrainerClient) -> None:
    name = "ee-verbatim"
    launcher = _run(api, name, ["mpirun", "bash", "-c", PRINT])
    want = sorted([_expected(0), _expected(1)])

    assert sorted(kubectl("logs", launcher).stdout.splitlines()) == want
    assert sorted(pod_log(api, launcher).splitlines()) == want  # the `kubernetes` client's request, raw
    assert sorted(trainer.get_job_logs(name)) == want
    assert sorted(trainer.get_job_logs(name, follow=True)) == want
    stamped = kubectl("logs", "--timestamps", launcher).stdout.splitlines()
    assert sorted(line.split(" ", 1)[1] for line in stamped) == want  # a stamp, then the bytes as printed

    assert _mpijob(server, "logs", name, "--rank", "1", "--no-prefix") == _expected(1) + "\n"
    prefixed = _mpijob(server, "logs", name, "--pod", launcher).splitlines()
    assert sorted(prefixed) == sorted(f"[{launcher} rank {r}] {_expected(r)}" for r in (0, 1))
    api.delete(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/{name}")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_user_who_asks_for_tags_gets_them(how: str, api: httpx.Client, kubectl: Kubectl,
                                            server: ServerInfo) -> None:
    name = f"ee-tagged-{how}"
    command = ["mpirun", "--tag-output", "bash", "-c", PRINT] if how == "flag" else ["mpirun", "bash", "-c", PRINT]
    env = {"OMPI_MCA_orte_tag_output": "1"} if how == "env" else None
    launcher = _run(api, name, command, env)

    assert sorted(kubectl("logs", launcher).stdout.splitlines()) == [f"[1,{r}]<stdout>:{_expected(r)}" for r in (0, 1)]
    # mpijob shows the rank once, beside the line, and still filters by it
    assert _mpijob(server, "logs", name, "--rank", "0", "--no-prefix") == _expected(0) + "\n"
    assert re.search(rf"^\[{launcher} rank 1\] verbatim 1:", _mpijob(server, "logs", name), re.M)
    api.delete(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/{name}")
