"""`pods/{name}/log`: reads, options, container choice, and follow ending with the container."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from mpijob.store.logs import LogStore

PODS = "/api/v1/namespaces/default/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}


def make_pod(http: httpx.Client, server, containers: tuple[str, ...] = ("node",)) -> str:  # type: ignore[no-untyped-def]
    name = f"logs-{uuid.uuid4().hex[:8]}"
    spec = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    assert http.post(PODS, json={"metadata": {"name": name}, "spec": spec}).status_code == 201
    return name


def write(server, pod: str, container: str, data: bytes) -> None:  # type: ignore[no-untyped-def]
    w = LogStore(server.home / "logs").writer("default", pod, container)
    w.write(data)
    w.close()


def terminate(http: httpx.Client, pod: str, container: str = "node") -> None:
    status = {"status": {"phase": "Succeeded", "containerStatuses": [
        {"name": container, "ready": False, "restartCount": 0, "image": "busybox", "imageID": "",
         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}
    assert http.patch(f"{PODS}/{pod}/status", content=json.dumps(status), headers=MERGE).status_code == 200


def test_read_tail_timestamps_and_limit(http: httpx.Client, server) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod(http, server)
    write(server, pod, "node", b"one\ntwo\nthree\n")
    resp = http.get(f"{PODS}/{pod}/log")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
    assert resp.text == "one\ntwo\nthree\n"
    assert http.get(f"{PODS}/{pod}/log", params={"tailLines": "1"}).text == "three\n"
    stamped = http.get(f"{PODS}/{pod}/log", params={"timestamps": "True", "container": "node"}).text.splitlines()
    assert stamped[0].endswith(" one") and stamped[0][:4].isdigit() and "T" in stamped[0].split(" ")[0]
    assert http.get(f"{PODS}/{pod}/log", params={"limitBytes": "5"}).text == "one\nt"


def test_container_choice(http: httpx.Client, server) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod(http, server, ("a", "b"))
    write(server, pod, "b", b"from b\n")
    assert http.get(f"{PODS}/{pod}/log", params={"container": "b"}).text == "from b\n"
    unknown = http.get(f"{PODS}/{pod}/log", params={"container": "zzz"})
    assert unknown.status_code == 400 and unknown.json()["reason"] == "BadRequest"
    assert "zzz" in unknown.json()["message"] and "a b" in unknown.json()["message"]
    ambiguous = http.get(f"{PODS}/{pod}/log")
    assert ambiguous.status_code == 400 and "container name must be specified" in ambiguous.json()["message"]


def test_bad_boolean_is_400_and_missing_pod_is_404(http: httpx.Client, server) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod(http, server)
    resp = http.get(f"{PODS}/{pod}/log", params={"follow": "yes"})
    assert resp.status_code == 400 and "follow" in resp.json()["message"]
    assert http.get(f"{PODS}/nope-{pod}/log").status_code == 404


@pytest.mark.parametrize("follow", ["true", "True", "1"])
def test_follow_ends_when_container_terminates(http: httpx.Client, server, connect, follow: str) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod(http, server)
    write(server, pod, "node", b"first\n")
    with connect() as other, http.stream("GET", f"{PODS}/{pod}/log", params={"follow": follow}) as resp:
        chunks = resp.iter_text()
        received = next(chunks)
        assert received.startswith("first")
        write(server, pod, "node", b"last\n")
        terminate(other, pod)
        received += "".join(chunks)  # returns only because the server ended the stream
    assert received == "first\nlast\n"


def test_follow_ends_when_pod_is_deleted(http: httpx.Client, server, connect) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod(http, server)
    write(server, pod, "node", b"hello\n")
    with connect() as other, http.stream("GET", f"{PODS}/{pod}/log", params={"follow": "true"}) as resp:
        chunks = resp.iter_text()
        assert next(chunks).startswith("hello")
        assert other.delete(f"{PODS}/{pod}").status_code == 200
        assert "".join(chunks) == ""
