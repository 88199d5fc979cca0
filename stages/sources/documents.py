"""Documents that are already text: JSON lines and Parquet
dumps (Wikipedia, ArXiv, StackExchange, code, licensed text).

A file streams into Arrow batches with the core columns the WARC path gives
its kept rows (``id``, ``url``, ``warc_date`` = the document's date,
``source`` = the input URI, ``content_type`` = the file's format, ``text``)
and, unless ``carry: none``, a ``metadata`` column: the document's other
fields as one JSON object (a string), as DataTrove's readers keep them, so
every source has one schema however its fields vary from line to line.
Field names are configured (:class:`DocumentsConfig`), dotted paths reach
into nested objects (``metadata.url``).  These rows skip decoding and
extraction and go through language ID, the filters and what follows.

A bad record is a counted rejection, never the file's end: a line that is
not JSON (``malformed_line``) or not an object (``not_object``), no text
(``no_text``: missing, null, empty or only spaces), a field of the wrong
type (``wrong_type``, the field named in ``details``), bytes that are not
UTF-8 (``bad_encoding``), a line or text over ``max_record_bytes``
(``too_large``: skipped unread), the line damaged compressed data cut
(``truncated``), a Parquet row group that cannot be decoded (``read_error``).
Input records (non-blank lines, rows) = documents + rejected, per file.  A
compressed file whose data inflate more than ``max_decoded_ratio`` times is
read up to there: the rest is one row rejected as ``decompression_bomb`` that
names the file (a few kB of ``{}`` lines would otherwise be millions of
``no_text`` rows).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import BinaryIO, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stages.base import DETAILS, REASON, note_error
from stages.http_decode import RATIO_FLOOR
from stages.sources import SourceError, sniff_stream
from stages.sources.lines import Bomb, Decompressed, Line, Watched, iter_lines, native
from stages.warc import WarcConfig

log = logging.getLogger(__name__)

#: Every reason this source gives at read time.
REASONS = (
    "malformed_line",
    "not_object",
    "no_text",
    "wrong_type",
    "bad_encoding",
    "too_large",
    "truncated",
    "read_error",
    "decompression_bomb",
)
METADATA = "metadata"
CONTENT_TYPES = {"jsonl": "application/jsonl", "parquet": "application/vnd.apache.parquet"}
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("url", pa.string()),
        ("warc_date", pa.timestamp("s", tz="UTC")),
        ("source", pa.string()),
        ("content_type", pa.string()),
        ("text", pa.large_string()),
        (METADATA, pa.large_string()),
        (REASON, pa.string()),
        (DETAILS, pa.string()),
    ]
)
_LOGGED_ERRORS = 20  # a broken file must not flood the log or bloat the stats
_DETAILS_MAX = 300
# Seconds since the epoch that Python's datetime can hold (years 1-9999): later stages convert dates to Python.
_EPOCH_RANGE = (-62135596800, 253402300799)


class DocumentsConfig(BaseModel):
    """Where a document's fields are in the records of JSON lines and Parquet inputs, and the reader's bounds.

    A field is a key or a dotted path into nested objects (``metadata.url``);
    a key that itself holds dots is found first.
    """

    model_config = ConfigDict(extra="forbid")

    text: str = Field("text", description="the document's text (required in every record)")
    id: str | None = Field(
        "id",
        description="a unique id (a string or an integer); where absent, one is "
        "made from the file and the line or row number; null: always made",
    )
    url: str | None = Field("url", description="the document's URL, if any; null: none")
    date: str | None = Field(
        "date", description="the document's date: ISO 8601, seconds since the epoch, or `date_format`; null: none"
    )
    date_format: str | None = Field(
        None, description="strptime format of date strings (e.g. '%d/%m/%Y'); null: ISO 8601"
    )
    id_prefix: str = Field(
        "",
        description="put before every id read from the file (e.g. 'wiki:'), "
        "so that two dumps with numeric ids do not collide in dedup",
    )
    carry: Literal["all", "none"] | list[str] = Field(
        "all", description="other fields kept in the `metadata` column (a JSON object): all, none, or a list of fields"
    )
    batch_size: int = Field(256, ge=1, le=1_000_000, description="documents per Arrow batch")
    batch_bytes: int = Field(
        32 << 20, ge=1 << 16, le=1 << 32, description="a batch of JSON lines ends once its lines hold this many bytes"
    )
    max_record_bytes: int = Field(
        64 << 20,
        ge=1024,
        le=1 << 32,
        description="a longer line (or Parquet text) is rejected as too_large without being held in memory; a record "
        "this long costs the worker that reads it about 35 times its size at its peak, over the stages' copies of the "
        "text (measured, benchmarks/results/bounds.md: a 50 MB line 1.6 GB, a 200 MB one 6.8 GB; the default, "
        "~2.3 GB): keep it under a worker's memory / 35",
    )
    max_metadata_bytes: int = Field(
        64 << 10,
        ge=256,
        le=1 << 30,
        description="the carried fields of a record (its `metadata`, as JSON) are kept to this many bytes: the "
        "largest fields are dropped until the rest fits, counted (read_counters.metadata_fields_dropped) and logged, "
        "the document kept (metadata rides in every phase's parts: a 20 MB binary column would be carried as 27 MB of "
        "base64 three times)",
    )
    max_decoded_ratio: float = Field(
        WarcConfig.model_fields["max_decoded_ratio"].default,
        ge=2,
        le=1_000_000,
        description=f"a gzip or zstd JSON lines file whose data inflate more than this many times the compressed "
        f"bytes read (past {RATIO_FLOOR >> 20} MiB) is read up to there, the rest one row rejected as "
        "decompression_bomb naming the file (warc.max_decoded_ratio's bound; JSON lines compress 3-10x, a GiB of "
        "blank lines or of {} records 1,000-30,000x)",
    )

    @field_validator("text", "id", "url", "date")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None and (not value or any(not part for part in value.split("."))):
            raise ValueError(f"'{value}' is not a field name or dotted path (like 'text' or 'metadata.url')")
        return value

    @field_validator("date_format")
    @classmethod
    def _format(cls, value: str | None) -> str | None:
        if value is not None and "%" not in value:
            raise ValueError(f"'{value}' has no strptime directive: give one like '%Y-%m-%d', or null for ISO 8601")
        return value

    @model_validator(mode="after")
    def _distinct(self) -> DocumentsConfig:
        mapped = [(k, getattr(self, k)) for k in ("text", "id", "url", "date") if getattr(self, k) is not None]
        seen: dict[str, str] = {}
        for key, path in mapped:
            if path in seen:
                raise ValueError(
                    f"documents.{key} and documents.{seen[path]} both name "
                    f"the field '{path}': give each its own field or null"
                )
            seen[path] = key
        return self


@dataclass
class DocumentStats:
    """What reading document files met; ``records`` = ``documents`` + rejected, always."""

    records: int = 0  # non-blank lines, or rows
    documents: int = 0
    rejected: Counter = field(default_factory=Counter)
    bytes: int = 0  # of the records read: decompressed lines, Arrow bytes of the Parquet columns read
    #: blank_lines, id_generated, date_unparsed, damaged_compression
    counters: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def error(self, msg: str) -> None:
        if len(self.errors) < _LOGGED_ERRORS:
            log.warning(msg)
            self.errors.append(msg)
        else:
            log.debug(msg)

    def count(self, table: pa.Table) -> None:
        """Count a batch's rows: the one place records, documents and rejections are counted."""
        self.records += len(table)
        for item in pc.value_counts(table.column(REASON)).to_pylist():
            if item["values"] is None:
                self.documents += item["counts"]
            else:
                self.rejected[item["values"]] += item["counts"]

    def merge(self, other: DocumentStats) -> DocumentStats:
        self.records += other.records
        self.documents += other.documents
        self.rejected.update(other.rejected)
        self.bytes += other.bytes
        self.counters.update(other.counters)
        self.errors.extend(other.errors[: max(_LOGGED_ERRORS - len(self.errors), 0)])
        return self

    def to_dict(self) -> dict:
        return {
            "records": self.records,
            "documents": self.documents,
            "rejected_by_reason": dict(sorted(self.rejected.items())),
            "bytes": self.bytes,
            "read_counters": dict(sorted(self.counters.items())),
            "read_errors": self.errors,
        }


def generated_id(uri: str, number: int) -> str:
    """A stable id for record ``number`` (line number, or row number in a Parquet file) of ``uri``."""
    return "sha1:" + hashlib.sha1(f"{uri}@{number}".encode()).hexdigest()


class _Reject(Exception):
    def __init__(self, reason: str, details: str):
        self.reason, self.details = reason, details


_MISSING = object()
_JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


class FieldPath:
    """A key or dotted path into a JSON object."""

    def __init__(self, path: str):
        self.path = path
        self.parts = tuple(path.split("."))

    def get(self, obj: dict):
        """The value, or ``_MISSING``."""
        value = obj.get(self.path, _MISSING)
        if value is not _MISSING or len(self.parts) == 1:
            return value
        for part in self.parts:
            if not isinstance(obj, dict):
                return _MISSING
            obj = obj.get(part, _MISSING)
        return obj


def parse_date(value, fmt: str | None) -> datetime | None:
    """A date (UTC, whole seconds) from a string or epoch seconds;
    None if it does not parse; raises TypeError for other types."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError(_JSON_TYPES.get(type(value), type(value).__name__))
    try:
        if isinstance(value, str):
            parsed = datetime.strptime(value.strip(), fmt) if fmt else datetime.fromisoformat(value.strip())
        else:
            parsed = datetime.fromtimestamp(value, UTC)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC).replace(microsecond=0)
    except (ValueError, OverflowError, OSError):
        return None


def _json_default(value):
    """JSON for the Arrow values ``to_pylist`` gives that json does not know."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def _dump(meta: dict) -> str | None:
    return json.dumps(meta, ensure_ascii=False, separators=(",", ":"), default=_json_default) if meta else None


class _Batch:
    """Columns of the JSON lines rows read so far."""

    def __init__(self):
        self.ids: list = []
        self.urls: list = []
        self.dates: list = []
        self.texts: list = []
        self.metas: list = []
        self.reasons: list = []
        self.details: list = []
        self.numbers: list[int] = []
        self.bytes = 0

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, number: int, size: int, rid, url, when, text, meta, reason=None, details=None) -> None:
        self.numbers.append(number)
        self.ids.append(rid)
        self.urls.append(url)
        self.dates.append(when)
        self.texts.append(text)
        self.metas.append(meta)
        self.reasons.append(reason)
        self.details.append(details)
        self.bytes += size

    def reject(self, number: int, rid, reason: str, details: str) -> None:
        """A row of the file that is no document: its line, an id, and why."""
        self.add(number, 0, rid, None, None, None, None, reason, details)


class DocumentsSource:
    """Reads JSON lines (plain, gzip, zstd) and Parquet files into batches of documents."""

    name = "documents"
    label = "documents read (record checks: JSON, text field, types, size)"
    records_label = "records of JSON lines and Parquet files"
    #: every column its rows may have (``metadata`` only with ``carry`` other than none)
    provides = tuple(name for name in SCHEMA.names if name not in (REASON, DETAILS))
    reasons = REASONS
    #: the run config's section that configures it
    section = "documents"

    @classmethod
    def from_run(cls, config) -> DocumentsSource:
        return cls(config.documents)

    @staticmethod
    def stages(config) -> list:
        """Its documents are text already: only the URL rules run before the common stages."""
        from stages.base import StageSpec
        from stages.filters import url_filter_specs

        return [StageSpec(cls, cfg, "filters.url") for cls, cfg in url_filter_specs(config.filters)]

    @staticmethod
    def new_stats() -> DocumentStats:
        return DocumentStats()

    @staticmethod
    def totals(stats: DocumentStats) -> dict:
        """What the run records of a file's reading: every record is a row (a bad one is rejected)."""
        return {
            "records_by_type": {"record": stats.records},
            "rows": stats.records,
            "malformed_records": 0,
            "read_counters": dict(sorted(stats.counters.items())),
            "bytes": stats.bytes,
        }

    def __init__(self, config: DocumentsConfig | None = None):
        self.config = cfg = config or DocumentsConfig()
        self._text = FieldPath(cfg.text)
        self._id = FieldPath(cfg.id) if cfg.id else None
        self._url = FieldPath(cfg.url) if cfg.url else None
        self._date = FieldPath(cfg.date) if cfg.date else None
        # Top-level keys the core columns take; a dotted path's parent object is carried whole.
        self._core_keys = frozenset(p for p in (cfg.text, cfg.id, cfg.url, cfg.date) if p)
        self._carried = [FieldPath(p) for p in cfg.carry] if isinstance(cfg.carry, list) else None
        self.provides = tuple(
            name for name in self.schema.names if name not in (REASON, DETAILS)
        )  # this config's columns

    @property
    def schema(self) -> pa.Schema:
        return SCHEMA if self.config.carry != "none" else SCHEMA.remove(SCHEMA.get_field_index(METADATA))

    def read(self, stream: BinaryIO, uri: str, stats: DocumentStats) -> Iterator[pa.Table]:
        """Batches of ``stream``'s documents, rejected ones with
        ``reason`` set; raises SourceError if it is neither format."""
        found = sniff_stream(stream, uri)
        if found.kind != self.name:
            raise SourceError(f"input {uri} is not JSON lines or Parquet by its content: it is {found.describe()}")
        if found.format == "jsonl":
            yield from self._read_jsonl(stream, uri, stats)
        else:
            yield from self._read_parquet(stream, uri, stats)

    # ------------------------------------------------------------------ JSON lines

    def _read_jsonl(self, stream: BinaryIO, uri: str, stats: DocumentStats) -> Iterator[pa.Table]:
        cfg = self.config

        def damaged(msg: str) -> None:
            stats.counters["damaged_compression"] += 1
            stats.error(f"{uri}: {msg}")

        last = [0]  # the number of the last line read (blank or not)

        def blank(n: int) -> None:
            stats.counters["blank_lines"] += n
            last[0] += n

        batch = _Batch()
        try:
            read = Decompressed(stream, cfg.max_decoded_ratio).read
            for line in iter_lines(read, cfg.max_record_bytes, damaged, blank):
                last[0] = line.number
                stats.bytes += line.size
                self._add_line(line, uri, batch, stats)
                if len(batch) >= cfg.batch_size or batch.bytes >= cfg.batch_bytes:
                    yield self._jsonl_table(batch, uri, stats)
                    batch = _Batch()
        except Bomb as e:  # one row for the rest of the file, which is not read
            n = last[0] + 1
            stats.counters["decompression_bomb"] += 1
            stats.error(f"{uri}: {e}: not read from line {n} on (documents.max_decoded_ratio)")
            batch.reject(
                n,
                generated_id(uri, n),
                "decompression_bomb",
                f"line {n} on: {e} (documents.max_decoded_ratio); not read",
            )
        if len(batch):
            yield self._jsonl_table(batch, uri, stats)

    def _add_line(self, line: Line, uri: str, batch: _Batch, stats: DocumentStats) -> None:
        n = line.number
        if line.data is None:
            what = f"{line.size} bytes or more" if line.cut else f"{line.size} bytes"
            batch.reject(
                n,
                generated_id(uri, n),
                "too_large",
                f"line {n}: {what} > max_record_bytes {self.config.max_record_bytes}",
            )
            return
        if not line.data.strip() and line.cut is None:  # iter_lines counts blank lines itself: never here
            stats.counters["blank_lines"] += 1
            return
        try:
            obj = json.loads(line.data)
            if not isinstance(obj, dict):
                raise _Reject("not_object", f"line {n}: a JSON {_JSON_TYPES.get(type(obj), 'value')}, not an object")
            batch.add(n, line.size, *self._document(obj, uri, n, stats))
        except _Reject as r:
            rid = (
                _safe_id(self._id, obj, uri, n, self.config.id_prefix)
                if r.reason != "not_object"
                else generated_id(uri, n)
            )
            batch.reject(n, rid, r.reason, r.details[:_DETAILS_MAX])
        except UnicodeDecodeError as e:
            batch.reject(
                n,
                generated_id(uri, n),
                "bad_encoding",
                f"line {n}: not UTF-8: {e}"[:_DETAILS_MAX],
            )
        except (ValueError, RecursionError) as e:  # json's errors; RecursionError: nested thousands deep
            reason, why = ("truncated", line.cut) if line.cut else ("malformed_line", e)
            batch.reject(n, generated_id(uri, n), reason, f"line {n}: {why}"[:_DETAILS_MAX])
        except Exception as e:  # a bug or a case nobody foresaw: this line's problem only
            kind = note_error("documents reader, one line", e, log)
            stats.counters[f"error.{kind}"] += 1
            batch.reject(
                n,
                generated_id(uri, n),
                "read_error",
                f"line {n}: {kind}: {e}"[:_DETAILS_MAX],
            )

    def _document(self, obj: dict, uri: str, n: int, stats: DocumentStats) -> tuple:
        """(id, url, date, text, metadata) of one JSON object; raises _Reject."""
        text = self._text.get(obj)
        if text is _MISSING or text is None:
            raise _Reject(
                "no_text",
                f"line {n}: no '{self._text.path}' field"
                if text is _MISSING
                else f"line {n}: '{self._text.path}' is null",
            )
        if not isinstance(text, str):
            raise _Reject(
                "wrong_type", f"line {n}: '{self._text.path}' is a JSON {_JSON_TYPES.get(type(text))}, not a string"
            )
        if not text or text.isspace():
            raise _Reject("no_text", f"line {n}: '{self._text.path}' is empty")
        url = None
        if self._url is not None:
            url = self._url.get(obj)
            if url is _MISSING:
                url = None
            elif url is not None and not isinstance(url, str):
                raise _Reject(
                    "wrong_type", f"line {n}: '{self._url.path}' is a JSON {_JSON_TYPES.get(type(url))}, not a string"
                )
        when = None
        if self._date is not None:
            value = self._date.get(obj)
            if value is not _MISSING and value is not None:
                try:
                    when = parse_date(value, self.config.date_format)
                except TypeError as e:
                    raise _Reject(
                        "wrong_type", f"line {n}: '{self._date.path}' is a JSON {e}, not a date string or number"
                    ) from None
                if when is None:
                    stats.counters["date_unparsed"] += 1
        return self._json_id(obj, uri, n, stats), url, when, text, self._json_metadata(obj, f"{uri}: line {n}", stats)

    def _json_id(self, obj: dict, uri: str, n: int, stats: DocumentStats) -> str:
        value = self._id.get(obj) if self._id is not None else _MISSING
        if value is _MISSING or value is None or value == "":
            stats.counters["id_generated"] += 1
            return generated_id(uri, n)
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise _Reject(
                "wrong_type",
                f"line {n}: '{self._id.path}' is a JSON {_JSON_TYPES.get(type(value))}, not a string or integer",
            )
        return f"{self.config.id_prefix}{value}"

    def _json_metadata(self, obj: dict, where: str, stats: DocumentStats) -> str | None:
        carry = self.config.carry
        if carry == "none":
            return None
        if self._carried is None:
            meta = {k: v for k, v in obj.items() if k not in self._core_keys}
        else:
            found = ((p.path, p.get(obj)) for p in self._carried)
            meta = {k: v for k, v in found if v is not _MISSING}
        return self._bounded(meta, where, stats)

    def _bounded(self, meta: dict, where: str, stats: DocumentStats, dropped: dict | None = None) -> str | None:
        """``meta`` as JSON, its largest fields dropped (counted, logged) until it fits ``max_metadata_bytes``;
        ``dropped``: fields (and their sizes) the caller dropped already."""
        dump, dropped = _dump(meta), dict(dropped or {})
        bound = self.config.max_metadata_bytes
        if dump is not None and len(dump) > bound // 4 and len(dump.encode()) > bound:  # (4 bytes a character at most)
            sizes = {k: len(_dump({k: v}).encode()) for k, v in meta.items()}
            for key in sorted(sizes, key=lambda k: (-sizes[k], k)):
                dropped[key] = sizes[key]
                meta = {k: v for k, v in meta.items() if k != key}
                dump = _dump(meta)
                if dump is None or len(dump.encode()) <= bound:
                    break
        if dropped:
            stats.counters["metadata_fields_dropped"] += len(dropped)
            fields = ", ".join(f"'{k}' ({n:,} bytes)" for k, n in dropped.items())
            stats.error(f"{where}: carried field(s) {fields} dropped: over documents.max_metadata_bytes ({bound:,})")
        return dump

    def _jsonl_table(self, batch: _Batch, uri: str, stats: DocumentStats) -> pa.Table:
        columns = {"id": batch.ids, "url": batch.urls, "text": batch.texts, METADATA: batch.metas}
        try:
            table = self._table(columns, batch.dates, batch.reasons, batch.details, uri, "jsonl")
        except UnicodeEncodeError:
            # A JSON escape of a lone surrogate (\ud800) parses into a string no UTF-8 column holds.
            _reject_unencodable(columns, batch, uri)
            table = self._table(columns, batch.dates, batch.reasons, batch.details, uri, "jsonl")
        stats.count(table)
        return table

    def _table(self, columns: dict, dates, reasons, details, uri: str, kind: str) -> pa.Table:
        n = len(reasons)
        given = {
            **columns,
            "warc_date": dates,
            REASON: reasons,
            DETAILS: details,
            "source": pa.repeat(uri, n),
            "content_type": pa.repeat(CONTENT_TYPES[kind], n),
        }
        schema = self.schema
        return pa.Table.from_arrays([_array(given[f.name], f.type) for f in schema], schema=schema)

    # ------------------------------------------------------------------ Parquet

    def _read_parquet(self, stream: BinaryIO, uri: str, stats: DocumentStats) -> Iterator[pa.Table]:
        watched = Watched(native(stream))
        try:
            pf = pq.ParquetFile(watched)
        except (pa.ArrowException, OSError) as e:
            if watched.error is not None:
                raise watched.error from e
            raise SourceError(f"input {uri} is not a readable Parquet file: {e}") from e
        names = pf.schema_arrow.names
        columns = self._parquet_columns(names)
        first = 0
        for group in range(pf.num_row_groups):
            rows = pf.metadata.row_group(group).num_rows
            done = 0
            batches = pf.iter_batches(
                batch_size=self.config.batch_size, row_groups=[group], columns=columns, use_threads=False
            )
            while True:
                try:
                    rb = next(batches)
                except StopIteration:
                    break
                except (pa.ArrowException, OSError) as e:
                    if (
                        watched.error is not None
                    ):  # the file could not be read (S3 gave up): the unit fails and is retried
                        raise watched.error from e
                    stats.error(f"{uri}: row group {group} cannot be decoded: {e}")
                    table = self._unreadable(uri, first + done, rows - done, f"row group {group}: {e}")
                    stats.count(table)
                    yield table
                    break
                stats.bytes += rb.nbytes
                table = self._from_arrow(rb, names, uri, first + done, stats)
                done += rb.num_rows
                stats.count(table)
                yield table
            first += rows

    def _parquet_columns(self, names: list[str]) -> list[str]:
        """The top-level columns to read: those the fields name, or all to carry them all."""
        if self.config.carry == "all":
            return names
        paths = [p.path for p in (self._text, self._id, self._url, self._date) if p is not None]
        paths += [p.path for p in self._carried or ()]
        wanted = {p if p in names else p.split(".")[0] for p in paths}
        return [n for n in names if n in wanted]

    def _unreadable(self, uri: str, first: int, rows: int, why: str) -> pa.Table:
        """The rows of a row group that could not be decoded, as read_error rejections."""
        ids = [generated_id(uri, first + i) for i in range(rows)]
        empty = [None] * rows
        columns = {"id": ids, "url": empty, "text": empty, METADATA: empty}
        return self._table(columns, empty, ["read_error"] * rows, [why[:_DETAILS_MAX]] * rows, uri, "parquet")

    def _from_arrow(
        self, rb: pa.RecordBatch, names: list[str], uri: str, first: int, stats: DocumentStats
    ) -> pa.Table:
        """One Parquet batch as documents, vectorized over its columns."""
        n = rb.num_rows
        verdict = _Verdicts(n)
        text = self._arrow_text(rb, names, verdict)
        url = self._arrow_strings(rb, self._url, verdict)
        dates = self._arrow_dates(rb, verdict, stats)
        ids = self._arrow_ids(rb, uri, first, verdict, stats)
        meta = self._arrow_metadata(rb, uri, first, stats)
        rejected = verdict.mask()
        text = pc.if_else(rejected, pa.nulls(n, pa.large_string()), text)
        meta = pc.if_else(rejected, pa.nulls(n, pa.large_string()), meta)
        columns = {"id": ids, "url": url, "text": text, METADATA: meta}
        return self._table(columns, dates, verdict.reasons, verdict.details, uri, "parquet")

    def _arrow_text(self, rb: pa.RecordBatch, names: list[str], verdict: _Verdicts) -> pa.Array:
        n = rb.num_rows
        path = self.config.text
        col = _arrow_field(rb, path)
        if col is None:
            verdict.all("no_text", f"no '{path}' column in the file (it has: {', '.join(names)[:200]})")
            return pa.nulls(n, pa.large_string())
        text = _as_strings(col, verdict, path)
        if text is None:
            verdict.all("wrong_type", f"'{path}' is {col.type}, not a string")
            return pa.nulls(n, pa.large_string())
        empty = pc.fill_null(pc.or_(pc.equal(pc.binary_length(text), 0), pc.utf8_is_space(text)), True)
        verdict.where(empty, "no_text", f"'{path}' is null or empty")
        size = pc.fill_null(pc.binary_length(text), 0).to_numpy(zero_copy_only=False)
        big = size > self.config.max_record_bytes
        if big.any():
            verdict.where(
                big,
                "too_large",
                [f"text of {s} bytes > max_record_bytes {self.config.max_record_bytes}" for s in size],
            )
        return text

    def _arrow_ids(self, rb: pa.RecordBatch, uri: str, first: int, verdict: _Verdicts, stats: DocumentStats) -> list:
        n = rb.num_rows
        col = _arrow_field(rb, self.config.id) if self.config.id else None
        given = [None] * n
        if col is not None:
            strings = _as_strings(col, verdict, self.config.id, integers=True)
            if strings is None:
                verdict.all("wrong_type", f"'{self.config.id}' is {col.type}, not a string or integer")
            else:
                given = strings.to_pylist()
        prefix = self.config.id_prefix
        out = [f"{prefix}{v}" if v else None for v in given]
        missing = [i for i, v in enumerate(out) if v is None]
        for i in missing:
            out[i] = generated_id(uri, first + i)
        stats.counters["id_generated"] += sum(1 for i in missing if verdict.reasons[i] is None)
        return out

    def _arrow_strings(self, rb: pa.RecordBatch, path: FieldPath | None, verdict: _Verdicts) -> pa.Array:
        n = rb.num_rows
        col = _arrow_field(rb, path.path) if path is not None else None
        if col is None:
            return pa.nulls(n, pa.string())
        strings = _as_strings(col, verdict, path.path)
        if strings is None:
            verdict.all("wrong_type", f"'{path.path}' is {col.type}, not a string")
            return pa.nulls(n, pa.string())
        return strings.cast(pa.string())

    def _arrow_dates(self, rb: pa.RecordBatch, verdict: _Verdicts, stats: DocumentStats) -> pa.Array:
        n = rb.num_rows
        out_type = SCHEMA.field("warc_date").type
        col = _arrow_field(rb, self.config.date) if self.config.date else None
        if col is None:
            return pa.nulls(n, out_type)
        t = col.type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            given = col.to_pylist()
            values = [None if v is None else parse_date(v, self.config.date_format) for v in given]
            stats.counters["date_unparsed"] += sum(
                1 for v, g in zip(values, given, strict=False) if v is None and g is not None
            )
            return pa.array(values, out_type)
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            seconds = col.cast(pa.timestamp("s", tz=t.tz if pa.types.is_timestamp(t) else None), safe=False).cast(
                pa.int64()
            )
        elif pa.types.is_integer(t) or pa.types.is_floating(t):
            seconds = pc.floor(col.cast(pa.float64())).cast(pa.int64(), safe=False)
        else:
            verdict.all("wrong_type", f"'{self.config.date}' is {t}, not a date, a string or a number")
            return pa.nulls(n, out_type)
        lo, hi = _EPOCH_RANGE
        bad = pc.or_(pc.less(seconds, lo), pc.greater(seconds, hi))
        stats.counters["date_unparsed"] += pc.sum(bad).as_py() or 0
        return pc.if_else(bad, pa.nulls(n, pa.int64()), seconds).cast(out_type)

    def _arrow_metadata(self, rb: pa.RecordBatch, uri: str, first: int, stats: DocumentStats) -> pa.Array:
        n = rb.num_rows
        carry = self.config.carry
        if carry == "none":
            return pa.nulls(n, pa.large_string())
        if self._carried is None:
            found = [(name, rb.column(name)) for name in rb.schema.names if name not in self._core_keys]
        else:
            found = [(p.path, _arrow_field(rb, p.path)) for p in self._carried]
            found = [(path, col) for path, col in found if col is not None]
        # A string or binary value over the bound is dropped before it becomes Python (or base64) at all.
        over: dict[int, dict[str, int]] = {}
        for i, (path, col) in enumerate(found):
            sizes = _json_sizes(col)
            if sizes is not None and (big := sizes > self.config.max_metadata_bytes).any():
                for row in np.flatnonzero(big).tolist():
                    over.setdefault(row, {})[path] = int(sizes[row])
                found[i] = (path, pc.if_else(pa.array(big), pa.nulls(n, col.type), col))
        if not found:
            return pa.nulls(n, pa.large_string())
        rows = pa.RecordBatch.from_arrays([col for _, col in found], names=[path for path, _ in found]).to_pylist()
        out = [_dump(r) for r in rows]
        quarter = self.config.max_metadata_bytes // 4  # a shorter dump fits (4 bytes a character at most)
        for row in sorted(set(over) | {i for i, d in enumerate(out) if d is not None and len(d) > quarter}):
            meta = {k: v for k, v in rows[row].items() if k not in over.get(row, ())}
            out[row] = self._bounded(meta, f"{uri}: row {first + row}", stats, over.get(row))
        return pa.array(out, pa.large_string())


class _Verdicts:
    """Reasons and details of a batch's rows; the first reason given to a row stays."""

    def __init__(self, n: int):
        self.reasons: list = [None] * n
        self.details: list = [None] * n

    def all(self, reason: str, details: str) -> None:
        self.where(np.ones(len(self.reasons), dtype=bool), reason, details)

    def where(self, mask, reason: str, details: str | list[str]) -> None:
        mask = np.asarray(
            mask.to_numpy(zero_copy_only=False) if isinstance(mask, (pa.Array, pa.ChunkedArray)) else mask, dtype=bool
        )
        for i in np.flatnonzero(mask):
            if self.reasons[i] is None:
                self.reasons[i] = reason
                self.details[i] = (details if isinstance(details, str) else details[i])[:_DETAILS_MAX]

    def mask(self) -> pa.Array:
        return pa.array([r is not None for r in self.reasons], pa.bool_())


def _arrow_field(rb: pa.RecordBatch, path: str) -> pa.Array | None:
    """A column or a field inside struct columns, by name or dotted path; None if absent."""
    names = rb.schema.names
    if path in names:
        return rb.column(path)
    parts = path.split(".")
    if parts[0] not in names:
        return None
    col = rb.column(parts[0])
    for part in parts[1:]:
        if not pa.types.is_struct(col.type) or col.type.get_field_index(part) < 0:
            return None
        col = pc.struct_field(col, part)
    return col


def _as_strings(col: pa.Array, verdict: _Verdicts, path: str, integers: bool = False) -> pa.Array | None:
    """``col`` as large strings; None if its type holds no text (a non-UTF-8 binary value is bad_encoding)."""
    t = col.type
    if pa.types.is_dictionary(t):
        col, t = col.dictionary_decode(), t.value_type
    if pa.types.is_null(t) or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return col.cast(pa.large_string())
    if integers and pa.types.is_integer(t):
        return col.cast(pa.large_string())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        try:
            return col.cast(pa.large_string())
        except pa.ArrowInvalid:
            return _decoded(col, verdict, path)
    return None


def _decoded(col: pa.Array, verdict: _Verdicts, path: str) -> pa.Array:
    """Binary values as text, those that are not UTF-8 null and rejected as bad_encoding."""
    values, bad, why = [], np.zeros(len(col), dtype=bool), [""] * len(col)
    for i, v in enumerate(col.to_pylist()):
        try:
            values.append(None if v is None else v.decode("utf-8"))
        except UnicodeDecodeError as e:
            values.append(None)
            bad[i], why[i] = True, f"'{path}' is not UTF-8: {e}"
    verdict.where(bad, "bad_encoding", why)
    return pa.array(values, pa.large_string())


def _json_sizes(col: pa.Array) -> np.ndarray | None:
    """At least the bytes each value of a string or binary column takes in the metadata's JSON (base64: 4/3 of a
    binary value); None for other types (their values are measured as JSON)."""
    t = col.type
    if pa.types.is_dictionary(t):
        return None
    binary = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
    if not (binary or pa.types.is_string(t) or pa.types.is_large_string(t)):
        return None
    n = pc.fill_null(pc.binary_length(col), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return (n + 2) // 3 * 4 if binary else n


def _array(values, type_: pa.DataType) -> pa.Array:
    return values.cast(type_) if isinstance(values, pa.Array) else pa.array(values, type_)


def _safe_id(path: FieldPath | None, obj, uri: str, n: int, prefix: str) -> str:
    """The record's own id for a rejected row, if it has a usable one."""
    value = path.get(obj) if path is not None and isinstance(obj, dict) else None
    if isinstance(value, str) and value or isinstance(value, int) and not isinstance(value, bool):
        return f"{prefix}{value}"
    return generated_id(uri, n)


def _reject_unencodable(columns: dict, batch: _Batch, uri: str) -> None:
    """Reject the rows holding a string UTF-8 cannot encode (bad_encoding), nulling what they carry."""
    for i in range(len(batch)):
        bad = [name for name, values in columns.items() if isinstance(values[i], str) and not _encodable(values[i])]
        if not bad:
            continue
        if batch.reasons[i] is None:
            batch.reasons[i] = "bad_encoding"
            batch.details[i] = f"line {batch.numbers[i]}: '{bad[0]}' holds a lone surrogate (an invalid \\u escape)"
        columns["text"][i] = columns[METADATA][i] = None
        if "url" in bad:
            columns["url"][i] = None
        if "id" in bad:
            columns["id"][i] = generated_id(uri, batch.numbers[i])


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def open_and_read(path: str, config: DocumentsConfig | None = None) -> tuple[pa.Table, DocumentStats]:
    """Convenience for tests and tools: all rows of a local file and its stats."""
    stats = DocumentStats()
    source = DocumentsSource(config)
    with pa.OSFile(path, "rb") as f:
        tables = list(source.read(f, path, stats))
    return (pa.concat_tables(tables) if tables else source.schema.empty_table()), stats
