"""The store's create-if-absent (`ensure`), and where a job's working directory is (`Home.job_dir`)."""

from __future__ import annotations

from pathlib import Path

from mpijob.api.core.resources import CONFIGMAPS
from mpijob.store.home import Home
from mpijob.store.objects import Store


def test_ensure_creates_once_and_then_leaves_the_object_as_it_is(tmp_path: Path) -> None:
    store = Store(tmp_path / "cluster.db")
    try:
        first = store.ensure(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}, "data": {"k": "1"}})
        again = store.ensure(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}, "data": {"k": "2"}})
        assert again == first and again["data"] == {"k": "1"}
        assert store.get(CONFIGMAPS, "ns", "c")["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    finally:
        store.close()


def test_a_job_directory_is_named_by_namespace_name_and_uid(tmp_path: Path) -> None:
    home = Home(tmp_path)
    assert home.job_dir("ns", "pi", "0123456789abcdef") == tmp_path / "jobs" / "ns_pi_01234567"


def test_chunks_merge_what_is_unchanged_with_the_first_chunks_versions_of_what_changed(tmp_path: Path) -> None:
    """A continued list across namespaces: objects unchanged since the first chunk come from the objects in key
    order, those changed or deleted since at their version of then, merged in key order; objects made since
    are not there; `remaining` counts both kinds."""
    store = Store(tmp_path / "cluster.db")
    try:
        for ns in ("a", "b"):
            for i in range(5):
                store.create(CONFIGMAPS, {"metadata": {"name": f"cm-{i}", "namespace": ns}, "data": {"v": "1"}})
        first = store.list_page(CONFIGMAPS, None, limit=3)
        assert [_key(o) for o in first.items] == ["a/cm-0", "a/cm-1", "a/cm-2"] and first.remaining == 7
        changed = store.get(CONFIGMAPS, "a", "cm-3")
        changed["data"] = {"v": "2"}
        store.update(CONFIGMAPS, changed)
        store.delete(CONFIGMAPS, "b", "cm-0")
        store.delete(CONFIGMAPS, "b", "cm-1")
        store.create(CONFIGMAPS, {"metadata": {"name": "cm-9", "namespace": "a"}, "data": {"v": "1"}})
        got, remaining, token = [], [], first.continue_token
        while token:
            page = store.list_page(CONFIGMAPS, None, limit=3, token=token)
            assert page.resource_version == first.resource_version
            got += [(_key(o), o["data"]["v"]) for o in page.items]
            remaining.append(page.remaining)
            token = page.continue_token
        assert got == [("a/cm-3", "1"), ("a/cm-4", "1"), ("b/cm-0", "1"), ("b/cm-1", "1"), ("b/cm-2", "1"),
                       ("b/cm-3", "1"), ("b/cm-4", "1")]
        assert remaining == [4, 1, None]
    finally:
        store.close()


def _key(obj: dict) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
