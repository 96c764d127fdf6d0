"""The audit log: kube-apiserver's audit.k8s.io/v1 Events for every mutating and every denied request,
the `Audit-Id` header, the TrainJob's requester annotation, and no secret or token ever in the file.

Against the session's API server (no controllers); each request's Event is found by the `Audit-Id`
the server answered with. The writer, the reader and the request-info parsing are also tested alone.
"""

from __future__ import annotations

import asyncio
import base64
import json
import stat
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from mpijob.api import names
from mpijob.api.core.durations import parse_time
from mpijob.server.audit import AuditMiddleware, annotate, request_info
from mpijob.store import audit
from mpijob.store.home import Home

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
CM = "/api/v1/namespaces/default/configmaps"


def events(home: Path) -> list[dict[str, Any]]:
    return list(audit.read(Home(home).audit_log))


def event_of(home: Path, resp: httpx.Response) -> dict[str, Any]:
    audit_id = resp.headers[names.AUDIT_ID_HEADER]
    found = [ev for ev in events(home) if ev["auditID"] == audit_id]
    assert len(found) == 1, f"{len(found)} events with auditID {audit_id}"
    return found[0]


def logged(home: Path, resp: httpx.Response) -> bool:
    audit_id = resp.headers[names.AUDIT_ID_HEADER]
    return any(ev["auditID"] == audit_id for ev in events(home))


def add_user(home: Path, name: str, groups: tuple[str, ...] = ("system:masters", "system:authenticated")) -> str:
    """A user in the static token file (kube's --token-auth-file format); returns their token."""
    token = f"audit-{uuid.uuid4().hex}"
    with open(Home(home).tokens, "a") as f:
        f.write(f'{token},{name},{name}-uid,"{",".join(groups)}"\n')
    return token


def trainjob(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
            "spec": {"runtimeRef": {"name": "mpi-distributed"}, "trainer": {"numNodes": 1, "command": ["true"]},
                     "suspend": True}}


# -- over HTTP ---------------------------------------------------------------------------------------


def test_a_create_is_one_metadata_level_event_with_who_what_when_and_the_code(server, connect) -> None:  # type: ignore[no-untyped-def]
    name = f"audit-cm-{uuid.uuid4().hex[:6]}"
    with connect() as c:
        r = c.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
                   headers={"User-Agent": "audit-test/1.0"})
    assert r.status_code == 201, r.text
    ev = event_of(server.home, r)
    assert {k: ev[k] for k in ("kind", "apiVersion", "level", "stage", "verb", "requestURI", "userAgent")} == {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "stage": "ResponseComplete",
        "verb": "create", "requestURI": CM, "userAgent": "audit-test/1.0"}
    assert ev["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": name, "apiVersion": "v1"}
    assert ev["responseStatus"] == {"metadata": {}, "code": 201}
    assert ev["user"]["username"] == "mpijob-admin" and "system:masters" in ev["user"]["groups"]
    assert ev["sourceIPs"] == ["127.0.0.1"]
    received, done = parse_time(ev["requestReceivedTimestamp"]), parse_time(ev["stageTimestamp"])
    assert received is not None and done is not None and received <= done
    assert datetime.now(UTC) - received < timedelta(minutes=5)
    assert "requestObject" not in ev and "responseObject" not in ev  # level Metadata: never a body
    uuid.UUID(ev["auditID"])


def test_every_mutating_verb_is_audited_and_reads_are_not(server, connect) -> None:  # type: ignore[no-untyped-def]
    name = f"audit-verbs-{uuid.uuid4().hex[:6]}"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"audit": name}}}
    with connect() as c:
        created = c.post(CM, json=body)
        got = c.get(f"{CM}/{name}")
        listed = c.get(CM, params={"labelSelector": f"audit={name}"})
        put = c.put(f"{CM}/{name}", json={**got.json(), "data": {"k": "v"}})
        patched = c.patch(f"{CM}/{name}", json={"data": {"k": "w"}},
                          headers={"Content-Type": "application/merge-patch+json"})
        deleted = c.delete(f"{CM}/{name}")
        c.post(CM, json=body)
        collection = c.delete(CM, params={"labelSelector": f"audit={name}"})
        missing = c.delete(f"{CM}/{name}")
    assert not logged(server.home, got) and not logged(server.home, listed)
    verbs = [(event_of(server.home, r)["verb"], event_of(server.home, r)["responseStatus"]["code"])
             for r in (created, put, patched, deleted, collection, missing)]
    assert verbs == [("create", 201), ("update", 200), ("patch", 200), ("delete", 200), ("deletecollection", 200),
                     ("delete", 404)]
    assert event_of(server.home, collection)["objectRef"] == {"resource": "configmaps", "namespace": "default",
                                                              "apiVersion": "v1"}
    assert event_of(server.home, missing)["responseStatus"]["reason"] == "NotFound"


def test_every_answer_carries_its_audit_id_and_a_clients_is_kept(server, connect) -> None:  # type: ignore[no-untyped-def]
    with connect() as c:
        ids = {c.get(path).headers[names.AUDIT_ID_HEADER] for path in ("/version", "/api/v1/namespaces", "/apis")}
        mine = c.get("/version", headers={"Audit-ID": "my-trace-1234"})
    assert len(ids) == 3 and all(uuid.UUID(i) for i in ids)
    assert mine.headers[names.AUDIT_ID_HEADER] == "my-trace-1234"
    with connect(token="") as c:
        assert uuid.UUID(c.get("/version").headers[names.AUDIT_ID_HEADER])


def test_unauthenticated_requests_are_audited_without_the_token(server, connect) -> None:  # type: ignore[no-untyped-def]
    wrong = f"not-a-token-{uuid.uuid4().hex}"
    with connect(token=wrong) as c:
        read = c.get(f"{TRAINER}/namespaces/default/trainjobs")
        write = c.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nope"}})
    with connect(token="") as c:
        anonymous = c.get("/api/v1/namespaces/default/secrets/x")
    for r, verb in ((read, "list"), (write, "create"), (anonymous, "get")):
        assert r.status_code == 401
        ev = event_of(server.home, r)
        assert ev["user"] == {} and ev["verb"] == verb
        assert ev["responseStatus"]["code"] == 401 and ev["responseStatus"]["reason"] == "Unauthorized"
    assert event_of(server.home, read)["objectRef"] == {
        "resource": "trainjobs", "namespace": "default", "apiGroup": "trainer.kubeflow.org", "apiVersion": "v1alpha1"}
    text = Home(server.home).audit_log.read_text()
    assert wrong not in text
    config_token = json.loads(server.kubeconfig.read_text())["users"][0]["user"]["token"]
    assert len(config_token) > 20 and config_token not in text
    # no header is recorded (other tests' 403 messages, in the same log, may well say "authorization")
    assert '"authorization":' not in text.lower() and "bearer " not in text.lower()


def test_a_forbidden_request_is_audited_with_the_reason_and_message(server, connect) -> None:  # type: ignore[no-untyped-def]
    """A 403 (here: deleting a namespace the cluster needs; RBAC's denials take the same path)."""
    with connect() as c:
        r = c.delete("/api/v1/namespaces/default")
    assert r.status_code == 403
    ev = event_of(server.home, r)
    assert ev["verb"] == "delete" and ev["user"]["username"] == "mpijob-admin"
    assert ev["objectRef"] == {"resource": "namespaces", "namespace": "default", "name": "default", "apiVersion": "v1"}
    assert ev["responseStatus"]["reason"] == "Forbidden" and "may not be deleted" in ev["responseStatus"]["message"]


def test_an_rbac_denial_is_audited_reads_included(server, connect) -> None:  # type: ignore[no-untyped-def]
    """A user RBAC grants nothing: her read and her write are refused (403) and both are audited."""
    name = f"nobody-{uuid.uuid4().hex[:4]}"
    token = add_user(server.home, name, groups=())
    with connect(token=token) as c:
        read = c.get(f"{TRAINER}/namespaces/default/trainjobs")
        write = c.post(f"{TRAINER}/namespaces/default/trainjobs", json=trainjob("audit-denied"))
    for r, verb in ((read, "list"), (write, "create")):
        assert r.status_code == 403, r.text
        ev = event_of(server.home, r)
        assert ev["user"]["username"] == name and ev["verb"] == verb
        assert ev["objectRef"] == {"resource": "trainjobs", "namespace": "default",
                                   "apiGroup": "trainer.kubeflow.org", "apiVersion": "v1alpha1"}
        assert ev["responseStatus"]["reason"] == "Forbidden"
        assert ev["responseStatus"]["message"].startswith(f'trainjobs.trainer.kubeflow.org is forbidden: User "{name}"'
                                                          f" cannot {verb} resource")
    assert token not in Home(server.home).audit_log.read_text()


def test_no_secret_data_ever_reaches_the_log(server, connect) -> None:  # type: ignore[no-untyped-def]
    name = f"audit-secret-{uuid.uuid4().hex[:6]}"
    plain, encoded = f"s3cr3t-{uuid.uuid4().hex}", f"d4t4-{uuid.uuid4().hex}"
    b64 = base64.b64encode(encoded.encode()).decode()
    path = "/api/v1/namespaces/default/secrets"
    with connect() as c:
        created = c.post(path, json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                                     "stringData": {"password": plain}, "data": {"key": b64}})
        assert created.status_code == 201, created.text
        updated = c.patch(f"{path}/{name}", json={"stringData": {"password": plain + "2"}},
                          headers={"Content-Type": "application/merge-patch+json"})
        bad = c.post(path, json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name + "-bad"},
                                 "data": {"key": plain}})  # not base64: refused, the value never echoed to the log
        deleted = c.delete(f"{path}/{name}")
    for r in (created, updated, bad, deleted):
        assert event_of(server.home, r)["objectRef"]["resource"] == "secrets"
    text = Home(server.home).audit_log.read_text()
    for secret in (plain, encoded, b64, base64.b64encode(plain.encode()).decode()):
        assert secret not in text


def test_the_log_file_is_private(server, connect) -> None:  # type: ignore[no-untyped-def]
    with connect() as c:
        c.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "audit-mode-"}})
    path = Home(server.home).audit_log
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for line in path.read_text().splitlines():
        assert json.loads(line)["apiVersion"] == "audit.k8s.io/v1"


def test_a_generated_name_is_in_the_objectref(server, connect) -> None:  # type: ignore[no-untyped-def]
    with connect() as c:
        r = c.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "audit-gen-"}})
    assert r.status_code == 201
    assert event_of(server.home, r)["objectRef"]["name"] == r.json()["metadata"]["name"]


# -- the TrainJob's requester ------------------------------------------------------------------------


def test_the_server_sets_the_requester_and_no_client_can_forge_or_change_it(server, connect) -> None:  # type: ignore[no-untyped-def]
    alice = add_user(server.home, f"alice-{uuid.uuid4().hex[:4]}")
    alice_name = Home(server.home).tokens.read_text().splitlines()[-1].split(",")[1]
    forged = f"audit-forged-{uuid.uuid4().hex[:6]}"
    plain = f"audit-plain-{uuid.uuid4().hex[:6]}"
    with connect(token=alice) as c:
        r = c.post(f"{TRAINER}/namespaces/default/trainjobs",
                   json=trainjob(forged, {names.ANNOTATION_REQUESTER: "mallory", "team": "a"}))
        assert r.status_code == 201, r.text
        assert r.json()["metadata"]["annotations"] == {names.ANNOTATION_REQUESTER: alice_name, "team": "a"}
        assert event_of(server.home, r)["user"]["username"] == alice_name
    with connect() as c:
        r = c.post(f"{TRAINER}/namespaces/default/trainjobs", json=trainjob(plain))
        assert r.json()["metadata"]["annotations"] == {names.ANNOTATION_REQUESTER: "mpijob-admin"}
        url = f"{TRAINER}/namespaces/default/trainjobs/{forged}"
        current = c.get(url).json()
        current["metadata"]["annotations"][names.ANNOTATION_REQUESTER] = "mallory"
        assert c.put(url, json=current).json()["metadata"]["annotations"][names.ANNOTATION_REQUESTER] == alice_name
        replaced = c.get(url).json()
        del replaced["metadata"]["annotations"]
        assert c.put(url, json=replaced).json()["metadata"]["annotations"][names.ANNOTATION_REQUESTER] == alice_name
        merge = c.patch(url, json={"metadata": {"annotations": {names.ANNOTATION_REQUESTER: None}}},
                        headers={"Content-Type": "application/merge-patch+json"})
        assert merge.json()["metadata"]["annotations"][names.ANNOTATION_REQUESTER] == alice_name
        key = names.ANNOTATION_REQUESTER.replace("/", "~1")
        jsonpatch = c.patch(url, json=[{"op": "replace", "path": f"/metadata/annotations/{key}", "value": "eve"}],
                            headers={"Content-Type": "application/json-patch+json"})
        assert jsonpatch.json()["metadata"]["annotations"][names.ANNOTATION_REQUESTER] == alice_name
        status = c.patch(f"{url}/status", json={"metadata": {"annotations": {names.ANNOTATION_REQUESTER: "eve"}}},
                         headers={"Content-Type": "application/merge-patch+json"})
        assert status.status_code == 200, status.text
        assert event_of(server.home, status)["objectRef"]["subresource"] == "status"
        assert c.get(url).json()["metadata"]["annotations"][names.ANNOTATION_REQUESTER] == alice_name
        dry = c.post(f"{TRAINER}/namespaces/default/trainjobs", params={"dryRun": "All"},
                     json=trainjob("audit-dry", {names.ANNOTATION_REQUESTER: "mallory"}))
        assert dry.json()["metadata"]["annotations"] == {names.ANNOTATION_REQUESTER: "mpijob-admin"}
        for n in (forged, plain):
            c.delete(f"{TRAINER}/namespaces/default/trainjobs/{n}")


def test_other_kinds_keep_a_requester_annotation_as_sent(server, connect) -> None:  # type: ignore[no-untyped-def]
    name = f"audit-other-{uuid.uuid4().hex[:6]}"
    with connect() as c:
        r = c.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": name, "annotations": {names.ANNOTATION_REQUESTER: "x"}}})
        assert r.json()["metadata"]["annotations"] == {names.ANNOTATION_REQUESTER: "x"}
        c.delete(f"{CM}/{name}")


# -- alone ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "query", "verb", "ref"), [
    ("GET", "/api/v1/namespaces/ns/pods", "", "list", ("pods", "ns", "", "", "v1", "")),
    ("GET", "/api/v1/pods", "watch=true", "watch", ("pods", "", "", "", "v1", "")),
    ("GET", "/api/v1/namespaces/ns/pods/p/log", "", "get", ("pods", "ns", "p", "", "v1", "log")),
    ("POST", f"{TRAINER}/namespaces/ns/trainjobs", "", "create",
     ("trainjobs", "ns", "", "trainer.kubeflow.org", "v1alpha1", "")),
    ("PUT", f"{TRAINER}/namespaces/ns/trainjobs/j/status", "", "update",
     ("trainjobs", "ns", "j", "trainer.kubeflow.org", "v1alpha1", "status")),
    ("PATCH", "/api/v1/namespaces/ns/configmaps/c", "", "patch", ("configmaps", "ns", "c", "", "v1", "")),
    ("DELETE", "/api/v1/namespaces/ns/configmaps", "", "deletecollection", ("configmaps", "ns", "", "", "v1", "")),
    ("DELETE", "/api/v1/namespaces/team-a", "", "delete", ("namespaces", "team-a", "team-a", "", "v1", "")),
    ("POST", "/apis/example.com/v1/namespaces/ns/widgets", "", "create",
     ("widgets", "ns", "", "example.com", "v1", "")),
    ("GET", "/apis/example.com/v1/widgets/w", "", "get", ("widgets", "", "w", "example.com", "v1", "")),
])
def test_request_info_is_kubes(method, path, query, verb, ref) -> None:  # type: ignore[no-untyped-def]
    got_verb, got_ref = request_info(method, path, query)
    assert got_verb == verb
    assert got_ref == audit.ObjectRef(*ref)


@pytest.mark.parametrize(("method", "path"), [("GET", "/version"), ("POST", "/healthz"), ("GET", "/apis"),
                                              ("GET", "/apis/trainer.kubeflow.org/v1alpha1"), ("GET", "/api")])
def test_non_resource_requests_have_the_methods_verb_and_no_objectref(method, path) -> None:  # type: ignore[no-untyped-def]
    assert request_info(method, path) == (method.lower(), None)


def _call(app: Any, method: str, path: str, scope_extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"authorization", b"Bearer sekrit-token")], "client": ("10.0.0.7", 5555),
             **(scope_extra or {})}
    asyncio.run(app(scope, receive, send))
    return sent


def test_a_crashing_handler_is_audited_at_stage_panic(tmp_path: Path) -> None:
    async def crash(scope: Any, receive: Any, send: Any) -> None:
        scope["user"] = {"username": "bob", "uid": "1", "groups": ["devs"]}
        raise RuntimeError("boom")

    mw = AuditMiddleware(crash, tmp_path / "audit.log")
    with pytest.raises(RuntimeError):
        _call(mw, "DELETE", "/api/v1/namespaces/ns/configmaps/c")
    (ev,) = audit.read(tmp_path / "audit.log")
    assert ev["stage"] == "Panic" and ev["responseStatus"]["code"] == 500
    assert ev["user"] == {"username": "bob", "uid": "1", "groups": ["devs"]} and ev["sourceIPs"] == ["10.0.0.7"]
    assert "sekrit-token" not in (tmp_path / "audit.log").read_text()


def test_inner_layers_annotate_the_event(tmp_path: Path) -> None:
    async def deny(scope: Any, receive: Any, send: Any) -> None:
        annotate(scope, "authorization.k8s.io/decision", "forbid")
        await send({"type": "http.response.start", "status": 403, "headers": []})
        await send({"type": "http.response.body", "body": b'{"kind":"Status","reason":"Forbidden","message":"no"}'})

    sent = _call(AuditMiddleware(deny, tmp_path / "audit.log"), "GET", "/api/v1/namespaces/ns/secrets")
    (ev,) = audit.read(tmp_path / "audit.log")
    assert ev["annotations"] == {"authorization.k8s.io/decision": "forbid"}
    assert ev["responseStatus"] == {"metadata": {}, "code": 403, "status": "Failure", "message": "no",
                                    "reason": "Forbidden"}
    assert (names.AUDIT_ID_HEADER.lower().encode(), ev["auditID"].encode()) in sent[0]["headers"]


def test_the_writer_rotates_and_the_reader_reads_oldest_first_since_a_time(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    log = audit.AuditLog(path, max_bytes=2000, backups=2)
    old = audit.timestamp(datetime.now(UTC) - timedelta(hours=2))
    for i in range(30):
        received = old if i < 5 else audit.timestamp()
        log.write(audit.event(verb="create", request_uri=f"/x/{i}", user=audit.user_info("u"), code=201,
                              received=received))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.log", "audit.log.1", "audit.log.2"]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in tmp_path.iterdir())
    assert all(p.stat().st_size <= 2000 for p in tmp_path.iterdir())
    uris = [ev["requestURI"] for ev in audit.read(path)]
    assert uris == sorted(uris, key=lambda u: int(u.rsplit("/", 1)[1])) and uris[-1] == "/x/29"
    with path.open("a") as f:
        f.write('{"cut short\n')
    recent = list(audit.read(path, since=datetime.now(UTC) - timedelta(hours=1)))
    assert recent and all(int(ev["requestURI"].rsplit("/", 1)[1]) >= 5 for ev in recent)


def test_a_trainjobs_end_is_the_controllers_status_update_naming_its_requester() -> None:
    tj = {"metadata": {"name": "j", "namespace": "team-a", "uid": "u-1", "resourceVersion": "42",
                       "annotations": {names.ANNOTATION_REQUESTER: "alice"}}}
    ev = audit.trainjob_finished(tj, names.FAILED, names.REASON_FAILED_JOBS)
    assert ev["verb"] == "update" and ev["stage"] == "ResponseComplete" and ev["level"] == "Metadata"
    assert ev["user"]["username"] == "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"
    assert ev["objectRef"] == {"resource": "trainjobs", "namespace": "team-a", "name": "j", "uid": "u-1",
                               "apiGroup": "trainer.kubeflow.org", "apiVersion": "v1alpha1", "resourceVersion": "42",
                               "subresource": "status"}
    assert ev["requestURI"] == f"{TRAINER}/namespaces/team-a/trainjobs/j/status"
    assert ev["annotations"] == {names.ANNOTATION_REQUESTER: "alice", names.AUDIT_ANNOTATION_CONDITION: "Failed",
                                 names.AUDIT_ANNOTATION_REASON: "FailedJobs"}
    assert audit.matches(ev, user="alice") and audit.matches(ev, user=ev["user"]["username"])
    assert not audit.matches(ev, user="bob") and not audit.matches(ev, user="alice", verb="create")
