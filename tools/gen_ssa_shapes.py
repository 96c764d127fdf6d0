"""Generate mpijob/api/core/ssa_shapes.json: how server-side apply merges each custom resource's lists and maps,
from the upstream CRDs, so the server knows a TrainJob's `env` merges by `name` without the CRD YAML at run time.

    .venv/bin/python tools/gen_ssa_shapes.py           # rewrite the file
    .venv/bin/python tools/gen_ssa_shapes.py --check   # exit 1 if it is not current

Input: the CRDs under `../shared/upstream/` (`trainer/`, `kueue/`, `mpi-operator/`; `$MPIJOB_UPSTREAM` when set),
read as `tools/gen_openapi_data.py` reads them (every served kind and version). Output: one line per kind,
`"<group>/<version>/<Kind>": shape`, where a shape keeps only what differs from server-side apply's defaults
(a map merges key by key, a list is atomic): `l` the list type (`map` or `set`), `k` its
`x-kubernetes-list-map-keys`, `d` the keys' schema defaults, `a` an atomic map
(`x-kubernetes-map-type: atomic`), and beneath, `f` named fields, `*` a map's values, `i` a list's items.
`metadata` is left out: it is the same `ObjectMeta` for every kind (`mpijob.api.core.managed_fields.META`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling tools modules, however this is loaded
from committed import write_or_check
from gen_openapi_data import REPO, UPSTREAM, served_schemas

OUTPUT = REPO / "mpijob" / "api" / "core" / "ssa_shapes.json"
COMMAND = ".venv/bin/python tools/gen_ssa_shapes.py"
SOURCES = (("trainer", "trainer.kubeflow.org"), ("kueue", "kueue.x-k8s.io"), ("mpi-operator", "kubeflow.org"))


def shape(node: Any) -> dict[str, Any]:
    """The merge-relevant part of one schema node; {} when it is all defaults."""
    if not isinstance(node, dict):
        return {}
    out: dict[str, Any] = {}
    fields = {name: s for name, child in (node.get("properties") or {}).items() if (s := shape(child))}
    if fields:
        out["f"] = fields
    if values := shape(node.get("additionalProperties")):
        out["*"] = values
    if node.get("x-kubernetes-map-type") == "atomic":
        out["a"] = 1
    list_type = node.get("x-kubernetes-list-type")
    if list_type in ("map", "set"):
        out["l"] = list_type
    if list_type == "map":
        keys = list(node.get("x-kubernetes-list-map-keys") or [])
        out["k"] = keys
        props = (node.get("items") or {}).get("properties") or {}
        defaults = {k: props[k]["default"] for k in keys if "default" in props.get(k, {})}
        if defaults:
            out["d"] = defaults
    if items := shape(node.get("items")):
        out["i"] = items
    return out


def render(upstream: Path = UPSTREAM.parent) -> str:
    lines = []
    for folder, group in SOURCES:
        for version_kind, schema in served_schemas(upstream / folder, group).items():
            tree = shape(schema)
            tree.get("f", {}).pop("metadata", None)
            lines.append(f"{json.dumps(f'{group}/{version_kind}')}:{json.dumps(tree, separators=(',', ':'))}")
    source = json.dumps(f"CRDs in ../shared/upstream/{{{','.join(f for f, _ in SOURCES)}}}, by {COMMAND}")
    return '{"source":' + source + ',\n"shapes":{\n' + ",\n".join(lines) + "}}\n"


def main(argv: list[str]) -> int:
    return write_or_check({OUTPUT: render()}, argv, COMMAND)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
