"""SPDY/3.1 framing, the server's half: what kubectl's port-forward speaks inside its WebSocket.

Only what a server of kubectl needs (the frames moby/spdystream, client-go's SPDY library, sends and
expects): bytes in, typed frames out (`Reader`), and the frames a server sends, encoded (`Writer`).
Every frame starts with 8 bytes, big-endian:

    control: 1 | version (15 bits, 3) | type (16 bits)      flags (8 bits) | length (24 bits)
    data:    0 | stream id (31 bits)                        flags (8 bits) | length (24 bits)

SYN_STREAM, SYN_REPLY and HEADERS carry a header block, zlib-compressed with the SPDY/3 dictionary.
Each direction is one zlib stream for the connection's whole life, sync-flushed after every block, so
every block must be inflated in order, including those of frames a server ignores, or the next one
no longer decodes. Blocks hold a u32 count, then per header a u32-length name (lowercase) and a
u32-length value (several values joined by NUL).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

VERSION = 3
FLAG_FIN = 0x01

SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
# RST_STREAM statuses (those a server sends) and GOAWAY's
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, CANCEL = 1, 2, 3, 5
GOAWAY_OK, GOAWAY_PROTOCOL_ERROR = 0, 1

MAX_CONTROL_LENGTH = 1 << 20  # kubectl's are tens of bytes; larger is garbage, not a frame worth buffering
MAX_HEADER_BYTES = 1 << 16  # a header block inflated beyond this is refused (a zlib bomb costs 1000×)

# The SPDY/3 header dictionary (draft 3, section 2.6.10.1): length-prefixed words, then a tail of
# status lines, dates and media types. zlib checks its adler32 (0xe3c6a7c2), so one wrong byte fails.
_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location",
    "content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified",
    "location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via",
    "warning", "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
    "public", "set-cookie", "keep-alive", "origin",
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()

Headers = dict[str, list[str]]


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3.1: the connection cannot go on."""


@dataclass(frozen=True, slots=True)
class Data:
    stream_id: int
    data: bytes
    fin: bool


@dataclass(frozen=True, slots=True)
class SynStream:
    stream_id: int
    headers: Headers
    fin: bool


@dataclass(frozen=True, slots=True)
class HeadersFrame:
    """HEADERS or SYN_REPLY: a server has no use for their headers, only for FIN (the peer is done sending)."""

    stream_id: int
    fin: bool


@dataclass(frozen=True, slots=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True, slots=True)
class Ping:
    id: int


@dataclass(frozen=True, slots=True)
class GoAway:
    last_stream_id: int
    status: int


@dataclass(frozen=True, slots=True)
class Ignored:
    """SETTINGS, WINDOW_UPDATE and unknown control types: SPDY says ignore what you don't use."""

    kind: int


Frame = Data | SynStream | HeadersFrame | RstStream | Ping | GoAway | Ignored


class Reader:
    """Frames from a byte stream cut anywhere (client-go writes each field as its own WebSocket message)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> list[Frame]:
        """The frames `data` completes; raises `ProtocolError` on a malformed one."""
        self._buf += data
        frames = []
        while len(self._buf) >= 8:
            first, second = struct.unpack_from(">II", self._buf)
            flags, length = second >> 24, second & 0xFFFFFF
            control = bool(first & 0x80000000)
            if control and length > MAX_CONTROL_LENGTH:
                raise ProtocolError(f"control frame of {length} bytes (type {first & 0xFFFF})")
            if len(self._buf) < 8 + length:
                break
            body = bytes(self._buf[8:8 + length])
            del self._buf[:8 + length]
            if control:
                frames.append(self._control(first >> 16 & 0x7FFF, first & 0xFFFF, flags, body))
            elif stream_id := first & 0x7FFFFFFF:
                frames.append(Data(stream_id, body, bool(flags & FLAG_FIN)))
            else:
                raise ProtocolError("DATA frame on stream 0")
        return frames

    def _control(self, version: int, kind: int, flags: int, body: bytes) -> Frame:
        if version != VERSION:
            raise ProtocolError(f"SPDY version {version}, not {VERSION}")
        fin = bool(flags & FLAG_FIN)
        need = {SYN_STREAM: 10, SYN_REPLY: 4, HEADERS: 4, RST_STREAM: 8, PING: 4, GOAWAY: 8}.get(kind, 0)
        if len(body) < need:
            raise ProtocolError(f"control frame type {kind} of {len(body)} bytes, needs {need}")
        if kind == SYN_STREAM:
            stream_id = _stream_id(body)
            return SynStream(stream_id, self._headers(body[10:]), fin)
        if kind in (SYN_REPLY, HEADERS):
            stream_id = _stream_id(body)
            self._headers(body[4:])  # inflated only to keep the zlib stream in step
            return HeadersFrame(stream_id, fin)
        if kind == RST_STREAM:
            stream_id, status = struct.unpack_from(">II", body)
            return RstStream(stream_id & 0x7FFFFFFF, status)
        if kind == PING:
            return Ping(struct.unpack_from(">I", body)[0])
        if kind == GOAWAY:
            last, status = struct.unpack_from(">II", body)
            return GoAway(last & 0x7FFFFFFF, status)
        return Ignored(kind)

    def _headers(self, block: bytes) -> Headers:
        try:
            raw = self._inflate.decompress(block, MAX_HEADER_BYTES)
        except zlib.error as e:
            raise ProtocolError(f"header block does not inflate: {e}") from e
        if self._inflate.unconsumed_tail:
            raise ProtocolError(f"header block inflates beyond {MAX_HEADER_BYTES} bytes")
        try:
            (count,), at = struct.unpack_from(">I", raw), 4
            headers: Headers = {}
            for _ in range(count):
                name, at = _string(raw, at)
                value, at = _string(raw, at)
                headers.setdefault(name.lower(), []).extend(value.split("\0"))
        except (struct.error, UnicodeDecodeError) as e:
            raise ProtocolError(f"malformed header block: {e}") from e
        return headers


def _stream_id(body: bytes) -> int:
    stream_id: int = struct.unpack_from(">I", body)[0] & 0x7FFFFFFF
    if not stream_id:
        raise ProtocolError("control frame for stream 0")
    return stream_id


def _string(raw: bytes, at: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">I", raw, at)
    end = at + 4 + length
    if end > len(raw):
        raise struct.error(f"a {length}-byte string runs past the block's end")
    return raw[at + 4:end].decode(), end


class Writer:
    """Encoded frames a server sends; one per connection (its zlib stream is the connection's)."""

    def __init__(self) -> None:
        self._deflate = zlib.compressobj(level=9, zdict=DICTIONARY)

    def syn_reply(self, stream_id: int, headers: Mapping[str, str] | None = None) -> bytes:
        items = (headers or {}).items()
        raw = struct.pack(">I", len(items)) + b"".join(
            struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v
            for n, v in ((k.lower().encode(), v.encode()) for k, v in items))
        block = self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        return _control(SYN_REPLY, 0, struct.pack(">I", stream_id) + block)

    @staticmethod
    def data(stream_id: int, data: bytes, fin: bool = False) -> bytes:
        return struct.pack(">II", stream_id, (FLAG_FIN if fin else 0) << 24 | len(data)) + data

    @staticmethod
    def rst_stream(stream_id: int, status: int) -> bytes:
        return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))

    @staticmethod
    def ping(ping_id: int) -> bytes:
        return _control(PING, 0, struct.pack(">I", ping_id))

    @staticmethod
    def goaway(last_stream_id: int, status: int) -> bytes:
        return _control(GOAWAY, 0, struct.pack(">II", last_stream_id, status))


def _control(kind: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, flags << 24 | len(body)) + body
