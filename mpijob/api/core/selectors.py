"""Label and field selectors, parsed and matched as kube-apiserver does (equality- and set-based), and an
object's `metav1.LabelSelector` validated and written as apimachinery does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.errors import Cause, bad_request
from mpijob.api.core.labels import is_label_value, is_qualified_name
from mpijob.api.core.structural import show


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
    terms: list[str] = []
    current: list[str] = []
    depth = 0
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


def format_label_selector(selector: dict[str, Any]) -> str:
    """A `metav1.LabelSelector` as apimachinery's `FormatLabelSelector` writes it, "" for an empty one:
    requirements sorted by key, `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; `<error>` for an
    operator it does not know."""
    terms = [(str(k), f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator"), ",".join(sorted(expr.get("values") or []))
        forms = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                 "DoesNotExist": f"!{key}"}
        if op not in forms:
            return "<error>"
        terms.append((key, forms[op]))
    return ",".join(text for _, text in sorted(terms, key=lambda t: t[0]))


# -- a `metav1.LabelSelector` in an object: apimachinery's ValidateLabelSelector -----------------------

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_KEY_HELP = ("a label key is an optional DNS prefix and '/' followed by at most 63 letters, digits, '-', '_' "
             f"or '.', starting and ending with a letter or digit (e.g. '{names.LABEL_JOBSET_NAME}')")
_VALUE_HELP = ("a label value is at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
               "letter or digit (or empty)")


def is_list_of(value: Any, kind: type, where: str, out: list[Cause], what: str) -> bool:
    """Whether `value` is unset or a list of `kind`; else the cause goes to `out`."""
    if value is None or (isinstance(value, list) and all(isinstance(v, kind) for v in value)):
        return True
    out.append(Cause(where, f"Invalid value: {show(value)}: must be a list of {what}"))
    return False


def selector_causes(selector: Any, where: str) -> list[Cause]:
    """apimachinery's `ValidateLabelSelector` of a `metav1.LabelSelector` (unset is valid), its shapes
    checked too: the built-in kinds that hold one have no structural schema."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [Cause(where, f"Invalid value: {show(selector)}: must be a label selector: an object with "
                             "matchLabels and/or matchExpressions ({} matches everything)")]
    out: list[Cause] = []
    labels, exprs = selector.get("matchLabels"), selector.get("matchExpressions")
    if labels is not None and not isinstance(labels, dict):
        out.append(Cause(f"{where}.matchLabels", f"Invalid value: {show(labels)}: must be a map of label keys "
                                                 "to label values"))
    for key, value in (labels if isinstance(labels, dict) else {}).items():
        if not is_qualified_name(key):
            out.append(Cause(f"{where}.matchLabels", f"Invalid value: {show(key)}: {_KEY_HELP}"))
        if not is_label_value(value):
            out.append(Cause(f"{where}.matchLabels", f"Invalid value: {show(value)}: {_VALUE_HELP}"))
    if is_list_of(exprs, dict, f"{where}.matchExpressions", out, "requirements (key, operator, values)"):
        for i, expr in enumerate(exprs or []):
            out += _requirement_causes(expr, f"{where}.matchExpressions[{i}]")
    return out


def _requirement_causes(expr: Obj, where: str) -> list[Cause]:
    out: list[Cause] = []
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values")
    if op not in OPERATORS:
        out.append(Cause(f"{where}.operator", f"Invalid value: {show(op)}: not a valid selector operator; use "
                                              "In, NotIn, Exists or DoesNotExist"))
    if not is_list_of(values, str, f"{where}.values", out, "label values"):
        return out
    if op in ("In", "NotIn") and not values:
        out.append(Cause(f"{where}.values", "Required value: must be specified when `operator` is 'In' or "
                                            "'NotIn'", "FieldValueRequired"))
    if op in ("Exists", "DoesNotExist") and values:
        out.append(Cause(f"{where}.values", "Forbidden: may not be specified when `operator` is 'Exists' or "
                                            "'DoesNotExist'; remove values", "FieldValueForbidden"))
    if not is_qualified_name(key):
        out.append(Cause(f"{where}.key", f"Invalid value: {show(key)}: {_KEY_HELP}"))
    for i, value in enumerate(values or []):
        if not is_label_value(value):
            out.append(Cause(f"{where}.values[{i}]", f"Invalid value: {show(value)}: {_VALUE_HELP}"))
    return out
