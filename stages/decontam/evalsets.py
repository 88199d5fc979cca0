"""Reading eval sets: JSON lines, Parquet or text files (local or s3://) into items (an id and a text).

An item's text is the values of the configured fields joined with a space, in
the configured order; a list value (an MMLU item's ``choices``) gives its
elements, numbers their decimal form.  Ids come from ``id_field`` (unique
strings or integers) or are the item's 0-based position in the file (JSON
lines and text count non-blank lines, Parquet rows).

An eval set is all or nothing: a file that cannot be read as configured is
refused with one line naming the set, the file and, for a bad record, its line
or row (:class:`EvalSetError`), because an item silently skipped is a
benchmark question left in the training data.  JSON lines and text may be
gzip or zstd compressed (told by magic bytes).
"""

from __future__ import annotations

import io
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from stages.decontam.config import EvalSetConfig
from stages.named_files import NamedFileError, Opener, _head
from stages.sources import HEAD_BYTES, PARQUET_MAGIC, sniff
from stages.sources.documents import FieldPath
from stages.sources.lines import compression_of

#: What FieldPath.get returns for an absent field.
_ABSENT = FieldPath("absent").get({})
#: Names that say JSON: a file so named is never read as lines of text.
_JSON_NAMES = (".json", ".json.gz", ".json.zst", ".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson")


class EvalSetError(ValueError):
    """An eval file that cannot be read as configured (one line: the set, the file, what and where)."""


@dataclass(frozen=True)
class EvalItems:
    """The items of one eval set, in file order."""

    name: str
    path: str
    ids: list[str]
    texts: list[str]

    def __len__(self) -> int:
        return len(self.ids)


def open_local_or_s3(path: str) -> BinaryIO:
    """The default opener: a local file, or s3:// through pyarrow with the environment's settings
    (a run passes its own opener, with its configured endpoint and credentials)."""
    if "://" in path:
        from pyarrow import fs

        filesystem, inner = fs.FileSystem.from_uri(path)
        return filesystem.open_input_file(inner)
    return open(path, "rb")


def read_eval_set(config: EvalSetConfig, open_file: Opener = open_local_or_s3, max_bytes: int = 1 << 30) -> EvalItems:
    """All items of one eval set, or an :class:`EvalSetError`."""
    where = f"eval set '{config.name}' ({config.path})"
    try:
        raw = _read(open_file, config.path, max_bytes)
        kind = _format(config, raw)
        if kind == "parquet":
            records = _parquet_records(config, raw)
        else:
            data = _decompress(raw, max_bytes)
            records = _jsonl_records(data) if kind == "jsonl" else _text_records(data)
        ids, texts = _items(config, records)
    except EvalSetError as e:
        raise EvalSetError(f"{where}: {e}") from None
    if not texts:
        raise EvalSetError(f"{where}: no items in the file (give a file with at least one record)")
    return EvalItems(config.name, config.path, ids, texts)


def eval_file_check(
    config: EvalSetConfig, max_bytes: int = 1 << 30, max_items: int = 10_000_000
) -> Callable[[str, Opener], None]:
    """The plan-time check of an eval file: every record of it, as the index will read it (:func:`scan_eval_set`),
    so that an empty file or a bad line deep in it is refused before any work rather than after phases 1 and 2."""

    def check(path: str, open_file: Opener) -> None:
        _head(path, open_file, "dataset", 8)  # the named-file checks' wording for a missing file
        try:
            scan_eval_set(config, open_file, max_bytes, max_items)
        except EvalSetError as e:
            raise NamedFileError(f"{path!r} {e}") from None

    return check


def scan_eval_set(
    config: EvalSetConfig, open_file: Opener = open_local_or_s3, max_bytes: int = 1 << 30, max_items: int = 10_000_000
) -> int:
    """The number of items of an eval set, every record read as :func:`read_eval_set` reads it (the same errors),
    streaming: memory is a chunk of the file (a Parquet batch) and, with ``id_field``, the ids seen.  Costs a pass
    over the file: ~1 s per 100 MB of JSON lines, plain or gzip, as the run's own read of it
    (benchmarks/results/plan_checks.md)."""
    try:
        with open_file(config.path) as f:
            head = f.read(HEAD_BYTES)
            f.seek(0)
            kind = _format(config, head)
            records = _parquet_stream(config, f) if kind == "parquet" else _line_stream(f, kind, max_bytes)
            items, seen = 0, {}
            for position, (where, record) in enumerate(records):
                item_id, _ = _item_of(config, where, record, position)
                if config.id_field is not None:
                    if item_id in seen:
                        raise EvalSetError(
                            f"{where}: id '{item_id}' is also the id of {seen[item_id]} (ids must be "
                            "unique; fix `id_field` or null for positions)"
                        )
                    seen[item_id] = where
                items += 1
                if items > max_items:
                    raise EvalSetError(
                        f"holds more than decontam.max_items ({max_items:,}) items: raise it or split the file"
                    )
    except FileNotFoundError:
        raise EvalSetError("no such file (check the path; it must exist where the run starts)") from None
    except IsADirectoryError:
        raise EvalSetError("is a folder, not a file (give the file's path)") from None
    except OSError as e:
        raise EvalSetError(f"cannot be read: {_first_line(e)}") from None
    if not items:
        raise EvalSetError("has no items (give a file with at least one record)")
    return items


def _line_stream(f: BinaryIO, kind: str, max_bytes: int) -> Iterator[tuple[str, Any]]:
    """(where, record) of every non-blank line of a JSON lines or text file, decompressed as it streams."""
    from stages.sources.lines import Damage, Decompressed, iter_lines

    def damaged(message: str) -> None:
        raise EvalSetError(message.replace("data ends damaged", "data is truncated or damaged"))

    decompressed, total = Decompressed(f), 0

    def read(n: int) -> bytes:
        nonlocal total
        data = decompressed.read(n)
        total += len(data)
        if total > max_bytes:
            raise EvalSetError(
                f"decompresses to more than decontam.max_file_bytes ({max_bytes:,} bytes): raise it or split the file"
            )
        return data

    try:
        for line in iter_lines(read, max_bytes, damaged):
            data = line.data.removeprefix(b"\xef\xbb\xbf") if line.number == 1 else line.data
            if not data.strip():
                continue
            if kind == "jsonl":
                yield from _jsonl_records(data, line.number)
            else:
                yield from _text_records(data, line.number)
    except Damage as e:  # iter_lines reports damage to ``damaged``; a reader may still raise it
        raise EvalSetError(str(e)) from None


def _parquet_stream(config: EvalSetConfig, f: BinaryIO) -> Iterator[tuple[str, Any]]:
    pf = _parquet_file(f)
    columns, row = _schema_columns(config, pf.schema_arrow), 0
    try:
        for batch in pf.iter_batches(batch_size=1 << 14, columns=columns):
            for record in batch.to_pylist():
                yield f"row {row}", record
                row += 1
    except (pa.ArrowException, OSError) as e:
        raise EvalSetError(f"is not a readable Parquet file ({_first_line(e)})") from None


# ---------------------------------------------------------------- bytes


def _first_line(e: BaseException) -> str:
    """An exception's message as one short line."""
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:120]


def _read(open_file: Opener, path: str, max_bytes: int) -> bytes:
    try:
        with open_file(path) as f:
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise EvalSetError("no such file (check the path; it must exist where the run starts)") from None
    except IsADirectoryError:
        raise EvalSetError("is a folder, not a file (give the file's path)") from None
    except OSError as e:
        raise EvalSetError(f"cannot be read: {_first_line(e)}") from None
    if len(raw) > max_bytes:
        raise EvalSetError(f"larger than decontam.max_file_bytes ({max_bytes:,} bytes): raise it or split the file")
    return raw


def _decompress(raw: bytes, max_bytes: int, partial: bool = False) -> bytes:
    """Plain, gzip (every member) or zstd bytes, decompressed to at most ``max_bytes``
    (``partial``: ``raw`` is a file's head, cut anywhere: what decodes of it)."""
    codec = compression_of(raw)
    if codec is None:
        return raw
    try:
        out, complete = _gunzip(raw, max_bytes) if codec == "gzip" else _unzstd(raw, max_bytes)
    except Exception as e:  # zlib.error, zstandard.ZstdError: damaged data
        if partial:
            return b""
        raise EvalSetError(f"damaged {codec} data ({_first_line(e)})") from None
    if len(out) > max_bytes:
        if partial:
            return out[:max_bytes]
        raise EvalSetError(
            f"decompresses to more than decontam.max_file_bytes ({max_bytes:,} bytes): raise it or split the file"
        )
    if not complete and not partial:
        raise EvalSetError(f"truncated {codec} data (the file ends inside a compressed member)")
    return out


def _gunzip(raw: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """(data, whether the last member ended) of gzip members back to back."""
    parts, size, rest = [], 0, raw
    while rest and size <= max_bytes:
        d = zlib.decompressobj(31)
        parts.append(d.decompress(rest, max_bytes + 1 - size))
        size += len(parts[-1])
        if not d.eof:
            return b"".join(parts), size > max_bytes
        rest = d.unused_data
    return b"".join(parts), True


def _unzstd(raw: bytes, max_bytes: int) -> tuple[bytes, bool]:
    import zstandard

    out = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True).read(max_bytes + 1)
    return out, True  # a truncated frame raises


def _format(config: EvalSetConfig, head: bytes) -> str:
    """The file's format: the configured one, or by content (never a guess between JSON and text)."""
    is_parquet = head.startswith(PARQUET_MAGIC)
    if config.format != "auto":
        if (config.format == "parquet") != is_parquet:
            found = "a Parquet file" if is_parquet else "not a Parquet file (no PAR1 magic)"
            raise EvalSetError(f"format is {config.format} but the file is {found}: fix `format` or use auto")
        return config.format
    kind = sniff(head, config.path).format
    if kind in ("parquet", "jsonl"):
        return kind
    if kind == "warc":
        raise EvalSetError("is a WARC file, not an eval set (give JSON lines, Parquet or text)")
    data = _decompress(head, HEAD_BYTES, partial=True)
    if not data and head:
        raise EvalSetError(f"damaged {compression_of(head)} data (nothing of it decodes)")
    data = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not data:
        return "text"  # empty: no items (said by the caller)
    if data[:1] in (b"[", b"{") or config.path.lower().endswith(_JSON_NAMES):
        raise EvalSetError("is JSON but not JSON lines (one object per line): convert it, e.g. with `jq -c '.[]'`")
    try:
        data[: len(data) - 4].decode("utf-8")  # a head may end inside a character
    except UnicodeDecodeError:
        raise EvalSetError("is not JSON lines, Parquet nor UTF-8 text (set `format` if it is one of them)") from None
    return "text"


# ---------------------------------------------------------------- records


def _jsonl_records(data: bytes, first: int = 1) -> Iterator[tuple[str, Any]]:
    """(where, record) of every non-blank line (``first``: the number of the first)."""
    for number, line in enumerate(data.split(b"\n"), first):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError) as e:
            raise EvalSetError(f"line {number} is not JSON ({_first_line(e)})") from None
        if not isinstance(record, dict):
            raise EvalSetError(f"line {number} is not a JSON object")
        yield f"line {number}", record


def _text_records(data: bytes, first: int = 1) -> Iterator[tuple[str, Any]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + first
        raise EvalSetError(f"line {line} is not UTF-8 text") from None
    for number, line in enumerate(text.split("\n"), first):
        if line.strip():
            yield f"line {number}", {"text": line}


def _schema_columns(config: EvalSetConfig, schema: pa.Schema) -> list[str]:
    """The top-level columns the configured fields need (refused with the columns there are, if absent)."""
    names = set(schema.names)
    needed = []
    for path in [*config.fields, *([config.id_field] if config.id_field else [])]:
        column = path if path in names else path.split(".", 1)[0]
        if column not in names:
            raise EvalSetError(
                f"has no column '{column}' (it has {', '.join(sorted(names)[:12])}): fix `fields` or `id_field`"
            )
        needed.append(column)
    return sorted(set(needed))


def _parquet_file(source) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as e:  # a footer that does not parse
        raise EvalSetError(f"is not a readable Parquet file ({_first_line(e)})") from None


def _parquet_records(config: EvalSetConfig, raw: bytes) -> Iterator[tuple[str, Any]]:
    f = _parquet_file(pa.BufferReader(raw))
    columns = _schema_columns(config, f.schema_arrow)
    try:
        table = f.read(columns=columns)
    except (pa.ArrowException, OSError) as e:
        raise EvalSetError(f"is not a readable Parquet file ({_first_line(e)})") from None
    for row, record in enumerate(table.to_pylist()):
        yield f"row {row}", record


# ---------------------------------------------------------------- items


def _items(config: EvalSetConfig, records: Iterator[tuple[str, Any]]) -> tuple[list[str], list[str]]:
    ids, texts, seen = [], [], {}
    for position, (where, record) in enumerate(records):
        item_id, text = _item_of(config, where, record, position)
        if item_id in seen:
            raise EvalSetError(
                f"{where}: id '{item_id}' is also the id of {seen[item_id]} "
                "(ids must be unique; fix `id_field` or null for positions)"
            )
        seen[item_id] = where
        ids.append(item_id)
        texts.append(text)
    return ids, texts


def _item_of(config: EvalSetConfig, where: str, record: dict, position: int = 0) -> tuple[str, str]:
    """(id, text) of one record."""
    parts: list[str] = []
    for path in config.fields:
        value = FieldPath(path).get(record)
        parts += _strings(value, path, where)
    text = " ".join(p for p in parts if p.strip())
    if not text:
        raise EvalSetError(f"{where} has no text in {', '.join(config.fields)} (every item needs one: fix `fields`)")
    if config.id_field is None:
        return str(position), text
    value = FieldPath(config.id_field).get(record)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise EvalSetError(
            f"{where}: id field '{config.id_field}' is missing or not "
            "a string or integer (fix `id_field`, or null for positions)"
        )
    return str(value), text


def _strings(value: Any, path: str, where: str) -> list[str]:
    """The text pieces of a field's value: a string, a number, or a list of them; missing or null: none."""
    if value is None or value is _ABSENT:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v, path, where)]
    kind = "an object" if isinstance(value, dict) else type(value).__name__
    raise EvalSetError(f"{where}: field '{path}' holds {kind}, not text (name a field inside it, e.g. '{path}.text')")
