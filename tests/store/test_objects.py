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
