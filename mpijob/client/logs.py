"""A TrainJob's logs as one stream: every pod's lines, aligned by timestamp, each tagged with its pod.

Each pod's log is fetched with `timestamps=true` (the kubelet's RFC 3339 stamp, taken when the line
was read), so lines from the launcher and the nodes can be merge-sorted into the order they happened.
Each line carries the MPI rank that wrote it when that is known: the local cluster gives it beside the
line when asked (`mpi_output.RANKS_HEADER`); on a real cluster it is read from Open MPI's tags
(`--tag-output`, `OMPI_MCA_orte_tag_output=1`) when the user turned them on, the tag removed.
The pure part (`parse_line`, `PodLog`, `merge`, `Reorder`, `Filter`) needs no server and is shared by
the CLI and both SDK clients; `read_merged` and `follow_merged` fetch through a `Connection` and work
the same against the local cluster and a real one.
"""

from __future__ import annotations

import functools
import heapq
import operator
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mpijob.api import names
from mpijob.api.core.errors import ApiError
from mpijob.api.trainer import mpi_output
from mpijob.api.trainer.mpi_output import RANKS_HEADER, TAG, parse_rank_field, untag
from mpijob.client.core import Call, pods_path
from mpijob.client.errors import InvalidArgument, Unreachable

if TYPE_CHECKING:
    from mpijob.client.connection import Connection
_WHOLE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$")
_SCALE = [10 ** (9 - digits) for digits in range(10)]  # a stamp's fraction of d digits → nanoseconds
_ORDER = operator.attrgetter("ns", "pod", "seq")  # LogLine's order, as a key (C-fast in a merge)
REORDER_WINDOW = 0.3  # seconds a followed line waits for earlier lines from slower streams
POD_POLL = 0.5  # seconds between looks for new pods (and the job's end) while following
DRAIN_GRACE = 10.0  # after the job ends, how long its streams may take to finish (a pod that never ran)


def stamp_ns(stamp: str) -> int | None:
    """Nanoseconds since the epoch of a Kubernetes log timestamp, None when it is not one.

    Parsed, not compared as text: the kubelet's RFC3339Nano drops trailing zeros, so
    `…:05.1Z` sorts after `…:05.123Z` as a string."""
    if 20 < len(stamp) <= 30 and stamp[19] == "." and stamp[-1] == "Z" and stamp[20:-1].isdigit():
        secs = _utc_seconds(stamp[:19])  # the kubelet's own form, fast: a busy log has 20,000 of them
        return None if secs is None else secs * 1_000_000_000 + int(stamp[20:-1].ljust(9, "0"))
    m = _STAMP.match(stamp)
    if m is None:
        return None
    whole, frac, zone = m.groups()
    return _seconds(whole, zone) * 1_000_000_000 + int((frac or "0").ljust(9, "0"))


@functools.lru_cache(maxsize=1024)
def _utc_seconds(whole: str) -> int | None:
    """`_seconds` of a UTC stamp's whole-second part, None when it is not one."""
    return _seconds(whole, "Z") if _WHOLE.match(whole) else None


@functools.lru_cache(maxsize=1024)
def _seconds(whole: str, zone: str) -> int:
    """Epoch seconds of a stamp's whole-second part; cached, as a busy log repeats it line after line."""
    tz = UTC if zone == "Z" else datetime.strptime(zone.replace(":", ""), "%z").tzinfo
    return int(datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=tz).timestamp())


@dataclass(order=True, slots=True)
class LogLine:
    """One line of one pod; ordered by time, then pod, then position in that pod's log.
    `rank` is the MPI rank that wrote it when Open MPI tagged it, else None. (Not frozen: a frozen
    dataclass is several times slower to build, and a log has tens of thousands of lines.)"""

    ns: int
    pod: str
    seq: int
    stamp: str = field(compare=False)
    text: str = field(compare=False)
    rank: int | None = field(default=None, compare=False)


def parse_line(pod: str, raw: str, seq: int = 0, previous_ns: int = 0, ranked: bool = False) -> list[LogLine]:
    """A `timestamps=true` log line, split into its ranks' pieces; a line without a stamp keeps the
    previous line's time. A `ranked` line (the local cluster's answer to `RANKS_HEADER`) carries its
    rank in a field of its own; otherwise ranks come from Open MPI's tags, when the user turned them on."""
    if ranked:
        return ranked_lines(pod, [raw], seq, previous_ns)[0]
    head, sep, rest = raw.partition(" ")
    ns = stamp_ns(head) if sep or head else None
    stamp, text = ("", raw) if ns is None else (head, rest)
    at = previous_ns if ns is None else ns
    return [LogLine(at, pod, seq, stamp, piece.text, piece.rank) for piece in untag(text)]


def ranked_lines(pod: str, raws: list[str], seq: int = 0, previous_ns: int = 0,
                 seconds: dict[str, int | None] | None = None) -> tuple[list[LogLine], int, int]:
    """Lines of the local cluster's ranked log, `<stamp> <rank> <text>` (`-` for no rank), and the
    next `seq` and the last time seen. The kubelet's stamps are read inline and their whole seconds
    cached in `seconds`: a chatty job's 20,000 lines are parsed in one tight loop."""
    out: list[LogLine] = []
    append, cache, scale, last = out.append, {} if seconds is None else seconds, _SCALE, previous_ns
    for raw in raws:
        head, sep, rest = raw.partition(" ")
        ns = None
        if 20 < len(head) <= 30 and head[19] == "." and head[-1] == "Z" and head[20:-1].isdigit():
            whole = head[:19]
            secs = cache[whole] if whole in cache else cache.setdefault(whole, _utc_seconds(whole))
            if secs is not None:
                ns = secs * 1_000_000_000 + int(head[20:-1]) * scale[len(head) - 21]
        elif sep or head:
            ns = stamp_ns(head)
        if ns is None:
            stamp, text = "", raw
        else:
            stamp, text, last = head, rest, ns
        rank_field, _, text = text.partition(" ")
        rank = parse_rank_field(rank_field)
        if rank is not None and text[:1] == "[":
            tag = TAG.match(text)
            if tag and int(tag[1]) == rank:  # the tag the user asked for: shown as the rank
                text = text[tag.end():]
        append(LogLine(last, pod, seq, stamp, text, rank))
        seq += 1
    return out, seq, last


class Rejoin(mpi_output.Rejoin[LogLine]):
    """`mpi_output.Rejoin` for one pod's log lines: what a rank left unfinished at the end of the log
    is placed after the last line seen."""

    def __init__(self) -> None:
        super().__init__()
        self._last: LogLine | None = None

    def feed(self, pieces: Sequence[LogLine]) -> list[LogLine]:
        self._last = pieces[-1] if pieces else self._last
        return super().feed(pieces)

    def flush(self) -> list[LogLine]:
        last = self._last
        return [replace(p, ns=max(p.ns, last.ns), seq=last.seq + 1 + i) if last else p
                for i, p in enumerate(super().flush())]


def parse_log(pod: str, text: str, ranked: bool = False) -> list[LogLine]:
    """Every line of one pod's `timestamps=true` log, in its own order, each rank's lines whole."""
    log = PodLog(pod, ranked)
    return log.feed(text.encode()) + log.close()


class PodLog:
    """One pod's `timestamps=true` log as it arrives (raw bytes, in chunks cut anywhere), as `LogLine`s:
    what `parse_log` does to a whole log, for a stream."""

    def __init__(self, pod: str, ranked: bool = False) -> None:
        self.pod, self.ranked = pod, ranked
        self._pending = b""
        self._seq = 0
        self._last = 0
        self._join = Rejoin()
        self._seconds: dict[str, int | None] = {}

    def _line(self, raw: bytes) -> list[LogLine]:
        pieces = parse_line(self.pod, raw.decode("utf-8", "replace"), self._seq, self._last, self.ranked)
        self._seq, self._last = self._seq + 1, pieces[-1].ns
        return self._join.feed(pieces)

    def feed(self, chunk: bytes) -> list[LogLine]:
        data = self._pending + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            self._pending = data
            return []
        self._pending = data[cut + 1:]
        if self.ranked:  # the server joined each rank's lines already: one line, one LogLine
            return self._ranked_lines(data[:cut].decode("utf-8", "replace").split("\n"))
        out: list[LogLine] = []
        for raw in data[:cut].split(b"\n"):
            out += self._line(raw)
        return out

    def _ranked_lines(self, raws: list[str]) -> list[LogLine]:
        out, self._seq, self._last = ranked_lines(self.pod, raws, self._seq, self._last, self._seconds)
        return out

    def close(self) -> list[LogLine]:
        """What is left: an unterminated last line, and what a rank left unfinished."""
        out = self._line(self._pending) if self._pending else []
        self._pending = b""
        return out + self._join.flush()


def merge(logs: Iterable[list[LogLine]]) -> list[LogLine]:
    """Merge-sort several pods' lines (each pod's in its own order) into one timeline."""
    return list(heapq.merge(*logs, key=_ORDER))


class Filter:
    """Keep the lines whose text matches a regular expression (`pattern`) and that rank `rank` wrote."""

    def __init__(self, pattern: str | None, rank: int | None = None) -> None:
        if rank is not None and rank < 0:
            raise InvalidArgument("rank", rank, "is negative", "MPI ranks count from 0")
        self.rank = rank
        try:
            self.regex = re.compile(pattern) if pattern else None
        except re.error as exc:
            raise InvalidArgument("pattern", pattern, f"is not a valid regular expression ({exc})",
                                  "escape special characters, e.g. 'loss=\\d'") from None

    def __call__(self, line: LogLine) -> bool:
        return ((self.rank is None or line.rank == self.rank)
                and (self.regex is None or self.regex.search(line.text) is not None))


class Reorder:
    """Aligns live streams: holds each line `window` seconds so a slower stream's earlier lines
    can still come first, then releases lines in timestamp order."""

    def __init__(self, window: float = REORDER_WINDOW) -> None:
        self.window = window
        self._heap: list[tuple[LogLine, float]] = []

    def push(self, line: LogLine, now: float) -> None:
        heapq.heappush(self._heap, (line, now))

    def ready(self, now: float) -> list[LogLine]:
        """Lines whose hold is over; a held line also releases every earlier-stamped line."""
        out: list[LogLine] = []
        cutoff = max((line.ns for line, arrived in self._heap if now - arrived >= self.window), default=None)
        while self._heap and cutoff is not None and self._heap[0][0].ns <= cutoff:
            out.append(heapq.heappop(self._heap)[0])
        return out

    def drain(self) -> list[LogLine]:
        out = [heapq.heappop(self._heap)[0] for _ in range(len(self._heap))]
        return out

    def __len__(self) -> int:
        return len(self._heap)


# -- fetching ---------------------------------------------------------------------------------------


def log_call(pod: str, namespace: str, tail_lines: int | None = None, since_seconds: int | None = None,
             follow: bool = False) -> Call:
    """The `pods/log` request of one pod's MPI container: timestamped, asking for each line's rank."""
    query: dict[str, Any] = {"container": names.CONTAINER, "timestamps": "true", "follow": "true" if follow else None,
                             "tailLines": tail_lines,
                             "sinceSeconds": max(1, int(since_seconds)) if since_seconds is not None else None}
    return Call("GET", f"{pods_path(namespace)}/{pod}/log", query, accept="*/*", headers={RANKS_HEADER: "true"},
                raw=True)


def ranked(headers: Any) -> bool:
    """Whether the server gave each line's rank (the local cluster does when asked)."""
    return str(headers.get(RANKS_HEADER, "")).lower() == "true"


def read_pod(conn: Connection, pod: str, namespace: str | None = None, tail_lines: int | None = None,
             since_seconds: int | None = None) -> list[LogLine]:
    """One pod's log lines (none when the container has not written anything yet)."""
    with conn.stream(log_call(pod, namespace or conn.namespace, tail_lines, since_seconds)) as (chunks, headers):
        log = PodLog(pod, ranked(headers))
        out: list[LogLine] = []
        for chunk in chunks:  # parsed as it arrives, while the server still sends the rest
            out += log.feed(chunk)
        return out + log.close()


def read_merged(conn: Connection, pods: Iterable[str], namespace: str | None = None, tail_lines: int | None = None,
                since_seconds: int | None = None) -> list[LogLine]:
    """Every pod's log merged by timestamp; `tail_lines` keeps the last N lines of the merge."""
    merged = merge(read_pod(conn, p, namespace, tail_lines, since_seconds) for p in pods)
    return merged[-tail_lines:] if tail_lines else ([] if tail_lines == 0 else merged)


def stream_pod(conn: Connection, pod: str, namespace: str | None = None, tail_lines: int | None = None,
               since_seconds: int | None = None) -> Iterator[LogLine]:
    """Follow one pod's log line by line until its container ends."""
    call = log_call(pod, namespace or conn.namespace, tail_lines, since_seconds, follow=True)
    with conn.stream(call, follow=True) as (chunks, headers):
        log = PodLog(pod, ranked(headers))
        for chunk in chunks:
            yield from log.feed(chunk)
        yield from log.close()


def follow_merged(
    conn: Connection,
    list_pods: Callable[[], list[str]],
    job_ended: Callable[[], bool],
    namespace: str | None = None,
    tail_lines: int | None = None,
    since_seconds: int | None = None,
    window: float = REORDER_WINDOW,
    on_error: Callable[[str, BaseException], None] | None = None,
) -> Iterator[LogLine]:
    """Live lines of every pod of a job, in timestamp order, until the job has ended and every
    stream is drained. `list_pods` is polled so pods created later (nodes, the launcher) join in."""
    lines: queue.Queue[Any] = queue.Queue()
    streams: dict[str, threading.Thread] = {}

    def pump(pod: str) -> None:
        try:
            for line in stream_pod(conn, pod, namespace, tail_lines, since_seconds):
                lines.put(line)
        except (ApiError, Unreachable, TimeoutError) as exc:
            if on_error is not None and not (isinstance(exc, ApiError) and exc.code == 404):
                on_error(pod, exc)  # a pod deleted mid-stream just ends its stream

    reorder = Reorder(window)
    next_poll = 0.0
    ended_at: float | None = None
    while True:
        now = time.monotonic()
        if now >= next_poll:
            if ended_at is None and job_ended():  # read before listing: pods listed after the end are all
                ended_at = now
            for pod in list_pods():
                if pod not in streams:
                    streams[pod] = threading.Thread(target=pump, args=(pod,), name=f"log-{pod}", daemon=True)
                    streams[pod].start()
            next_poll = now + POD_POLL
        try:
            item = lines.get(timeout=min(window, POD_POLL) / 2)
        except queue.Empty:
            item = None
        if item is not None:
            reorder.push(item, time.monotonic())
        yield from reorder.ready(time.monotonic())
        if ended_at is None:
            continue
        # whether the streams are alive is read before whether the queue is empty: a stream puts its
        # last line and then ends, so the other order could miss that line
        alive = any(t.is_alive() for t in streams.values())
        if not lines.empty() or (alive and time.monotonic() - ended_at <= DRAIN_GRACE):
            continue
        yield from reorder.drain()
        return
