"""`--capacity` text and quantities as the integers the scheduler compares."""

from __future__ import annotations

import pytest
from mpijob.api.core.errors import ApiError
from mpijob.api.core.quantity import to_base_units
from mpijob.api.kueue.capacity import parse_capacity


def test_parse_capacity_reads_any_subset() -> None:
    assert parse_capacity("nvidia.com/gpu=8,cpu=16,memory=64Gi") == {"nvidia.com/gpu": "8", "cpu": "16",
                                                                      "memory": "64Gi"}
    assert parse_capacity(" cpu = 500m ") == {"cpu": "500m"}
    assert parse_capacity("nvidia.com/gpu=0") == {"nvidia.com/gpu": "0"}


@pytest.mark.parametrize(("text", "names"), [
    ("cpu", '"cpu" is not RESOURCE=QUANTITY'),
    ("cpu=", '"cpu=" is not RESOURCE=QUANTITY'),
    ("cpu=16,", "an empty entry"),
    ("cpu=lots", '"lots" in "cpu=lots" is not a quantity'),
    ("cpu=-1", "negative"),
    ("gpu cards=2", '"gpu cards" in "gpu cards=2" is not a resource name'),
    ("cpu=1,cpu=2", '"cpu" is given twice'),
])
def test_bad_capacity_is_a_400_naming_the_term_and_the_fix(text: str, names: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_capacity(text)
    err = info.value
    assert err.code == 400 and err.reason == "BadRequest"
    assert names in err.message and "e.g. nvidia.com/gpu=8,cpu=16,memory=64Gi" in err.message


@pytest.mark.parametrize(("resource", "quantity", "units"), [
    ("cpu", "16", 16000), ("cpu", 2, 2000), ("cpu", "500m", 500), ("cpu", "0.1", 100), ("cpu", "1u", 1),
    ("memory", "64Gi", 64 * 2**30), ("memory", "1G", 10**9), ("memory", 1024, 1024), ("memory", "1.5Ki", 1536),
    ("nvidia.com/gpu", "8", 8), ("nvidia.com/gpu", 1, 1), ("pods", "1k", 1000), ("nvidia.com/gpu", "500m", 1),
])
def test_to_base_units(resource: str, quantity: object, units: int) -> None:
    assert to_base_units(resource, quantity) == units


def test_to_base_units_refuses_non_quantities() -> None:
    with pytest.raises(ValueError):
        to_base_units("cpu", "lots")
