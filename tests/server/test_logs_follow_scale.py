"""A 100-node job's logs, every pod followed at once (101 pods): by `follow_merged`, as `mpijob logs -f`
runs it (a stream and a connection per pod, and the polls for new pods beside them), and by the
dashboard's one answer. Under httpx's default cap of 100 connections the CLI printed nothing and failed
after 30 s: the 101st stream and the poll waited for a connection that never came free.

The pods are objects on a server without controllers; the test writes their logs and ends them."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest
from mpijob.api import names
from mpijob.client.config import choose_cluster
from mpijob.client.connection import Connection
from mpijob.client.logs import LogLine, follow_merged
from mpijob.store.logs import LogStore
from mpijob.store.server_process import ServerInfo

PODS = 101  # a 100-node job and its launcher
JOB = "scale"
WAIT = 60.0  # seconds any step may take on a loaded 2-core machine


@pytest.fixture()
def job_pods(http: httpx.Client) -> Iterator[tuple[str, list[str]]]:
    ns = f"scale-{uuid.uuid4().hex[:6]}"
    assert http.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    pods = [f"{JOB}-launcher-0-0-x"] + [f"{JOB}-node-0-{i}-x" for i in range(PODS - 1)]
    for pod in pods:
        r = http.post(f"/api/v1/namespaces/{ns}/pods", json={
            "metadata": {"name": pod, "labels": {names.LABEL_JOBSET_NAME: JOB}},
            "spec": {"containers": [{"name": names.CONTAINER, "image": "busybox"}]}})
        assert r.status_code == 201, r.text
    yield ns, pods
    http.delete(f"/api/v1/namespaces/{ns}")


def _write(server: ServerInfo, ns: str, pods: list[str], what: str) -> None:
    store = LogStore(server.home / "logs")
    for pod in pods:
        w = store.writer(ns, pod, names.CONTAINER)
        w.write(f"{pod} {what}\n".encode())
        w.close()


def _end(http: httpx.Client, ns: str, pods: list[str]) -> None:
    status = {"status": {"phase": "Succeeded", "containerStatuses": [{
        "name": names.CONTAINER, "ready": False, "restartCount": 0, "image": "busybox", "imageID": "",
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}
    for pod in pods:
        r = http.patch(f"/api/v1/namespaces/{ns}/pods/{pod}/status", content=json.dumps(status),
                       headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text


def _wait(seen: dict[str, set[str]], what: str, count: int, lock: threading.Lock, done: threading.Event) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and not done.is_set():
        with lock:
            if len(seen.get(what, ())) >= count:
                return
        time.sleep(0.05)
    with lock:
        got = len(seen.get(what, ()))
    assert got >= count, f"{got} of {count} pods' {what!r} lines within {WAIT:g} s"


def test_logs_follow_follows_every_pod_of_a_hundred_node_job(
        http: httpx.Client, server: ServerInfo, job_pods: tuple[str, list[str]]) -> None:
    ns, pods = job_pods
    _write(server, ns, pods, "first")
    seen: dict[str, set[str]] = {}
    lock, ended, done = threading.Lock(), threading.Event(), threading.Event()
    failures: list[str] = []

    def follow() -> None:
        with Connection(choose_cluster(str(server.kubeconfig), None, ns, start=False)) as conn:
            def list_pods() -> list[str]:  # as the CLI lists them: a request beside the open streams
                return [p["metadata"]["name"] for p in conn.job_pods(JOB)]

            try:
                line: LogLine
                for line in follow_merged(conn, list_pods, ended.is_set,
                                          on_error=lambda pod, exc: failures.append(f"{pod}: {exc}")):
                    pod, _, what = line.text.partition(" ")
                    with lock:
                        seen.setdefault(what, set()).add(pod)
            except Exception as exc:  # noqa: BLE001 — the test reports it
                failures.append(f"follow_merged: {exc!r}")
            finally:
                done.set()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    _wait(seen, "first", PODS, lock, done)
    _write(server, ns, pods, "live")  # every pod prints while it runs
    _wait(seen, "live", PODS, lock, done)
    _end(http, ns, pods)
    ended.set()
    thread.join(WAIT)
    assert not thread.is_alive(), "follow_merged did not end after every pod and the job had"
    assert failures == []


def test_the_dashboard_follows_every_pod_of_a_hundred_node_job_on_one_answer(
        http: httpx.Client, connect: Callable[..., httpx.Client], server: ServerInfo,
        job_pods: tuple[str, list[str]]) -> None:
    ns, pods = job_pods
    _write(server, ns, pods, "first")
    seen: dict[str, set[str]] = {}
    ends = 0
    with connect() as other, http.stream("GET", f"{names.DASHBOARD_API}/namespaces/{ns}/logs",
                                         params=[("pod", p) for p in pods]) as resp:
        assert resp.status_code == 200
        for raw in resp.iter_lines():
            event = json.loads(raw)
            for line in event.get("lines", []):
                pod, _, what = line.partition(" ")
                assert pod == pods[event["stream"]], event
                seen.setdefault(what, set()).add(pod)
                if what == "first" and len(seen["first"]) == PODS:
                    _write(server, ns, pods, "live")
                if what == "live" and len(seen["live"]) == PODS:
                    _end(other, ns, pods)
            ends += event["type"] == "END"
    assert {k: len(v) for k, v in seen.items()} == {"first": PODS, "live": PODS}
    assert ends == PODS
