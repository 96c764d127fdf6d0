"""How long each phase of a run may take, and when a quiet run looks stalled: the annotations that say so,
checked at admission, and the bounds a run gets from its job and its runtime. Pure: no I/O.

Every phase of a run has a deadline, so no job hangs without a cause: its nodes accepting the job key
(`ready`), mpirun's wire-up from its start to every rank running (`wireup`), and mpirun's own exit once
every rank has ended and the log has gone quiet (`exit_grace`). A run whose ranks print nothing and use
no CPU for `stall` seconds looks stalled: a Warning, or its end when `stall_fail`. The defaults are
generous enough for 100 nodes on a loaded 2-core machine; a job's annotation wins over its runtime's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from mpijob.api import names
from mpijob.api.core.errors import Cause

READY_BASE, READY_PER_NODE = 60.0, 1.0  # seconds: 160 s for 100 nodes
WIREUP_BASE, WIREUP_PER_HOST = 60.0, 2.0  # seconds: 260 s for 100 hosts
EXIT_GRACE = 30.0
STALL = 600.0
DURATIONS = (names.ANNOTATION_READY_TIMEOUT, names.ANNOTATION_WIREUP_TIMEOUT, names.ANNOTATION_EXIT_GRACE,
             names.ANNOTATION_STALL_TIMEOUT)
ON_STALL = (names.ON_STALL_WARN, names.ON_STALL_FAIL)
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_EXAMPLE = 'a duration such as "90s", "5m" or "1m30s" (or a number of seconds)'


@dataclass(frozen=True)
class Bounds:
    """A run's deadlines, in seconds."""

    ready: float = READY_BASE
    wireup: float = WIREUP_BASE
    exit_grace: float = EXIT_GRACE
    stall: float = STALL
    stall_fail: bool = False


def parse_duration(value: str) -> float | None:
    """Seconds of `90s`, `5m`, `1m30s`, `0.5s`, `250ms` or a bare `45`; None when it is none of those."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(a + u for a, u in parts) != text:
            return None
        seconds = sum(float(amount) * _UNITS[unit] for amount, unit in parts)
    return seconds if math.isfinite(seconds) else None


def causes(annotations: Any, where: str = "metadata.annotations") -> list[Cause]:
    """What is wrong with a job's or runtime's bound annotations, each naming the field, value and fix."""
    if not isinstance(annotations, dict):
        return []
    out = []
    for key in DURATIONS:
        value = annotations.get(key)
        if not isinstance(value, str):
            continue  # absent, or not a string (refused with the other annotations)
        seconds = parse_duration(value)
        if seconds is None or seconds <= 0:
            out.append(Cause(f"{where}[{key}]", f'Invalid value: "{value}": must be {_EXAMPLE}, greater '
                                                'than zero; remove the annotation for the default'))
    value = annotations.get(names.ANNOTATION_ON_STALL)
    if isinstance(value, str) and value not in ON_STALL:
        out.append(Cause(f"{where}[{names.ANNOTATION_ON_STALL}]", f'Invalid value: "{value}": supported values: '
                         f'"{names.ON_STALL_WARN}" (a Warning Event and the {names.FAILURE_STALLED} condition) or '
                         f'"{names.ON_STALL_FAIL}" (the job fails)', "FieldValueNotSupported"))
    return out


def resolve(job: dict[str, str] | None, runtime: dict[str, str] | None, nodes: int,
            ready_default: float | None = None) -> Bounds:
    """The bounds of a run of `nodes` hosts: the job's annotation, else its runtime's, else the default
    (`ready_default`: the server's own, when it sets one). Values admission would refuse are skipped."""

    def pick(key: str, default: float) -> float:
        for source in (job or {}, runtime or {}):
            seconds = parse_duration(source[key]) if isinstance(source.get(key), str) else None
            if seconds is not None and seconds > 0:
                return seconds
        return default

    on_stall = next((s[names.ANNOTATION_ON_STALL] for s in (job or {}, runtime or {})
                     if s.get(names.ANNOTATION_ON_STALL) in ON_STALL), names.ON_STALL_WARN)
    return Bounds(
        ready=pick(names.ANNOTATION_READY_TIMEOUT, ready_default or READY_BASE + READY_PER_NODE * nodes),
        wireup=pick(names.ANNOTATION_WIREUP_TIMEOUT, WIREUP_BASE + WIREUP_PER_HOST * nodes),
        exit_grace=pick(names.ANNOTATION_EXIT_GRACE, EXIT_GRACE),
        stall=pick(names.ANNOTATION_STALL_TIMEOUT, STALL),
        stall_fail=on_stall == names.ON_STALL_FAIL,
    )
