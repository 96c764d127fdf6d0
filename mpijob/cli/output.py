"""Printing: tables with rich for people, raw JSON/YAML/names for machines, errors to stderr.

Machine formats go through plain `print` so no rich markup, wrapping or colour can reach them. rich
and PyYAML are imported where they are used, so a command that prints JSON never loads them.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mpijob.api import Obj
from mpijob.api.core.errors import ApiError
from mpijob.cli.exitcodes import UsageError
from mpijob.cli.flags import message
from mpijob.client.errors import hint

if TYPE_CHECKING:
    from rich.console import Console

FORMATS = ("json", "yaml", "wide", "name")


def stdout() -> Console:
    """A console on the current stdout; wide when piped so rows never wrap."""
    from rich.console import Console

    tty = sys.stdout.isatty()
    return Console(file=sys.stdout, highlight=False, soft_wrap=True, width=None if tty else 4096)


def stderr() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False, soft_wrap=True, stderr=True)


def info(text: str) -> None:
    """A progress/status line for people: stderr, so stdout stays the program's output."""
    print(text, file=sys.stderr, flush=True)


def error(exc: BaseException) -> None:
    """The message and, for API errors, one `* field: message` line per cause (kubectl's shape)."""
    lines = [f"error: {hint(exc) if isinstance(exc, ApiError) else message(exc)}"]
    if isinstance(exc, ApiError) and exc.causes:
        if " is invalid: " in exc.message:  # the causes below repeat what follows, as kubectl prints it
            lines = [f"error: {exc.message.split(' is invalid: ')[0]} is invalid:"]
        for c in exc.causes:
            lines.append(f"* {c.field}: {c.message}" if c.field else f"* {c.message}")
    print("\n".join(lines), file=sys.stderr, flush=True)


def check_format(fmt: str | None, allowed: Sequence[str] = FORMATS, command: str = "") -> None:
    """A `-o` value outside `allowed` is a usage error naming the choices."""
    if fmt is not None and fmt not in allowed:
        where = f"{command} --output" if command else "--output"
        raise UsageError(f"{where} {fmt!r} is not supported; use one of: {', '.join(allowed)}")


def as_list(items: list[Obj]) -> Obj:
    """Several objects as kubectl prints them: a `v1 List`."""
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def dump(data: Any, fmt: str) -> None:
    """Print an object (or a List) as `json` or `yaml`, nothing else on stdout; without `managedFields`, which
    kubectl hides too unless asked (`kubectl get -o yaml --show-managed-fields`)."""
    data = _without_managed_fields(data)
    if fmt == "json":
        sys.stdout.write(json.dumps(data, indent=4, sort_keys=False) + "\n")
    else:
        import yaml

        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    sys.stdout.flush()


def _without_managed_fields(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    if isinstance(data.get("items"), list):
        return {**data, "items": [_without_managed_fields(item) for item in data["items"]]}
    meta = data.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return {**data, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return data


def table(columns: Sequence[str], rows: Sequence[Sequence[str]], console: Console | None = None) -> None:
    """A kubectl-like borderless table (upper-case headers, columns separated by 3 spaces). Piped, the same
    text is written without rich's layout engine, which takes a second over a few thousand rows."""
    cells = [[str(c) for c in columns], *([str(c) for c in row] for row in rows)]
    if console is None and not sys.stdout.isatty() and not any(_CONTROL.search(c) for r in cells for c in r):
        sys.stdout.write(_plain(cells))
        return
    from rich.table import Table
    from rich.text import Text

    t = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 3, 0, 0), header_style="bold")
    for col in columns:
        t.add_column(col, no_wrap=True, overflow="ignore")
    for row in rows:
        t.add_row(*(Text(str(cell)) for cell in row))  # Text: no markup parsing of data
    console = console or stdout()
    if console.is_terminal:
        console.print(t)
        return
    with console.capture() as captured:
        console.print(t)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a cell rich would lay out otherwise (a line break, a tab)


def _plain(cells: list[list[str]]) -> str:
    """What rich prints for `table`'s cells on a file: columns as wide as their widest cell (in terminal
    cells), 3 spaces apart, no trailing blanks."""
    from rich.cells import cell_len

    widths = [max(cell_len(r[i]) for r in cells if i < len(r)) for i in range(len(cells[0]))]
    lines = ("   ".join(c + " " * (w - cell_len(c)) for c, w in zip(r, widths)).rstrip() for r in cells)
    return "".join(line + "\n" for line in lines)


def indented_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    """A table inside `describe`'s text, indented two spaces (`<none>` when empty)."""
    if not rows:
        return ["  <none>"]
    widths = [max(len(str(r[i])) for r in [columns, *rows]) for i in range(len(columns))]
    lines = []
    for r in [columns, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(r, widths)]
        lines.append(("  " + "   ".join(cells)).rstrip())
    return lines


def kv(lines: list[str], key: str, value: Any, indent: int = 0) -> None:
    """One `Key:  value` line of `describe`'s text, values aligned."""
    lines.append(f"{' ' * indent}{key + ':':<{max(18 - indent, len(key) + 2)}}{'' if value is None else value}")
