"""A bound on every phase of a run, and stalls noticed (docs/troubleshooting.md "A bound on every phase"):
real jobs on the shared server, their bounds made short by the annotations (on a job, or on its runtime),
all started at once so the module takes about as long as its slowest job.

* a node whose sshd listens elsewhere than 2222 (a runtime's node command, and a legacy MPIJob's workers
  started through a shell) fails within its ready bound, SSHDNotReady naming the pod, what it listens on
  and the fix; the pod gets the kubelet's Unhealthy Event while the launcher waits, and the launcher does
  not stay Pending; the MPIJob's status never says suspended beside resumed;
* wire-up: mpirun whose ssh agent never connects (so no daemon and no rank ever starts: the symptom of the
  Open MPI 4 wire-up hang) fails WireUpTimeout naming the node that never reported;
* mpirun outliving its ranks: every rank ends, but leaves a child holding its output open, so the real
  mpirun waits for it and does not exit (the same symptom as PRRTE losing a rank, from another cause):
  the job completes, as its ranks did, with a LauncherDidNotExit Warning;
* stalls: ranks that `sleep` in silence get the Stalled Warning and condition (naming pods and ranks); ranks
  spinning in silence do not; with `on-stall: fail` the job fails Stalled.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import yaml
from mpijob.api import names
from mpijob.api.core.durations import parse_time

from support import (
    TRAINER,
    by_role,
    condition,
    create,
    events_of,
    get_trainjob,
    job_pods,
    launcher_of,
    pod_log,
    trainjob,
    wait_finished,
    wait_for,
)

Kubectl = Callable[..., Any]
RUNTIME = "ee-bounds-elsewhere"
# A node that runs an sshd of its own on another port (with a host key of its own): it never answers on 2222
ELSEWHERE = "ssh-keygen -q -t ed25519 -N '' -f $HOME/hk && exec /usr/sbin/sshd -De -p 2223 -h $HOME/hk"
HANG_AGENT = ('printf "#!/bin/sh\\nexec sleep 600\\n" > $HOME/agent && chmod +x $HOME/agent && echo starting && '
              "mpirun --mca plm_rsh_agent $HOME/agent hostname")
LEFTOVER = "sleep 300 & sleep 3; echo done $OMPI_COMM_WORLD_RANK"
BUSY = "echo up; timeout 15 sh -c 'while :; do :; done' || true"
JOBS: dict[str, tuple[list[str], dict[str, str]]] = {
    "bd-wireup": (["bash", "-c", HANG_AGENT], {names.ANNOTATION_WIREUP_TIMEOUT: "6s"}),
    # A rank's leftover child holds the output the daemon gave it, so mpirun waits for ever: so it does when the
    # command asks for tags, which go through mpirun; otherwise the rank agent ends with its rank (`leftover`)
    "bd-hung": (["mpirun", "--tag-output", "bash", "-c", LEFTOVER], {names.ANNOTATION_EXIT_GRACE: "3s"}),
    "bd-leftover": (["mpirun", "bash", "-c", LEFTOVER], {names.ANNOTATION_EXIT_GRACE: "3s"}),
    "bd-stall": (["mpirun", "bash", "-c", "echo up; sleep 300"], {names.ANNOTATION_STALL_TIMEOUT: "5s"}),
    "bd-busy": (["mpirun", "bash", "-c", BUSY], {names.ANNOTATION_STALL_TIMEOUT: "5s"}),
    "bd-stall-fail": (["mpirun", "bash", "-c", "echo up; sleep 300"],
                      {names.ANNOTATION_STALL_TIMEOUT: "5s", names.ANNOTATION_ON_STALL: names.ON_STALL_FAIL}),
}
READY_BOUND = 8.0  # the runtime's mpijob.io/ready-timeout, seconds
MPIJOB = "bd-legacy"


def _job(name: str, command: list[str], annotations: dict[str, str], runtime: str = "mpi-distributed") -> dict:
    obj = trainjob(name, command, num_nodes=2, runtime=runtime)
    obj["metadata"]["annotations"] = annotations
    return obj


def _mpijob() -> str:
    """A legacy MPIJob whose workers start sshd through a shell, on another port than their readiness probe's,
    and whose launcher waits for them to be ready: on a cluster of old it waited Pending, saying nothing."""
    worker = {"name": "mpi-worker", "image": "mpioperator/openmpi", "command": ["bash", "-c", ELSEWHERE],
              "readinessProbe": {"tcpSocket": {"port": 2222}}}  # as Trainer's node has: never ready here
    launcher = {"name": "mpi-launcher", "image": "mpioperator/openmpi", "command": ["mpirun", "hostname"]}
    return yaml.safe_dump({
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": MPIJOB, "annotations": {names.ANNOTATION_READY_TIMEOUT: f"{READY_BOUND:g}s"}},
        "spec": {"slotsPerWorker": 1, "launcherCreationPolicy": names.LAUNCHER_WAIT_FOR_WORKERS, "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
            "Worker": {"replicas": 1, "template": {"spec": {"containers": [worker]}}}}}})


@pytest.fixture(scope="module")
def runtime(api: httpx.Client) -> Iterator[str]:
    """mpi-distributed with nodes that run their own sshd on port 2223, and a ready bound of its own."""
    bundled = api.get(f"{TRAINER}/clustertrainingruntimes/mpi-distributed").json()
    spec = copy.deepcopy(bundled["spec"])
    for rj in spec["template"]["spec"]["replicatedJobs"]:
        if rj["name"] == names.NODE:
            container = rj["template"]["spec"]["template"]["spec"]["containers"][0]
            container.update(command=["bash", "-c", ELSEWHERE], args=[])
    obj = {"apiVersion": bundled["apiVersion"], "kind": bundled["kind"], "spec": spec,
           "metadata": {"name": RUNTIME, "labels": bundled["metadata"].get("labels", {}),
                        "annotations": {names.ANNOTATION_READY_TIMEOUT: f"{READY_BOUND:g}s"}}}
    created = api.post(f"{TRAINER}/clustertrainingruntimes", json=obj)
    assert created.status_code == 201, created.text
    yield RUNTIME
    api.delete(f"{TRAINER}/clustertrainingruntimes/{RUNTIME}")


@pytest.fixture(scope="module")
def started(api: httpx.Client, runtime: str, kubectl: Kubectl) -> Iterator[dict[str, float]]:
    """Every job of the module created at once; when each was. All deleted afterwards, before their runtime:
    a TrainJob whose runtime is gone makes the upstream SDK's list_jobs fail for the whole namespace."""
    at: dict[str, float] = {}
    for name, (command, asked) in JOBS.items():
        create(api, _job(name, command, asked))
        at[name] = time.time()
    create(api, _job("bd-elsewhere", ["mpirun", "hostname"], {}, runtime))  # its bound is its runtime's
    at["bd-elsewhere"] = time.time()
    kubectl("create", "namespace", "ee-bounds")
    kubectl("apply", "-n", "ee-bounds", "-f", "-", input=_mpijob())
    at[MPIJOB] = time.time()
    yield at
    jobs = [f"{TRAINER}/namespaces/default/trainjobs/{name}" for name in at if name != MPIJOB]
    for job in jobs:
        api.delete(job)
    kubectl("delete", "namespace", "ee-bounds", "--wait=false")
    wait_for(lambda: all(api.get(job).status_code == 404 for job in jobs), "the module's TrainJobs gone")


def _failed_within(api: httpx.Client, name: str, created: float, bound: float) -> str:
    """The Failed condition's message of a job that failed within `bound` seconds (and a margin for a loaded
    machine's start: its pods, their sshd) of its creation."""
    tj = wait_finished(api, name, timeout=bound + 120)
    failed = condition(tj, "Failed")
    assert failed is not None, tj.get("status")
    ended = parse_time(failed["lastTransitionTime"])
    assert ended is not None and ended.timestamp() - created < bound + 60, (failed, created)
    return str(failed["message"])


def _warnings(api: httpx.Client, name: str, reason: str, namespace: str = "default") -> list[str]:
    return [e["message"] for e in events_of(api, name, namespace) if e["type"] == "Warning" and e["reason"] == reason]


def test_a_bad_bound_is_refused_naming_field_value_and_fix(api: httpx.Client) -> None:
    r = api.post(f"{TRAINER}/namespaces/default/trainjobs",
                 json=_job("bd-refused", ["mpirun", "hostname"], {names.ANNOTATION_WIREUP_TIMEOUT: "a while"}))
    assert r.status_code == 422, r.text
    [cause] = r.json()["details"]["causes"]
    assert cause["field"] == f"metadata.annotations[{names.ANNOTATION_WIREUP_TIMEOUT}]", cause
    assert cause["message"].startswith('Invalid value: "a while": must be a duration such as "90s"'), cause


def test_a_node_listening_elsewhere_fails_within_its_runtimes_bound_saying_so(
        api: httpx.Client, started: dict[str, float]) -> None:
    message = _failed_within(api, "bd-elsewhere", started["bd-elsewhere"], READY_BOUND)
    pods = job_pods(api, "bd-elsewhere")
    node = by_role(pods, "node")[0]["metadata"]["name"]
    assert message.startswith(f"{names.FAILURE_SSHD_NOT_READY}: the sshd of node pod {node}"), message
    assert f"did not answer on port 2222 within {READY_BOUND:g}s" in message, message
    assert "it listens elsewhere than the probe's port 2222: sshd on port 2223" in message, message
    assert "/usr/sbin/sshd -De" in message.partition("Fix: ")[2], message
    unhealthy = _warnings(api, node, names.REASON_UNHEALTHY)
    assert unhealthy and unhealthy[0].startswith("Readiness probe failed: nothing answers SSH at "), unhealthy
    launcher = launcher_of(pods)
    assert launcher["status"]["phase"] == "Failed" and "startTime" not in launcher["status"], launcher["status"]
    assert launcher["status"]["message"].startswith("not started: the job failed first: SSHDNotReady")


def test_a_legacy_mpijob_waiting_for_a_worker_that_never_gets_ready_ends(
        api: httpx.Client, started: dict[str, float], kubectl: Kubectl) -> None:
    ns = "ee-bounds"
    kubectl("wait", "-n", ns, "--for=condition=Failed", f"mpijob/{MPIJOB}", f"--timeout={READY_BOUND + 120:g}s",
            timeout=READY_BOUND + 150)
    job = yaml.safe_load(kubectl("get", "mpijob", "-n", ns, MPIJOB, "-o", "yaml").stdout)
    kinds = {c["type"]: c for c in job["status"]["conditions"]}
    failed = kinds["Failed"]
    assert failed["reason"] == names.MPIJOB_FAILED, failed
    worker = names.mpijob_worker_name(MPIJOB, 0)
    assert failed["message"].startswith(f"{names.FAILURE_SSHD_NOT_READY}: the sshd of node pod {worker}"), failed
    assert "sshd on port 2223" in failed["message"], failed
    ended = parse_time(failed["lastTransitionTime"])
    assert ended is not None and ended.timestamp() - started[MPIJOB] < READY_BOUND + 60
    # resumed from Kueue's hold: nothing says suspended any more
    assert (kinds["Suspended"]["status"], kinds["Suspended"]["reason"]) == ("False", names.MPIJOB_RESUMED)
    assert all(c["reason"] != names.MPIJOB_SUSPENDED for c in kinds.values()), kinds
    assert _warnings(api, MPIJOB, names.FAILURE_SSHD_NOT_READY, ns) == [failed["message"]]
    assert _warnings(api, worker, names.REASON_UNHEALTHY, ns), events_of(api, worker, ns)
    pods = yaml.safe_load(kubectl("get", "pods", "-n", ns, "-o", "yaml").stdout)["items"]
    assert all(p["status"]["phase"] != "Pending" for p in pods), [(p["metadata"]["name"], p["status"]) for p in pods]


def test_an_mpirun_whose_ranks_never_start_fails_wire_up_naming_the_silent_node(
        api: httpx.Client, started: dict[str, float]) -> None:
    message = _failed_within(api, "bd-wireup", started["bd-wireup"], 6)
    node = by_role(job_pods(api, "bd-wireup"), "node")[0]["metadata"]["name"]
    assert message.startswith(f"{names.FAILURE_WIREUP_TIMEOUT}: mpirun on launcher pod bd-wireup-launcher-0-0-"), message
    assert "started 6s ago and no rank ran" in message, message
    assert f"Never reported: node pod {node} (host bd-wireup-node-0-0.bd-wireup): no MPI daemon started" in message
    assert "The launcher said last: starting" in message, message
    assert message.endswith("See docs/troubleshooting.md#wire-up-timeout"), message
    assert _warnings(api, "bd-wireup", names.FAILURE_WIREUP_TIMEOUT) == [message]


def test_an_mpirun_outliving_its_ranks_ends_the_job_as_its_ranks_did(
        api: httpx.Client, started: dict[str, float]) -> None:
    tj = wait_finished(api, "bd-hung", timeout=180)
    assert condition(tj, "Complete") is not None, tj["status"]
    [warning] = _warnings(api, "bd-hung", names.REASON_LAUNCHER_HUNG)
    assert "had not exited 3s after every rank ended and the log went quiet: it was stopped" in warning, warning
    assert warning.endswith("(no rank failed; exit codes read: rank 0: 0, rank 1: 0)"), warning
    launcher = launcher_of(job_pods(api, "bd-hung"))
    assert launcher["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_a_ranks_leftover_child_does_not_keep_its_job_running(api: httpx.Client, started: dict[str, float]) -> None:
    tj = wait_finished(api, "bd-leftover", timeout=180)
    assert condition(tj, "Complete") is not None, tj["status"]
    assert _warnings(api, "bd-leftover", names.REASON_LAUNCHER_HUNG) == []
    log = pod_log(api, launcher_of(job_pods(api, "bd-leftover"))["metadata"]["name"])
    assert sorted(log.split("\n")) == ["", "done 0", "done 1"], log


def test_silent_sleeping_ranks_look_stalled(api: httpx.Client, started: dict[str, float]) -> None:
    warnings = wait_for(lambda: _warnings(api, "bd-stall", names.FAILURE_STALLED), "the Stalled Warning", timeout=120)
    pods = [p["metadata"]["name"] for p in job_pods(api, "bd-stall")]
    assert warnings[0].startswith(f"{names.FAILURE_STALLED}: nothing was printed and no process of pods "), warnings
    assert all(p in warnings[0] for p in pods) and "(ranks 0, 1) used CPU for 5s" in warnings[0], warnings
    stalled = condition(get_trainjob(api, "bd-stall"), names.FAILURE_STALLED)
    assert stalled is not None and stalled["reason"] == names.REASON_NO_PROGRESS, stalled
    assert stalled["message"] == warnings[0]
    assert not condition(get_trainjob(api, "bd-stall"), "Failed")  # a warning only, by default
    assert api.delete(f"{TRAINER}/namespaces/default/trainjobs/bd-stall").status_code == 200


def test_ranks_computing_in_silence_are_not_stalled(api: httpx.Client, started: dict[str, float]) -> None:
    tj = wait_finished(api, "bd-busy", timeout=180)
    assert condition(tj, "Complete") is not None, tj["status"]
    assert not _warnings(api, "bd-busy", names.FAILURE_STALLED)
    assert all(c["type"] != names.FAILURE_STALLED for c in tj["status"]["conditions"]), tj["status"]["conditions"]


def test_a_stall_fails_the_job_when_it_asks(api: httpx.Client, started: dict[str, float]) -> None:
    message = _failed_within(api, "bd-stall-fail", started["bd-stall-fail"], 5)
    assert message.startswith(f"{names.FAILURE_STALLED}: nothing was printed"), message
    assert message.endswith("See docs/troubleshooting.md#stalled"), message


def test_the_same_bounds_hold_in_the_process_sandbox(new_server: Callable[..., Any],
                                                     connect: Callable[..., httpx.Client]) -> None:
    """No PID namespace there: Open MPI's daemons daemonize out of their pods' trees and an ssh agent leaves its
    pod's process group; the watchdog finds them by their pods' markers, and teardown ends them."""
    info = new_server("bounds-process", env={"MPIJOB_SANDBOX": "process"})
    assert info.sandbox_mode == "process"
    chosen = ("bd-wireup", "bd-hung", "bd-stall-fail", "bd-busy")
    with connect(info) as c:
        for name in chosen:
            create(c, _job(name, *JOBS[name]))
        ended = {name: wait_finished(c, name, timeout=180) for name in chosen}
        failed = {name: (condition(tj, "Failed") or {}).get("message", "") for name, tj in ended.items()}
        assert failed["bd-wireup"].startswith(f"{names.FAILURE_WIREUP_TIMEOUT}: mpirun on launcher pod"), failed
        assert "no MPI daemon started there" in failed["bd-wireup"], failed
        assert failed["bd-stall-fail"].startswith(f"{names.FAILURE_STALLED}: nothing was printed"), failed
        assert condition(ended["bd-hung"], "Complete") and condition(ended["bd-busy"], "Complete"), failed
        [warning] = _warnings(c, "bd-hung", names.REASON_LAUNCHER_HUNG)
        assert "(no rank failed; exit codes read: rank 0: 0, rank 1: 0)" in warning, warning
        assert not _warnings(c, "bd-busy", names.FAILURE_STALLED)
