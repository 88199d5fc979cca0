"""Read WARC files into Arrow batches of ``response`` records.

Streams: a file is never held in memory whole.  Hostile input costs only its
own record: the framer (:mod:`stages.warc_frame`) checks every Content-Length
against where the next record really starts and resynchronises on the next
``WARC/1.x`` line; damaged gzip data is skipped to the next member
(:mod:`stages.gunzip`); an HTTP Content-Encoding is inflated under a size and
ratio cap (:mod:`stages.http_decode`); and anything else a record raises makes
that record a row rejected as ``read_error``.  Each problem is counted and
logged, and everything intact is still read.

Only ``response`` records become rows.  Those that are not HTML, not 2xx, too
large, damaged or repeated are rows with a ``reason`` already set, so the
rejected set accounts for every response read.  Other record types are only
counted.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import BinaryIO

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from stages.base import DETAILS, REASON, note_error
from stages.http_decode import HttpError, PayloadRejected, decoded_body, parse_response
from stages.warc_frame import SMALL_BLOCK, Framer, RawRecord
from stages.warc_stream import Stream

log = logging.getLogger(__name__)

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_RECORD_TYPES = frozenset("warcinfo response resource request metadata revisit conversion continuation".split())
_LOGGED_ERRORS = 20  # a broken file must not flood the log or bloat the stats


class WarcConfig(BaseModel):
    """Parameters of the WARC reader."""

    model_config = ConfigDict(extra="forbid")

    batch_size: int = Field(
        64,
        ge=1,
        le=10_000,
        description="response records per Arrow batch (64: same CPU as 256 on real pages, half the peak memory)",
    )
    max_payload_bytes: int = Field(
        5_000_000,
        ge=1024,
        le=1 << 30,
        description="larger HTTP payloads are rejected as too_large without "
        "being read whole, before and after Content-Encoding is undone",
    )
    max_decoded_ratio: float = Field(
        200,
        ge=2,
        le=1_000_000,
        description="a Content-Encoding that inflates more than this many times its size (past 1 MiB) is rejected as "
        "decompression_bomb (HTML compresses 4-20x; gzip bombs ~1000x, brotli ones far more)",
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
    #: the reader's own counts: errors by kind ("error.<Type>"), repeated record ids
    counters: Counter = field(default_factory=Counter)

    def problem(self, msg: str) -> None:
        """A malformed stretch of the file (counted in ``malformed_records``)."""
        self.malformed_records += 1
        self.error(msg)

    def error(self, msg: str) -> None:
        if len(self.errors) < _LOGGED_ERRORS:
            log.warning(msg)
            self.errors.append(msg)
        else:
            log.debug(msg)

    def to_dict(self) -> dict:
        return {
            "records_by_type": dict(sorted(self.records_by_type.items())),
            "malformed_records": self.malformed_records,
            "read_errors": self.errors,
            "read_counters": dict(sorted(self.counters.items())),
        }


def _record_id(fields: dict, source: str, offset: int) -> str:
    rid = fields.get("warc-record-id", "").strip().strip("<>").strip()
    if rid:
        return rid
    # No WARC-Record-ID (malformed writer): stable id from the file and offset.
    return "sha1:" + hashlib.sha1(f"{source}@{offset}".encode()).hexdigest()


def _warc_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        date = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if date.tzinfo is None:
        date = date.replace(tzinfo=UTC)
    try:
        return date.astimezone(UTC).replace(microsecond=0)
    except OverflowError:  # year 1 or 9999 with an offset
        return None


_COMPRESSED = {
    "application/gzip",
    "application/x-gzip",
    "application/zstd",
    "application/x-brotli",
    "application/brotli",
}


def _content_type(fields: dict, declared: str, encoded: bool) -> str:
    # Common Crawl's sniffed type is more reliable than what the server said,
    # except when it sniffed the transfer compression we have just undone.
    identified = fields.get("warc-identified-payload-type", "").split(";")[0].strip().lower()
    if identified in _COMPRESSED and encoded:
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
                yield _to_table(rows, stats)
                rows = []
        if rows:
            yield _to_table(rows, stats)

    def _keep(self, fields: dict, declared: int) -> bool:
        """Read a block into memory: a response within the limit, or any small block."""
        if fields.get("warc-type", "").lower() == "response":
            return declared <= self.config.max_payload_bytes
        return declared <= SMALL_BLOCK

    def _iter_rows(self, raw: BinaryIO, source: str, stats: ReadStats) -> Iterator[dict]:
        stream = Stream(raw)
        first_offset: dict[str, int] = {}  # response id -> offset of its first record
        problems = 0

        def problem(msg: str) -> None:
            nonlocal problems
            problems += 1
            stats.problem(f"{source}: {msg}")

        for rec in Framer(stream, self._keep, problem):
            rtype = rec.fields.get("warc-type", "").lower()
            stats.records_by_type[rtype if rtype in _RECORD_TYPES else "unknown"] += 1
            if rtype != "response":
                continue
            row = self._row(rec, source, stats)
            rid = row["id"]
            if rid in first_offset:  # an id must be unique in the file's output
                stats.counters["duplicate_record_id"] += 1
                row.update(
                    id=f"{rid}@{rec.offset}",
                    payload=b"",
                    **{
                        REASON: "duplicate_record_id",
                        DETAILS: f"WARC-Record-ID already used by the record at offset {first_offset[rid]}",
                    },
                )
            else:
                first_offset[rid] = rec.offset
            yield row
        if problems and not first_offset and not sum(stats.records_by_type.values()):
            stats.error(f"{source}: no WARC record found: not a WARC file?")

    def _row(self, rec: RawRecord, source: str, stats: ReadStats) -> dict:
        fields = rec.fields
        row = {
            "id": _record_id(fields, source, rec.offset),
            "url": fields.get("warc-target-uri"),
            "warc_date": _warc_date(fields.get("warc-date")),
            "source": source,
            "content_type": None,
            "http_status": None,
            "http_charset": None,
            "payload": b"",
            REASON: None,
            DETAILS: None,
        }
        try:
            reason, details = self._judge(rec, row)
        except Exception as e:  # a bug or a case nobody foresaw: this record's problem only
            kind = note_error("WARC reader, one record", e, log)
            stats.counters[f"error.{kind}"] += 1
            reason, details = "read_error", f"{kind}: {e}"[:300]
        if reason is not None:
            row.update(payload=b"", **{REASON: reason, DETAILS: details})
        return row

    def _judge(self, rec: RawRecord, row: dict) -> tuple[str | None, str | None]:
        """Fill ``row`` from the record; (reason, details) if it is rejected."""
        limit = self.config.max_payload_bytes
        if rec.declared > limit:
            return "too_large", f"payload of {rec.declared} bytes > max_payload_bytes {limit}"
        if rec.cut is not None or rec.block is None:
            if rec.block is None:
                return "truncated_record", rec.cut or "block not read"
            return "truncated_record", f"read {len(rec.block)} of {rec.declared} bytes: {rec.cut}"
        if len(rec.block) > limit:  # a Content-Length that was too short, and the real block is large
            return "too_large", f"payload of {len(rec.block)} bytes > max_payload_bytes {limit}"
        try:
            resp = parse_response(rec.block)
        except HttpError as e:
            return "bad_http", str(e)
        mime, charset = resp.mime_and_charset()
        ctype = _content_type(rec.fields, mime, bool(resp.headers.get("content-encoding")))
        row.update(http_status=resp.status, http_charset=charset, content_type=ctype or None)
        if not 200 <= resp.status < 300:
            return "http_status", str(resp.status)
        if ctype and ctype not in self._html:
            return "not_html", ctype
        try:
            payload = decoded_body(resp, limit, self.config.max_decoded_ratio)
        except PayloadRejected as e:
            return e.reason, e.details
        if not ctype and not _looks_like_html(payload):
            return "not_html", "unknown"
        if not payload or payload.isspace():
            return "empty", None
        row["payload"] = payload
        return None, None


def _looks_like_html(payload: bytes) -> bool:
    head = payload[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head


def _to_table(rows: list[dict], stats: ReadStats) -> pa.Table:
    """Rows as a batch; a row Arrow refuses becomes a ``read_error`` row instead of failing the batch."""
    try:
        return pa.Table.from_pylist(rows, schema=BATCH_SCHEMA)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
        note_error("WARC reader, batch", e, log)
    out = []
    for row in rows:
        try:
            pa.Table.from_pylist([row], schema=BATCH_SCHEMA)
            out.append(row)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
            kind = note_error("WARC reader, one row", e, log)
            stats.counters[f"error.{kind}"] += 1
            out.append(
                {
                    "id": _safe_str(row.get("id")),
                    "url": _safe_str(row.get("url")),
                    "source": _safe_str(row.get("source")),
                    REASON: "read_error",
                    DETAILS: f"{kind}: {e}"[:300],
                }
            )
    return pa.Table.from_pylist(out, schema=BATCH_SCHEMA)


def _safe_str(value) -> str | None:
    if value is None:
        return None
    return str(value).encode("utf-8", "replace").decode("utf-8")


def open_and_read(opener: Callable[[], BinaryIO], source: str, config: WarcConfig | None = None):
    """Convenience for tests and tools: all batches of a file and its stats."""
    stats = ReadStats()
    with opener() as raw:
        batches = list(WarcReader(config).iter_batches(raw, source, stats))
    return batches, stats
