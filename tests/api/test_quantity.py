"""Quantities arrive as JSON numbers or strings (the SDK sends both); the slots rule needs their value,
the scheduler counts them in base units, and messages, status and the CLI print them back."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mpijob.api.core.quantity import (
    format_quantity,
    from_base_units,
    is_quantity,
    parse_quantity,
    quantity_value,
    shortest,
    to_base_units,
)
from mpijob.api.trainer.plan import gpu_count, merge_resources


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


# -- base units and printing: one module for every layer --------------------------------------------


@pytest.mark.parametrize("resource,value,units", [
    ("cpu", "500m", 500), ("cpu", 2, 2000), ("cpu", "1.5", 1500), ("cpu", "0.5m", 1), ("memory", "1Gi", 2**30),
    ("memory", "1.5", 2), ("nvidia.com/gpu", "2", 2), ("pods", 0, 0),
])
def test_base_units_round_up_like_kubernetes(resource, value, units):
    assert to_base_units(resource, value) == units


@pytest.mark.parametrize("value", [True, [1], "lots", None])
def test_base_units_refuse_what_is_no_quantity(value):
    with pytest.raises(ValueError):
        to_base_units("cpu", value)


@pytest.mark.parametrize("resource,amount,text", [
    ("cpu", 500, "500m"), ("cpu", 2000, "2"), ("cpu", 1500, "1500m"), ("memory", 64 * 2**30, "64Gi"),
    ("memory", 1536 * 2**20, "1536Mi"), ("memory", 1_500_000_000, "1500M"), ("memory", 1000, "1k"),
    ("nvidia.com/gpu", 32, "32"), ("nvidia.com/gpu", 0, "0"), ("nvidia.com/gpu", 2000, "2k"),
    ("hugepages-2Mi", 4 * 2**20, "4Mi"), ("cpu", 2**63 - 1, "Unlimited"),
])
def test_format_prints_as_kubernetes_does(resource, amount, text):
    assert format_quantity(resource, amount) == text


@pytest.mark.parametrize("resource,amount,text", [
    ("cpu", 4000, "4"), ("cpu", 750, "750m"), ("memory", 17179869184, "17179869184"), ("nvidia.com/gpu", 2, "2"),
])
def test_from_base_units_is_how_usage_is_written(resource, amount, text):
    assert from_base_units(resource, amount) == text


def test_shortest_is_for_people():
    assert shortest("8589934592", "memory") == "8Gi"
    assert shortest("1536000000", "memory") == "1536M"
    assert shortest("2048000", "ephemeral-storage") == "2048k"
    assert shortest("8", "nvidia.com/gpu") == "8" and shortest("4Gi", "memory") == "4Gi"
    assert shortest("١٢", "memory") == "١٢"  # digits, but not a quantity: shown as written


RESOURCES = ("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "hugepages-1Gi", "pods")


AMOUNTS = st.one_of(
    st.integers(0, 10**6),  # plain counts and millicores
    st.builds(lambda n, e: n * 2**e, st.integers(0, 2**20), st.sampled_from((10, 20, 30))),  # binary sizes
    st.builds(lambda n, e: n * 10**e, st.integers(0, 999), st.integers(0, 15)),  # decimal sizes
)


@given(st.sampled_from(RESOURCES), AMOUNTS)
def test_every_printed_form_parses_back_to_the_same_amount(resource: str, amount: int) -> None:
    for text in (format_quantity(resource, amount), from_base_units(resource, amount)):
        assert to_base_units(resource, text) == amount, (resource, amount, text)
    assert parse_quantity(shortest(str(amount), resource)) == amount  # shortest keeps the value


@given(st.sampled_from(RESOURCES), st.integers(0, 10**12))
def test_parsing_a_printed_quantity_and_printing_it_again_gives_the_same_text(resource: str, amount: int) -> None:
    text = format_quantity(resource, amount)
    assert format_quantity(resource, to_base_units(resource, text)) == text
