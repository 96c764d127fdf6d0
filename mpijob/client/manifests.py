"""Reading manifests (`-f FILE`): YAML or JSON, several documents, `kind: List` unwrapped.

Everything is checked before anything is sent, so a file with one broken document creates nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mpijob.api import Obj, names
from mpijob.api.core.errors import ApiError, Cause


def _bad(source: str, message: str, causes: list[Cause] | None = None) -> ApiError:
    return ApiError(400, "BadRequest", f"{source}: {message}", causes=causes or [])


def read(path: str) -> tuple[str, str]:
    """(text, source name) of a file, `-` meaning stdin."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    p = Path(path).expanduser()
    try:
        return p.read_text(encoding="utf-8"), str(path)
    except FileNotFoundError:
        raise _bad(str(path), "no such file; pass -f with the path of a YAML or JSON manifest") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise _bad(str(path), f"cannot read it ({exc}); pass -f with a readable UTF-8 YAML or JSON file") from None


def parse(text: str, source: str = "<input>") -> list[Obj]:
    """The objects in a YAML/JSON stream, in order; a 400 `ApiError` naming the problem otherwise."""
    import yaml  # here: PyYAML costs a CLI call ~15 ms to import, and most calls read no manifest

    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise _bad(source,
                   f"cannot parse YAML{where}: {problem}; fix the syntax (indentation, quoting, colons)") from None
    objects: list[Obj] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            objects.extend(doc["items"])
        else:
            objects.append(doc)
    if not objects:
        raise _bad(source, "contains no objects; it needs at least one document with apiVersion and kind")
    for i, obj in enumerate(objects, 1):
        check(obj, f"{source}: object {i}" if len(objects) > 1 else source)
    return objects


def check(obj: Any, where: str) -> None:
    """The envelope every object needs before the server can even route it."""
    if not isinstance(obj, dict):
        raise ApiError(
            400, "BadRequest", f"{where}: expected an object (mapping) with apiVersion, kind and metadata, "
            f"got {type(obj).__name__} {str(obj)[:60]!r}"
        )
    causes: list[Cause] = []
    for key, example in (("apiVersion", names.TRAINER_API_VERSION), ("kind", "TrainJob")):
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            causes.append(Cause(key, f"Required value: got {value!r}; set it, e.g. {key}: {example}",
                                "FieldValueRequired"))
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        causes.append(Cause("metadata", f"Required value: got {meta!r}; set metadata.name", "FieldValueRequired"))
    elif not (meta.get("name") or meta.get("generateName")):
        causes.append(Cause("metadata.name", "Required value: name or generateName is required", "FieldValueRequired"))
    if causes:
        joined = ", ".join(f"{c.field}: {c.message}" for c in causes)
        raise ApiError(400, "BadRequest", f"{where}: invalid object: {joined}", causes=causes)


def load(path: str) -> list[Obj]:
    """`read` + `parse`."""
    text, source = read(path)
    return parse(text, source)
