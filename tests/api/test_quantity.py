"""Quantities arrive as JSON numbers or strings (the SDK sends both); the slots rule needs their value."""

from decimal import Decimal

import pytest

from mpijob.api.plan import gpu_count, merge_resources
from mpijob.api.quantity import is_quantity, parse_quantity, quantity_value


@pytest.mark.parametrize("value,expected", [
    (2, Decimal(2)), ("2", Decimal(2)), ("500m", Decimal("0.5")), ("1Ki", Decimal(1024)), ("1k", Decimal(1000)),
    ("1e3", Decimal(1000)), (0.5, Decimal("0.5")), ("4Gi", Decimal(4 * 2**30)),
])
def test_parse(value, expected):
    assert parse_quantity(value) == expected


@pytest.mark.parametrize("value", ["two", "", "1.2.3", "1Gb", True, None, [1]])
def test_refuse(value):
    assert not is_quantity(value)


def test_value_rounds_up_like_kubernetes():
    assert quantity_value("1500m") == 2 and quantity_value(4) == 4


def test_gpu_count_prefers_requests_then_limits():
    assert gpu_count({"requests": {"cpu": 4, "nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": 8}}) == 2
    assert gpu_count({"limits": {"nvidia.com/gpu": 8}}) == 8
    assert gpu_count({"limits": {"cpu": 8}}) == 0 and gpu_count(None) == 0


def test_merge_resources_overlays_per_key():
    base = {"limits": {"cpu": 1, "memory": "1Gi"}, "requests": {"cpu": 1}}
    out = merge_resources(base, {"limits": {"cpu": 4}})
    assert out == {"limits": {"cpu": 4, "memory": "1Gi"}, "requests": {"cpu": 1}}
    assert base["limits"]["cpu"] == 1
