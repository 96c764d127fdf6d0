"""`watch=true` streams: replay from a resourceVersion, initial state, filters, Table rows, timeouts."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx

CM = "/api/v1/namespaces/default/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def events(http: httpx.Client, path: str, count: int, headers: dict | None = None, **params: str) -> list[dict]:
    """The first `count` events of a watch (or fewer if the server ends the stream)."""
    out: list[dict] = []
    params = {"watch": "true", "timeoutSeconds": "10", **params}
    with http.stream("GET", path, params=params, headers=headers or {}) as resp:
        assert resp.status_code == 200
        for line in _lines(resp):
            out.append(json.loads(line))
            if len(out) == count:
                break
    return out


def _lines(resp: httpx.Response) -> Iterator[str]:
    for line in resp.iter_lines():
        if line.strip():
            yield line


def test_watch_replays_changes_after_resource_version(http: httpx.Client) -> None:
    start = http.get(CM).json()["metadata"]["resourceVersion"]
    n = f"w-{uuid.uuid4().hex[:8]}"
    http.post(CM, json={"metadata": {"name": n}, "data": {"a": "1"}})
    http.patch(f"{CM}/{n}", content='{"data":{"a":"2"}}', headers={"Content-Type": "application/merge-patch+json"})
    http.delete(f"{CM}/{n}")
    got = events(http, CM, 3, resourceVersion=start, fieldSelector=f"metadata.name={n}")
    assert [e["type"] for e in got] == ["ADDED", "MODIFIED", "DELETED"]
    assert got[1]["object"]["data"] == {"a": "2"}
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in got]
    assert rvs == sorted(rvs) and rvs[0] > int(start)


def test_watch_without_version_starts_with_current_state(http: httpx.Client) -> None:
    got = events(http, "/api/v1/namespaces", 3)
    assert {e["type"] for e in got} == {"ADDED"}
    assert {"default", "kube-system", "kubeflow-system"} == {e["object"]["metadata"]["name"] for e in got}


def test_watch_filters_by_label_and_namespace(http: httpx.Client) -> None:
    start = http.get(CM).json()["metadata"]["resourceVersion"]
    tag = uuid.uuid4().hex[:8]
    http.post("/api/v1/namespaces/kube-system/configmaps", json={"metadata": {"name": f"o-{tag}", "labels": {"t": tag}}})
    http.post(CM, json={"metadata": {"name": f"x-{tag}", "labels": {"t": "other"}}})
    http.post(CM, json={"metadata": {"name": f"y-{tag}", "labels": {"t": tag}}})
    got = events(http, CM, 1, resourceVersion=start, labelSelector=f"t={tag}")
    assert got[0]["object"]["metadata"]["name"] == f"y-{tag}"


def test_watch_live_event_arrives(http: httpx.Client, connect) -> None:  # type: ignore[no-untyped-def]
    start = http.get(CM).json()["metadata"]["resourceVersion"]
    n = f"live-{uuid.uuid4().hex[:8]}"
    params = {"watch": "true", "resourceVersion": start, "timeoutSeconds": "10", "fieldSelector": f"metadata.name={n}"}
    with connect() as other, http.stream("GET", CM, params=params) as resp:
        lines = _lines(resp)
        other.post(CM, json={"metadata": {"name": n}})
        assert json.loads(next(lines))["object"]["metadata"]["name"] == n


def test_watch_table_rows(http: httpx.Client) -> None:
    start = http.get(CM).json()["metadata"]["resourceVersion"]
    n = f"t-{uuid.uuid4().hex[:8]}"
    http.post(CM, json={"metadata": {"name": n}, "data": {"a": "1", "b": "2"}})
    (event,) = events(http, CM, 1, headers={"Accept": TABLE}, resourceVersion=start,
                      fieldSelector=f"metadata.name={n}")
    table = event["object"]
    assert event["type"] == "ADDED" and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == [n, 2]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_watch_ends_after_timeout_seconds(http: httpx.Client) -> None:
    params = {"watch": "1", "timeoutSeconds": "1", "resourceVersion": http.get(CM).json()["metadata"]["resourceVersion"],
              "fieldSelector": "metadata.name=never-created"}
    with http.stream("GET", CM, params=params) as resp:
        assert list(_lines(resp)) == []  # the server closed the stream by itself
