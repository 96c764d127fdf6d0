"""The live progress bar of `Client.wait(name, show_progress=True)`: in a notebook and in a terminal.

A notebook gets one HTML output (an HTML `<progress>` element with the phase, the program's metrics and
its ETA) that is replaced in place at each poll through IPython's display handles — plain
`display_data`/`update_display_data` messages, so it renders in JupyterLab, classic Notebook, VS Code
and a saved `.ipynb` alike, with no widget extension to install. A terminal gets a rich progress bar on
stderr (rich is the CLI's own renderer). What both show is one `JobView`, made from the TrainJob each
poll reads: the derived phase, and the percentage its program last reported (`status.trainerStatus`,
docs/progress.md), 100 once the job is Complete.
"""

from __future__ import annotations

import html
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from mpijob.api import Obj
from mpijob.api.trainer.progress import progress_of
from mpijob.client.wait import JobState

ENDED = ("Succeeded", "Failed")
BAR_WIDTH = 30  # characters of the text bar


@dataclass(frozen=True)
class JobView:
    """What the bar shows of a job at one poll."""

    name: str
    phase: str
    message: str = ""
    percentage: int | None = None  # the program's report (None before its first), 100 once Complete
    remaining: int | None = None  # seconds left by the last report, counted down since
    metrics: dict[str, str] = field(default_factory=dict)
    pods_ready: int = 0
    pods_total: int = 0

    @classmethod
    def of(cls, name: str, trainjob: Obj, state: JobState, now: datetime) -> JobView:
        """The view of `trainjob` as a poll at `now` found it (`state`: its phase and pods)."""
        reported = progress_of(trainjob)
        pct = reported.percentage if reported else None
        left = reported.remaining_at(now) if reported else None
        if state.phase == "Succeeded":
            pct, left = 100, 0
        return cls(name, state.phase, state.message, pct, None if left is None else round(left),
                   dict(reported.metrics) if reported else {}, state.pods_ready, state.pods_total)

    @property
    def ended(self) -> bool:
        return self.phase in ENDED

    def detail(self) -> str:
        """`loss=0.12 step=7 · ETA 3s`, or why it waits (the phase's message) before any report."""
        parts = [" ".join(f"{k}={v}" for k, v in self.metrics.items())] if self.metrics else []
        if self.remaining is not None and not self.ended:
            parts.append(f"ETA {self.remaining}s")
        if not parts and self.message and not self.ended:
            parts.append(self.message)
        if self.phase == "Failed" and self.message:
            parts.append(self.message)
        return " · ".join(parts)

    def text(self) -> str:
        """One line: `pi [#########.....................]  30% Running · loss=0.12 · ETA 7s`."""
        pct = self.percentage or 0
        filled = BAR_WIDTH * pct // 100
        shown = "  —" if self.percentage is None else f"{pct:3d}%"
        tail = f" · {d}" if (d := self.detail()) else ""
        return f"{self.name} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {shown} {self.phase}{tail}"

    def html(self) -> str:
        """The notebook's rendering: an HTML progress element and the same words as `text()`."""
        value = "" if self.percentage is None else f' value="{self.percentage}"'  # no value: indeterminate
        shown = "—" if self.percentage is None else f"{self.percentage}%"
        colour = {"Succeeded": "#2e7d32", "Failed": "#c62828"}.get(self.phase, "inherit")
        detail = html.escape(self.detail())
        return (f'<div class="mpijob-progress" style="font-family: monospace">'
                f"<b>{html.escape(self.name)}</b> "
                f'<progress{value} max="100" style="width: 20em; vertical-align: middle"></progress> '
                f'{shown} <span style="color: {colour}">{html.escape(self.phase)}</span>'
                + (f" · {detail}" if detail else "") + "</div>")


class Display(Protocol):
    """Where a wait shows each new view; `close()` once it ends."""

    def show(self, view: JobView) -> None: ...

    def close(self) -> None: ...


class NotebookDisplay:
    """One rich output in the notebook, replaced in place (`update_display_data`) at each new view."""

    def __init__(self) -> None:
        from IPython.display import display

        self._display = display
        self._handle: Any = None

    def show(self, view: JobView) -> None:
        bundle = {"text/html": view.html(), "text/plain": view.text()}
        if self._handle is None:
            self._handle = self._display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)

    def close(self) -> None:
        pass  # the last view stays as the cell's output


class TerminalDisplay:
    """A rich progress bar on stderr: redrawn in place on a terminal, its last state printed elsewhere."""

    def __init__(self) -> None:
        self._progress: Any = None
        self._task: Any = None

    def _start(self, name: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn
        from rich.table import Column

        # the name and the state keep their width however narrow the terminal; the detail takes what is
        # left, cut with "…"
        self._progress = Progress(
            TextColumn("{task.description}", table_column=Column(no_wrap=True, min_width=len(name))),
            BarColumn(bar_width=BAR_WIDTH),
            TextColumn("{task.fields[state]}", table_column=Column(no_wrap=True, min_width=len("100% Succeeded"))),
            TextColumn("{task.fields[detail]}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
            console=Console(stderr=True), transient=False, expand=True)
        self._progress.start()

    def show(self, view: JobView) -> None:
        shown = "—" if view.percentage is None else f"{view.percentage}%"
        fields: dict[str, Any] = {"state": f"{shown:>4} {view.phase}",
                                  "detail": f"· {d}" if (d := view.detail()) else ""}
        if self._task is None:
            self._start(view.name)
            self._task = self._progress.add_task(view.name, total=100, **fields)
        self._progress.update(self._task, completed=view.percentage or 0, **fields)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's kernel shell), where HTML outputs render."""
    ipython = sys.modules.get("IPython")  # a kernel has imported it; never import it just to ask
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and hasattr(shell, "kernel")


def progress_display() -> Display:
    """The display that renders where this code runs: a notebook's HTML output, else a terminal bar."""
    return NotebookDisplay() if in_notebook() else TerminalDisplay()
