"""`mpijob audit`: the local cluster's audit log as a kubectl-like table or JSON lines, filtered by
user (the TrainJob's end counts for its creator), time and verb; `server status` says where it is."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cli_support import Result, cli_env
from mpijob.api import names
from mpijob.cli.main import app
from mpijob.store import audit
from mpijob.store.home import Home
from typer.testing import CliRunner


def run(home: Path, *args: str) -> Result:
    r = CliRunner().invoke(app, ["audit", *args], env=cli_env(home))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Result(r.exit_code, r.stdout, r.stderr)


def write_log(home: Path) -> None:
    """Four Events: an old create by bob, alice's create, a 401, the controller ending alice's job."""
    log = audit.AuditLog(Home(home).audit_log)
    old = audit.timestamp(datetime.now(UTC) - timedelta(hours=3))
    ref = audit.ObjectRef("trainjobs", "team-a", "train", "trainer.kubeflow.org", "v1alpha1")
    log.write(audit.event(verb="create", request_uri="/x", user=audit.user_info("bob", groups=["devs"]), code=201,
                          received=old, object_ref=audit.ObjectRef("configmaps", "team-b", "cfg", "", "v1")))
    log.write(audit.event(verb="create", request_uri="/y", user=audit.user_info("alice"), code=201,
                          received=audit.timestamp(), object_ref=ref))
    log.write(audit.event(verb="get", request_uri="/version", user=audit.user_info(""), code=401,
                          received=audit.timestamp(), reason="Unauthorized"))
    tj = {"metadata": {"name": "train", "namespace": "team-a", "uid": "u", "resourceVersion": "9",
                       "annotations": {names.ANNOTATION_REQUESTER: "alice"}}}
    log.write(audit.trainjob_finished(tj, names.COMPLETE, names.REASON_COMPLETED))


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def test_the_table_has_kubectls_shape(tmp_path: Path) -> None:
    write_log(tmp_path)
    r = run(tmp_path)
    assert r.exit_code == 0, r.stderr
    header, *body = rows(r.stdout)
    assert header == ["TIME", "USER", "VERB", "RESOURCE", "NAMESPACE", "NAME", "CODE"]
    assert [row[1:] for row in body] == [
        ["bob", "create", "configmaps", "team-b", "cfg", "201"],
        ["alice", "create", "trainjobs", "team-a", "train", "201"],
        ["<none>", "get", "/version", "<none>", "<none>", "401"],
        [names.TRAINER_CONTROLLER_USER, "update", "trainjobs/status", "team-a", "train", "200"],
    ]
    assert all(datetime.strptime(row[0], "%Y-%m-%dT%H:%M:%SZ") for row in body)


def test_user_since_and_verb_filter(tmp_path: Path) -> None:
    write_log(tmp_path)
    alice = rows(run(tmp_path, "--user", "alice").stdout)[1:]
    assert [(row[2], row[3]) for row in alice] == [("create", "trainjobs"), ("update", "trainjobs/status")]
    recent = rows(run(tmp_path, "--since", "1h").stdout)[1:]
    assert "bob" not in [row[1] for row in recent] and len(recent) == 3
    assert len(rows(run(tmp_path, "--since", "4h").stdout)[1:]) == 4
    assert [row[1] for row in rows(run(tmp_path, "--verb", "create", "--since", "1h").stdout)[1:]] == ["alice"]
    none = run(tmp_path, "--user", "carol")
    assert none.exit_code == 0 and none.stdout == "" and "No audit events found" in none.stderr


def test_json_lines_are_the_events_as_logged(tmp_path: Path) -> None:
    write_log(tmp_path)
    r = run(tmp_path, "-o", "json", "--user", "alice")
    assert r.exit_code == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [ev["verb"] for ev in events] == ["create", "update"]
    assert all(ev["apiVersion"] == "audit.k8s.io/v1" and ev["kind"] == "Event" for ev in events)
    assert events[1]["annotations"][names.AUDIT_ANNOTATION_CONDITION] == "Complete"


def test_bad_input_names_the_flag_value_and_the_fix(tmp_path: Path) -> None:
    write_log(tmp_path)
    since = run(tmp_path, "--since", "yesterday")
    assert since.exit_code == 3 and since.stdout == ""
    assert "--since 'yesterday' is not a duration" in since.stderr and "e.g. 30s, 10m, 1h" in since.stderr
    verb = run(tmp_path, "--verb", "destroy")
    assert verb.exit_code == 3 and "--verb 'destroy' is not a request verb; use one of: get, list" in verb.stderr
    fmt = run(tmp_path, "-o", "yaml")
    assert fmt.exit_code == 2 and "use json" in fmt.stderr


def test_no_log_yet_is_said_not_failed(tmp_path: Path) -> None:
    r = run(tmp_path / "fresh")
    assert r.exit_code == 0 and r.stdout == "" and "no audit log at" in r.stderr


def test_help_says_it_reads_the_local_clusters_log() -> None:
    r = CliRunner().invoke(app, ["audit", "--help"])
    assert r.exit_code == 0 and "local cluster" in r.stdout and "--since" in r.stdout and "--user" in r.stdout


def test_server_status_and_audit_against_the_running_cluster(server: Any, http: Any, mpijob_proc: Any) -> None:
    status = mpijob_proc("server", "status", "-o", "json")
    assert status.exit_code == 0, status.stderr
    path = Path(json.loads(status.stdout)["auditLog"])
    assert path == Home(server.home).audit_log
    assert f"audit log:    {path}" in mpijob_proc("server", "status").stdout

    name = f"cli-audit-{uuid.uuid4().hex[:6]}"
    r = http.post("/api/v1/namespaces/default/configmaps",
                  json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    assert r.status_code == 201
    listed = mpijob_proc("audit", "--verb", "create", "--since", "10m", "--user", "mpijob-admin", "-o", "json")
    assert listed.exit_code == 0, listed.stderr
    mine = [json.loads(line) for line in listed.stdout.splitlines() if f'"name":"{name}"' in line]
    assert len(mine) == 1 and mine[0]["auditID"] == r.headers[names.AUDIT_ID_HEADER]
    table = mpijob_proc("audit", "--since", "10m")
    assert any(row[1:] == ["mpijob-admin", "create", "configmaps", "default", name, "201"]
               for row in rows(table.stdout))
