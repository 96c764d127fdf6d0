"""The derived phase: conditions first, then how far the pods got."""

from __future__ import annotations

from typing import Any

from mpijob.client.phase import job_phase, pod_status, terminal_condition

ROLE = "jobset.sigs.k8s.io/replicatedjob-name"


def _job(*conditions: tuple[str, str], suspend: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": "j"}, "spec": {"suspend": suspend},
            "status": {"conditions": [{"type": t, "status": s, "reason": "R", "message": f"m-{t}"}
                                      for t, s in conditions]}}


def _pod(name: str, role: str, phase: str, ready: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {ROLE: role}},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}}


def test_conditions_decide() -> None:
    assert job_phase(_job(("Failed", "True"))) == ("Failed", "m-Failed")
    assert job_phase(_job(("Complete", "True")))[0] == "Succeeded"
    assert job_phase(_job(("Suspended", "True")))[0] == "Suspended"
    assert job_phase(_job(("Suspended", "False"), ("Complete", "False")), [])[0] == "Queued"
    assert job_phase(_job(suspend=True), [])[0] == "Suspended"
    assert terminal_condition(_job(("Complete", "True")))["type"] == "Complete"
    assert terminal_condition(_job(("Suspended", "True"))) is None


def test_pods_tell_progress() -> None:
    nodes = [_pod("j-node-0-0", "node", "Running", True), _pod("j-node-0-1", "node", "Pending")]
    assert job_phase(_job(), nodes) == ("Starting", "1/2 nodes ready")
    launcher = _pod("j-launcher-0-0", "launcher", "Running")
    assert job_phase(_job(), [*nodes, launcher]) == ("Running", "launcher j-launcher-0-0 is running")


def test_pod_status_shows_container_reasons() -> None:
    pod = {"status": {"phase": "Failed", "containerStatuses": [
        {"name": "node", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}}
    assert pod_status(pod) == "OOMKilled"
    pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 3}}
    assert pod_status(pod) == "ExitCode:3"
    assert pod_status({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Running"}}) == "Terminating"
    assert pod_status({"status": {"phase": "Running"}}) == "Running"
