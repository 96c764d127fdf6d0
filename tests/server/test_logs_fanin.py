"""`GET /dashboard/api/namespaces/NS/logs`: many pods' logs followed over one connection, each pod
authorized as its own `pods/log` request, each stream ending with its container (mpijob/server/routes/logfanin.py).

The pods here are objects on a server without controllers; the tests write their logs as a pod's
supervisor would, and end them by setting their status. Every read is bounded by the client's timeout."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from mpijob.api import names
from mpijob.api.trainer.mpi_output import RANKS_HEADER
from mpijob.server.routes.logfanin import MAX_PODS
from mpijob.store.logs import LogStore
from mpijob.store.server_process import ServerInfo

RBAC = "rbac.authorization.k8s.io"
MERGE = {"Content-Type": "application/merge-patch+json"}


def logs_url(namespace: str) -> str:
    return f"{names.DASHBOARD_API}/namespaces/{namespace}/logs"


def pods_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


def make_pod(http: httpx.Client, namespace: str, containers: tuple[str, ...] = (names.CONTAINER,)) -> str:
    name = f"mux-{uuid.uuid4().hex[:8]}"
    spec = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    r = http.post(pods_path(namespace), json={"metadata": {"name": name}, "spec": spec})
    assert r.status_code == 201, r.text
    return name


def write(server: ServerInfo, namespace: str, pod: str, data: bytes, container: str = names.CONTAINER) -> None:
    w = LogStore(server.home / "logs").writer(namespace, pod, container)
    w.write(data)
    w.close()


def terminate(http: httpx.Client, namespace: str, pod: str) -> None:
    status = {"status": {"phase": "Succeeded", "containerStatuses": [
        {"name": names.CONTAINER, "ready": False, "restartCount": 0, "image": "busybox", "imageID": "",
         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}
    r = http.patch(f"{pods_path(namespace)}/{pod}/status", content=json.dumps(status), headers=MERGE)
    assert r.status_code == 200, r.text


def texts(event: dict[str, Any]) -> list[str]:
    return [line.split(" ", 1)[1] for line in event["lines"]]  # after the timestamp


class Events:
    """The answer's events, read one by one (each read bounded by the client's timeout)."""

    def __init__(self, resp: httpx.Response) -> None:
        self.resp, self._lines = resp, resp.iter_lines()

    def next(self) -> dict[str, Any]:
        while not (line := next(self._lines)):
            pass
        return dict(json.loads(line))

    def until(self, want: Callable[[list[dict[str, Any]]], bool], most: int = 50) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        while not want(seen):
            assert len(seen) < most, seen
            seen.append(self.next())
        return seen

    def rest(self) -> list[dict[str, Any]]:
        """What is left; returns only because the server ended the answer."""
        return [json.loads(line) for line in self._lines if line]


@pytest.fixture()
def namespace(http: httpx.Client) -> Iterator[str]:
    ns = f"mux-{uuid.uuid4().hex[:6]}"
    assert http.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    yield ns
    http.delete(f"/api/v1/namespaces/{ns}")


def test_every_pods_log_follows_live_over_one_answer_until_each_ends(
        http: httpx.Client, connect: Callable[..., httpx.Client], server: ServerInfo, namespace: str) -> None:
    launcher, node, replaced = (make_pod(http, namespace) for _ in range(3))
    write(server, namespace, launcher, b"launcher one\nlauncher two\n")
    write(server, namespace, node, b"sshd: Server listening on 0.0.0.0 port 2222.\n")
    params = [("pod", launcher), ("pod", f"{node}:0"), ("pod", f"{replaced}:0"), ("timestamps", "true")]
    with connect() as other, http.stream("GET", logs_url(namespace), params=params,
                                         headers={RANKS_HEADER: "true"}) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("application/json")
        assert resp.headers[RANKS_HEADER] == "true"
        events = Events(resp)
        first = events.until(lambda seen: len(seen) == 2)
        assert {(e["stream"], e["type"]) for e in first} == {(0, "LINES"), (1, "LINES")}
        by_stream = {e["stream"]: e for e in first}
        assert texts(by_stream[0]) == ["- launcher one", "- launcher two"]  # `-`: no rank wrote it
        assert texts(by_stream[1]) == ["- sshd: Server listening on 0.0.0.0 port 2222."]

        # a node's line while its pod runs arrives on the same answer, tagged with its stream
        write(server, namespace, node, b"Accepted publickey for mpiuser\n")
        (live,) = events.until(lambda seen: len(seen) == 1)
        assert (live["stream"], live["type"], texts(live)) == (1, "LINES", ["- Accepted publickey for mpiuser"])

        # a node ends: its stream ends, after its last line; the others go on
        write(server, namespace, node, b"node's last line\n")
        terminate(other, namespace, node)
        ended = events.until(lambda seen: bool(seen) and seen[-1]["type"] == "END")
        assert [(e["stream"], e["type"]) for e in ended] == [(1, "LINES"), (1, "END")]
        assert texts(ended[0]) == ["- node's last line"]

        # a pod deleted and made again under its name is another pod: the old stream ends
        assert other.delete(f"{pods_path(namespace)}/{replaced}").status_code == 200
        r = other.post(pods_path(namespace), json={"metadata": {"name": replaced}, "spec": {
            "containers": [{"name": names.CONTAINER, "image": "busybox"}]}})
        assert r.status_code == 201, r.text
        assert events.until(lambda seen: len(seen) == 1) == [{"stream": 2, "type": "END"}]

        write(server, namespace, launcher, b"launcher three\n")
        terminate(other, namespace, launcher)
        rest = events.rest()  # returns only because every stream has ended
    assert [(e["stream"], e["type"]) for e in rest] == [(0, "LINES"), (0, "END")]
    assert texts(rest[0]) == ["- launcher three"]


def test_a_stream_resumes_after_the_lines_the_page_has(http: httpx.Client, server: ServerInfo,
                                                      namespace: str) -> None:
    pod = make_pod(http, namespace)
    write(server, namespace, pod, b"one\ntwo\nthree\n")
    terminate(http, namespace, pod)
    for skip, want in (("0", ["one", "two", "three"]), ("2", ["three"]), ("9", [])):
        with http.stream("GET", logs_url(namespace), params={"pod": f"{pod}:{skip}"}) as resp:
            events = Events(resp).rest()
        assert [line for e in events if e["type"] == "LINES" for line in e["lines"]] == want
        assert events[-1] == {"stream": 0, "type": "END"}


def test_each_pod_is_authorized_as_its_own_log_request(
        http: httpx.Client, server: ServerInfo, new_user: Callable[..., httpx.Client], namespace: str) -> None:
    mine, secret, two = make_pod(http, namespace), make_pod(http, namespace), make_pod(http, namespace, ("a", "b"))
    for pod in (mine, secret):
        write(server, namespace, pod, f"{pod} says hi\n".encode())
        terminate(http, namespace, pod)
    bob = new_user()
    role = {"metadata": {"name": "one-pods-log"}, "rules": [
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"], "resourceNames": [mine, two]}]}
    assert http.post(f"/apis/{RBAC}/v1/namespaces/{namespace}/roles", json=role).status_code == 201
    binding = {"metadata": {"name": "bob-one-pods-log"},
               "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "one-pods-log"},
               "subjects": [{"kind": "User", "name": bob.user, "apiGroup": RBAC}]}  # type: ignore[attr-defined]
    assert http.post(f"/apis/{RBAC}/v1/namespaces/{namespace}/rolebindings", json=binding).status_code == 201

    pods = [mine, secret, "missing-pod", two]
    with bob.stream("GET", logs_url(namespace), params=[("pod", p) for p in pods]) as resp:
        assert resp.status_code == 200
        events = Events(resp).rest()
    errors = {e["stream"]: e["object"] for e in events if e["type"] == "ERROR"}
    assert sorted(errors) == [1, 2, 3]
    assert errors[1]["code"] == 403 and errors[1]["reason"] == "Forbidden"  # refused, not told whether it exists
    assert f'User "{bob.user}" cannot get resource "pods/log"' in errors[1]["message"]  # type: ignore[attr-defined]
    assert errors[2]["code"] == 403  # authorized before it is looked up, as kube-apiserver does
    assert errors[3]["code"] == 400 and "a container name must be specified" in errors[3]["message"]
    assert [(e["stream"], e["type"]) for e in events if e["type"] != "ERROR"] == [(0, "LINES"), (0, "END")]
    assert [e["lines"] for e in events if e["type"] == "LINES"] == [[f"{mine} says hi"]]

    # the admin may read them all; a missing pod is then a 404, as its own request's
    with http.stream("GET", logs_url(namespace), params=[("pod", p) for p in pods[:3]]) as resp:
        events = Events(resp).rest()
    assert [(e["stream"], e["type"]) for e in events if e["type"] == "END"] == [(0, "END"), (1, "END")]
    (missing,) = [e for e in events if e["type"] == "ERROR"]
    assert missing["stream"] == 2 and missing["object"]["code"] == 404

    # a stranger is refused every pod of a namespace they may not read, one stream at a time
    stranger = new_user()
    with stranger.stream("GET", logs_url(namespace), params=[("pod", mine), ("pod", secret)]) as resp:
        events = Events(resp).rest()
    assert [(e["stream"], e["type"], e["object"]["code"]) for e in events] == [(0, "ERROR", 403), (1, "ERROR", 403)]


@pytest.mark.parametrize("params, why", [
    ([], "give 1 to"),
    ([("pod", f"p{i}") for i in range(MAX_PODS + 1)], f"give 1 to {MAX_PODS}"),
    ([("pod", "Bad_Name")], "is not NAME or NAME:LINES"),
    ([("pod", "ok:-1")], "is not NAME or NAME:LINES"),
    ([("pod", "ok:x")], "invalid value for query parameter pod"),
    ([("pod", "ok"), ("timestamps", "maybe")], "timestamps"),
])
def test_a_malformed_request_is_refused_whole(http: httpx.Client, params: list[tuple[str, str]], why: str) -> None:
    r = http.get(logs_url("default"), params=params)
    assert r.status_code == 400 and why in r.json()["message"], r.text


def test_anonymous_is_refused(connect: Callable[..., httpx.Client]) -> None:
    with connect(token="") as anonymous:
        assert anonymous.get(logs_url("default"), params={"pod": "any"}).status_code == 401
