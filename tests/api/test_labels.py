"""The one label-key / label-value rule (apimachinery's IsQualifiedName and IsValidLabelValue)."""

from __future__ import annotations

import pytest
from mpijob.api.core.labels import is_label_value, is_qualified_name


@pytest.mark.parametrize("key", ["app", "a", "nvidia.com/gpu", "kueue.x-k8s.io/queue-name", "A_b.c-D", "x" * 63,
                                 f"{'a' * 253}/b", "example.com/X9"])
def test_qualified_names(key: str) -> None:
    assert is_qualified_name(key)


@pytest.mark.parametrize("key", ["", "/a", "a/", "-a", "a-", "_a", "a b", "x" * 64, f"{'a' * 254}/b", "Example.com/a",
                                 "a/b/c", "a..b/c", 7, None])
def test_not_qualified_names(key: object) -> None:
    assert not is_qualified_name(key)


@pytest.mark.parametrize("value", ["", "v", "v1.2_3-x", "x" * 63])
def test_label_values(value: str) -> None:
    assert is_label_value(value)


@pytest.mark.parametrize("value", ["-v", "v-", "a b", "x" * 64, "a/b", 1, None])
def test_not_label_values(value: object) -> None:
    assert not is_label_value(value)


def test_admission_asks_this_rule() -> None:
    """Admission refuses a label key with an empty prefix, as kube-apiserver does (it once let it through)."""
    from mpijob.api.core import resources
    from mpijob.api.core.errors import ApiError
    from mpijob.api.core.validation import admit

    bad = "/no-prefix"
    with pytest.raises(ApiError) as refused:
        admit(resources.CONFIGMAPS, {"metadata": {"name": "c", "labels": {bad: "v"}}})
    assert [c.field for c in refused.value.causes] == [f"metadata.labels.{bad}"]
