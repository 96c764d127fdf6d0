"""Open MPI's output tags, and the MPI rank kept beside each line of a launcher's log.

`mpirun --tag-output` (`OMPI_MCA_orte_tag_output=1`) prefixes what each rank writes with
`[jobid,rank]<stream>:`. A Trainer cluster shows the launcher's output untagged, and so must we; yet
`mpijob logs --rank N` needs each line's rank. So the local cluster turns tagging on, reads the tags
as the launcher's output arrives, and stores each line's rank beside the line with the tag removed
(kept when the user asked for tagging). `pods/log` returns the bare lines; a client that sends
`RANKS_HEADER: true` gets `<rank> ` (or `- `) before each line's text, and the header back to say so.
A real API server ignores the header and answers plain lines: tags there are the user's own, read by
`untag`. Tags are in-band: a program that prints text shaped exactly like one (`[1,3]<stdout>:`) has it
read as a tag.

Hydra (MPICH, Intel MPI) tags what it forwards with the pattern the local cluster gives it in a config
file (`api/trainer/mpi_impl.py`): Open MPI's tag, read the same way. A user who asked for Hydra's `-prepend-rank`
gets `[3] ` before each chunk of rank 3 instead; only a line's start is read for it, so a line two ranks
wrote into (one without a newline) counts as the first rank's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, AnyStr, Generic, Protocol, TypeVar

from mpijob.api.trainer.mpi_impl import launcher_noise

TAG = re.compile(r"\[\d+,(\d+)\]<(?:stdout|stderr|stddiag)>:")
_TAGS: dict[type, re.Pattern[Any]] = {str: TAG, bytes: re.compile(TAG.pattern.encode())}
RANKS_HEADER = "X-Mpijob-Log-Ranks"  # request "true": each line's rank beside it; the response echoes it
NO_RANK = "-"  # the rank field of a line no rank wrote (mpirun's own messages, untagged output)
TAG_VARIABLE = "OMPI_MCA_orte_tag_output"
# Open MPI 4's, Open MPI 5's and Hydra's spelling
_TAG_FLAG = re.compile(r"(?<![\w-])(?:--?tag-output|--output[= ]\S*\btag\b|--?prepend-rank(?![\w-]))")
HYDRA_TAG = re.compile(rb"\[(\d+)\] ")  # Hydra's `-prepend-rank`, at the start of a line


@dataclass(frozen=True)
class Piece(Generic[AnyStr]):
    """What one rank wrote (`rank` None: no tag), `tag` the Open MPI tag it came with."""

    rank: int | None
    text: AnyStr
    tag: AnyStr


def untag(text: AnyStr) -> list[Piece[AnyStr]]:
    """The pieces of one line of tagged output (text or bytes); one untagged piece for a line
    without tags.

    A rank that prints without a newline is followed on the same line by the next rank's tag, so a
    line can hold several pieces."""
    tags: list[re.Match[Any]] = list(_TAGS[type(text)].finditer(text))
    none = text[:0]
    if not tags:
        return [Piece(None, text, none)]
    pieces = [Piece(None, text[: tags[0].start()], none)] if tags[0].start() else []
    for tag, after in zip(tags, [*tags[1:], None]):
        pieces.append(Piece(int(tag[1]), text[tag.end(): after.start() if after else len(text)], tag[0]))
    return pieces


class _Ranked(Protocol):
    @property
    def rank(self) -> int | None: ...

    @property
    def text(self) -> Any: ...  # the piece's AnyStr: str or bytes


P = TypeVar("P", bound=_Ranked)


class Rejoin(Generic[P]):
    """Puts each rank's lines back together. Open MPI forwards what a rank writes in chunks, tagging
    each, so one line of a rank can arrive as two pieces with other ranks' output between them: every
    piece but the last of a raw line is one that ended without a newline. Works on any dataclass with
    `rank` and `text`; the joined line keeps the fields of the piece that ended it."""

    def __init__(self) -> None:
        self._open: dict[int, list[P]] = {}  # each rank's pieces of its unfinished line, joined once it ends

    def __bool__(self) -> bool:
        """Whether some rank's line is unfinished."""
        return bool(self._open)

    def feed(self, pieces: Sequence[P]) -> list[P]:
        """The complete lines among one raw line's pieces."""
        out = []
        for i, piece in enumerate(pieces):
            if piece.rank is not None:
                if i < len(pieces) - 1:
                    self._open.setdefault(piece.rank, []).append(piece)
                    continue
                head = self._open.pop(piece.rank, None)
                if head is not None:
                    piece = _joined([*head, piece])
            out.append(piece)
        return out

    def flush(self) -> list[P]:
        """At the end of the output: what ranks printed without a final newline."""
        out = [_joined(parts) for parts in self._open.values()]
        self._open.clear()
        return out


def _joined(parts: list[P]) -> P:
    """One line from a rank's pieces, with the fields of the last: joined once, so a line Open MPI
    forwarded in 256 chunks (1 MiB) costs one copy, not 256 growing ones."""
    last = parts[-1]
    return replace(last, text=last.text[:0].join(p.text for p in parts))  # type: ignore[type-var]  # P is a dataclass, which a Protocol cannot say


class LauncherOutput:
    """One output stream of a launcher, line by line (bytes, as read): each complete line as the log
    stores it, `<rank> <text>`, the tag removed unless `keep_tags`."""

    _TAG = _TAGS[bytes]
    _NO_RANK = NO_RANK.encode() + b" "

    def __init__(self, keep_tags: bool, hydra: bool = False) -> None:
        self.keep_tags, self.hydra = keep_tags, hydra
        self._join: Rejoin[Piece[bytes]] = Rejoin()

    def feed(self, line: bytes) -> list[bytes]:
        if launcher_noise(line):  # mpirun's own harmless warning that a busy machine causes (mpi_impl.py)
            return []
        if self.hydra and self.keep_tags:  # the user's own `-prepend-rank`
            tag = HYDRA_TAG.match(line)
            if tag is None:
                return [self._NO_RANK + line]
            return [tag[1] + b" " + (line if self.keep_tags else line[tag.end():])]
        tag = self._TAG.match(line)
        if not self._join and (tag is None or self._TAG.search(line, tag.end()) is None):  # the usual line
            if tag is None:
                return [self._NO_RANK + line] if self._TAG.search(line) is None else self._slow(line)
            return [tag[1] + b" " + (line if self.keep_tags else line[tag.end():])]
        return self._slow(line)

    def flush(self) -> list[bytes]:
        return [self._stored(p) for p in self._join.flush()]

    def _slow(self, line: bytes) -> list[bytes]:
        return [self._stored(p) for p in self._join.feed(untag(line))]

    def _stored(self, piece: Piece[bytes]) -> bytes:
        field = self._NO_RANK if piece.rank is None else b"%d " % piece.rank
        return field + (piece.tag + piece.text if self.keep_tags else piece.text)


def asks_for_tags(command: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether the user asked for tagged output themselves: `--tag-output` / `--output tag` in the
    command (a shell string included), or the MCA variable set on."""
    if env.get(TAG_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on", "enabled"):
        return True
    return _TAG_FLAG.search(" ".join(command)) is not None


def parse_rank_field(field: str) -> int | None:
    """The rank in a stored line's rank field; None for `NO_RANK` or anything that is not a rank."""
    return int(field) if field.isdigit() else None
