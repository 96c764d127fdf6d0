"""`mpijob history`: real jobs end up in the history with true figures, and stay after they are deleted
and across a restart; filters, RBAC, `-o json` and the retention, on a server of its own that declares
4 GPUs it does not have (`MPIJOB_CAPACITY`) and keeps 6 records (`MPIJOB_HISTORY_MAX_RECORDS`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob.api import names
from mpijob.api.core.durations import parse_time
from mpijob.cli.exitcodes import Exit
from mpijob.cli.main import app
from mpijob.store import server_process
from mpijob.store.home import Home
from typer.testing import CliRunner

from support import add_user, create, https_client, trainjob, wait_finished, wait_for

GPU = "nvidia.com/gpu"
ENV = {"MPIJOB_CAPACITY": f"{GPU}=4,cpu=8,memory=16Gi", "MPIJOB_HISTORY_MAX_RECORDS": "6"}
ALICE = "hist-alice"
RECORDS = f"/apis/{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}/namespaces/default/{names.JOB_RECORDS}"
BURN = "import time\nend = time.process_time() + 1.5\nwhile time.process_time() < end: pass\n"  # 1.5 s of CPU


def history(home: Path, *args: str, kubeconfig: Path | None = None) -> Any:
    """`mpijob history ARGS` on the cluster of `home` (as its admin, or as the user of `kubeconfig`)."""
    extra = ["--kubeconfig", str(kubeconfig)] if kubeconfig else []
    return CliRunner().invoke(app, ["history", *args, *extra], env={"MPIJOB_HOME": str(home), "KUBECONFIG": None})


def records(home: Path, *args: str) -> dict[str, Any]:
    """name → record, from `mpijob history -o json ARGS`."""
    r = history(home, "-o", "json", *args)
    assert r.exit_code == 0, r.stderr
    return {item["metadata"]["name"]: item for item in json.loads(r.stdout)["items"]}


def _bind_edit(admin: httpx.Client, user: str) -> None:
    r = admin.post(f"/apis/{names.RBAC_GROUP}/v1/namespaces/default/rolebindings", json={
        "metadata": {"name": f"{user}-edit"},
        "roleRef": {"apiGroup": names.RBAC_GROUP, "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "User", "name": user, "apiGroup": names.RBAC_GROUP}]})
    assert r.status_code == 201, r.text


@pytest.fixture(scope="module")
def seen(servers: Any) -> dict[str, Any]:
    """The story: a job deleted while it waited, a GPU job that burns CPU (admin), a failing one (alice); the
    history then, after deleting the GPU job, after a restart, and after more jobs than it keeps."""
    info = servers.start("history", env=ENV)
    home = info.home
    out: dict[str, Any] = {"home": home}
    with https_client(info.kubeconfig) as admin:
        _bind_edit(admin, ALICE)
        alice_config = add_user(home, ALICE)
        out["alice_config"] = alice_config
        waiting = trainjob("h-waiting", ["true"], num_nodes=1)
        waiting["spec"]["suspend"] = True
        create(admin, waiting)
        wait_for(lambda: any(r["metadata"]["name"] == "h-waiting" for r in admin.get(RECORDS).json()["items"]),
                 "h-waiting's record")
        assert admin.delete(f"/apis/{names.TRAINER_API_VERSION}/namespaces/default/trainjobs/h-waiting").is_success
        burn = trainjob("h-burn", ["mpirun", "python3", "-c", BURN], num_nodes=2)
        burn["spec"]["trainer"]["resourcesPerNode"] = {"limits": {GPU: 1}}
        create(admin, burn)
        with https_client(alice_config) as alice:
            create(alice, trainjob("h-fail", ["bash", "-c", "echo doomed; exit 3"], num_nodes=1))
        out["burn_tj"] = wait_finished(admin, "h-burn")
        wait_finished(admin, "h-fail")
        assert admin.delete(f"/apis/{names.TRAINER_API_VERSION}/namespaces/default/trainjobs/h-burn").is_success
        out["burn_gone"] = admin.get(f"/apis/{names.TRAINER_API_VERSION}/namespaces/default/trainjobs/h-burn"
                                     ).status_code
        wait_for(lambda: records(home).get("h-waiting", {}).get("state") == names.RECORD_DELETED, "h-waiting deleted")
    out["before"] = records(home)
    out["alice_only"] = records(home, "--user", ALICE)
    out["all"] = records(home, "-A")
    out["as_alice"] = history(home, "-o", "json", kubeconfig=alice_config)
    out["as_alice_all"] = history(home, "-A", kubeconfig=alice_config)
    out["wide"] = history(home, "-o", "wide")
    time.sleep(2)
    out["since_1s"] = history(home, "--since", "1s")
    out["since_1h"] = records(home, "--since", "1h")
    server_process.stop(Home(home), timeout=20)
    info = server_process.start(Home(home), timeout=60, env=ENV)
    out["after_restart"] = records(home)
    with https_client(info.kubeconfig) as admin:
        for i in range(4):  # 7 records now: the one that ended first (h-waiting's) goes
            create(admin, trainjob(f"h-more-{i}", ["true"], num_nodes=1))
        for i in range(4):
            wait_finished(admin, f"h-more-{i}")
    out["after_retention"] = records(home, "--limit", "0")
    server_process.stop(Home(home), timeout=20)  # a home from before the history (or whose history was lost)
    for path in home.glob("history.db*"):
        path.unlink()
    server_process.start(Home(home), timeout=60, env=ENV)
    out["rebuilt"] = records(home)
    return out


def test_a_job_that_ran_has_true_figures(seen: dict[str, Any]) -> None:
    r = seen["before"]["h-burn"]
    assert (r["state"], r["reason"], r["failure"]) == ("Complete", names.REASON_COMPLETED, "")
    assert (r["requester"], r["runtime"]) == ("mpijob-admin", "ClusterTrainingRuntime/mpi-distributed")
    assert (r["nodes"], r["procsPerNode"], r["gpus"]) == (2, 1, 2)  # a GPU for the launcher and one for the node
    assert r["metadata"]["uid"] == seen["burn_tj"]["metadata"]["uid"]
    assert r["submitted"] <= r["admitted"] <= r["started"] <= r["finished"], r
    assert 0 <= r["waitSeconds"] < 60 and 1.5 <= r["runSeconds"] < 60, r
    assert r["cpuHours"] * 3600 >= 2.5, r  # two ranks, 1.5 s of CPU each, in the pods' cgroups
    assert r["gpuHours"] == pytest.approx(2 * r["runSeconds"] / 3600, abs=1e-6), r
    assert r["memoryPeakBytes"] > 1 << 20, r


def test_a_failure_is_recorded_with_its_class_and_its_creator(seen: dict[str, Any]) -> None:
    r = seen["before"]["h-fail"]
    assert (r["state"], r["reason"], r["failure"], r["requester"]) == (
        "Failed", names.REASON_FAILED_JOBS, names.FAILURE_PROGRAM, ALICE)
    assert r["message"].startswith(f"{names.FAILURE_PROGRAM}: launcher pod ") and "doomed" in r["message"]


def test_deleted_jobs_stay_in_the_history(seen: dict[str, Any]) -> None:
    assert seen["burn_gone"] == 404 and "h-burn" in seen["before"]
    r = seen["before"]["h-waiting"]  # deleted while it waited: it never started
    assert (r["state"], r["reason"], r["started"], r["runSeconds"]) == (
        names.RECORD_DELETED, names.REASON_DELETED, None, 0), r
    assert r["waitSeconds"] > 0 and r["finished"] is not None


def test_a_restart_keeps_the_history(seen: dict[str, Any]) -> None:
    assert seen["after_restart"] == seen["before"]


def test_filters(seen: dict[str, Any]) -> None:
    assert set(seen["before"]) == {"h-burn", "h-fail", "h-waiting"}
    assert set(seen["alice_only"]) == {"h-fail"}
    assert set(seen["since_1h"]) == set(seen["before"])
    r = seen["since_1s"]  # every job finished more than a second ago
    assert r.exit_code == 0 and "No job records found in default namespace." in r.stderr, (r.stdout, r.stderr)
    assert {(k, v["metadata"]["namespace"]) for k, v in seen["all"].items()} >= {(k, "default") for k in seen["before"]}


def test_rbac_shows_a_user_the_namespaces_they_may_read(seen: dict[str, Any]) -> None:
    mine = seen["as_alice"]
    assert mine.exit_code == 0, mine.stderr
    assert {i["metadata"]["name"] for i in json.loads(mine.stdout)["items"]} == set(seen["before"])
    everyone = seen["as_alice_all"]
    assert everyone.exit_code == Exit.FORBIDDEN and "jobrecords" in everyone.stderr, everyone.stderr


def test_json_and_wide_shapes(seen: dict[str, Any]) -> None:
    r = seen["before"]["h-fail"]
    assert (r["apiVersion"], r["kind"]) == (f"{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}", names.JOB_RECORD_KIND)
    assert set(r) == {"apiVersion", "kind", "metadata", "jobKind", "requester", "runtime", "nodes", "procsPerNode",
                      "gpus", "submitted", "admitted", "started", "finished", "waitSeconds", "runSeconds", "state", "reason",
                      "failure", "message", "cpuHours", "gpuHours", "memoryPeakBytes"}
    assert set(r["metadata"]) == {"name", "namespace", "uid", "creationTimestamp"}
    wide = seen["wide"]
    assert wide.exit_code == 0, wide.stderr
    header, *rows = wide.stdout.splitlines()
    assert r["jobKind"] == "TrainJob"
    assert header.split() == ["NAME", "KIND", "USER", "STATE", "REASON", "NODES", "GPUS", "WAIT", "RUN", "CPU-HOURS",
                              "GPU-HOURS", "AGE", "RUNTIME", "PROCS", "SUBMITTED", "STARTED", "FINISHED",
                              "PEAK-MEMORY", "UID"]
    assert [row.split()[0] for row in rows] == ["h-waiting", "h-burn", "h-fail"]  # oldest first


def test_jobs_the_history_never_saw_are_recorded_from_their_conditions(seen: dict[str, Any]) -> None:
    rebuilt, before = seen["rebuilt"], seen["after_retention"]
    assert set(rebuilt) == {"h-fail", *(f"h-more-{i}" for i in range(4))}  # the TrainJobs still stored
    for name, r in rebuilt.items():
        was = before[name]
        assert (r["state"], r["reason"], r["message"]) == (was["state"], was["reason"], was["message"]), name
        assert r["requester"] == was["requester"] and r["failure"] == ""  # the class is not in a condition
        ended = (parse_time(r["finished"]) - parse_time(was["finished"])).total_seconds()  # type: ignore[operator]
        assert abs(ended) <= 1, (r["finished"], was["finished"])  # the condition's time has whole seconds


def test_retention_keeps_the_newest(seen: dict[str, Any]) -> None:
    kept = seen["after_retention"]
    assert len(kept) == 6 and "h-waiting" not in kept, sorted(kept)
    assert {f"h-more-{i}" for i in range(4)} <= set(kept)
