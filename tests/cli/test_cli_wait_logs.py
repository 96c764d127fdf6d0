"""`mpijob wait` and merged `mpijob logs` against the shared server, on real jobs.

The merge test uses a namespaced TrainingRuntime whose node pods print themselves (an MPI runtime's
nodes only run sshd, whose log is nearly empty), so the launcher and the nodes interleave in time.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from cli_support import MPIJOB_BIN, Invoke, example, write_job
from mpijob.cli.exitcodes import Exit
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.kueue import queue_position
from mpijob.client.logs import stamp_ns
from mpijob.client.wait import job_state

STAMPED = re.compile(r"^\[(?P<pod>[^\]]+)\] (?P<stamp>\S+) (?P<text>.*)$")


def _env(server: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["MPIJOB_HOME"] = str(server.home)
    return env


def _job(tmp_path: Path, name: str, command: list[str], nodes: int = 2, runtime: str | None = None) -> Path:
    job: dict[str, Any] = example("hello.yaml")
    job["spec"]["trainer"]["numNodes"] = nodes
    job["spec"]["trainer"]["command"] = command
    if runtime:
        job["spec"]["runtimeRef"] = {"name": runtime, "kind": "TrainingRuntime",
                                     "apiGroup": "trainer.kubeflow.org"}
    return write_job(tmp_path, job, name)


TALKING_NODE = 'echo "node step 1 $(hostname)"; sleep 2; echo "node step 2 $(hostname)"; sleep 120'


def _talking_nodes_runtime(mpijob: Invoke, tmp_path: Path, name: str, node_script: str = TALKING_NODE) -> None:
    """A copy of mpi-distributed whose node pods run `node_script` (by default: print `node step 1` at once
    and `node step 2` 2s later)."""
    base = yaml.safe_load(mpijob("get", "runtimes", "mpi-distributed", "-o", "yaml").stdout)
    node = next(rj for rj in base["spec"]["template"]["spec"]["replicatedJobs"] if rj["name"] == "node")
    container = node["template"]["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["bash", "-c", node_script]
    container.pop("args", None)
    container.pop("readinessProbe", None)
    rt = {"apiVersion": base["apiVersion"], "kind": "TrainingRuntime",
          "metadata": {"name": name, "labels": base["metadata"].get("labels") or {}}, "spec": base["spec"]}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(rt, sort_keys=False))
    r = mpijob("create", "-f", str(path))
    assert r.exit_code == 0, r.stderr


def test_wait_for_complete_exits_0_and_logs_merge_every_pod_in_time_order(
    mpijob: Invoke, mpijob_proc: Invoke, tmp_path: Path, server: Any, http: Any
) -> None:
    _talking_nodes_runtime(mpijob, tmp_path, "wl-talking")
    try:
        _merge_scenario(mpijob, mpijob_proc, tmp_path, server)
    finally:  # the shared server must not keep this runtime: other tests list runtimes
        mpijob("delete", "trainjob", "wl-merge")
        assert http.delete("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainingruntimes/wl-talking"
                           ).status_code == 200


def _merge_scenario(mpijob: Invoke, mpijob_proc: Invoke, tmp_path: Path, server: Any) -> None:
    launcher_cmd = ["bash", "-c", 'sleep 1; echo "launcher step 1"; sleep 2; echo "launcher step 2 done"']
    assert mpijob("create", "-f", str(_job(tmp_path, "wl-merge", launcher_cmd, nodes=3,
                                          runtime="wl-talking"))).exit_code == 0
    # --follow started right away: it picks up pods as they appear and ends when the job ends
    follow = subprocess.Popen([str(MPIJOB_BIN), "logs", "wl-merge", "--follow"], env=_env(server),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        waited = mpijob_proc("wait", "wl-merge", "--for", "Complete", "--timeout", "3m")
        followed_out, followed_err = follow.communicate(timeout=60)
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()
    assert waited.exit_code == Exit.OK, waited.stderr
    assert waited.stdout.strip() == "trainjob.trainer.kubeflow.org/wl-merge condition met"
    assert waited.stderr == ""  # piped: no progress line

    assert follow.returncode == 0, followed_err
    assert "[wl-merge-launcher-0-0-" in followed_out and "launcher step 2 done" in followed_out
    assert "node step 2" in followed_out

    r = mpijob_proc("logs", "wl-merge", "--timestamps")
    assert r.exit_code == 0, r.stderr
    lines = [STAMPED.match(line) for line in r.stdout.splitlines()]
    assert all(lines), r.stdout
    pods = {m["pod"] for m in lines if m}
    assert len(pods) == 3 and sum("-node-0-" in p for p in pods) == 2, pods
    stamps = [stamp_ns(m["stamp"]) for m in lines if m]
    assert stamps == sorted(stamps), r.stdout  # aligned by timestamp across pods
    texts = [m["text"].split(" wl-merge")[0] for m in lines if m]
    order = [t for t in texts if t in ("node step 1", "launcher step 1", "node step 2", "launcher step 2 done")]
    assert order == ["node step 1", "node step 1", "launcher step 1", "node step 2", "node step 2",
                     "launcher step 2 done"], r.stdout
    # every line of the followed output is in the finished job's merged log (same format, no stamps)
    plain = mpijob_proc("logs", "wl-merge").stdout
    assert all(line in plain.splitlines() for line in followed_out.splitlines()), (followed_out, plain)

    grep = mpijob_proc("logs", "wl-merge", "--grep", r"step \d$|step 2 done")
    assert grep.exit_code == 0
    assert [re.sub(r"^\[[^\]]+\] ", "", line) for line in grep.stdout.splitlines()] == [
        "launcher step 1", "launcher step 2 done"]

    node = sorted(p for p in pods if "-node-0-0-" in p)[0]
    one = mpijob_proc("logs", "wl-merge", "--pod", node)
    assert one.exit_code == 0
    assert {line.split("] ", 1)[0] for line in one.stdout.splitlines()} == {f"[{node}"}, one.stdout
    assert "node step 1" in one.stdout and "node step 2" in one.stdout and "launcher" not in one.stdout
    assert mpijob_proc("logs", "wl-merge", "--grep", "(").exit_code == Exit.INVALID
    assert mpijob_proc("logs", "wl-merge", "--since", "1h").stdout == plain


def _pump(stream: Any, into: queue.Queue[str | None]) -> None:
    """Each line of `stream` into `into`, then None at its end."""
    for line in iter(stream.readline, ""):
        into.put(line)
    into.put(None)


def _until_go(barrier: Path) -> str:
    """Shell that waits (at most 90 s) for the test to create `barrier/go`, and fails if it never does."""
    return (f'for i in $(seq 1800); do test -e {barrier}/go && break; sleep 0.05; done; '
            f'test -e {barrier}/go || {{ echo "no go after 90 s"; exit 3; }}')


def test_logs_follow_shows_a_node_pods_lines_while_the_launcher_still_runs(
    mpijob: Invoke, tmp_path: Path, server: Any, http: Any
) -> None:
    """What a node pod prints reaches `mpijob logs -f` while the job runs: the launcher waits for a file
    that the test creates only after the node's first line was shown, and the node prints again after it."""
    barrier = Path(tempfile.mkdtemp(prefix="mpijob-live-nodes-"))  # the host's /tmp: pods see it
    barrier.chmod(0o777)  # the pods' users look here
    node_script = (f'echo "node first $(hostname)"; {_until_go(barrier)}; echo "node saw go $(hostname)"; '
                   f'touch {barrier}/saw-$(hostname); sleep 120')
    _talking_nodes_runtime(mpijob, tmp_path, "wl-live-nodes", node_script)
    follow: subprocess.Popen[str] | None = None
    try:
        # the launcher ends the job only once both nodes printed after the go: seen first, its end would stop
        # them (28 ms after it, on a loaded machine) before their next look at the barrier (every 50 ms)
        both_saw = (f'for i in $(seq 600); do [ "$(ls {barrier} | grep -c ^saw-)" -ge 2 ] && break; sleep 0.05; '
                    'done')
        launcher = ["bash", "-c", f'echo "launcher waits"; {_until_go(barrier)}; {both_saw}; echo "launcher released"']
        assert mpijob("create", "-f", str(_job(tmp_path, "wl-live", launcher, nodes=3,
                                              runtime="wl-live-nodes"))).exit_code == 0
        follow = subprocess.Popen([str(MPIJOB_BIN), "logs", "wl-live", "--follow"], env=_env(server),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(follow.stdout, lines), daemon=True).start()
        seen: list[str] = []
        deadline = time.monotonic() + 120
        while not any("node first" in x for x in seen):
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))  # queue.Empty past the deadline
            assert line is not None, f"logs -f ended before a node's line: {seen} {follow.stderr.read()}"  # type: ignore[union-attr]
            seen.append(line)
        # the node's line came while the launcher still waits for the go that only this test gives
        tj = http.get("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/wl-live").json()
        assert not [c for c in tj.get("status", {}).get("conditions", []) if c["type"] in ("Complete", "Failed")
                    and c["status"] == "True"], tj["status"]
        assert not any("launcher released" in x for x in seen), seen
        assert re.match(r"^\[wl-live-node-0-\d+-\w+\] node first \S+$", seen[-1].rstrip("\n")), seen
        (barrier / "go").touch()
        assert follow.wait(timeout=120) == 0, follow.stderr.read()  # type: ignore[union-attr]  # it ends with the job
        while (line := lines.get(timeout=10)) is not None:  # what it printed after the go, to its end
            seen.append(line)
        rest = "".join(seen)
        assert rest.count("node first") == 2 and rest.count("node saw go") == 2, rest
        assert "launcher released" in rest, rest
    finally:
        if follow is not None and follow.poll() is None:
            follow.kill()
            follow.wait()
        mpijob("delete", "trainjob", "wl-live")
        assert http.delete("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainingruntimes/wl-live-nodes"
                           ).status_code == 200
        shutil.rmtree(barrier, ignore_errors=True)


def test_wait_on_a_failing_job_exits_job_failed_and_its_logs_stay(mpijob: Invoke, mpijob_proc: Invoke,
                                                                   tmp_path: Path) -> None:
    cmd = ["mpirun", "bash", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK says bye"; exit 3']
    assert mpijob("create", "-f", str(_job(tmp_path, "wl-fail", cmd))).exit_code == 0
    r = mpijob_proc("wait", "wl-fail", "--timeout", "3m")
    assert r.exit_code == Exit.JOB_FAILED, (r.stdout, r.stderr)
    assert "wl-fail can no longer reach Complete: it ended Failed" in r.stderr
    assert mpijob_proc("wait", "wl-fail", "--for", "Failed").exit_code == Exit.OK
    assert mpijob_proc("wait", "wl-fail", "--for", "finished").exit_code == Exit.OK
    logs = mpijob_proc("logs", "wl-fail")
    assert logs.exit_code == 0
    assert re.search(r"^\[wl-fail-launcher-0-0-\w+ rank (\d)\] rank \1 says bye$", logs.stdout, re.M), logs.stdout
    assert mpijob("delete", "trainjob", "wl-fail").exit_code == 0


def test_wait_timeout_on_a_sleeping_job_exits_timeout(mpijob: Invoke, mpijob_proc: Invoke, tmp_path: Path) -> None:
    assert mpijob("create", "-f", str(_job(tmp_path, "wl-sleep", ["sleep", "300"]))).exit_code == 0
    try:
        running = mpijob_proc("wait", "wl-sleep", "--for", "Running", "--timeout", "2m")
        assert running.exit_code == Exit.OK, running.stderr
        r = mpijob_proc("wait", "wl-sleep", "--timeout", "2s")
        assert r.exit_code == Exit.TIMEOUT, (r.stdout, r.stderr)
        assert "did not reach Complete within 2s (state: Running" in r.stderr
    finally:
        assert mpijob("delete", "trainjob", "wl-sleep").exit_code == 0


def test_wait_and_logs_bad_input(mpijob: Invoke) -> None:
    assert mpijob("wait", "wl-missing").exit_code == Exit.NOT_FOUND
    r = mpijob("wait", "wl-missing", "--timeout", "ten minutes")
    assert r.exit_code == Exit.INVALID and "--timeout 'ten minutes' is not a duration" in r.stderr
    assert mpijob("wait", "wl-missing", "--for", "Done").exit_code == Exit.USAGE
    assert mpijob("logs", "wl-missing", "--since", "5").exit_code == Exit.NOT_FOUND  # bare seconds parse
    assert mpijob("logs", "wl-missing", "--follow").exit_code == Exit.NOT_FOUND  # not a wait for ever


def test_queue_position_of_a_waiting_job_comes_from_the_visibility_api(
    mpijob: Invoke, http: Any, server: Any, tmp_path: Path
) -> None:
    kueue = "/apis/kueue.x-k8s.io/v1beta2"
    assert http.post(f"{kueue}/resourceflavors", json={
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "wl-flavor"}}
    ).status_code == 201
    assert http.post(f"{kueue}/clusterqueues", json={
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "wl-full"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "wl-flavor", "resources": [{"name": "cpu", "nominalQuota": "3"}]}]}]}}).status_code == 201
    assert http.post(f"{kueue}/namespaces/default/localqueues", json={
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "wl-lq", "namespace": "default"}, "spec": {"clusterQueue": "wl-full"}}).status_code == 201
    running, names = "wl-q0", ["wl-q1", "wl-q2"]  # wl-q0 takes the whole quota; the others wait behind it
    for name in [running, *names]:
        job: dict[str, Any] = example("hello.yaml")
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "wl-lq"}
        job["spec"]["trainer"]["command"] = ["sleep", "300"]
        job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}
        assert mpijob("create", "-f", str(write_job(tmp_path, job, name))).exit_code == 0
    with Connection(choose_cluster(str(server.kubeconfig), None, "default")) as cluster:
        try:
            for _ in range(100):
                jobs = [cluster.get_trainjob(n) for n in names]
                positions = [cluster.run(queue_position(j, "default")) for j in jobs]
                if positions == [0, 1]:
                    break
                time.sleep(0.1)
            assert positions == [0, 1]
            snap = cluster.run(job_state("default", jobs[1], []))
            assert snap.phase == "Queued" and snap.position == 1 and snap.queue == "wl-lq"
            r = mpijob("wait", "wl-q2", "--timeout", "1s")
            assert r.exit_code == Exit.TIMEOUT and "(state: Queued" in r.stderr
        finally:
            for name in [running, *names]:
                mpijob("delete", "trainjob", name, "--wait")
            http.delete(f"{kueue}/namespaces/default/localqueues/wl-lq")
            http.delete(f"{kueue}/clusterqueues/wl-full")
            http.delete(f"{kueue}/resourceflavors/wl-flavor")


def test_logs_rank_shows_one_ranks_lines_from_open_mpi_output_tagging(mpijob: Invoke, mpijob_proc: Invoke,
                                                                        tmp_path: Path) -> None:
    cmd = ["mpirun", "bash", "-c", ('echo "hello from $OMPI_COMM_WORLD_RANK"; echo "oops $OMPI_COMM_WORLD_RANK" >&2; '
           'printf "no newline $OMPI_COMM_WORLD_RANK"')]
    assert mpijob("create", "-f", str(_job(tmp_path, "wl-rank", cmd, nodes=3))).exit_code == 0
    try:
        assert mpijob_proc("wait", "wl-rank", "--timeout", "3m").exit_code == Exit.OK
        one = mpijob_proc("logs", "wl-rank", "--rank", "1")
        assert one.exit_code == 0, one.stderr
        assert sorted(re.sub(r"^\[wl-rank-launcher-0-0-\w+ rank 1\] ", "", line) for line in one.stdout.splitlines()
                      ) == ["hello from 1", "no newline 1", "oops 1"], one.stdout  # stdout and stderr, tags gone
        bare = mpijob_proc("logs", "wl-rank", "--rank", "2", "--no-prefix", "--grep", "hello")
        assert bare.stdout == "hello from 2\n", bare.stdout
        merged = mpijob_proc("logs", "wl-rank").stdout
        assert {int(r) for r in re.findall(r"^\[wl-rank-launcher-0-0-\w+ rank (\d)\] hello from \1$", merged, re.M)
                } == {0, 1, 2}, merged
        assert "<stdout>" not in merged and "<stderr>" not in merged
        assert mpijob_proc("logs", "wl-rank", "--rank", "7").stdout == ""
        rows = [json.loads(x) for x in mpijob_proc("logs", "wl-rank", "-o", "json", "--grep", "hello").stdout.splitlines()]
        assert sorted((r["rank"], r["text"]) for r in rows) == [(0, "hello from 0"), (1, "hello from 1"),
                                                                (2, "hello from 2")], rows
        assert all(r["pod"].startswith("wl-rank-launcher-0-0-") and stamp_ns(r["time"]) for r in rows), rows
        assert mpijob_proc("logs", "wl-rank", "-o", "yaml").exit_code == Exit.USAGE
        assert mpijob_proc("logs", "wl-rank", "--rank", "-1").exit_code == Exit.INVALID
    finally:
        mpijob("delete", "trainjob", "wl-rank")


def test_logs_rank_explains_when_output_tagging_was_off(mpijob: Invoke, mpijob_proc: Invoke, tmp_path: Path) -> None:
    path = _job(tmp_path, "wl-untagged", ["mpirun", "bash", "-c", 'echo "plain $OMPI_COMM_WORLD_RANK"'])
    job = yaml.safe_load(path.read_text())
    # the user's choices win: no tags, and their own fork agent (`env` runs the rank) in place of the rank agent
    job["spec"]["trainer"]["env"] = [{"name": "OMPI_MCA_orte_tag_output", "value": "0"},
                                     {"name": "OMPI_MCA_orte_fork_agent", "value": "env"}]
    path.write_text(yaml.safe_dump(job))
    assert mpijob("create", "-f", str(path)).exit_code == 0
    try:
        assert mpijob_proc("wait", "wl-untagged", "--timeout", "3m").exit_code == Exit.OK
        r = mpijob_proc("logs", "wl-untagged", "--rank", "0")
        assert r.exit_code == 0 and r.stdout == ""
        assert "output tagging was off" in r.stderr and "--tag-output" in r.stderr, r.stderr
        assert re.search(r"^\[wl-untagged-launcher-0-0-\w+\] plain 0$", mpijob_proc("logs", "wl-untagged").stdout,
                         re.M)
    finally:
        mpijob("delete", "trainjob", "wl-untagged")
