"""Where the upstream CRD schemas and manifests are: data for validation, never copied into the source.

`$MPIJOB_UPSTREAM` if set, else `../shared/upstream` beside the checkout, else `/work/shared/upstream`.
Tests that need them fail (not skip) when none exists.
"""

from __future__ import annotations

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]
_CANDIDATES = [
    *([Path(os.environ["MPIJOB_UPSTREAM"])] if os.environ.get("MPIJOB_UPSTREAM") else []),
    _REPO.parent / "shared" / "upstream",
    Path("/work/shared/upstream"),
]

UPSTREAM = next((p for p in _CANDIDATES if p.is_dir()), _CANDIDATES[0])
assert UPSTREAM.is_dir(), f"upstream schemas not found in any of {[str(p) for p in _CANDIDATES]}; set MPIJOB_UPSTREAM"
UPSTREAM_TRAINER = UPSTREAM / "trainer"
