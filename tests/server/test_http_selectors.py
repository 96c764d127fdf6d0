"""Label selectors (equality- and set-based) and field selectors on list."""

from __future__ import annotations

import uuid

import httpx
import pytest

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def labelled(connect) -> str:  # type: ignore[no-untyped-def]
    """Configmaps tagged with a unique `set` label: a(tier=web,env=prod) b(tier=db,env=dev) c(tier=web)."""
    tag = uuid.uuid4().hex[:8]
    with connect() as http:
        for n, labels in (("a", {"tier": "web", "env": "prod"}), ("b", {"tier": "db", "env": "dev"}),
                          ("c", {"tier": "web"})):
            body = {"metadata": {"name": f"{tag}-{n}", "labels": {"set": tag, **labels}}, "data": {}}
            assert http.post(CM, json=body).status_code == 201
    return tag


def names(http: httpx.Client, tag: str, selector: str) -> set[str]:
    resp = http.get(CM, params={"labelSelector": f"set={tag},{selector}"})
    assert resp.status_code == 200, resp.text
    return {i["metadata"]["name"].split("-", 1)[1] for i in resp.json()["items"]}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=web", {"a", "c"}),
        ("tier==web", {"a", "c"}),
        ("tier!=web", {"b"}),
        ("tier in (db, web)", {"a", "b", "c"}),
        ("env in (prod)", {"a"}),
        ("env notin (prod)", {"b", "c"}),
        ("!env", {"c"}),
        ("env", {"a", "b"}),
        ("tier=web,env", {"a"}),
    ],
)
def test_label_selectors(http: httpx.Client, labelled: str, selector: str, expected: set[str]) -> None:
    assert names(http, labelled, selector) == expected


def test_bad_label_selector_is_400(http: httpx.Client) -> None:
    resp = http.get(CM, params={"labelSelector": "a in b"})
    assert resp.status_code == 400 and resp.json()["reason"] == "BadRequest"


def test_field_selectors(http: httpx.Client, labelled: str) -> None:
    got = http.get(CM, params={"fieldSelector": f"metadata.name={labelled}-b"}).json()["items"]
    assert [i["metadata"]["name"] for i in got] == [f"{labelled}-b"]
    rest = http.get(CM, params={"labelSelector": f"set={labelled}", "fieldSelector": f"metadata.name!={labelled}-b"})
    assert {i["metadata"]["name"] for i in rest.json()["items"]} == {f"{labelled}-a", f"{labelled}-c"}
    all_ns = http.get("/api/v1/configmaps", params={"fieldSelector": "metadata.namespace=kubeflow-system"})
    assert {i["metadata"]["namespace"] for i in all_ns.json()["items"]} == {"kubeflow-system"}


def test_pod_phase_field_selector(http: httpx.Client) -> None:
    tag = uuid.uuid4().hex[:8]
    for n, phase in (("run", "Running"), ("done", "Succeeded")):
        pod = {"metadata": {"name": f"{tag}-{n}", "labels": {"t": tag}},
               "spec": {"containers": [{"name": "c", "image": "i"}]}}
        assert http.post(PODS, json=pod).status_code == 201
        http.patch(f"{PODS}/{tag}-{n}/status", content=f'{{"status":{{"phase":"{phase}"}}}}',
                   headers={"Content-Type": "application/merge-patch+json"})
    got = http.get(PODS, params={"labelSelector": f"t={tag}", "fieldSelector": "status.phase=Running"}).json()
    assert [p["metadata"]["name"] for p in got["items"]] == [f"{tag}-run"]
