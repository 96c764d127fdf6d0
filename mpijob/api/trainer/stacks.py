"""Every rank's stack at one moment, merged as LLNL's STAT merges them: identical stacks make one group, the
ranks that share it written as ranges ("0-6,9"), and the odd ones out first, since a rank that does something
the others do not is most often the one they wait for ("ranks 0-6 wait in MPI_Barrier, rank 7 is still
reading its batch"). Pure: the tools' output in (`py-spy dump --json`, `eu-stack`, gdb's `bt`),
groups and their JSON out; `controllers/trainer/stacks.py` runs the tools.

A stack is its rank's main thread, outermost call first, as a traceback reads. Two ranks waiting in the
same collective are caught at different instructions of the MPI library's progress loop, so a stack ends at
its MPI call (`MPI_Barrier`, the profiling name `PMPI_Barrier` written as the program called it): what lies
below is the library's business and would split every group. Frames with no name (an address) and the C
runtime's start-up frames are left out, as they say nothing and an address differs from rank to rank.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mpijob.api import Obj, names

PY_SPY, EU_STACK, GDB = "py-spy", "eu-stack", "gdb"  # the tools, by the names their programs have
KIND = "StackDump"
API_VERSION = f"{names.MPIJOB_GROUP}/{names.MPIJOB_VERSION}"
_MPI_CALL = re.compile(r"^P?MPI_[A-Z]\w*$")  # an MPI function the program calls (not MPIR_/ompi_ internals)
_START_UP = ("_start", "__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl")
_ADDRESS = re.compile(r"^(0x[0-9a-fA-F]+|\?\?)$")
_EVAL = frozenset({"_PyEval_EvalFrameDefault", "_PyEval_EvalFrame", "PyEval_EvalFrameEx"})  # CPython's bytecode loop
# how CPython calls a C function from its loop: not the program's calls
_TRAMPOLINE = re.compile(r"^(_?PyObject_\w*[Cc]all\w*|_?PyVectorcall_\w+|cfunction_\w+|method_vectorcall\w*|"
                         r"_PyFunction_Vectorcall|vectorcall_\w+)$")
# eu-stack -m -s: "#3  0x00007f3f991d3d79 ompi_barrier - /usr/lib/libmpi.so.40" then "    file.c:12:5"
_EU_FRAME = re.compile(r"^#\d+\s+0x[0-9a-fA-F]+\s+(?P<function>\S+)(?:\s+-\s+(?P<module>\S+))?\s*$")
_EU_SOURCE = re.compile(r"^\s+(?P<file>\S+?):(?P<line>\d+)(?::\d+)?\s*$")
# gdb: "#0  0x00007f.. in clock_nanosleep (...) at file.c:48" or "#3  main () at prog.c:12" or "... from /lib/x.so"
_GDB_FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-fA-F]+ in )?(?P<function>\S+) \(.*?\)"
                        r"(?: at (?P<file>\S+?):(?P<line>\d+)| from (?P<module>\S+))?\s*$")


def stack_hint(job: str, namespace: str) -> str:
    """The words that send a reader of a stall to this tool (the stall's Event and condition carry them)."""
    return f"see its ranks' stacks: mpijob debug stacks {job} -n {namespace}"


@dataclass(frozen=True)
class Frame:
    """One call: the function, and where it is (`file:line` of a Python or debug-built frame, else its library)."""

    function: str
    where: str = ""

    def text(self) -> str:
        return f"{self.function} ({self.where})" if self.where else self.function


@dataclass(frozen=True)
class RankStack:
    """What was read of one rank: its stack, or why it could not be read (`error`)."""

    rank: int
    pod: str
    pid: int
    tool: str = ""
    frames: tuple[Frame, ...] = ()  # outermost first
    error: str = ""


@dataclass(frozen=True)
class Group:
    """Ranks caught in the same stack."""

    ranks: tuple[int, ...]
    frames: tuple[Frame, ...]
    pods: tuple[str, ...]
    tools: tuple[str, ...]


# -- the tools' output -----------------------------------------------------------------------------


def _where(file: str, line: int | str | None) -> str:
    return f"{file}:{line}" if line and str(line) != "0" else file


def _basename(path: str) -> str:
    return path.rpartition("/")[2]


def from_py_spy(threads: Any, ids: Collection[int]) -> tuple[Frame, ...]:
    """The main thread's Python stack from `py-spy dump --json` (innermost first there): the thread whose OS id
    is one of the process's `ids` (in a PID namespace py-spy says the namespace's), else `MainThread`, else the
    oldest (CPython lists the newest thread first)."""
    if not isinstance(threads, list) or not threads:
        return ()
    found = [t for t in threads if isinstance(t, dict)]
    main = next((t for t in found if t.get("os_thread_id") in ids),
                next((t for t in found if t.get("thread_name") == "MainThread"), threads[-1]))
    frames = []
    for f in (main.get("frames") if isinstance(main, dict) else None) or []:
        if not isinstance(f, dict):
            continue
        file = str(f.get("short_filename") or _basename(str(f.get("filename") or "")))
        frames.append(Frame(str(f.get("name") or "??"), _where(file, f.get("line"))))
    return tuple(reversed(frames))


def from_eu_stack(text: str) -> tuple[Frame, ...]:
    """The first thread's stack from `eu-stack -1 -m -s -p PID` (innermost first there)."""
    frames: list[Frame] = []
    for line in text.splitlines():
        if line.startswith("TID ") and frames:
            break  # one thread only
        if m := _EU_FRAME.match(line):
            frames.append(Frame(m["function"], _basename(m["module"] or "")))
        elif frames and (s := _EU_SOURCE.match(line)):
            frames[-1] = Frame(frames[-1].function, _where(s["file"], s["line"]))
    return tuple(reversed(frames))


def from_gdb(text: str) -> tuple[Frame, ...]:
    """The current (main) thread's stack from `gdb -batch -ex bt` (innermost first there)."""
    frames = []
    for line in text.splitlines():
        if m := _GDB_FRAME.match(line.strip()):
            where = _where(m["file"], m["line"]) if m["file"] else _basename(m["module"] or "")
            frames.append(Frame(m["function"], where))
    return tuple(reversed(frames))


def with_native(python: Sequence[Frame], native: Sequence[Frame]) -> tuple[Frame, ...]:
    """A Python rank's stack: its Python frames, then the native calls below the innermost one (the native stack
    below its innermost interpreter frame, less the interpreter's call trampolines), so that `time.sleep` goes
    down to `clock_nanosleep` and `comm.Barrier()` to `MPI_Barrier`. py-spy's own `--native` does this too, but
    not for a rank in a PID namespace (it unwinds by the namespace's thread ids), hence eu-stack's frames here."""
    inner = max((i for i, f in enumerate(native) if f.function in _EVAL), default=None)
    if inner is None:
        return tuple(python)
    return (*python, *(f for f in native[inner + 1:] if not _TRAMPOLINE.match(f.function)))


def simplify(frames: Sequence[Frame]) -> tuple[Frame, ...]:
    """The stack as it is grouped and shown (the module's docstring): no addresses, no start-up frames, symbol
    versions off (`clock_nanosleep@GLIBC_2.2.5`), and nothing below the outermost MPI call."""
    out: list[Frame] = []
    for f in frames:
        function = f.function.partition("@")[0]
        if _ADDRESS.match(function) or function in _START_UP:
            continue
        if _MPI_CALL.match(function):
            out.append(Frame(function.removeprefix("P"), f.where))
            break
        out.append(Frame(function, f.where))
    return tuple(out)


# -- merging ---------------------------------------------------------------------------------------


def rank_ranges(ranks: Iterable[int]) -> str:
    """`0-6,9`: the ranks, sorted, runs of consecutive ones as ranges."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def merge(stacks: Iterable[RankStack]) -> tuple[list[Group], list[RankStack]]:
    """The groups of identical stacks, fewest ranks first (ties: lowest rank first), and the ranks that could
    not be read, by rank."""
    by_stack: dict[tuple[Frame, ...], list[RankStack]] = {}
    errors = []
    for s in stacks:
        if s.error:
            errors.append(s)
        else:
            by_stack.setdefault(s.frames, []).append(s)
    groups = [Group(tuple(sorted(s.rank for s in members)), frames, tuple(sorted({s.pod for s in members})),
                    tuple(sorted({s.tool for s in members})))
              for frames, members in by_stack.items()]
    groups.sort(key=lambda g: (len(g.ranks), g.ranks[0]))
    return groups, sorted(errors, key=lambda s: s.rank)


def group_title(ranks: Sequence[int], total: int) -> str:
    """`ranks 0-6 (7 of 8)`, `rank 7 (1 of 8)`: a group's header, in every surface's words."""
    return f"rank{'s' if len(ranks) > 1 else ''} {rank_ranges(ranks)} ({len(ranks)} of {total})"


def dump(namespace: str, job: str, stacks: Sequence[RankStack], seconds: float, collected: str) -> Obj:
    """The answer the server gives, and `mpijob debug stacks -o json` prints: the merged groups (frames
    outermost first), then the ranks that could not be read."""
    groups, errors = merge(stacks)
    return {
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": job, "namespace": namespace, "creationTimestamp": collected},
        "ranks": len(stacks), "seconds": round(seconds, 3),
        "groups": [{"ranks": rank_ranges(g.ranks), "rankList": list(g.ranks),
                    "title": group_title(g.ranks, len(stacks)), "pods": list(g.pods), "tools": list(g.tools),
                    "frames": [{"function": f.function, "where": f.where} for f in g.frames]} for g in groups],
        "errors": [{"rank": e.rank, "pod": e.pod, "pid": e.pid, "tool": e.tool, "message": e.error} for e in errors],
    }


def frames_of(group: Mapping[str, Any]) -> list[Frame]:
    """A group's frames as `dump` wrote them (for the surfaces that read the JSON back)."""
    return [Frame(str(f.get("function", "")), str(f.get("where", ""))) for f in group.get("frames") or []
            if isinstance(f, dict)]
