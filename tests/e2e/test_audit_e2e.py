"""The audit log of real jobs: a user creates two TrainJobs, one completes and one fails; the log holds
her creations, their ends attributed to her, denied requests (401, 403), and none of the job's secrets or her
token; `mpijob audit --user` finds it all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
from mpijob.api import names
from mpijob.store import audit
from mpijob.store.home import Home
from mpijob.store.server_process import ServerInfo

from support import TRAINER, condition, create, https_client, trainjob, wait_finished, wait_for

OK, FAIL = "ee-audit-ok", "ee-audit-fail"
MPIJOB_BIN = Path(sys.executable).parent / "mpijob"


def add_user(home: Path, name: str, groups: str = "system:masters") -> str:
    """A user in the static token file (the server hashes the token at its next request)."""
    token = f"e2e-audit-{uuid.uuid4().hex}"
    with open(Home(home).tokens, "a") as f:
        f.write(f'{token},{name},{name}-uid,"{groups}"\n')
    return token


def as_user(server: ServerInfo, token: str) -> httpx.Client:
    c = https_client(server.kubeconfig)
    c.headers["Authorization"] = f"Bearer {token}"
    return c


def the_end_of(events: list[dict[str, Any]], uid: str) -> dict[str, Any] | None:
    ends = [ev for ev in events if ev.get("objectRef", {}).get("uid") == uid
            and ev["objectRef"].get("subresource") == "status"
            and ev["user"]["username"] == names.TRAINER_CONTROLLER_USER]
    return ends[0] if ends else None


def test_a_users_jobs_are_audited_from_creation_to_their_end(server: ServerInfo, api: httpx.Client) -> None:
    user = f"alice-{uuid.uuid4().hex[:4]}"
    token = add_user(server.home, user)
    log = Home(server.home).audit_log
    with as_user(server, token) as alice:
        ok = create(alice, trainjob(OK, ["mpirun", "bash", "-c", "echo fine"], num_nodes=2))
        fail = create(alice, trainjob(FAIL, ["mpirun", "bash", "-c", "exit 3"], num_nodes=2))
        forged = alice.post(f"{TRAINER}/namespaces/default/trainjobs",
                            json={**trainjob("ee-audit-x", ["true"]), "metadata": {
                                "name": "ee-audit-x", "annotations": {names.ANNOTATION_REQUESTER: "bob"}}},
                            params={"dryRun": "All"})
    assert forged.json()["metadata"]["annotations"][names.ANNOTATION_REQUESTER] == user
    for tj in (ok, fail):
        assert tj["metadata"]["annotations"][names.ANNOTATION_REQUESTER] == user
    assert condition(wait_finished(api, OK), "Complete")
    assert condition(wait_finished(api, FAIL), "Failed")

    events = wait_for(lambda: (evs := list(audit.read(log))) and all(the_end_of(evs, t["metadata"]["uid"])
                                                                      for t in (ok, fail)) and evs,
                      "the audit Events of both jobs' ends")
    created = {ev["objectRef"]["name"]: ev for ev in events
               if ev["verb"] == "create" and ev["user"].get("username") == user and "dryRun" not in ev["requestURI"]}
    assert set(created) == {OK, FAIL}
    for ev in created.values():
        assert ev["objectRef"]["resource"] == "trainjobs" and ev["responseStatus"]["code"] == 201
        assert set(ev["user"]["groups"]) == {"system:masters", "system:authenticated"}
    for tj, cond, reason in ((ok, "Complete", names.REASON_COMPLETED), (fail, "Failed", names.REASON_FAILED_JOBS)):
        end = the_end_of(events, tj["metadata"]["uid"])
        assert end is not None
        assert end["verb"] == "update" and end["objectRef"]["name"] == tj["metadata"]["name"]
        assert end["annotations"][names.ANNOTATION_REQUESTER] == user
        assert end["annotations"][names.AUDIT_ANNOTATION_CONDITION] == cond
        assert end["annotations"][names.AUDIT_ANNOTATION_REASON] == reason
        assert end["stageTimestamp"] >= created[tj["metadata"]["name"]]["stageTimestamp"]

    # a denied request: her token with a typo
    with as_user(server, token + "x") as typo:
        denied = typo.delete(f"{TRAINER}/namespaces/default/trainjobs/{OK}")
    assert denied.status_code == 401
    audit_id = denied.headers[names.AUDIT_ID_HEADER]
    (ev,) = [e for e in audit.read(log) if e["auditID"] == audit_id]
    assert ev["user"] == {} and ev["verb"] == "delete" and ev["objectRef"]["name"] == OK

    # a denied request: a user RBAC grants nothing tries to delete her job
    bob = f"bob-{uuid.uuid4().hex[:4]}"
    with as_user(server, add_user(server.home, bob, groups="")) as other:
        forbidden = other.delete(f"{TRAINER}/namespaces/default/trainjobs/{OK}")
    assert forbidden.status_code == 403, forbidden.text
    (ev,) = [e for e in audit.read(log) if e["auditID"] == forbidden.headers[names.AUDIT_ID_HEADER]]
    assert ev["user"]["username"] == bob and ev["verb"] == "delete" and ev["objectRef"]["name"] == OK
    assert ev["responseStatus"]["code"] == 403 and f'User "{bob}" cannot delete' in ev["responseStatus"]["message"]

    # no secret of the job, and no token, in the log
    text = log.read_text()
    ssh = api.get(f"/api/v1/namespaces/default/secrets/{names.ssh_secret_name(OK)}")
    assert ssh.status_code == 200, ssh.text
    for value in ssh.json()["data"].values():
        assert value not in text
    assert token not in text

    # the CLI, as she or her admin would read it
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["MPIJOB_HOME"] = str(server.home)
    out = subprocess.run([str(MPIJOB_BIN), "audit", "--user", user, "-o", "json"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    mine = [json.loads(line) for line in out.stdout.splitlines()]
    assert {(e["verb"], e["objectRef"]["name"], e["objectRef"].get("subresource", "")) for e in mine} >= {
        ("create", OK, ""), ("create", FAIL, ""), ("update", OK, "status"), ("update", FAIL, "status")}
    table = subprocess.run([str(MPIJOB_BIN), "audit", "--user", user, "--verb", "update"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert table.returncode == 0, table.stderr
    assert sorted(line.split()[2:6] for line in table.stdout.splitlines()[1:]) == [
        ["update", "trainjobs/status", "default", FAIL], ["update", "trainjobs/status", "default", OK]]

    for name in (OK, FAIL):
        api.delete(f"{TRAINER}/namespaces/default/trainjobs/{name}")
