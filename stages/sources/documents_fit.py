"""Whether a document file fits the ``documents`` settings, told before any work from a bounded read.

A Parquet file's schema is in its footer; a JSON lines file's fields show in its first records.  A file
whose schema has no column for ``documents.text`` (or whose first records none holds it) would have every
record rejected (``no_text``) and the run end with no documents from it: that is a config error naming
the file and the field, found at plan time (pipeline/preflight.py).  So is an ``id``, ``url`` or ``date``
field the config names (other than the defaults, which may be absent) that the file does not have.
A record missing a field among records that have it stays what it was: one counted rejection.
"""

from __future__ import annotations

import io
import json
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from stages.sources import Sniffed
from stages.sources.documents import _JSON_TYPES, _MISSING, DocumentsConfig, FieldPath
from stages.sources.lines import Damage, Decompressed, iter_lines, native

#: JSON lines records looked at, at most (a file's first records), within its first FIRST_BYTES bytes (compressed
#: or not: one read, a request on S3) and as many decompressed bytes.
FIRST_RECORDS = 100
FIRST_BYTES = 1 << 20
_DEFAULTS = DocumentsConfig()
#: What each field's values may be, as a message says it and as Arrow types are told.
_KINDS = {
    "text": "a string",
    "id": "a string or an integer",
    "url": "a string",
    "date": "a date, a string or a number",
}


def fields_to_check(config: DocumentsConfig) -> list[tuple[str, str]]:
    """(key, field path) of the fields a file must have: the text, and id/url/date where the config names its own."""
    out = [("text", config.text)]
    out += [
        (k, getattr(config, k))
        for k in ("id", "url", "date")
        if getattr(config, k) is not None and getattr(config, k) != getattr(_DEFAULTS, k)
    ]
    return out


def fit_problem(stream: BinaryIO, found: Sniffed, config: DocumentsConfig) -> tuple[str, str] | None:
    """(the ``documents`` key at fault, what is wrong) for a document file (``found``: what it was sniffed as) that
    lacks a field the config names, or None.  Reads the Parquet footer, or the first JSON lines records."""
    if found.format == "parquet":
        return _parquet_problem(stream, config)
    return _jsonl_problem(stream, config)


def _parquet_problem(stream: BinaryIO, config: DocumentsConfig) -> tuple[str, str] | None:
    try:
        schema = pq.ParquetFile(native(stream)).schema_arrow
    except (pa.ArrowException, OSError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        return "text", f"is not a readable Parquet file ({first})"
    for key, path in fields_to_check(config):
        found = _arrow_type(schema, path)
        if found is None:
            return key, f"has no column '{path}' (its columns: {', '.join(schema.names)[:300]})"
        if not _holds(key, found):
            return key, f"has a column '{path}' of type {found}, not {_KINDS[key]}"
    return None


def _arrow_type(schema: pa.Schema, path: str) -> pa.DataType | None:
    """The type of a column, or of a field inside struct columns by dotted path (as the reader finds it), or None."""
    if path in schema.names:
        return schema.field(path).type
    parts = path.split(".")
    if parts[0] not in schema.names:
        return None
    t = schema.field(parts[0]).type
    for part in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
            return None
        t = t.field(part).type
    return t


def _holds(key: str, t: pa.DataType) -> bool:
    """Whether a column of type ``t`` can give the reader the field ``key`` (documents.py's own conversions)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    text = (
        pa.types.is_null(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
    )
    if key == "id":
        return text or pa.types.is_integer(t)
    if key == "date":
        return (
            text
            or pa.types.is_timestamp(t)
            or pa.types.is_date(t)
            or pa.types.is_integer(t)
            or pa.types.is_floating(t)
        )
    return text


def _first_records(stream: BinaryIO) -> list[dict]:
    """The JSON objects among the file's first records (lines that do not parse are skipped: each is its own
    rejection at run time), from its first FIRST_BYTES bytes (one read: a request on S3)."""
    decompressed, total = Decompressed(io.BytesIO(stream.read(FIRST_BYTES))), 0

    def read(n: int) -> bytes:
        nonlocal total
        if total >= FIRST_BYTES:
            return b""
        data = decompressed.read(min(n, 1 << 16, FIRST_BYTES - total))  # 64 KB at a time: 100 records are rarely more
        total += len(data)
        return data

    records: list[dict] = []
    try:
        for line in iter_lines(read, FIRST_BYTES, lambda _damage: None):
            if line.data is None or not line.data.strip() or line.cut is not None:
                continue
            try:
                obj = json.loads(line.data)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict):
                records.append(obj)
            if len(records) >= FIRST_RECORDS:
                break
    except Damage:
        pass  # damaged compressed data: the reader counts it
    return records


def _jsonl_problem(stream: BinaryIO, config: DocumentsConfig) -> tuple[str, str] | None:
    records = _first_records(stream)
    if not records:
        return None  # no object among the first records: each line is a counted rejection, as before
    for key, path in fields_to_check(config):
        field = FieldPath(path)
        values = [field.get(r) for r in records]
        present = [v for v in values if v is not _MISSING and v is not None]
        what = f"its first {len(records)} records" if len(records) > 1 else "its first record"
        if not present:
            fields = sorted({k for r in records for k in r})
            return key, f"has no '{path}' field in {what} (their fields: {', '.join(fields)[:300]})"
        if key == "text" and not any(isinstance(v, str) for v in present):
            types = sorted({_JSON_TYPES.get(type(v), type(v).__name__) for v in present})
            return key, f"holds no string in its '{path}' field in {what} (a JSON {' or '.join(types)})"
    return None
