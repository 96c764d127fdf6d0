"""The Logs view follows every pod live, the node pods as well as the launcher: what a node prints while
the job runs appears on its own, with no button pressed and no reload.

The job's node pods run a program of their own (a copy of mpi-distributed whose node command is not
sshd): each prints a line at once, waits for a file this test creates, and prints again. The launcher
waits for the same file, so the job provably still runs when the nodes' first lines are seen.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_support import Dashboard, describe

from support import TRAINER, create, finished_as, trainjob, wait_finished

NODES = 3  # the launcher and two node pods
RUNTIMES = f"{TRAINER}/namespaces/default/trainingruntimes"


def until_go(barrier: Path) -> str:
    """Shell that waits (at most 90 s) for `barrier/go`, and fails if it never comes."""
    return (f'for i in $(seq 1800); do test -e {barrier}/go && break; sleep 0.05; done; '
            f'test -e {barrier}/go || {{ echo "no go after 90 s"; exit 3; }}')


@pytest.fixture()
def barrier() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mpijob-dash-logs-"))  # the host's /tmp: pods see it
    path.chmod(0o777)  # the pods' users look here
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture()
def talking_nodes(api: httpx.Client, barrier: Path) -> Iterator[str]:
    """A namespaced copy of mpi-distributed whose nodes print, wait for the go, and print again."""
    name = f"dash-talking-{uuid.uuid4().hex[:5]}"
    base = api.get(f"{TRAINER}/clustertrainingruntimes/mpi-distributed").json()
    node = next(rj for rj in base["spec"]["template"]["spec"]["replicatedJobs"] if rj["name"] == "node")
    container = node["template"]["spec"]["template"]["spec"]["containers"][0]
    script = (f'echo "node first $(hostname)"; {until_go(barrier)}; echo "node saw go $(hostname)"; '
              f'touch {barrier}/saw-$(hostname); sleep 120')
    container["command"] = ["bash", "-c", script]
    container.pop("args", None)
    container.pop("readinessProbe", None)
    runtime = {"apiVersion": base["apiVersion"], "kind": "TrainingRuntime",
               "metadata": {"name": name, "labels": base["metadata"].get("labels") or {}}, "spec": base["spec"]}
    r = api.post(RUNTIMES, json=runtime)
    assert r.status_code == 201, r.text
    yield name
    assert api.delete(f"{RUNTIMES}/{name}").status_code == 200


def log_text(dash: Dashboard) -> str:
    els = dash.find('[data-testid="log-lines"]')
    return els[0].text if els else ""


def test_a_node_pods_lines_appear_live_while_the_job_runs(dash: Dashboard, api: httpx.Client, barrier: Path,
                                                          talking_nodes: str) -> None:
    name = f"live-nodes-{uuid.uuid4().hex[:5]}"
    # released only once both nodes have printed after the go: the job's end (which stops the nodes) cannot
    # come first, as under load it once did, their second lines never printed
    saw = (f'for i in $(seq 1800); do [ "$(ls {barrier} | grep -c ^saw-)" = {NODES - 1} ] && break; sleep 0.05; '
           'done')
    script = f'echo "launcher waits"; {until_go(barrier)}; {saw}; echo "launcher released"'
    job: dict[str, Any] = trainjob(name, ["bash", "-c", script], num_nodes=NODES)
    job["spec"]["runtimeRef"] = {"name": talking_nodes, "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"}
    create(api, job)
    try:
        dash.go(f"#/jobs/default/{name}/logs")
        dash.mark_no_reload()
        dash.wait_text('[data-testid="log-lines"]', lambda t: t.count("node first") == NODES - 1,
                       "both node pods' first lines in the merged log", 90)
        # seen while the launcher waits for the go that only this test gives: the job runs
        assert finished_as(api.get(f"{TRAINER}/namespaces/default/trainjobs/{name}").json()) == ""
        assert "launcher released" not in log_text(dash)
        assert "launcher waits" in dash.wait_text('[data-testid="log-lines"]', lambda t: "launcher waits" in t,
                                                  "the launcher's line")
        live = dash.text_of('[data-testid="log-live"]')
        assert live.startswith("Following ") and "node-0-" in live, live  # the nodes are followed, not read once
        assert not dash.find('[data-testid="log-reread"]')  # nothing to press
        dash.screenshot("logs-nodes-live")
        (barrier / "go").touch()
        dash.wait_text('[data-testid="log-lines"]', lambda t: t.count("node saw go") == NODES - 1
                       and "launcher released" in t, "the nodes' and the launcher's lines after the go", 60)
        assert finished_as(wait_finished(api, name)) == "Complete"
        dash.wait_text('[data-testid="log-live"]', lambda t: t == "No pod is running: the logs are complete.",
                       "every pod's stream to end with its container", 60)
        assert not dash.reloaded(), "the page reloaded while the job ran"
        dash.screenshot("logs-nodes-complete")
        errors = dash.console.severe()
        assert not errors and not dash.console.csp_violations(), "the browser console:\n" + describe(errors)
    finally:
        api.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")
