"""Label and field selectors, parsed and matched as kube-apiserver does (equality- and set-based)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mpijob.api.errors import bad_request


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        return not present  # "!"


_SET = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*$")


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside a `( … )` value set."""
    terms, depth, current = [], 0, []
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def parse_labels(selector: str | None) -> list[Requirement]:
    """Parse `a=b,c!=d,e in (f,g),!h`; raise 400 naming the bad term."""
    if not selector:
        return []
    out: list[Requirement] = []
    for term in _split_terms(selector):
        if m := _SET.match(term):
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            out.append(Requirement(m.group(1), m.group(2), values))
        elif m := _EQ.match(term):
            out.append(Requirement(m.group(1), "!=" if m.group(2) == "!=" else "=", (m.group(3),)))
        elif m := _EXISTS.match(term):
            out.append(Requirement(m.group(2), "!" if m.group(1) else "exists"))
        else:
            raise bad_request(f"unable to parse requirement: invalid label selector term {term.strip()!r}")
    return out


def parse_fields(selector: str | None) -> list[Requirement]:
    """Field selectors support only `=`, `==` and `!=` on dotted paths."""
    if not selector:
        return []
    out: list[Requirement] = []
    for term in _split_terms(selector):
        m = _EQ.match(term) or re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise bad_request(f"invalid field selector term {term.strip()!r}: use path=value or path!=value")
        out.append(Requirement(m.group(1), "!=" if m.group(2) == "!=" else "=", (m.group(3),)))
    return out


def field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def matches(obj: dict[str, Any], labels: list[Requirement], fields: list[Requirement]) -> bool:
    obj_labels = obj.get("metadata", {}).get("labels") or {}
    if not all(r.matches(obj_labels) for r in labels):
        return False
    for r in fields:
        actual = field_value(obj, r.key)
        if (actual == r.values[0]) != (r.op == "="):
            return False
    return True
