"""The layers say what they are: api → store → controllers → server → client → sdk/cli, and no cycle.

Every module of the package is read with `ast` (nothing is imported). A module may import its own
layer and the layers below it, never one above, lazy imports inside functions and `TYPE_CHECKING`
imports included: a lazy import is still a dependency, only a deferred one. `mpijob/__init__.py` is
the SDK's front door and stands with the surfaces, so nothing below them imports `mpijob` itself (or
`mpijob.sdk`); `mpijob/_version.py` is a leaf anyone may import. The CLI's `server` command becomes the
server by importing `mpijob.server.daemon`; the CLI stands above the server, so the order allows it.

Separately, the module-level imports (what runs when a module is first imported; `TYPE_CHECKING`
blocks and function bodies excluded) must form no cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mpijob

PACKAGE = Path(mpijob.__file__).resolve().parent
ROOT = PACKAGE.name  # "mpijob"
# The rank of each top-level part; a module may import ranks ≤ its own.
RANKS = {"_version": -1, "api": 0, "store": 1, "controllers": 2, "server": 3, "client": 4, "sdk": 5, "cli": 5}
FRONT_DOOR = 5  # `mpijob` itself: the SDK's names, for the surfaces only


def modules() -> dict[str, Path]:
    """Dotted module name → file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def rank(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return FRONT_DOOR
    return RANKS[parts[1]]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(body: list[ast.stmt], top: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """Every statement, with whether it runs at import time (module level, outside TYPE_CHECKING)."""
    for node in body:
        yield node, top
        if isinstance(node, ast.If):
            runs = top and not _is_type_checking(node)
            yield from _walk(node.body, runs)
            yield from _walk(node.orelse, top)
        elif isinstance(node, (ast.Try, ast.With, ast.For, ast.While)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    if isinstance(child, ast.ExceptHandler):
                        yield from _walk(child.body, top)
                    else:
                        yield from _walk([child], top)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _walk(node.body, top and isinstance(node, ast.ClassDef))


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str, bool]]:
    """(line, imported module of the package, runs at import time) for each import in `path`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node, top in _walk(ast.parse(path.read_text()).body, True):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` imports the module pkg.sub when there is one, else names of pkg
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        out += [(node.lineno, t, top) for t in dict.fromkeys(targets) if t == ROOT or t.startswith(ROOT + ".")]
    return out


def graph() -> dict[str, list[tuple[int, str, bool]]]:
    known = modules()
    return {m: imports(m, p, known) for m, p in known.items()}


def upward_imports() -> list[str]:
    found = []
    for module, edges in graph().items():
        for line, target, _ in edges:
            if rank(target) > rank(module):
                found.append(f"{module}:{line} imports {target}")
    return found


def cycles(imports_of: dict[str, list[tuple[int, str, bool]]] | None = None) -> list[list[str]]:
    """Strongly connected components (size > 1, or a module importing itself) of the import-time graph."""
    edges = {m: sorted({t for _, t, top in e if top}) for m, e in (imports_of or graph()).items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1 or v in edges.get(v, []):
                found.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer() -> None:
    for module in modules():
        assert rank(module) is not None, module


def test_no_module_imports_a_layer_above_its_own() -> None:
    found = upward_imports()
    assert not found, ("imports that run up the layers (api → store → controllers → server → client → "
                       "sdk/cli):\n" + "\n".join(found))


# The client and its surfaces reach a cluster through the Kubernetes API only: nothing of the server's or
# the controllers' code, local cluster or not. The one exception is the CLI's `server run`, which
# becomes the server process.
API_ONLY = ("client", "sdk", "cli")
BECOMES_THE_SERVER = {("mpijob.cli.server_cmd", "mpijob.server.daemon")}


def test_clients_speak_only_the_kubernetes_api() -> None:
    found = [f"{module}:{line} imports {target}" for module, edges in graph().items()
             if module.split(".")[1:2] and module.split(".")[1] in API_ONLY
             for line, target, _ in edges
             if target.split(".")[1:2] and target.split(".")[1] in ("server", "controllers")
             and (module, target) not in BECOMES_THE_SERVER]
    assert not found, "a client reaches into the server's code instead of its API:\n" + "\n".join(found)


def test_no_import_cycle() -> None:
    found = cycles()
    assert not found, "import cycles (module-level imports):\n" + "\n".join(" ↔ ".join(c) for c in found)


def test_the_scan_sees_lazy_relative_and_type_checking_imports(tmp_path: Path) -> None:
    source = '''
from typing import TYPE_CHECKING
from mpijob.api import names
from . import objects
if TYPE_CHECKING:
    from mpijob.server.state import Cluster
def f():
    import mpijob
    from mpijob.client import api
'''
    path = tmp_path / "mod.py"
    path.write_text(source)
    known = {"mpijob.api.names": path, "mpijob.store.objects": path, "mpijob.client.api": path}
    assert imports("mpijob.store.mod", path, known) == [
        (3, "mpijob.api.names", True), (4, "mpijob.store.objects", True), (6, "mpijob.server.state", False),
        (8, "mpijob", False), (9, "mpijob.client.api", False),
    ]


def test_the_cycle_finder_ignores_lazy_imports() -> None:
    g = {"a": [(1, "b", True)], "b": [(1, "c", True)], "c": [(1, "a", True)], "d": [(1, "a", True)],
         "e": [(1, "f", True)], "f": [(9, "e", False)]}
    assert cycles(g) == [["a", "b", "c"]]
