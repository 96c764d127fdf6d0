"""The CRDs' `default:` values for the Kueue kinds, applied in place before validation.

As in kube-apiserver, a default fills a field only where its parent object exists: a ClusterQueue
without `spec.fairSharing` gets no weight, one with `fairSharing: {}` gets weight 1. Values of the
wrong type are left alone so that validation reports them.
"""

from __future__ import annotations

from typing import Any

from mpijob.api import Obj

# path of parent objects → {field: default}; `[]` steps into every item of a list
_DEFAULTS: dict[str, list[tuple[tuple[str, ...], Obj]]] = {
    "ClusterQueue": [
        (("spec",), {"queueingStrategy": "BestEffortFIFO", "stopPolicy": "None", "flavorFungibility": {},
                     "preemption": {}}),
        (("spec", "flavorFungibility"), {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}),
        (("spec", "preemption"), {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never",
                                  "borrowWithinCohort": {}}),
        (("spec", "preemption", "borrowWithinCohort"), {"policy": "Never"}),
        (("spec", "fairSharing"), {"weight": 1}),
    ],
    "LocalQueue": [
        (("spec",), {"stopPolicy": "None"}),
        (("spec", "fairSharing"), {"weight": 1}),
    ],
    "Cohort": [
        (("spec", "fairSharing"), {"weight": 1}),
    ],
    "Workload": [
        (("spec",), {"active": True}),
        (("spec", "podSets", "[]"), {"name": "main", "count": 1}),
    ],
}


def default(kind: str, obj: Obj) -> Obj:
    """Fill in `obj`'s CRD defaults (in place) and return it."""
    for path, values in _DEFAULTS.get(kind, []):
        for parent in _parents(obj, path):
            for key, value in values.items():
                if parent.get(key) is None:
                    parent[key] = {} if value == {} else value
    return obj


def _parents(node: Any, path: tuple[str, ...]) -> list[Obj]:
    if not path:
        return [node] if isinstance(node, dict) else []
    head, rest = path[0], path[1:]
    if head == "[]":
        return [p for item in node for p in _parents(item, rest)] if isinstance(node, list) else []
    if not isinstance(node, dict):
        return []
    return _parents(node.get(head), rest)
