"""Server-side apply's field ownership (`metadata.managedFields`), as kube-apiserver keeps it.

kube-apiserver leaves this to structured-merge-diff; this module does the same work over plain JSON objects,
so that kubectl, Argo CD and Flux see the behaviour they rely on:

* a *field set* is a set of paths, each a tuple of path elements: `("f", name)` a field, `("k", '{"name":"a"}')`
  an item of a keyed list, `("v", '"x"')` an item of a set, `("i", "0")` an index. On the wire it is kube's
  `FieldsV1` trie (`{"f:spec": {"f:replicas": {}}}`, `"."` marking a node that is a member itself);
* `apply` merges a manager's applied configuration into the live object (keyed lists item by item, atomic
  lists whole), removes what that manager applied last time and no longer applies (unless someone else owns
  it), refuses to change a field another manager owns to another value (a `Conflict` naming each field), and
  records the applied fields as the manager's `Apply` entry;
* `update` records what any other write (create, replace, patch) changed as its manager's `Update` entry, and
  takes those fields from whoever owned them before.

A `Shape` says how the value at each place merges, from the kind's schema (`ssa_shapes.json`, generated from
the CRDs by `tools/gen_ssa_shapes.py`) or, for built-in kinds, from a table of keyed list names. Pure functions
over dicts: `mpijob.server.fieldmanager` picks the shape, the manager and the clock.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from mpijob.api.core.errors import ApiError, Cause

PathElement = tuple[str, str]
FieldPath = tuple[PathElement, ...]
FieldSet = frozenset[FieldPath]
Ignored = Callable[[FieldPath], bool]  # fields a request may not own (a subresource's other half)

APPLY, UPDATE = "Apply", "Update"
KUBECTL = "kubectl"  # the manager whose applies keep the client-side apply annotation current
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10  # kube's DefaultMaxUpdateManagers: older Update entries merge into one bucket
ANCIENT = "ancient-changes"
MAX_ANNOTATIONS = 256 * 1024  # kube's total annotation size: a larger last-applied annotation is dropped


class _Missing:
    """A field or item that is not there (distinct from `null`)."""


MISSING: Any = _Missing()
_GONE: Any = _Missing()  # a map or list that removal emptied: its parent drops it

# ObjectMeta, the same for every kind: its lists are a set (finalizers) and a keyed list (ownerReferences)
META: dict[str, Any] = {"f": {"finalizers": {"l": "set"}, "ownerReferences": {"l": "map", "k": ["uid"]}}}

# What no entry keeps, whoever wrote it (kube's stripMetaManager): identity and server-owned metadata
_STRIPPED: frozenset[FieldPath] = frozenset({
    (("f", "apiVersion"),), (("f", "kind"),), (("f", "metadata"),),
    *((("f", "metadata"), ("f", name)) for name in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation", "managedFields",
        "resourceVersion")),
})


# -- shapes ------------------------------------------------------------------------------------------------


class Shape:
    """How the value at one place merges, read from one node of a shape tree: `l` the list type (`map` keyed
    by `k`, with key defaults `d`; `set`; else atomic), `a` an atomic map, `f`/`*`/`i` the shapes of named
    fields, of other map values and of list items. A missing node is the default: a map merged key by key,
    a list owned whole."""

    __slots__ = ("node",)

    def __init__(self, node: Mapping[str, Any]) -> None:
        self.node = node

    @property
    def list_type(self) -> str:
        return str(self.node.get("l", "atomic"))

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self.node.get("k", ()))

    @property
    def defaults(self) -> Mapping[str, Any]:
        return self.node.get("d") or {}

    @property
    def atomic(self) -> bool:
        return bool(self.node.get("a"))

    def field(self, name: str) -> Shape:
        return Shape((self.node.get("f") or {}).get(name) or self.node.get("*") or {})

    def item(self) -> Shape:
        return Shape(self.node.get("i") or {})


def object_shape(tree: Mapping[str, Any]) -> Shape:
    """A whole object's shape: its kind's tree, with the common `metadata`."""
    return Shape({**tree, "f": {**(tree.get("f") or {}), "metadata": META}})


def keyed_lists(lists: Mapping[str, Mapping[str, Any]]) -> Shape:
    """A built-in kind's shape, which knows its keyed lists by field name wherever they are (as strategic
    merge patch does): `{"containers": {"l": "map", "k": ["name"]}}`; other lists are atomic."""
    anywhere: dict[str, Any] = {}
    anywhere["f"] = {name: {**spec, "i": anywhere, "*": anywhere} for name, spec in lists.items()}
    anywhere["*"] = anywhere["i"] = anywhere
    return object_shape(anywhere)


@cache
def _trees() -> dict[str, Any]:
    data = json.loads(resources.files(__package__).joinpath("ssa_shapes.json").read_text(encoding="utf-8"))
    shapes: dict[str, Any] = data["shapes"]
    return shapes


def crd_shape(group: str, version: str, kind: str) -> Shape:
    """A custom resource's shape from its CRD (`ssa_shapes.json`); all defaults for a kind without one."""
    return object_shape(_trees().get(f"{group}/{version}/{kind}", {}))


# -- path elements and FieldsV1 ----------------------------------------------------------------------------


def _json(value: Any) -> str:
    """JSON as Go's encoder writes it in a path element: compact, sorted keys, HTML characters escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def key_element(pairs: Iterable[tuple[str, Any]]) -> PathElement:
    """`k:{"containerPort":80,"protocol":"TCP"}`: a keyed item's key fields, sorted by name."""
    return "k", "{" + ",".join(f"{_json(name)}:{_json(value)}" for name, value in sorted(pairs)) + "}"


def _parse_element(text: str) -> PathElement | None:
    """A FieldsV1 key as a path element; None for a prefix this version does not know (ignored, as kube does)."""
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("f", "k", "v", "i"):
        return None
    if kind == "f":
        return "f", rest
    if kind == "i":
        return "i", str(int(rest))
    value = json.loads(rest)
    if kind == "k":
        if not isinstance(value, dict):
            raise ValueError(f"{text!r}: a key must be a JSON object")
        return key_element(value.items())
    return "v", _json(value)


def _value_order(value: Any) -> tuple[Any, ...]:
    """structured-merge-diff's order of values: numbers, strings, booleans, lists, maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_order(v)) for k, v in sorted(value.items())))
    return (5,)


def _element_order(pe: PathElement) -> tuple[Any, ...]:
    """Fields, then keys, then values, then indexes, each in their own order (as FieldsV1 lists them)."""
    kind, text = pe
    if kind == "f":
        return (0, text)
    if kind == "k":
        return (1, tuple((name, _value_order(v)) for name, v in sorted(json.loads(text).items())))
    if kind == "v":
        return (2, _value_order(json.loads(text)))
    return (3, int(text))


def to_fields_v1(fields: Iterable[FieldPath]) -> dict[str, Any]:
    """A field set as kube's FieldsV1 trie, ordered as kube writes it."""
    root: dict[PathElement, Any] = {}
    for path in fields:
        node = root
        for n, pe in enumerate(path):
            entry = node.setdefault(pe, [False, {}])
            if n == len(path) - 1:
                entry[0] = True
            node = entry[1]
    return _emit(root)


def _emit(node: dict[PathElement, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pe in sorted(node, key=_element_order):
        member, children = node[pe]
        sub: dict[str, Any] = {".": {}} if member and children else {}
        sub.update(_emit(children))
        out[f"{pe[0]}:{pe[1]}"] = sub
    return out


def from_fields_v1(raw: Any) -> FieldSet:
    """A FieldsV1 trie as a field set; ValueError when it is not one."""
    out: set[FieldPath] = set()

    def walk(node: Any, prefix: FieldPath) -> int:
        if not isinstance(node, dict):
            raise ValueError(f"FieldsV1 nodes are JSON objects, got {node!r}")
        children = 0
        for key, child in node.items():
            if key == ".":
                continue
            pe = _parse_element(key)
            if pe is None:
                continue
            path = (*prefix, pe)
            if walk(child, path) == 0 or "." in child:
                out.add(path)
            children += 1
        return children

    walk(raw, ())
    return frozenset(out)


def _show(value: Any) -> str:
    """A value in a path as kube prints it (strings quoted)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return str(value) if isinstance(value, int | float) else _json(value)


def path_string(path: FieldPath) -> str:
    """`.spec.containers[name="main"].image`, as conflicts name a field."""
    out = ""
    for kind, text in path:
        if kind == "f":
            out += f".{text}"
        elif kind == "k":
            out += "[" + ",".join(f"{k}={_show(v)}" for k, v in sorted(json.loads(text).items())) + "]"
        elif kind == "v":
            out += f"[={_show(json.loads(text))}]"
        else:
            out += f"[{text}]"
    return out


# -- walking objects by their shape --------------------------------------------------------------------------


class _Unkeyed(ValueError):
    """A list item that cannot be named by the list's keys."""


def _element(item: Any, shape: Shape) -> PathElement:
    if shape.list_type == "set":
        if isinstance(item, dict | list) or item is None:
            raise _Unkeyed("associative list without keys has an element that is not a scalar")
        return "v", _json(item)
    if not isinstance(item, dict):
        raise _Unkeyed("associative list with keys may not have non-map elements")
    pairs = [(k, item[k] if k in item else shape.defaults[k]) for k in shape.keys if k in item or k in shape.defaults]
    if not pairs:
        raise _Unkeyed(f"associative list with keys has an element that omits all key fields {list(shape.keys)} "
                       "(and doesn't have default values for any key fields)")
    return key_element(pairs)


def _elements(items: list[Any], shape: Shape) -> list[PathElement] | None:
    """Each item's path element, or None when the list cannot be keyed (then it is treated as atomic)."""
    try:
        return [_element(item, shape) for item in items]
    except _Unkeyed:
        return None


def _granular_list(value: Any, shape: Shape) -> bool:
    return isinstance(value, list) and shape.list_type != "atomic"


def field_set(obj: Any, shape: Shape) -> set[FieldPath]:
    """The fields an object sets (structured-merge-diff's ToFieldSet): its scalars, atomic lists and maps,
    empty maps and nulls, keyed items and set values."""
    out: set[FieldPath] = set()
    _collect(obj, shape, (), out)
    return out


def _collect(value: Any, shape: Shape, path: FieldPath, out: set[FieldPath]) -> None:
    if isinstance(value, dict) and not shape.atomic:
        for key, child in value.items():
            here = (*path, ("f", key))
            _collect(child, shape.field(key), here, out)
            if child is None or child == {}:
                out.add(here)
    elif _granular_list(value, shape) and (elements := _elements(value, shape)) is not None:
        counts = Counter(elements)
        for item, pe in zip(value, elements):
            out.add((*path, pe))
            if counts[pe] == 1:
                _collect(item, shape.item(), (*path, pe), out)
    elif path:
        out.add(path)


def applied_errors(config: Any, shape: Shape) -> list[str]:
    """What makes an applied configuration unusable (structured-merge-diff refuses it as a typed object):
    keyed-list items without keys, and two items with the same key."""
    errors: list[str] = []

    def walk(value: Any, shape: Shape, path: FieldPath) -> None:
        if isinstance(value, dict) and not shape.atomic:
            for key, child in value.items():
                walk(child, shape.field(key), (*path, ("f", key)))
        elif _granular_list(value, shape):
            seen: set[PathElement] = set()
            for n, item in enumerate(value):
                try:
                    pe = _element(item, shape)
                except _Unkeyed as e:
                    errors.append(f"{path_string(path)}: element {n}: {e}")
                    continue
                if pe in seen:
                    errors.append(f"{path_string(path)}: duplicate entries for key {path_string((pe,))}")
                seen.add(pe)
                walk(item, shape.item(), (*path, pe))

    walk(config, shape, ())
    return errors


def equal(a: Any, b: Any) -> bool:
    """JSON equality as structured-merge-diff judges it: 1 == 1.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and bool(a == b)


def merge(live: Any, config: Any, shape: Shape) -> Any:
    """`config` merged into `live`: maps key by key, keyed lists and sets item by item (live's items first
    where the config does not place them, the config's in its order), everything else replaced."""
    if isinstance(live, dict) and isinstance(config, dict) and not shape.atomic and (live or config):
        out = {k: merge(v, config[k], shape.field(k)) if k in config else copy.deepcopy(v) for k, v in live.items()}
        out.update({k: copy.deepcopy(v) for k, v in config.items() if k not in live})
        return out
    if _granular_list(live, shape) and _granular_list(config, shape) and (live or config):
        merged = _merge_list(live, config, shape)
        if merged is not None:
            return merged
    return copy.deepcopy(config)


def _merge_list(live: list[Any], config: list[Any], shape: Shape) -> list[Any] | None:
    """structured-merge-diff's order: live items the config does not mention stay where they were; the
    config's items come in its order, each merged with its live twin."""
    lpes, rpes = _elements(live, shape), _elements(config, shape)
    if lpes is None or rpes is None:
        return None
    lobs: dict[PathElement, Any] = {}
    for pe, item in zip(lpes, live):
        lobs[pe] = MISSING if pe in lobs else item  # a duplicated live item is replaced, not merged
    robs = dict(zip(rpes, config))
    shared = iter([pe for pe in rpes if pe in lobs])
    next_shared = next(shared, None)
    done: set[PathElement] = set()
    out: list[Any] = []
    li = ri = 0
    item_shape = shape.item()
    while li < len(lpes) or ri < len(rpes):
        if li < len(lpes) and ri < len(rpes):
            pe = lpes[li]
            if pe == rpes[ri]:
                done.add(pe)
                out.append(merge(lobs[pe], robs[pe], item_shape))
                li, ri = li + 1, ri + 1
                next_shared = next(shared, None)
                continue
            if pe in robs and next_shared is not None and next_shared != pe:
                li += 1  # shared, but not the one due now
                continue
        if li < len(lpes):
            pe = lpes[li]
            if pe not in robs:
                out.append(copy.deepcopy(live[li]))
                li += 1
                continue
            if pe in done:
                li += 1
        if ri < len(rpes):
            pe = rpes[ri]
            done.add(pe)
            out.append(merge(lobs.get(pe, MISSING), robs[pe], item_shape))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = next(shared, None)
    return out


@dataclass
class Comparison:
    """What a write added, changed and removed, as field paths (a newly added map counts with its fields)."""

    added: set[FieldPath] = field(default_factory=set)
    modified: set[FieldPath] = field(default_factory=set)
    removed: set[FieldPath] = field(default_factory=set)

    def without(self, ignored: Ignored) -> Comparison:
        return Comparison({p for p in self.added if not ignored(p)}, {p for p in self.modified if not ignored(p)},
                          {p for p in self.removed if not ignored(p)})


def compare(old: Any, new: Any, shape: Shape) -> Comparison:
    """structured-merge-diff's Compare of two objects of one kind."""
    out = Comparison()
    _compare(old, new, shape, (), out)
    return out


def _empty(value: Any) -> bool:
    return value is MISSING or value is None or value in ({}, [])


def _compare(old: Any, new: Any, shape: Shape, path: FieldPath, out: Comparison) -> None:
    granular = False
    if not (_empty(old) and _empty(new)):  # two empty sides compare as one leaf (empty vs null matters)
        if (isinstance(old, dict) or old is MISSING) and (isinstance(new, dict) or new is MISSING) \
                and not shape.atomic:
            before, after = old if isinstance(old, dict) else {}, new if isinstance(new, dict) else {}
            for key, value in before.items():
                _compare(value, after.get(key, MISSING), shape.field(key), (*path, ("f", key)), out)
            for key, value in after.items():
                if key not in before:
                    _compare(MISSING, value, shape.field(key), (*path, ("f", key)), out)
            granular = True
        elif (_granular_list(old, shape) or old is MISSING) and (_granular_list(new, shape) or new is MISSING):
            granular = _compare_lists(old, new, shape, path, out)
    if old is MISSING:
        out.added.add(path)
    elif new is MISSING:
        out.removed.add(path)
    elif not granular and not equal(old, new):
        out.modified.add(path)


def _compare_lists(old: Any, new: Any, shape: Shape, path: FieldPath, out: Comparison) -> bool:
    """Keyed items compared one to one; False when a side cannot be keyed (then the list is a leaf)."""
    before, after = (old if isinstance(old, list) else []), (new if isinstance(new, list) else [])
    lpes, rpes = _elements(before, shape), _elements(after, shape)
    if lpes is None or rpes is None:
        return False
    lvals: dict[PathElement, list[Any]] = {}
    rvals: dict[PathElement, list[Any]] = {}
    for pe, item in zip(lpes, before):
        lvals.setdefault(pe, []).append(item)
    for pe, item in zip(rpes, after):
        rvals.setdefault(pe, []).append(item)
    item_shape = shape.item()
    for pe in [*lvals, *(p for p in rvals if p not in lvals)]:
        ls, rs = lvals.get(pe, []), rvals.get(pe, [])
        here = (*path, pe)
        if len(ls) <= 1 and len(rs) <= 1:
            _compare(ls[0] if ls else MISSING, rs[0] if rs else MISSING, item_shape, here, out)
        elif len(ls) >= 2 and len(rs) >= 2:
            if not equal(ls, rs):
                out.modified.add(here)
        elif len(ls) >= 2:
            if rs:
                _compare(MISSING, rs[0], item_shape, here, out)
            out.removed.add(here)
        else:
            if ls:
                _compare(ls[0], MISSING, item_shape, here, out)
            out.added.add(here)
    return True


def remove(obj: Any, paths: Iterable[FieldPath], shape: Shape) -> Any:
    """`obj` without the fields and items at `paths` (each with all beneath it); a map or list that this
    empties goes too."""
    trie: dict[PathElement, Any] = {}
    for path in paths:
        node = trie
        for n, pe in enumerate(path):
            entry = node.setdefault(pe, [False, {}])
            if n == len(path) - 1:
                entry[0] = True
            node = entry[1]
    out = _remove(obj, trie, shape)
    return {} if out is _GONE else out


def _remove(value: Any, trie: dict[PathElement, Any], shape: Shape) -> Any:
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for key, child in value.items():
            entry = trie.get(("f", key))
            if entry is None:
                kept[key] = child
            elif not entry[0] and (rest := _remove(child, entry[1], shape.field(key))) is not _GONE:
                kept[key] = rest
        return kept if kept or not value else _GONE
    if _granular_list(value, shape) and (elements := _elements(value, shape)) is not None:
        items: list[Any] = []
        for item, pe in zip(value, elements):
            entry = trie.get(pe)
            if entry is None:
                items.append(item)
            elif not entry[0] and (rest := _remove(item, entry[1], shape.item())) is not _GONE:
                items.append(rest)
        return items if items or not value else _GONE
    return value


def _drop_nulls(value: Any) -> Any:
    """`null` is "unset" in Kubernetes objects: an applied `null` removes the field."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


# -- managers ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One `managedFields` entry: who wrote (manager, operation, version, subresource) and what they own."""

    manager: str
    operation: str
    api_version: str
    fields: FieldSet
    time: str | None = None
    subresource: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        """kube's manager identifier: an applier is one manager whatever version it applies with."""
        return self.manager, self.operation, self.subresource, "" if self.operation == APPLY else self.api_version

    def identifier(self) -> str:
        """The identifier as kube spells it (JSON of the entry without fields and time): the order of managers
        in conflict messages and of the oldest updates merged."""
        entry = {"manager": self.manager, "operation": self.operation}
        if self.operation == UPDATE:
            entry["apiVersion"] = self.api_version
        if self.subresource:
            entry["subresource"] = self.subresource
        return json.dumps(entry, separators=(",", ":"))

    def describe(self) -> str:
        """`"kubectl-client-side-apply" using trainer.kubeflow.org/v1alpha1`, as conflicts name a manager."""
        said = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            said += f" with subresource {json.dumps(self.subresource)}"
        return f"{said} using {self.api_version}" if self.operation == UPDATE else said


Managed = dict[tuple[str, str, str, str], Entry]


def decode(raw: Any) -> Managed:
    """`metadata.managedFields` as entries by manager; ValueError when an entry is not one kube would accept."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ValueError("managedFields must be a list")
    out: Managed = {}
    for n, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ValueError(f"managed fields entry {n} is not an object")
        if item.get("operation") not in (APPLY, UPDATE):
            raise ValueError("operation must be `Apply` or `Update`")
        if not item.get("apiVersion"):
            raise ValueError("apiVersion must not be empty")
        if item.get("fieldsType") != "FieldsV1":
            raise ValueError(f"invalid fieldsType {item.get('fieldsType')!r} in managed fields entry {n}")
        manager, subresource, time = item.get("manager", ""), item.get("subresource", ""), item.get("time")
        if not all(isinstance(v, str) for v in (manager, subresource, item["apiVersion"])) \
                or not isinstance(time, str | None):
            raise ValueError(f"managed fields entry {n} has a field that is not a string")
        entry = Entry(manager, item["operation"], item["apiVersion"], from_fields_v1(item.get("fieldsV1") or {}),
                      time, subresource)
        out[entry.key] = entry
    return out


def is_reset(raw: Any) -> bool:
    """`managedFields: []` (or one empty entry) in a write asks to clear them, as kube reads it."""
    return raw in ([], [{}])


def _seconds(time: str | None) -> float:
    if not time:
        return 0
    try:
        return datetime.fromisoformat(time).timestamp()
    except ValueError:
        return 0


def encode(managed: Managed) -> list[dict[str, Any]]:
    """Entries as `metadata.managedFields`, in kube's order: Apply before Update, then oldest first."""
    entries = sorted(managed.values(), key=lambda e: (e.operation, _seconds(e.time), e.manager, e.api_version,
                                                      e.subresource))
    out = []
    for e in entries:
        item: dict[str, Any] = {"manager": e.manager, "operation": e.operation, "apiVersion": e.api_version}
        if e.time:
            item["time"] = e.time
        item["fieldsType"] = "FieldsV1"
        item["fieldsV1"] = to_fields_v1(e.fields)
        if e.subresource:
            item["subresource"] = e.subresource
        out.append(item)
    return out


def _without_managed_fields(obj: Any) -> Any:
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return obj if obj is not None else {}
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def _strip(fields: Iterable[FieldPath]) -> FieldSet:
    return frozenset(p for p in fields if p and p not in _STRIPPED)


def _prefixes(fields: Iterable[FieldPath]) -> set[FieldPath]:
    return {path[:n] for path in fields for n in range(1, len(path) + 1)}


class Conflicts(Exception):
    """An apply would change fields other managers own: each (manager, field)."""

    def __init__(self, found: list[tuple[Entry, FieldPath]]) -> None:
        super().__init__(f"{len(found)} conflicts")
        self.found = found


def _settle(old: Any, new: Any, managed: Managed, me: tuple[str, str, str, str], force: bool, shape: Shape,
            ignored: Ignored) -> tuple[Managed, Comparison]:
    """Take what changed from the other managers: refused (Conflicts) for an applier that does not force."""
    diff = compare(old, new, shape).without(ignored)
    changed = diff.added | diff.modified
    clashes = {key: e.fields & changed for key, e in managed.items() if key != me and e.fields & changed}
    if clashes and not force:
        raise Conflicts([(managed[key], p) for key, paths in clashes.items() for p in paths])
    out: Managed = {}
    for key, e in managed.items():
        rest = e.fields - clashes.get(key, frozenset()) - diff.removed
        if rest:
            out[key] = e if rest == e.fields else replace(e, fields=frozenset(rest))
    return out, diff


def update(live: Any, new: Any, managed: Managed, manager: str, api_version: str, *, shape: Shape, now: str,
           subresource: str = "", ignored: Ignored = lambda _: False) -> Managed:
    """The entries after a non-apply write of `new` over `live` (None when creating): what it added or
    changed becomes `manager`'s (an `Update` entry, stamped `now`), taken from whoever owned it; what it
    removed, nobody owns any more."""
    me = Entry(manager, UPDATE, api_version, frozenset(), None, subresource)
    old_body, new_body = _without_managed_fields(live), _without_managed_fields(new)
    entries, diff = _settle(old_body, new_body, managed, ("", "", "", ""), True, shape, ignored)
    mine = _strip(diff.added | diff.modified)
    if mine:
        before = entries.get(me.key)
        entries[me.key] = replace(me, fields=mine | (before.fields if before else frozenset()), time=now)
    return _cap_updates(entries)


def _cap_updates(managed: Managed) -> Managed:
    """kube's capManagersManager: past ten Update entries, the oldest merge into `ancient-changes`."""
    updaters = sorted((e for e in managed.values() if e.operation == UPDATE),
                      key=lambda e: (_seconds(e.time), e.identifier()))
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    out = dict(managed)
    first: dict[str, tuple[str, str, str, str]] = {}
    count = len(updaters)
    for e in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        bucket = (ANCIENT, UPDATE, "", e.api_version)
        if e.api_version not in first:
            first[e.api_version] = e.key
            continue
        if bucket not in out:
            oldest = out.pop(first[e.api_version])
            out[bucket] = Entry(ANCIENT, UPDATE, e.api_version, oldest.fields, oldest.time)
        out[bucket] = replace(out[bucket], fields=out[bucket].fields | e.fields, time=e.time)
        out.pop(e.key, None)
        count -= 1
    return out


def apply(live: Any, config: dict[str, Any], managed: Managed, manager: str, api_version: str, *, shape: Shape,
          now: str, force: bool = False, subresource: str = "",
          ignored: Ignored = lambda _: False) -> tuple[dict[str, Any], Managed]:
    """Server-side apply of `config` by `manager` over `live` (None when creating): the merged object and the
    entries. Raises Conflicts when a field another manager owns would change and `force` is not given."""
    me = Entry(manager, APPLY, api_version, frozenset(), None, subresource)
    body = _without_managed_fields(live)
    merged = _drop_nulls(merge(body, config, shape))
    applied = frozenset(p for p in field_set(config, shape) if not ignored(p))
    entries = dict(managed)
    last = entries.get(me.key)
    entries[me.key] = replace(me, fields=applied, time=last.time if last else None)
    if last:
        owned = _prefixes(p for e in entries.values() for p in e.fields)
        merged = remove(merged, [p for p in last.fields if p not in owned], shape)
    try:
        entries, _ = _settle(body, merged, entries, me.key, force, shape, ignored)
    except Conflicts as conflicts:
        if manager != KUBECTL:
            raise
        allowed = _allowed_by_last_applied(body, shape, api_version)
        if rest := [(e, p) for e, p in conflicts.found if p not in allowed]:
            raise Conflicts(rest) from None
        entries, _ = _settle(body, merged, entries, me.key, True, shape, ignored)
    mine = entries.get(me.key)
    if mine is not None:
        stripped = _strip(mine.fields)
        changed = not equal(body, merged)
        if stripped:
            entries[me.key] = replace(mine, fields=stripped, time=now if changed else mine.time)
        else:
            del entries[me.key]
    if manager == KUBECTL:
        _sync_last_applied(merged, config)
    return merged, entries


def _allowed_by_last_applied(live: Any, shape: Shape, api_version: str) -> FieldSet:
    """kube's lastAppliedManager: kubectl's first server-side apply after client-side ones may take the fields
    its last client-side apply set, where the live object still has the value applied then."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    try:
        last = json.loads(annotations.get(LAST_APPLIED) or "")
    except ValueError:
        return frozenset()
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return frozenset()
    diff = compare(last, live, shape)
    return frozenset(field_set(last, shape) - diff.modified - diff.added - diff.removed)


def _sync_last_applied(obj: dict[str, Any], config: dict[str, Any]) -> None:
    """kube's lastAppliedUpdater: kubectl's applies keep an existing client-side apply annotation current (the
    applied configuration without the annotation, as Go's JSON encoder writes it), so a later client-side apply
    still computes the right patch."""
    annotations = (obj.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict) or not annotations.get(LAST_APPLIED):
        return
    meta = dict(config.get("metadata") or {})
    if isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k != LAST_APPLIED}
    value = _json({**config, "metadata": meta}) + "\n"
    annotations[LAST_APPLIED] = value
    if sum(len(k) + len(str(v)) for k, v in annotations.items()) > MAX_ANNOTATIONS:
        del annotations[LAST_APPLIED]


def conflict_error(conflicts: Conflicts) -> ApiError:
    """409 Conflict worded as kube-apiserver words it; kubectl adds its hint about --force-conflicts."""
    found = sorted(conflicts.found, key=lambda c: (c[0].identifier(), [_element_order(pe) for pe in c[1]]))
    causes = [Cause(path_string(p), f"conflict with {e.describe()}", "FieldManagerConflict") for e, p in found]
    if len(found) == 1:
        e, p = found[0]
        return ApiError(409, "Conflict", f"Apply failed with 1 conflict: conflict with {e.describe()}: "
                                         f"{path_string(p)}", causes=causes)
    lines: list[str] = []
    last = ""
    for e, p in found:
        if e.identifier() != last:
            last = e.identifier()
            lines.append(f"conflicts with {e.describe()}:")
        lines.append(f"- {path_string(p)}")
    return ApiError(409, "Conflict", f"Apply failed with {len(found)} conflicts: " + "\n".join(lines),
                    causes=causes)
