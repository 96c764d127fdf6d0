"""Generate mpijob/server/openapi/kueue_schemas.json from the upstream Kueue CRDs, so the server can
serve Kueue's real schemas (with upstream's descriptions) without the CRD YAML at run time.

    .venv/bin/python tools/gen_openapi_data.py           # rewrite the file
    .venv/bin/python tools/gen_openapi_data.py --check   # exit 1 if it is not current

Input: `../shared/upstream/kueue/*.yaml` (CRDs copied unchanged from kubernetes-sigs/kueue; the
upstream folder is `$MPIJOB_UPSTREAM` when set, as for the tests). Output:
`spec.versions[].schema.openAPIV3Schema` of every Kueue kind and version the server serves
(`mpijob.api.resources.ALL`), unchanged except that subtrees repeated across kinds and versions (a
Workload's pod template, v1beta1 beside v1beta2) are stored once in `shared` and referenced as
`{"$shared": index}`; `mpijob.server.openapi.definitions` expands them. Deterministic, one schema or
shared entry per line, so a regeneration diffs readably.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
UPSTREAM = Path(os.environ.get("MPIJOB_UPSTREAM") or REPO.parent / "shared" / "upstream") / "kueue"
OUTPUT = REPO / "mpijob" / "server" / "openapi" / "kueue_schemas.json"
COMMAND = ".venv/bin/python tools/gen_openapi_data.py"
MIN_SHARED = 300  # characters: smaller repeated subtrees are cheaper inline than as a reference


def _key(node: Any) -> str:
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


def served_schemas(upstream: Path = UPSTREAM) -> dict[str, Any]:
    """`{"<version>/<Kind>": openAPIV3Schema}` for every served Kueue kind and version, in served order."""
    from mpijob.api.names import KUEUE_GROUP
    from mpijob.api.resources import ALL

    crds: dict[str, dict[str, Any]] = {}
    for path in sorted(upstream.glob("*.yaml")):
        crd = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        if crd.get("kind") == "CustomResourceDefinition" and crd["spec"]["group"] == KUEUE_GROUP:
            crds[crd["spec"]["names"]["kind"]] = crd
    out: dict[str, Any] = {}
    for r in ALL:
        if r.group != KUEUE_GROUP:
            continue
        crd = crds.get(r.kind)
        versions = {v["name"]: v for v in (crd or {}).get("spec", {}).get("versions", [])}
        if r.version not in versions:
            raise SystemExit(f"{upstream}: no CRD for {r.kind} {r.group}/{r.version}")
        out[f"{r.version}/{r.kind}"] = versions[r.version]["schema"]["openAPIV3Schema"]
    return out


def factor(schemas: dict[str, Any]) -> dict[str, Any]:
    """Store each subtree that occurs more than once (and is not tiny) once, in `shared`."""
    counts: Counter[str] = Counter()

    def count(node: Any) -> None:
        if isinstance(node, dict):
            key = _key(node)
            if len(key) >= MIN_SHARED:
                counts[key] += 1
            for v in node.values():
                count(v)
        elif isinstance(node, list):
            for v in node:
                count(v)

    for schema in schemas.values():
        count(schema)
    index: dict[str, int] = {}
    shared: list[Any] = []

    def rewrite(node: Any) -> Any:
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        if not isinstance(node, dict):
            return node
        key = _key(node) if len(node) else ""
        if counts.get(key, 0) > 1:
            if key not in index:
                index[key] = len(shared)
                shared.append(None)  # reserve the slot: nested shared subtrees get later indexes
                shared[index[key]] = {k: rewrite(v) for k, v in node.items()}
            return {"$shared": index[key]}
        return {k: rewrite(v) for k, v in node.items()}

    return _inline_single_uses({name: rewrite(s) for name, s in schemas.items()}, shared)


def _inline_single_uses(schemas: dict[str, Any], shared: list[Any]) -> dict[str, Any]:
    """Put back inline the entries referenced once (a subtree repeated only inside a shared parent)."""
    uses: Counter[int] = Counter()

    def scan(node: Any) -> None:
        if isinstance(node, dict):
            if "$shared" in node:
                uses[node["$shared"]] += 1
            for v in node.values():
                scan(v)
        elif isinstance(node, list):
            for v in node:
                scan(v)

    scan(schemas)
    scan(shared)
    keep = [i for i in range(len(shared)) if uses[i] > 1]
    renumber = {old: new for new, old in enumerate(keep)}

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$shared" in node:
            i = node["$shared"]
            return {"$shared": renumber[i]} if i in renumber else fix(shared[i])
        return {k: fix(v) for k, v in node.items()}

    return {"schemas": fix(schemas), "shared": [fix(shared[i]) for i in keep]}


def render(upstream: Path = UPSTREAM) -> str:
    data = factor(served_schemas(upstream))

    def line(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    schemas = ",\n".join(f"{line(k)}:{line(v)}" for k, v in data["schemas"].items())
    shared = ",\n".join(line(v) for v in data["shared"])
    return (f'{{"source":{line("kubernetes-sigs/kueue CRDs (../shared/upstream/kueue), by " + COMMAND)},\n'
            f'"schemas":{{\n{schemas}}},\n"shared":[\n{shared}]}}\n')


def main(argv: list[str]) -> int:
    """Write the file (no arguments) or, with `--check`, report whether it is current: 0 yes, 1 no, 2 usage."""
    if argv not in ([], ["--check"]):
        print(f"usage: {COMMAND} [--check]", file=sys.stderr)
        return 2
    if not UPSTREAM.is_dir():
        print(f"{UPSTREAM} not found: the upstream CRDs live in the shared folder beside the repository",
              file=sys.stderr)
        return 2
    text = render()
    if argv == ["--check"]:
        current = OUTPUT.is_file() and OUTPUT.read_text(encoding="utf-8") == text
        if not current:
            print(f"{OUTPUT.relative_to(REPO)} is stale: run {COMMAND}", file=sys.stderr)
        return 0 if current else 1
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(REPO)} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
