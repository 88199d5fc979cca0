"""Read WARC files (fastwarc) into Arrow batches of ``response`` records.

Streams: a file is never held in memory whole.  Robust to what real crawls
contain: truncated gzip, records whose Content-Length is wrong, garbage
between records, non-WARC files.  Each problem is counted and logged, the
parser resynchronises on the next ``WARC/1.x`` header, and everything that is
intact is still read.

Only ``response`` records become rows.  Those that are not HTML, not 2xx or
too large are rows with a ``reason`` already set, so the rejected set accounts
for every response read.  Other record types are only counted.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import timezone
from typing import BinaryIO, Callable, Iterator

import pyarrow as pa
from fastwarc.warc import ArchiveIterator, WarcRecordType
from pydantic import BaseModel, ConfigDict, Field

from stages.base import DETAILS, REASON
from stages.gunzip import Gunzip

log = logging.getLogger(__name__)

_HEADER_RE = re.compile(rb"(?:^|\n)WARC/1\.[01]\r?\n")
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_RESYNC_CHUNK = 1 << 20


class WarcConfig(BaseModel):
    """Parameters of the WARC reader."""

    model_config = ConfigDict(extra="forbid")

    batch_size: int = Field(64, ge=1, description="response records per Arrow batch (64: same CPU as 256 on real pages, half the peak memory)")
    max_payload_bytes: int = Field(
        5_000_000, ge=1024, description="larger HTTP payloads are rejected as too_large without being read whole"
    )
    html_types: list[str] = Field(default_factory=lambda: list(_HTML_TYPES), description="MIME types kept as HTML")


BATCH_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("url", pa.string()),
        ("warc_date", pa.timestamp("s", tz="UTC")),
        ("source", pa.string()),
        ("content_type", pa.string()),
        ("http_status", pa.int16()),
        ("http_charset", pa.string()),
        ("payload", pa.large_binary()),
        (REASON, pa.string()),
        (DETAILS, pa.string()),
    ]
)


@dataclass
class ReadStats:
    """What reading one file met."""

    records_by_type: Counter = field(default_factory=Counter)
    malformed_records: int = 0
    errors: list[str] = field(default_factory=list)

    def error(self, msg: str) -> None:
        log.warning(msg)
        if len(self.errors) < 20:  # a broken file must not bloat the stats
            self.errors.append(msg)

    def to_dict(self) -> dict:
        return {
            "records_by_type": dict(sorted(self.records_by_type.items())),
            "malformed_records": self.malformed_records,
            "read_errors": self.errors,
        }


class _Stream(io.RawIOBase):
    """The decompressed byte stream fed to fastwarc.

    Remembers a decompression error (truncated gzip) instead of letting the
    parser take it for a clean end, reports the absolute offset (fastwarc asks
    for ``tell()``), and can move to any offset so the reader can resynchronise
    after a malformed record (backwards means decompressing again from the
    start, which only happens on damaged input).
    """

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._raw_start = raw.tell() if _can_seek(raw) else None
        head = raw.read(2)
        self.gzipped = head == b"\x1f\x8b"
        self._open(head)
        self.error: str | None = None

    def _open(self, head: bytes) -> None:
        source = _Prefixed(self._raw, head)
        self._inner = Gunzip(source) if self.gzipped else source
        self._pushback = b""
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:  # fastwarc must not seek on its own
        return False

    def tell(self) -> int:
        return self.pos

    def _read_inner(self, n: int) -> bytes:
        out = b""
        if self._pushback:
            out, self._pushback = self._pushback[:n], self._pushback[n:]
            n -= len(out)
        if n <= 0 or self.error:
            return out
        try:
            # read1: a truncated gzip raises only once no data is left, so no
            # decompressed bytes are lost with the error.
            return out + (self._inner.read1(n) if self.gzipped else self._inner.read(n))
        except Exception as e:  # EOFError (truncated gzip), IsalError (corrupt data)
            self.error = f"{type(e).__name__}: {e}"
            return out

    def readinto(self, b) -> int:
        data = self._read_inner(len(b))
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            return b"".join(iter(lambda: self.read(_RESYNC_CHUNK), b""))
        data = self._read_inner(n)
        self.pos += len(data)
        return data

    def move_to(self, target: int) -> bool:
        """Position the stream at absolute offset ``target``."""
        if target < self.pos:
            if self._raw_start is None:
                return False  # not seekable: the caller scans on from here
            self._raw.seek(self._raw_start)
            self._open(self._raw.read(2))
            self.error = None
        while self.pos < target:
            if not self.read(min(_RESYNC_CHUNK, target - self.pos)):
                return False
        return True

    def find_next_header(self) -> int | None:
        """Scan forward for the next ``WARC/1.x`` line and stop just before it."""
        carry = b""
        while True:
            start = self.pos - len(carry)
            chunk = self.read(_RESYNC_CHUNK)
            if not chunk:
                return None
            buf = carry + chunk
            m = _HEADER_RE.search(buf)
            if m:
                at = m.start() + (1 if buf[m.start()] == 0x0A else 0)
                self._pushback = buf[at:] + self._pushback
                self.pos = start + at
                return self.pos
            carry = buf[-16:]


class _Prefixed(io.RawIOBase):
    """A raw stream with its first, already-read bytes put back."""

    def __init__(self, raw: BinaryIO, head: bytes):
        self.raw, self.head = raw, head

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.head:
            n = min(len(self.head), len(b))
            b[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.raw.read(len(b))
        b[: len(data)] = data
        return len(data)


def _can_seek(raw) -> bool:
    try:
        return bool(raw.seekable())
    except Exception:
        return False


def _record_id(rec, source: str, offset: int) -> str:
    rid = rec.record_id
    if rid:
        return rid.strip("<>")
    # No WARC-Record-ID (malformed writer): stable id from the file and offset.
    return "sha1:" + hashlib.sha1(f"{source}@{offset}".encode()).hexdigest()


_COMPRESSED = {"application/gzip", "application/x-gzip", "application/zstd", "application/x-brotli", "application/brotli"}


def _content_type(rec) -> str:
    # Common Crawl's sniffed type is more reliable than what the server said,
    # except when it sniffed the transfer compression we have just undone.
    identified = (rec.headers.get("WARC-Identified-Payload-Type") or "").split(";")[0].strip().lower()
    declared = (rec.http_content_type or "").split(";")[0].strip().lower()
    if identified in _COMPRESSED and rec.http_headers.get("Content-Encoding"):
        return declared
    return identified or declared


class WarcReader:
    """Iterate one WARC file as Arrow batches of response records."""

    def __init__(self, config: WarcConfig | None = None):
        self.config = config or WarcConfig()
        self._html = set(self.config.html_types)

    def iter_batches(self, raw: BinaryIO, source: str, stats: ReadStats) -> Iterator[pa.Table]:
        rows: list[dict] = []
        for row in self._iter_rows(raw, source, stats):
            rows.append(row)
            if len(rows) >= self.config.batch_size:
                yield pa.Table.from_pylist(rows, schema=BATCH_SCHEMA)
                rows = []
        if rows:
            yield pa.Table.from_pylist(rows, schema=BATCH_SCHEMA)

    def _iter_rows(self, raw: BinaryIO, source: str, stats: ReadStats) -> Iterator[dict]:
        # One row of lookahead: when the input ends early, the record it cut
        # is only known once the stream reports the error.
        pending = None
        stream = _Stream(raw)
        for row in self._parse(stream, source, stats):
            if pending is not None:
                yield pending
            pending = row
        if stream.error:
            stats.malformed_records += 1
            stats.error(f"{source}: input ends early ({stream.error}); every record before it was read")
            if pending is not None and not pending["_complete"]:
                pending.update({REASON: "truncated_record", DETAILS: "input ends inside this record", "payload": b""})
        if pending is not None:
            yield pending

    def _parse(self, stream: "_Stream", source: str, stats: ReadStats) -> Iterator[dict]:
        start: int | None = 0
        while start is not None:
            resync_from = last = None
            try:
                for rec in ArchiveIterator(stream, parse_http=False, fsspec_args=False):
                    last = rec.stream_pos  # absolute: fastwarc starts counting at our tell()
                    stats.records_by_type[str(rec.record_type)] += 1
                    if rec.record_type != WarcRecordType.response:
                        continue  # the iterator skips the unread block
                    row = self._row(rec, source, last, stats)
                    yield row
                    if row[REASON] == "truncated_record" and not stream.error:
                        # Content-Length ran past the next records: find them again.
                        stats.malformed_records += 1
                        stats.error(f"{source}: record at offset {last} is longer than the data; resyncing")
                        resync_from = last + 1
                        break
            except OSError as e:
                stats.malformed_records += 1
                if last is None and start == 0:
                    stats.error(f"{source}: not a WARC file or a bad first record ({e})")
                else:
                    stats.error(f"{source}: malformed record after offset {last if last is not None else start} ({e}); resyncing")
                resync_from = (last if last is not None else start) + 1
            start = None
            if resync_from is not None and not stream.error:
                stream.move_to(resync_from)
                start = stream.find_next_header()

    def _row(self, rec, source: str, offset: int, stats: ReadStats) -> dict:
        reason = details = None
        payload = b""
        complete = False
        status = charset = None
        ctype = ""
        try:
            if rec.headers.get("Content-Length") is None:
                raise ValueError("record has no Content-Length")
            rec.parse_http(auto_decode="all")
            status = rec.http_headers.status_code if rec.http_headers is not None else None
            charset = rec.http_charset
            ctype = _content_type(rec) if rec.http_headers is not None else ""
            declared = rec.content_length
            limit = self.config.max_payload_bytes
            if declared > limit:
                reason, details = "too_large", f"payload of {declared} bytes > max_payload_bytes {limit}"
            else:
                payload = rec.reader.read()
                complete = len(payload) == declared
                if len(payload) < declared:
                    reason, details = "truncated_record", f"read {len(payload)} of {declared} payload bytes"
                elif status is not None and not 200 <= status < 300:
                    reason, details = "http_status", str(status)
                elif ctype not in self._html and not (not ctype and _looks_like_html(payload)):
                    reason, details = "not_html", ctype or "unknown"
                elif not payload.strip():
                    reason = "empty"
        except Exception as e:  # a broken HTTP block is this record's problem only
            reason, details = "bad_http", f"{type(e).__name__}: {e}"
            stats.error(f"{source}: record at offset {offset}: {details}")
        date = rec.record_date
        return {
            "id": _record_id(rec, source, offset),
            "url": rec.headers.get("WARC-Target-URI"),
            "warc_date": date.astimezone(timezone.utc) if date is not None else None,
            "source": source,
            "content_type": ctype or None,
            "http_status": status,
            "http_charset": charset,
            "payload": b"" if reason else payload,
            REASON: reason,
            DETAILS: details,
            "_complete": complete,  # not a column: lets the caller spot a cut record
        }


def _looks_like_html(payload: bytes) -> bool:
    head = payload[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head


def open_and_read(opener: Callable[[], BinaryIO], source: str, config: WarcConfig | None = None):
    """Convenience for tests and tools: all batches of a file and its stats."""
    stats = ReadStats()
    with opener() as raw:
        batches = list(WarcReader(config).iter_batches(raw, source, stats))
    return batches, stats
