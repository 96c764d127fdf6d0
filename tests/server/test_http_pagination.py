"""List pagination (`limit`/`continue`) as kube-apiserver serves it, through the `kubernetes` client,
kubectl and plain HTTP: chunks in key order, one snapshot per list, kube's 400 and 410 answers."""

from __future__ import annotations

import base64
import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from mpijob.store.home import Home
from mpijob.store.server_process import ServerInfo

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
KUBE_INCONSISTENT_CONTINUE = (  # staging/src/k8s.io/apiserver/pkg/storage/etcd3/errors.go, word for word
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


def make_namespace(http: httpx.Client, *names: str) -> str:
    """A fresh namespace holding a ConfigMap for each of `names` (data `v: "1"`)."""
    ns = f"pg-{uuid.uuid4().hex[:8]}"
    assert http.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    # kube's root-ca-cert-publisher puts one ConfigMap in every namespace; these tests count their own
    assert http.delete(f"{cms(ns)}/kube-root-ca.crt").status_code == 200
    for n in names:
        assert http.post(cms(ns), json={"metadata": {"name": n}, "data": {"v": "1"}}).status_code == 201
    return ns


def cms(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/configmaps"


def pages(http: httpx.Client, path: str, headers: dict[str, str] | None = None, **params: str) -> list[dict]:
    """Every chunk of a list, following `metadata.continue` until the server sends none."""
    out = [http.get(path, params=params, headers=headers or {}).json()]
    while token := out[-1]["metadata"].get("continue"):
        resp = http.get(path, params={**params, "continue": token}, headers=headers or {})
        assert resp.status_code == 200, resp.text
        out.append(resp.json())
    return out


def names(page: dict) -> list[str]:
    return [i["metadata"]["name"] for i in page["items"]]


def encoded(token: object) -> str:
    """A token built by hand, base64url without padding as kube encodes them."""
    return base64.urlsafe_b64encode(json.dumps(token).encode()).rstrip(b"=").decode()


def assert_status(resp: httpx.Response, code: int, reason: str) -> dict:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert body["kind"] == "Status" and body["reason"] == reason and body["code"] == code
    return body


@pytest.fixture()
def core(server: ServerInfo) -> Iterator[k8s.CoreV1Api]:
    api = k8s_config.new_client_from_config(config_file=str(server.kubeconfig))
    with api:
        yield k8s.CoreV1Api(api)


def test_kubernetes_client_pages_every_object_once(http: httpx.Client, core: k8s.CoreV1Api) -> None:
    want = [f"cm-{i}" for i in range(7)]
    ns = make_namespace(http, *reversed(want))  # created in reverse: chunks follow names, not creation
    got, remaining, token = [], [], None
    while True:
        chunk = core.list_namespaced_config_map(ns, limit=3, _continue=token)
        got += [i.metadata.name for i in chunk.items]
        remaining.append(chunk.metadata.remaining_item_count)
        token = chunk.metadata._continue
        if not token:
            break
    assert got == want
    assert remaining == [4, 1, None]
    assert core.list_namespaced_config_map(ns, limit=7).metadata._continue is None  # exactly full: no more


def test_pages_across_namespaces_and_cluster_scope(http: httpx.Client, core: k8s.CoreV1Api) -> None:
    make_namespace(http, "a", "b")
    make_namespace(http, "a", "c")
    whole = core.list_config_map_for_all_namespaces()
    got, token = [], None
    while True:
        chunk = core.list_config_map_for_all_namespaces(limit=2, _continue=token)
        assert chunk.metadata.resource_version == whole.metadata.resource_version  # one snapshot
        got += [(i.metadata.namespace, i.metadata.name) for i in chunk.items]
        if not (token := chunk.metadata._continue):
            break
    assert got == sorted((i.metadata.namespace, i.metadata.name) for i in whole.items)
    namespaces = [n for p in pages(http, "/api/v1/namespaces", limit="1") for n in names(p)]
    assert namespaces == sorted(names(http.get("/api/v1/namespaces").json()))


def test_kubectl_chunk_size_lists_everything(http: httpx.Client, kubectl: Callable[..., Any]) -> None:
    want = [f"cm-{i}" for i in range(5)]
    ns = make_namespace(http, *want)
    proc = kubectl("get", "configmaps", "-n", ns, "--chunk-size=2", "--no-headers", "-v=6")
    assert [line.split()[0] for line in proc.stdout.splitlines()] == want
    requests = [line for line in proc.stderr.splitlines() if f"/namespaces/{ns}/configmaps?" in line]
    assert len(requests) == 3 and all("limit=2" in r for r in requests)
    assert sum("continue=" in r for r in requests) == 2


def test_table_chunks_carry_continue(http: httpx.Client) -> None:
    ns = make_namespace(http, "a", "b", "c")
    chunks = pages(http, cms(ns), headers={"Accept": TABLE}, limit="2")
    assert [c["kind"] for c in chunks] == ["Table", "Table"]
    assert [[r["cells"][0] for r in c["rows"]] for c in chunks] == [["a", "b"], ["c"]]
    assert chunks[0]["metadata"]["remainingItemCount"] == 1 and "continue" not in chunks[1]["metadata"]


def test_continued_list_is_the_first_chunks_snapshot(http: httpx.Client) -> None:
    ns = make_namespace(http, "cm-0", "cm-1", "cm-2", "cm-3", "cm-4", "cm-5")
    first = http.get(cms(ns), params={"limit": "2"}).json()
    assert names(first) == ["cm-0", "cm-1"] and first["metadata"]["remainingItemCount"] == 4
    rv = first["metadata"]["resourceVersion"]
    for n in ("cm-00", "cm-2a"):  # created after the first chunk, before and after where it stopped
        http.post(cms(ns), json={"metadata": {"name": n}, "data": {"v": "1"}})
    http.delete(f"{cms(ns)}/cm-3")
    http.patch(f"{cms(ns)}/cm-4", content='{"data":{"v":"2"}}',
               headers={"Content-Type": "application/merge-patch+json"})
    rest, token = [], first["metadata"]["continue"]
    while token:
        chunk = http.get(cms(ns), params={"limit": "2", "continue": token}).json()
        assert chunk["metadata"]["resourceVersion"] == rv
        rest += chunk["items"]
        token = chunk["metadata"].get("continue")
    assert [(i["metadata"]["name"], i["data"]["v"]) for i in rest] == [
        ("cm-2", "1"), ("cm-3", "1"), ("cm-4", "1"), ("cm-5", "1")]
    now = http.get(cms(ns)).json()
    assert [(i["metadata"]["name"], i["data"]["v"]) for i in now["items"]] == [
        ("cm-0", "1"), ("cm-00", "1"), ("cm-1", "1"), ("cm-2", "1"), ("cm-2a", "1"), ("cm-4", "2"), ("cm-5", "1")]


def test_limit_with_selectors(http: httpx.Client) -> None:
    ns = make_namespace(http)
    for i in range(6):
        body = {"metadata": {"name": f"cm-{i}", "labels": {"pick": "yes" if i % 2 else "no"}}}
        assert http.post(cms(ns), json=body).status_code == 201
    chunks = pages(http, cms(ns), limit="2", labelSelector="pick=yes")
    assert [names(c) for c in chunks] == [["cm-1", "cm-3"], ["cm-5"]]
    assert all("remainingItemCount" not in c["metadata"] for c in chunks)  # unknown with a selector, as in kube
    chunks = pages(http, cms(ns), limit="3", fieldSelector="metadata.name!=cm-0")
    assert [names(c) for c in chunks] == [["cm-1", "cm-2", "cm-3"], ["cm-4", "cm-5"]]
    assert "remainingItemCount" not in chunks[0]["metadata"]


def test_bad_limit_and_continue_are_400(http: httpx.Client) -> None:
    ns = make_namespace(http, "a", "b")
    for limit in ("-1", "two"):
        assert "limit" in assert_status(http.get(cms(ns), params={"limit": limit}), 400, "BadRequest")["message"]
    whole = http.get(cms(ns), params={"limit": "0"}).json()
    assert names(whole) == ["a", "b"] and "continue" not in whole["metadata"]

    for token, detail in [
        ("garbage!", ""),
        (encoded({"v": "meta.k8s.io/v2", "rv": 5, "start": "a\x00"}), "server does not recognize this encoded version"),
        (encoded({"v": "meta.k8s.io/v1", "rv": 0, "start": "a\x00"}), "incorrect encoded start resourceVersion"),
        (encoded({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}), "encoded start key empty"),
        (encoded({"v": "meta.k8s.io/v1", "rv": 10**12, "start": "a\x00"}), "newer than"),
    ]:
        message = assert_status(http.get(cms(ns), params={"continue": token}), 400, "BadRequest")["message"]
        assert message.startswith("invalid continue token: continue key is not valid") and detail in message

    token = http.get(cms(ns), params={"limit": "1"}).json()["metadata"]["continue"]
    body = assert_status(http.get(cms(ns), params={"continue": token, "resourceVersion": "5"}), 400, "BadRequest")
    assert body["message"] == "specifying resource version is not allowed when using continue"
    assert names(http.get(cms(ns), params={"continue": token, "resourceVersion": "0"}).json()) == ["b"]


def test_watch_ignores_limit(http: httpx.Client) -> None:
    ns = make_namespace(http)
    start = http.get(cms(ns)).json()["metadata"]["resourceVersion"]
    for n in ("a", "b", "c"):
        http.post(cms(ns), json={"metadata": {"name": n}})
    params = {"watch": "true", "resourceVersion": start, "limit": "1", "timeoutSeconds": "1"}
    with http.stream("GET", cms(ns), params=params) as resp:
        got = [json.loads(line)["object"]["metadata"]["name"] for line in resp.iter_lines() if line.strip()]
    assert got == ["a", "b", "c"]


# -- expiry: the store keeps a bounded change log (KEEP_CHANGES) and prunes it as it writes; here the
# -- same prune is done by hand on a private server, instead of 20,000 writes.


@pytest.fixture(scope="module")
def private(servers: Any) -> ServerInfo:
    return servers.start("pagination", controllers=False)


@pytest.fixture()
def private_http(private: ServerInfo, connect: Callable[..., httpx.Client]) -> Iterator[httpx.Client]:
    with connect(private) as c:
        yield c


def prune(info: ServerInfo, up_to: int) -> None:
    """What `Store._write` does every 1000 writes: drop the change log up to `up_to`."""
    db = sqlite3.connect(Home(info.home).db)
    try:
        with db:
            db.execute("DELETE FROM changes WHERE rv <= ?", (up_to,))
    finally:
        db.close()


def rv_of(resp: httpx.Response) -> int:
    assert resp.status_code in (200, 201), resp.text
    return int(resp.json()["metadata"]["resourceVersion"])


def test_token_older_than_the_change_log_is_410_with_a_way_on(private: ServerInfo, private_http: httpx.Client) -> None:
    http = private_http
    ns = make_namespace(http, "a", "b", "c")
    first = http.get(cms(ns), params={"limit": "1"}).json()
    at = int(first["metadata"]["resourceVersion"])
    rv_of(http.post(cms(ns), json={"metadata": {"name": "b2"}}))
    rv_of(http.post(cms(ns), json={"metadata": {"name": "d"}}))
    prune(private, at + 1)  # the log now starts after the first chunk's version: its snapshot is gone
    body = assert_status(http.get(cms(ns), params={"limit": "1", "continue": first["metadata"]["continue"]}),
                         410, "Expired")
    assert body["message"] == KUBE_INCONSISTENT_CONTINUE
    rest = pages(http, cms(ns), limit="2", **{"continue": body["metadata"]["continue"]})
    assert [n for p in rest for n in names(p)] == ["b", "b2", "c", "d"]  # the remainder as it is now
    assert int(rest[0]["metadata"]["resourceVersion"]) > at


def test_token_whose_objects_old_versions_are_pruned_is_410(private: ServerInfo, private_http: httpx.Client) -> None:
    http = private_http
    ns = make_namespace(http, "a")
    b_created = rv_of(http.post(cms(ns), json={"metadata": {"name": "b"}, "data": {"v": "1"}}))
    http.post(cms(ns), json={"metadata": {"name": "c"}, "data": {"v": "k"}})
    token = http.get(cms(ns), params={"limit": "1"}).json()["metadata"]["continue"]
    http.patch(f"{cms(ns)}/b", content='{"data":{"v":"2"}}', headers={"Content-Type": "application/merge-patch+json"})
    kept = http.get(cms(ns), params={"continue": token}).json()["items"]
    assert [(i["metadata"]["name"], i["data"]["v"]) for i in kept] == [("b", "1"), ("c", "k")]  # b as it was
    prune(private, b_created)  # the log still reaches the token's version, but not b's version at it
    assert_status(http.get(cms(ns), params={"continue": token}), 410, "Expired")
