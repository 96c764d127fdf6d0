"""Machine capacity as text (`--capacity nvidia.com/gpu=8,cpu=16,memory=64Gi`).

The amounts become the default ClusterQueue's quota, which the scheduler counts in integer base units
(`mpijob.api.core.quantity.to_base_units`).
"""

from __future__ import annotations

from mpijob.api.core.errors import ApiError, bad_request
from mpijob.api.core.labels import is_qualified_name
from mpijob.api.core.quantity import parse_quantity

_EXAMPLE = "nvidia.com/gpu=8,cpu=16,memory=64Gi"


def parse_capacity(text: str) -> dict[str, str]:
    """`nvidia.com/gpu=8,cpu=16,memory=64Gi` → {"nvidia.com/gpu": "8", "cpu": "16", "memory": "64Gi"}.

    Any subset of resources may be given; a bad term raises a 400 ApiError naming it and the fix.
    """
    out: dict[str, str] = {}
    for term in text.split(","):
        term = term.strip()
        if not term:
            raise _bad(text, "an empty entry (two commas, or a comma at the start or end)", "remove it")
        name, sep, value = (part.strip() for part in term.partition("="))
        if not sep or not name or not value:
            raise _bad(text, f'"{term}" is not RESOURCE=QUANTITY', 'write it like "cpu=16"')
        if not is_qualified_name(name):
            raise _bad(text, f'"{name}" in "{term}" is not a resource name',
                       'use a name such as "cpu", "memory" or "nvidia.com/gpu"')
        if name in out:
            raise _bad(text, f'"{name}" is given twice', "keep one entry per resource")
        try:
            amount = parse_quantity(value)
        except ValueError:
            raise _bad(text, f'"{value}" in "{term}" is not a quantity',
                       'use a number with an optional suffix, e.g. "16", "500m", "64Gi"') from None
        if amount < 0:
            raise _bad(text, f'"{value}" in "{term}" is negative', "use zero or more")
        out[name] = value
    return out


def _bad(text: str, problem: str, fix: str) -> ApiError:
    return bad_request(f'invalid capacity "{text}": {problem}; {fix} (e.g. {_EXAMPLE})')
