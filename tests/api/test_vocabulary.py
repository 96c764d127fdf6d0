"""Each word of the vocabulary is defined once, in `mpijob/api/names.py`, and imported everywhere else.

A word is a string constant of that module that would break a contract if two copies drifted: a
domain-qualified key or group (`kueue.x-k8s.io/queue-name`, `trainer.kubeflow.org`, `mpijob.io/waiting`)
or a condition reason of two or more words (`ControlPlaneRestarted`). The test reads every other
module of the package with `ast` and fails on a string literal (f-string parts included, docstrings
not) that spells one out again.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mpijob.api import names

PACKAGE = Path(names.__file__).resolve().parents[1]
KEY = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+(/[A-Za-z0-9._-]+)?$")  # a group, or a qualified label key
REASON = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z]+)+$")  # two or more capitalised words


def words() -> dict[str, str]:
    """value → the constant's name, for every word names.py defines."""
    out: dict[str, str] = {}
    for attr, value in vars(names).items():
        if attr.isupper() and isinstance(value, str) and (KEY.match(value) or REASON.match(value)):
            out[value] = attr
    return out


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def spelled_out(source: str, known: dict[str, str]) -> list[tuple[int, str]]:
    """(line, word) for each string literal in `source` that is, or contains, a known word."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    keys = [w for w in known if KEY.match(w)]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
            continue
        text = node.value
        if text in known:
            found.append((node.lineno, text))
            continue
        spans = [  # a key inside a longer string (a message, a path, a selector); the longest one at a place
            (m.start(), m.end(), key) for key in keys
            for m in re.finditer(rf"(?<![\w.-]){re.escape(key)}(?![\w.-])", text)
        ]
        found += [(node.lineno, key) for start, end, key in spans
                  if not any(s <= start and end <= e and (s, e) != (start, end) for s, e, _ in spans)]
    return sorted(found)


def test_the_vocabulary_is_not_empty_and_has_no_two_names_for_one_word():
    values = [v for a, v in vars(names).items() if a.isupper() and isinstance(v, str)]
    known = words()
    assert {"kueue.x-k8s.io/queue-name", "mpijob.io/waiting", "ControlPlaneRestarted",
            "jobset.sigs.k8s.io/replicatedjob-name", "trainer.kubeflow.org"} <= set(known)
    twice = sorted({v for v in known if values.count(v) > 1})
    assert not twice, f"names.py defines these words under two names: {twice}"


def test_no_module_spells_out_a_word_of_the_vocabulary():
    known = words()
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == Path(names.__file__).resolve():
            continue
        for line, word in spelled_out(path.read_text(), known):
            offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {word!r} (use names.{known[word]})")
    assert not offenders, "spelled out instead of imported from mpijob.api.names:\n" + "\n".join(offenders)


def test_the_scan_finds_a_copy_in_a_literal_an_fstring_and_a_message_but_not_in_a_docstring():
    known = words()
    source = '''"""Labels pods with kueue.x-k8s.io/queue-name (a docstring may name it)."""
A = "kueue.x-k8s.io/queue-name"
B = f"{x}/kueue.x-k8s.io/queue-name"
C = "no such key: mpijob.io/waiting is not set"
D = "ControlPlaneRestarted"
E = "notkueue.x-k8s.io/queue-names are other words"
'''
    assert spelled_out(source, known) == [
        (2, "kueue.x-k8s.io/queue-name"), (3, "kueue.x-k8s.io/queue-name"), (4, "mpijob.io/waiting"),
        (5, "ControlPlaneRestarted"),
    ]
