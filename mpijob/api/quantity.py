"""Kubernetes resource quantities ("2", 2, "500m", "1Gi"): parsing for the slots rule and validation.

The SDK sends quantities as JSON numbers or strings, so both are accepted everywhere.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal(10**3),
            "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)$")


def parse_quantity(value: object) -> Decimal:
    """The quantity's value; raises ValueError naming the accepted forms if it is not one."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a quantity")
    m = _QUANTITY.match(value.strip())
    if not m or m.group(1) in (".", "+", "-") or m.group(1).count(".") > 1:
        raise ValueError(f'"{value}" is not a quantity (use e.g. 2, "500m", "4Gi")')
    try:
        number = Decimal(m.group(1))
    except InvalidOperation as exc:
        raise ValueError(f'"{value}" is not a quantity (use e.g. 2, "500m", "4Gi")') from exc
    suffix = m.group(2)
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix[:1] in ("e", "E"):
        return number * (Decimal(10) ** int(suffix[1:]))
    return number * _DECIMAL[suffix]


def quantity_value(value: object) -> int:
    """Integer value rounded up, like `resource.Quantity.Value()`."""
    return int(math.ceil(parse_quantity(value)))


def is_quantity(value: object) -> bool:
    try:
        parse_quantity(value)
    except ValueError:
        return False
    return True
