"""What mpirun, ssh and the MPI daemons said in a launcher's log, told apart from what the ranks printed.

A failure class that blames the launch (a program not found, a key refused, a host unknown, too few
slots, a daemon lost, a rank signalled) is earned only from the launch tools' own words, never from a
program that happens to print the same sentence (`api/trainer/failures.py`). Two things tell them apart:

* **Provenance.** The local cluster stores each launcher line with the rank that wrote it
  (`api/trainer/mpi_output.py`); a line with a rank is the program's, whatever it says. Open MPI 4 and Hydra
  (MPICH, Intel MPI) tag every rank here; Open MPI 5 tags none unless the command asks for `--output
  tag`, and a launcher whose own command prints (a shell script around mpirun) has untagged lines too.
* **Shape.** So an untagged line counts only in the shape its tool prints it: Open MPI's (ORTE's and
  PRRTE's) messages as the first words of a help box (text between two rules of dashes, read with its
  line breaks collapsed, since Open MPI 4 and 5 wrap the same sentence differently); ssh's as a whole
  line; Hydra's with its `[mpiexec@host]` or `[proxy:…@host]` prefix, its signal report as its banner of
  `=` rules. ssh's lines also need the MPI launcher's own word that a daemon did not start.

Each MPI's words count only under that MPI when the runner says which ran (`Facts.implementation`): a
program under Open MPI 5 printing Hydra's `[mpiexec@host] ... Launch proxy failed.` is the program's.

What stays ambiguous: untagged output (Open MPI 5's ranks, or a launcher's own script) that reproduces a
whole box, or ssh's line together with its MPI's own word after it, reads as the tool's. Hydra's proxy
writes its `execvp error` into the rank's own stream, so that line carries a rank: it counts only when
mpiexec then exits 255, as Hydra's failed exec makes it (a rank that prints it and exits 255 reads so too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mpijob.api.trainer import mpi_impl


@dataclass(frozen=True)
class Line:
    """A line of the launcher's log and the MPI rank that printed it (None: mpirun, ssh, the shell)."""

    rank: int | None
    text: str


_RULE = re.compile(r"\s*-{20,}\s*")  # a rule of Open MPI's help box: 74 dashes (ORTE, PRRTE), 60 (some of PRRTE's)
_DIAGNOSTIC = re.compile(r"\[[^\]\s]+:\d+\] ")  # ORTE's and PRRTE's own notes: `[host:pid] ...`
_HYDRA_PREFIX = re.compile(r"\[mpiexec@\S+\] |=+\s*$|=\s{3}")  # mpiexec's own lines, its banner's
_HYDRA_BANNER = re.compile(r"=\s+BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\s*")
_HYDRA_BANNER_LINES = 10  # the banner, its closing rule and MPICH's "EXIT STRING" line after it

# -- ssh, in the shape ssh prints it (a whole line) -------------------------------------------------
SSH_REFUSED_KEY = re.compile(r"(?:\S+@)?(\S+?): Permission denied \(publickey[^)]*\)\.?")
SSH_UNRESOLVABLE = re.compile(r"ssh: Could not resolve hostname (\S+?): (.+)")
SSH_CONNECTION_REFUSED = re.compile(r"ssh: connect to host (\S+) port (\d+): Connection refused")
# -- the MPI launcher saying a daemon did not start (what must come with ssh's line) ------------------
_DAEMONS_NOT_STARTED_BOX = re.compile(r"ORTE was unable to reliably start one or more daemons|"
                                      r"A daemon failed to report back after being spawned")
_DAEMONS_NOT_STARTED_HYDRA = re.compile(r"\[mpiexec@\S+\] (?:.*: Launch proxy failed\.|Error: Unable to run "
                                        r"bstrap_proxy on \S+.*|Error setting up the bootstrap proxies)")
# Intel MPI's mpiexec, which keeps ssh's own words to itself, on a host where its proxy never started
INTEL_PROXY_NOT_STARTED = re.compile(r"\[mpiexec@\S+\] Error: Unable to run bstrap_proxy on (\S+) .*")
# -- Open MPI's boxes: the first words of the box ----------------------------------------------------
BOX_SLOTS = re.compile(r"There are not enough slots available in the system to satisfy the (\d+) slots")
BOX_NOT_FOUND = re.compile(r"\S+ was unable to (?:find the specified executable file|launch the specified "
                           r"application as it could not access or execute an executable)")
BOX_EXEC_FAILED = re.compile(r'Open MPI tried to fork a new process via the "execve" system call but failed')
BOX_DAEMON_LOST = re.compile(r"(?:ORTE|PRRTE|PRTE) has lost communication with a remote daemon")
BOX_SIGNAL = re.compile(r"\S+ noticed that process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) "
                        r"\(([^)]*)\)")
# ORTE names a process `[[jobid,vpid],rank]`, PRRTE `[prterun-<host>-<pid>@<job>,<rank>]`
BOX_EXIT_CODE = re.compile(r"\S+ detected that one or more processes exited with non-zero status.*?Process name: "
                           r"\[(?:\[\d+,\d+\]|[^\]\s]+@\d+),(\d+)\] Exit code: (\d+)")
# -- Hydra's own lines ------------------------------------------------------------------------------
# its proxy on a host failing to exec a rank: `[proxy:0:1@host] [1] HYD_spawn (file:line): [1] execvp error ...`
HYDRA_EXECVP = re.compile(r"\[proxy:[\d:]+@([^\]\s]+)\] (?:\[\d+\] )?\S+ \([^)]*\): (?:\[\d+\] )?execvp error on "
                          r"file (\S+) \((No such file or directory|Permission denied)\)\s*")
HYDRA_EXEC_FAILED_EXIT = 255  # what a Hydra proxy's child exits with when execvp fails, and mpiexec with it
HYDRA_RANK_AT = re.compile(r"=\s+(?:RANK (\d+) )?PID \d+ RUNNING AT (\S+)")
HYDRA_SIGNAL = re.compile(r"KILLED BY SIGNAL: (\d+) \(([^)]*)\)|EXIT STRING: (.+?) \(signal (\d+)\)")


@dataclass(frozen=True)
class Said:
    """A launcher log read for who said what."""

    lines: tuple[Line, ...]
    untagged: tuple[str, ...]  # lines no rank wrote, in order
    boxes: tuple[str, ...]  # Open MPI's help boxes among them, each one's text with its line breaks collapsed
    loose: tuple[str, ...]  # untagged lines outside any box that are not ORTE's or PRRTE's `[host:pid]` notes
    hydra: bool | None = None  # whether Hydra (MPICH, Intel MPI) launched; None: not known, either's words count

    def box(self, first: re.Pattern[str]) -> re.Match[str] | None:
        """The first of Open MPI's boxes that opens with `first`'s words (none when Hydra launched)."""
        if self.hydra:
            return None
        return next((m for text in self.boxes if (m := first.match(text))), None)

    def line(self, shape: re.Pattern[str]) -> re.Match[str] | None:
        """The first untagged line that is `shape` as a whole."""
        return next((m for text in self.untagged if (m := shape.fullmatch(text.strip()))), None)

    def hydra_line(self, shape: re.Pattern[str], tagged: bool = False) -> re.Match[str] | None:
        """The first line of Hydra's that is `shape` as a whole (none when Open MPI launched); `tagged`: a
        rank's too, for Hydra's proxy, which writes into the rank's own stream."""
        if self.hydra is False:
            return None
        if not tagged:
            return self.line(shape)
        return next((m for ln in self.lines if (m := shape.fullmatch(ln.text.strip()))), None)

    @property
    def daemons_not_started(self) -> bool:
        """Whether the MPI launcher itself said a daemon (orted, prted, Hydra's proxy) never started."""
        return bool(self.box(_DAEMONS_NOT_STARTED_BOX) or self.hydra_line(_DAEMONS_NOT_STARTED_HYDRA))

    @property
    def ranks_printed(self) -> bool:
        """Whether any line came from a rank: then mpirun ran ranks, and an exit code it passes on is theirs."""
        return any(ln.rank is not None for ln in self.lines)

    def hydra_banner(self) -> str:
        """Hydra's report of a rank that died badly (its `BAD TERMINATION` banner), collapsed; "" if none."""
        if self.hydra is False:
            return ""
        for i, text in enumerate(self.untagged):
            if _HYDRA_BANNER.fullmatch(text):
                return _collapse(self.untagged[i: i + _HYDRA_BANNER_LINES])
        return ""

    def last_words(self, rank: int | None = None) -> str:
        """What the program said last: `rank`'s last line, else any rank's, else the last untagged line
        that is not the launch tools' (a launcher's own command, or Open MPI 5's untagged ranks)."""
        ranked = [ln for ln in self.lines if ln.rank is not None and ln.text.strip()]
        if rank is not None and (mine := [ln for ln in ranked if ln.rank == rank]):
            return mine[-1].text.strip()
        if ranked and rank is None:
            return f"rank {ranked[-1].rank}: {ranked[-1].text.strip()}"
        return next((text.strip() for text in reversed(self.loose) if text.strip()), "")


def read(lines: Sequence[Line], implementation: str = "") -> Said:
    """`lines` split into what no rank wrote, Open MPI's boxes among those, and the rest; `implementation`
    the MPI that ran (`names.MPI_IMPLEMENTATIONS`; "" not known): one MPI's words never count under another.

    Rules are paired from the end: the log's tail may begin inside a box, never end inside one (Open MPI
    writes a box at once)."""
    untagged = tuple(ln.text for ln in lines if ln.rank is None)
    boxes: list[str] = []
    loose: list[str] = []
    box: list[str] | None = None
    for text in reversed(untagged):
        if _RULE.fullmatch(text):
            if box is None:
                box = []
            else:
                boxes.append(_collapse(box[::-1]))
                box = None
        elif box is not None:
            box.append(text)
        elif not _DIAGNOSTIC.match(text) and not _HYDRA_PREFIX.match(text):
            loose.append(text)
    known = mpi_impl.IMPLEMENTATIONS.get(implementation)
    return Said(tuple(lines), untagged, tuple(boxes[::-1]), tuple(loose[::-1]), known.hydra if known else None)



def _collapse(lines: Sequence[str]) -> str:
    return " ".join(" ".join(lines).split())
