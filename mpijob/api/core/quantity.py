"""Kubernetes resource quantities ("2", 2, "500m", "1Gi"): parsing, base units, and printing them back.

Every layer reads and writes quantities through this module: validation and the slots rule parse them,
the scheduler counts in integer base units, Kueue's messages and the queues' status print them, and
the CLI shortens byte counts for people. The SDK sends quantities as JSON numbers or strings, so both
are accepted everywhere.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal(10**3),
            "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)$")
_SI_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
UNLIMITED = 2**63 - 1  # Kueue's "no limit" amount; printed as "Unlimited"


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
    return math.ceil(parse_quantity(value))


def is_quantity(value: object) -> bool:
    try:
        parse_quantity(value)
    except ValueError:
        return False
    return True


# -- base units: what the scheduler counts in ------------------------------------------------------


def to_base_units(resource: str, quantity: object) -> int:
    """The amount as an integer in the unit Kubernetes counts it in: cpu → millicores, memory → bytes,
    other resources → whole units; rounded up, as Kubernetes rounds a request it cannot represent
    exactly. Raises ValueError when `quantity` is not a quantity. Cached: a cluster repeats a few
    quantities thousands of times, and the scheduler converts them on every snapshot."""
    try:
        return _base_units(resource, quantity)
    except TypeError:  # unhashable, so not a quantity: let parse_quantity say so
        parse_quantity(quantity)
        raise


@lru_cache(maxsize=4096, typed=True)  # typed: True and 1 are different keys (a bool is no quantity)
def _base_units(resource: str, quantity: object) -> int:
    value = parse_quantity(quantity)
    if resource == "cpu":
        value *= 1000
    return math.ceil(value)


def from_base_units(resource: str, amount: int) -> str:
    """Base units back to a quantity string, as resourceUsage and flavorsUsage are written: cpu as
    whole cores when exact, else millicores ("2", "1500m"); everything else as a plain integer."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    return str(amount)


# -- printing: Kubernetes' canonical form, and the shortest form for people --------------------------


def _decimal_si(num: int, exp10: int) -> str:
    if num == 0:
        return "0"
    sign, num = ("-", -num) if num < 0 else ("", num)
    while num % 10 == 0:
        num //= 10
        exp10 += 1
    exp3 = min(max((exp10 // 3) * 3, -9), 18)
    return f"{sign}{num * 10 ** (exp10 - exp3)}{_SI_SUFFIX[exp3]}"


def _binary_resource(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def format_quantity(resource: str, amount: int) -> str:
    """`amount` in base units as Kubernetes prints it (`resource.Quantity.String()` after Kueue's
    formatter), the form Kueue's messages use: cpu in millicores or cores ("500m", "2"), memory in
    binary units when exact ("64Gi", else "1500M"), others as decimal SI ("32", "2k")."""
    if amount >= UNLIMITED:
        return "Unlimited"
    if resource == "cpu":
        return _decimal_si(amount, -3)
    if _binary_resource(resource) and amount and amount % 1024 == 0:
        n, i = amount, 0
        while n % 1024 == 0 and i < len(_BINARY_SUFFIX) - 1:
            n //= 1024
            i += 1
        return f"{n}{_BINARY_SUFFIX[i]}"
    return _decimal_si(amount, 0)


_SHORT_UNITS = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10),
                ("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))
_BYTES = re.compile(r"memory|storage")
_DIGITS = re.compile(r"[0-9]+")


def shortest(value: object, resource: str = "memory") -> str:
    """A quantity for people: a plain byte count of memory or storage (as usage is often written)
    gets the shortest exact suffix, `8589934592` → `8Gi`; anything else is shown as written."""
    text = str(value)
    if not _DIGITS.fullmatch(text) or not _BYTES.search(resource):
        return text
    n = int(text)
    forms = [f"{n // size}{suffix}" for suffix, size in _SHORT_UNITS if n >= size and n % size == 0]
    return min([*forms, text], key=len)
