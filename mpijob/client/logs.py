"""A TrainJob's logs as one stream: every pod's lines, aligned by timestamp, each tagged with its pod.

Each pod's log is fetched with `timestamps=true` (the kubelet's RFC 3339 stamp, taken when the line
was read), so lines from the launcher and the nodes can be merge-sorted into the order they happened.
Each line carries the MPI rank that wrote it when that is known: the local cluster gives it beside the
line when asked (`mpi_output.RANKS_HEADER`); on a real cluster it is read from Open MPI's tags
(`--tag-output`, `OMPI_MCA_orte_tag_output=1`) when the user turned them on, the tag removed.
The pure part (`parse_line`, `merge`, `Reorder`, `Filter`) needs no server; `read_merged` and
`follow_merged` fetch through a `Cluster` and work the same against the local cluster and a real one.
"""

from __future__ import annotations

import functools
import heapq
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from mpijob.api import mpi_output
from mpijob.api.errors import ApiError
from mpijob.api.mpi_output import RANKS_HEADER, TAG, parse_rank_field, untag
from mpijob.client.api import CONTAINER, REQUEST_TIMEOUT, Cluster
from mpijob.client.errors import ServerUnavailable, call

Obj = dict[str, Any]
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


def parse_line(pod: str, raw: str, seq: int = 0, previous_ns: int = 0, ranked: bool = False) -> list[LogLine]:
    """A `timestamps=true` log line, split into its ranks' pieces; a line without a stamp keeps the
    previous line's time. A `ranked` line (the local cluster's answer to `RANKS_HEADER`) carries its
    rank in a field of its own; otherwise ranks come from Open MPI's tags, when the user turned them on."""
    head, sep, rest = raw.partition(" ")
    ns = stamp_ns(head) if sep or head else None
    stamp, text = ("", raw) if ns is None else (head, rest)
    at = previous_ns if ns is None else ns
    if ranked:
        field, _, text = text.partition(" ")
        rank = parse_rank_field(field)
        tag = TAG.match(text)
        if tag and int(tag[1]) == rank:  # the tag the user asked for: shown as the rank
            text = text[tag.end():]
        return [LogLine(at, pod, seq, stamp, text, rank)]
    return [LogLine(at, pod, seq, stamp, piece.text, piece.rank) for piece in untag(text)]


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
    out: list[LogLine] = []
    join = Rejoin()
    last = 0
    for seq, raw in enumerate(text.splitlines()):
        pieces = parse_line(pod, raw, seq, last, ranked)
        last = pieces[-1].ns
        out += join.feed(pieces)
    return out + join.flush()


def merge(logs: Iterable[list[LogLine]]) -> list[LogLine]:
    """Merge-sort several pods' lines (each pod's in its own order) into one timeline."""
    return list(heapq.merge(*logs))


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


def _open_log(cluster: Cluster, pod: str, namespace: str | None, tail_lines: int | None,
              since_seconds: int | None, follow: bool) -> tuple[Any, bool]:
    """The response of one `pods/log` request (timestamped, asking for ranks) and whether the server
    gave the ranks. The generated client cannot send a header on this call, so it is made directly."""
    query: list[tuple[str, Any]] = [("container", CONTAINER), ("timestamps", "true")]
    query += [("follow", "true")] if follow else []
    query += [("tailLines", tail_lines)] if tail_lines is not None else []
    query += [("sinceSeconds", max(1, int(since_seconds)))] if since_seconds is not None else []
    resp = call(cluster.url, cluster.api_client.call_api,
                "/api/v1/namespaces/{namespace}/pods/{name}/log", "GET",
                path_params={"namespace": namespace or cluster.namespace, "name": pod}, query_params=query,
                header_params={"Accept": "*/*", RANKS_HEADER: "true"}, auth_settings=["BearerToken"],
                response_type="str", _return_http_data_only=True, _preload_content=False,
                _request_timeout=(REQUEST_TIMEOUT, None) if follow else REQUEST_TIMEOUT)
    return resp, resp.headers.get(RANKS_HEADER, "").lower() == "true"


def read_pod(cluster: Cluster, pod: str, namespace: str | None = None, tail_lines: int | None = None,
             since_seconds: int | None = None) -> list[LogLine]:
    """One pod's log lines (none when the container has not written anything yet)."""
    resp, ranked = _open_log(cluster, pod, namespace, tail_lines, since_seconds, follow=False)
    try:
        return parse_log(pod, resp.data.decode("utf-8", "replace"), ranked)
    finally:
        resp.release_conn()


def read_merged(cluster: Cluster, pods: Iterable[str], namespace: str | None = None, tail_lines: int | None = None,
                since_seconds: int | None = None) -> list[LogLine]:
    """Every pod's log merged by timestamp; `tail_lines` keeps the last N lines of the merge."""
    merged = merge(read_pod(cluster, p, namespace, tail_lines, since_seconds) for p in pods)
    return merged[-tail_lines:] if tail_lines else ([] if tail_lines == 0 else merged)


def stream_pod(cluster: Cluster, pod: str, namespace: str | None = None, tail_lines: int | None = None,
               since_seconds: int | None = None) -> Iterator[LogLine]:
    """Follow one pod's log line by line until its container ends."""
    resp, ranked = _open_log(cluster, pod, namespace, tail_lines, since_seconds, follow=True)
    pending, seq, last = b"", 0, 0
    join = Rejoin()
    try:
        chunks = resp.stream(4096, decode_content=True)
        while (chunk := call(cluster.url, next, chunks, None)) is not None:
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                pieces = parse_line(pod, raw.decode("utf-8", "replace"), seq, last, ranked)
                seq, last = seq + 1, pieces[-1].ns
                yield from join.feed(pieces)
        if pending:
            yield from join.feed(parse_line(pod, pending.decode("utf-8", "replace"), seq, last, ranked))
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
