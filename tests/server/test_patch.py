"""Patch semantics (pure): RFC 7386 merge, RFC 6902 JSON patch, strategic merge for built-in kinds."""

from __future__ import annotations

import pytest
from mpijob.api.core.errors import ApiError
from mpijob.server.patch import json_patch, merge_patch, strategic_merge_patch


def test_merge_patch_rfc7386_examples() -> None:
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}
    original = {"a": {"b": 1}}
    merge_patch(original, {"a": {"b": 2}})
    assert original == {"a": {"b": 1}}  # inputs are not mutated


def test_json_patch_operations() -> None:
    doc = {"a": {"b": [1, 2]}, "c": "x"}
    out = json_patch(doc, [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "add", "path": "/a/b/0", "value": 0},
        {"op": "replace", "path": "/c", "value": "y"},
        {"op": "copy", "from": "/c", "path": "/d"},
        {"op": "move", "from": "/d", "path": "/e~1f"},
        {"op": "remove", "path": "/a/b/1"},
        {"op": "test", "path": "/c", "value": "y"},
    ])
    assert out == {"a": {"b": [0, 2, 3]}, "c": "y", "e/f": "y"}
    assert doc == {"a": {"b": [1, 2]}, "c": "x"}


@pytest.mark.parametrize("ops", [
    [{"op": "remove", "path": "/missing"}],
    [{"op": "test", "path": "/c", "value": "other"}],
    [{"op": "add", "path": "/a/b/9", "value": 1}],
])
def test_json_patch_failures_are_422(ops: list) -> None:
    with pytest.raises(ApiError) as err:
        json_patch({"a": {"b": []}, "c": "x"}, ops)
    assert err.value.code == 422


def test_json_patch_malformed_is_400() -> None:
    for ops in ({"op": "add"}, [{"op": "frob", "path": "/a"}], [{"op": "add", "path": "/a"}]):
        with pytest.raises(ApiError) as err:
            json_patch({}, ops)
        assert err.value.code == 400


def test_strategic_merge_merges_keyed_lists_and_honours_directives() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]},
                                   {"name": "b", "image": "1"}], "finalizers": ["f1", "f2"]}}
    patch = {"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                      "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]},
                                     {"name": "b", "$patch": "delete"}, {"name": "c", "image": "3"}],
                      "$deleteFromPrimitiveList/finalizers": ["f1"]}}
    out = strategic_merge_patch(pod, patch)
    assert [c["name"] for c in out["spec"]["containers"]] == ["a", "c"]
    assert out["spec"]["containers"][0]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
    assert out["spec"]["containers"][0]["image"] == "1"
    assert out["spec"]["finalizers"] == ["f2"]
    assert strategic_merge_patch({"data": {"a": "1"}}, {"data": {"$patch": "replace", "b": "2"}}) == {"data": {"b": "2"}}
