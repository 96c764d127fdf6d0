"""End to end through the CLI: `mpijob run` on real processes, then logs, describe, get pods, delete.

These need the controllers (the runtime that starts sshd nodes and the launcher).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_support import Invoke, example, write_job


def _hello(tmp_path: Path, name: str) -> Path:
    return write_job(tmp_path, example("hello.yaml"), name)


def test_run_hello_prints_every_rank_and_exits_0(mpijob_proc: Invoke, tmp_path: Path) -> None:
    r = mpijob_proc("run", "--timeout", "180", "-f", str(_hello(tmp_path, "e2e-hello")))
    assert r.exit_code == 0, r.stderr
    ranks = sorted(int(m) for m in re.findall(r"^rank=(\d+) size=3 node=\S+ greeting=hello-from-mpijob$",
                                              r.stdout, re.M))
    assert ranks == [0, 1, 2], r.stdout
    assert "trainjob.trainer.kubeflow.org/e2e-hello created" in r.stderr
    assert "Complete" in r.stderr

    # the finished job stays inspectable: its state, its pods, the launcher's log, the events
    got = json.loads(mpijob_proc("get", "trainjob", "e2e-hello", "-o", "json").stdout)
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in got["status"]["conditions"])
    table = mpijob_proc("get", "trainjobs").stdout
    assert re.search(r"^e2e-hello\s+Succeeded\s+3\s", table, re.M), table

    logs = mpijob_proc("logs", "e2e-hello")
    assert logs.exit_code == 0 and logs.stdout.count("greeting=hello-from-mpijob") == 3
    followed = mpijob_proc("logs", "e2e-hello", "--follow")  # a finished container: prints all, then ends
    assert followed.exit_code == 0 and followed.stdout == logs.stdout

    pods = json.loads(mpijob_proc("get", "pods", "--job", "e2e-hello", "-o", "json").stdout)["items"]
    roles = sorted(p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] for p in pods)
    assert roles == ["launcher", "node", "node"]  # runLauncherAsNode: numNodes-1 nodes + the launcher
    wide = mpijob_proc("get", "pods", "--job", "e2e-hello", "-o", "wide").stdout
    assert wide.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "ROLE", "JOB"]

    node = next(p["metadata"]["name"] for p in pods if "-node-" in p["metadata"]["name"])
    assert mpijob_proc("logs", "e2e-hello", "--pod", node).exit_code == 0
    assert mpijob_proc("logs", "e2e-hello", "--pod", "not-a-pod").exit_code == 4

    described = mpijob_proc("describe", "trainjob", "e2e-hello").stdout
    assert "State:            Succeeded" in described and "Complete" in described

    assert mpijob_proc("delete", "trainjob", "e2e-hello", "--wait").exit_code == 0
    left = json.loads(mpijob_proc("get", "pods", "--job", "e2e-hello", "-o", "json").stdout)["items"]
    assert left == []


def test_run_pi_prints_pi(mpijob_proc: Invoke, tmp_path: Path) -> None:
    job = example("pi.yaml")
    r = mpijob_proc("run", "--timeout", "180", "-f", str(write_job(tmp_path, job, "e2e-pi")))
    assert r.exit_code == 0, r.stderr
    line = next(line for line in r.stdout.splitlines() if line.startswith("pi ~= "))
    assert float(line.split()[2]) == pytest.approx(3.141592653589793, abs=1e-9)
    size = job["spec"]["trainer"]["numNodes"]
    assert len(re.findall(rf"^rank \d+ of {size} on ", r.stdout, re.M)) == size
    assert mpijob_proc("delete", "trainjob", "e2e-pi").exit_code == 0


def test_run_trainjob_from_flags_streams_the_ranks_and_prints_json(mpijob_proc: Invoke) -> None:
    r = mpijob_proc("run", "trainjob", "e2e-flags", "--nodes", "2", "--env", "WHO=flags", "-o", "json",
                    "--timeout", "180", "--", "mpirun", "bash", "-c", 'echo "$WHO rank $OMPI_COMM_WORLD_RANK"')
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)  # stdout holds only the summary
    assert (out["name"], out["namespace"], out["status"]) == ("e2e-flags", "default", "Succeeded"), r.stdout
    assert sorted(re.findall(r"^flags rank (\d)$", r.stderr, re.M)) == ["0", "1"], r.stderr  # -o json: log → stderr
    got = json.loads(mpijob_proc("get", "trainjob", "e2e-flags", "-o", "json").stdout)
    assert got["spec"]["trainer"]["numNodes"] == 2 and got["spec"]["runtimeRef"]["name"] == "mpi-distributed"
    again = mpijob_proc("run", "trainjob", "e2e-flags", "--replace", "--timeout", "180", "--", "mpirun", "true")
    assert again.exit_code == 0 and "deleted the previous run" in again.stderr, again.stderr
    assert mpijob_proc("delete", "trainjob", "e2e-flags").exit_code == 0
    missing = mpijob_proc("run", "trainjob")
    assert missing.exit_code == 2 and "mpijob run trainjob NAME" in missing.stderr, missing.stderr
    both = mpijob_proc("run", "trainjob", "x", "-f", "examples/hello.yaml", "--", "true")
    assert both.exit_code == 2 and "not both" in both.stderr


def test_run_a_failing_job_exits_1_with_the_reason(mpijob_proc: Invoke, tmp_path: Path) -> None:
    job: dict[str, Any] = example("hello.yaml")
    job["spec"]["trainer"]["numNodes"] = 2
    job["spec"]["trainer"]["command"] = ["mpirun", "bash", "-c",
                                         'echo "rank $OMPI_COMM_WORLD_RANK"; exit $((OMPI_COMM_WORLD_RANK + 3))']
    r = mpijob_proc("run", "--timeout", "180", "-f", str(write_job(tmp_path, job, "e2e-fail")))
    assert r.exit_code == 1, (r.stdout, r.stderr)
    assert "error: trainjob e2e-fail failed" in r.stderr
    got = json.loads(mpijob_proc("get", "trainjob", "e2e-fail", "-o", "json").stdout)
    failed = next(c for c in got["status"]["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True" and failed["message"] in r.stderr
    assert mpijob_proc("delete", "trainjob", "e2e-fail").exit_code == 0


def test_run_replace_reruns_a_finished_job(mpijob_proc: Invoke, tmp_path: Path) -> None:
    path = _hello(tmp_path, "e2e-replace")
    assert mpijob_proc("run", "--timeout", "180", "-f", str(path)).exit_code == 0
    again = mpijob_proc("run", "--timeout", "180", "-f", str(path))
    assert again.exit_code == 3 and "already exists" in again.stderr
    replaced = mpijob_proc("run", "--timeout", "180", "--replace", "-f", str(path))
    assert replaced.exit_code == 0, replaced.stderr
    assert "deleted the previous run" in replaced.stderr
    assert replaced.stdout.count("greeting=hello-from-mpijob") == 3
    assert mpijob_proc("delete", "trainjob", "e2e-replace").exit_code == 0


def test_run_timeout_exits_7_and_leaves_the_job(mpijob_proc: Invoke, tmp_path: Path) -> None:
    job = example("hello.yaml")
    job["spec"]["suspend"] = True  # never starts, so the wait must time out
    r = mpijob_proc("run", "--timeout", "1", "-f", str(write_job(tmp_path, job, "e2e-timeout")))
    assert r.exit_code == 7, r.stderr
    assert "e2e-timeout" in r.stderr
    assert mpijob_proc("get", "trainjob", "e2e-timeout").exit_code == 0
    assert mpijob_proc("delete", "trainjob", "e2e-timeout").exit_code == 0


def test_logs_follow_waits_for_the_launcher_and_streams_to_the_end(mpijob_proc: Invoke, tmp_path: Path) -> None:
    job = example("hello.yaml")
    job["spec"]["trainer"]["numNodes"] = 2
    job["spec"]["trainer"]["command"] = [
        "mpirun", "bash", "-c", 'for i in 1 2 3; do echo "tick-$i-$OMPI_COMM_WORLD_RANK"; sleep 0.3; done']
    created = mpijob_proc("create", "-f", str(write_job(tmp_path, job, "e2e-follow")))
    assert created.exit_code == 0, created.stderr
    r = mpijob_proc("logs", "e2e-follow", "-f", timeout=180)
    assert r.exit_code == 0, r.stderr
    assert sorted(re.findall(r"\btick-\d-\d\b", r.stdout)) == [  # lines may carry a pod prefix
        f"tick-{i}-{rank}" for i in (1, 2, 3) for rank in (0, 1)]
    assert mpijob_proc("delete", "trainjob", "e2e-follow").exit_code == 0
