"""A TrainJob's logs as one stream: every pod's lines, aligned by timestamp, each tagged with its pod.

Each pod's log is fetched with `timestamps=true` (the kubelet's RFC 3339 stamp, taken when the line
was read), so lines from the launcher and the nodes can be merge-sorted into the order they happened.
Lines that Open MPI's output tagging (`--tag-output`, `OMPI_MCA_orte_tag_output=1`, on by default
on the local cluster) marks `[job,rank]<stdout>:` carry their rank, the tag itself removed.
The pure part (`parse_line`, `untag`, `merge`, `Reorder`, `Filter`) needs no server; `read_merged` and
`follow_merged` fetch through a `Cluster` and work the same against the local cluster and a real one.
"""

from __future__ import annotations

import functools
import heapq
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from mpijob.api.errors import ApiError
from mpijob.client.api import CONTAINER, REQUEST_TIMEOUT, Cluster
from mpijob.client.errors import ServerUnavailable, call

Obj = dict[str, Any]
_TAG = re.compile(r"\[\d+,(\d+)\]<(stdout|stderr|stddiag)>:")  # Open MPI's output tag: [jobid,rank]<stream>:
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$")
REORDER_WINDOW = 0.3  # seconds a followed line waits for earlier lines from slower streams
POD_POLL = 0.5  # seconds between looks for new pods (and the job's end) while following
DRAIN_GRACE = 10.0  # after the job ends, how long its streams may take to finish (a pod that never ran)


def stamp_ns(stamp: str) -> int | None:
    """Nanoseconds since the epoch of a Kubernetes log timestamp, None when it is not one.

    Parsed, not compared as text: the kubelet's RFC3339Nano drops trailing zeros, so
    `…:05.1Z` sorts after `…:05.123Z` as a string."""
    m = _STAMP.match(stamp)
    if m is None:
        return None
    whole, frac, zone = m.groups()
    return _seconds(whole, zone) * 1_000_000_000 + int((frac or "0").ljust(9, "0"))


@functools.lru_cache(maxsize=1024)
def _seconds(whole: str, zone: str) -> int:
    """Epoch seconds of a stamp's whole-second part; cached, as a busy log repeats it line after line."""
    tz = timezone.utc if zone == "Z" else datetime.strptime(zone.replace(":", ""), "%z").tzinfo
    return int(datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=tz).timestamp())


@dataclass(frozen=True, order=True)
class LogLine:
    """One line of one pod; ordered by time, then pod, then position in that pod's log.
    `rank` is the MPI rank that wrote it when Open MPI tagged it, else None."""

    ns: int
    pod: str
    seq: int
    stamp: str = field(compare=False)
    text: str = field(compare=False)
    rank: int | None = field(default=None, compare=False)


def untag(text: str) -> list[tuple[int | None, str]]:
    """`(rank, text)` pieces of one line of Open MPI tagged output; `(None, text)` for an untagged line.

    A rank that prints without a newline is followed on the same line by the next rank's tag, so a
    line can hold several pieces."""
    tags = list(_TAG.finditer(text))
    if not tags:
        return [(None, text)]
    pieces: list[tuple[int | None, str]] = [(None, text[: tags[0].start()])] if tags[0].start() else []
    for tag, after in zip(tags, tags[1:] + [None]):
        pieces.append((int(tag[1]), text[tag.end(): after.start() if after else len(text)]))
    return pieces


def parse_line(pod: str, raw: str, seq: int = 0, previous_ns: int = 0) -> list[LogLine]:
    """A `timestamps=true` log line, split into its ranks' pieces; a line without a stamp keeps the
    previous line's time."""
    head, sep, rest = raw.partition(" ")
    ns = stamp_ns(head) if sep or head else None
    stamp, text = ("", raw) if ns is None else (head, rest)
    return [LogLine(previous_ns if ns is None else ns, pod, seq, stamp, piece, rank) for rank, piece in untag(text)]


class Rejoin:
    """Puts each rank's lines back together. Open MPI forwards what a rank writes in chunks, tagging
    each, so one line of a rank can arrive as two pieces with other ranks' output between them: every
    piece but the last of a raw line is one that ended without a newline."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, int], LogLine] = {}
        self._last: LogLine | None = None

    def feed(self, pieces: list[LogLine]) -> list[LogLine]:
        """The complete lines among one raw line's pieces (as `parse_line` splits it)."""
        out = []
        for i, piece in enumerate(pieces):
            if piece.rank is not None:
                head = self._open.pop((piece.pod, piece.rank), None)
                if head is not None:
                    piece = replace(piece, text=head.text + piece.text)  # the time of the piece that ended it
                if i < len(pieces) - 1:
                    self._open[(piece.pod, piece.rank)] = piece
                    continue
            out.append(piece)
        self._last = pieces[-1] if pieces else self._last
        return out

    def flush(self) -> list[LogLine]:
        """At the end of a log: what ranks printed without a final newline, after everything else."""
        last = self._last
        out = [replace(p, ns=max(p.ns, last.ns), seq=last.seq + 1 + i) if last else p
               for i, p in enumerate(self._open.values())]
        self._open.clear()
        return out


def parse_log(pod: str, text: str) -> list[LogLine]:
    """Every line of one pod's `timestamps=true` log, in its own order, each rank's lines whole."""
    out: list[LogLine] = []
    join = Rejoin()
    last = 0
    for seq, raw in enumerate(text.splitlines()):
        pieces = parse_line(pod, raw, seq, last)
        last = pieces[-1].ns
        out += join.feed(pieces)
    return out + join.flush()


def merge(logs: dict[str, str]) -> list[LogLine]:
    """Merge-sort several pods' timestamped logs (pod name → text) into one timeline."""
    return list(heapq.merge(*(parse_log(pod, text) for pod, text in sorted(logs.items()))))


class Filter:
    """`--grep PATTERN` and `--rank N`: keep the lines whose text matches a regular expression and
    that rank `rank` wrote."""

    def __init__(self, pattern: str | None, rank: int | None = None) -> None:
        self.rank = rank
        try:
            self.regex = re.compile(pattern) if pattern else None
        except re.error as exc:
            raise ApiError(400, "BadRequest", f"--grep {pattern!r} is not a valid regular expression ({exc}); "
                           "quote it for the shell and escape special characters, e.g. --grep 'loss=\\d'") from None

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


def _log_kwargs(tail_lines: int | None, since_seconds: int | None, follow: bool) -> dict[str, Any]:
    kw: dict[str, Any] = {"container": CONTAINER, "timestamps": True, "_preload_content": False,
                          "_request_timeout": (REQUEST_TIMEOUT, None) if follow else REQUEST_TIMEOUT}
    if follow:
        kw["follow"] = True
    if tail_lines is not None:
        kw["tail_lines"] = tail_lines
    if since_seconds is not None:
        kw["since_seconds"] = max(1, int(since_seconds))
    return kw


def read_pod(cluster: Cluster, pod: str, namespace: str | None = None, tail_lines: int | None = None,
             since_seconds: int | None = None) -> str:
    """One pod's log, timestamped (empty when the container has not written anything yet)."""
    ns = namespace or cluster.namespace
    resp = call(cluster.url, cluster.core.read_namespaced_pod_log, pod, ns,
                **_log_kwargs(tail_lines, since_seconds, False))
    return str(resp.data.decode("utf-8", "replace"))


def read_merged(cluster: Cluster, pods: Iterable[str], namespace: str | None = None, tail_lines: int | None = None,
                since_seconds: int | None = None) -> list[LogLine]:
    """Every pod's log merged by timestamp; `tail_lines` keeps the last N lines of the merge."""
    merged = merge({p: read_pod(cluster, p, namespace, tail_lines, since_seconds) for p in pods})
    return merged[-tail_lines:] if tail_lines else ([] if tail_lines == 0 else merged)


def stream_pod(cluster: Cluster, pod: str, namespace: str | None = None, tail_lines: int | None = None,
               since_seconds: int | None = None) -> Iterator[LogLine]:
    """Follow one pod's log line by line until its container ends."""
    ns = namespace or cluster.namespace
    resp = call(cluster.url, cluster.core.read_namespaced_pod_log, pod, ns,
                **_log_kwargs(tail_lines, since_seconds, True))
    pending, seq, last = b"", 0, 0
    join = Rejoin()
    try:
        chunks = resp.stream(4096, decode_content=True)
        while (chunk := call(cluster.url, next, chunks, None)) is not None:
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                pieces = parse_line(pod, raw.decode("utf-8", "replace"), seq, last)
                seq, last = seq + 1, pieces[-1].ns
                yield from join.feed(pieces)
        if pending:
            yield from join.feed(parse_line(pod, pending.decode("utf-8", "replace"), seq, last))
        yield from join.flush()
    finally:
        resp.release_conn()


def follow_merged(
    cluster: Cluster,
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
            for line in stream_pod(cluster, pod, namespace, tail_lines, since_seconds):
                lines.put(line)
        except (ApiError, ServerUnavailable) as exc:
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
