"""Kueue API objects (`kueue.x-k8s.io`): models, defaults, validation and v1beta1 ↔ v1beta2 conversion;
the pure scheduler that admits them is `scheduler/`.

`causes()` is what admission calls for a Kueue kind: CRD defaults first, then the schema (models), then
Kueue's webhook rules — on the v1beta2 form, which is how every Kueue object is stored.
"""

from __future__ import annotations

from typing import Any

from mpijob.api.core.errors import Cause
from mpijob.api.kueue import defaults, rules
from mpijob.api.kueue.models import MODELS
from mpijob.api.kueue.structure import structural_causes

KINDS: frozenset[str] = frozenset(MODELS)


def causes(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[Cause]:
    """Default `obj` (a v1beta2 `kind`) in place and return its problems; [] when it may be stored."""
    defaults.default(kind, obj)
    found = structural_causes(kind, obj)
    return found or rules.causes(kind, obj, old)


__all__ = ["KINDS", "causes"]
