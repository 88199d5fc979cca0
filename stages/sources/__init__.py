"""Sources: what turns an input file into the first Arrow batches of a run.

A source reads one file (a seekable binary stream: a pyarrow NativeFile, local
or S3) into batches of rows; a row it rejects at read time already has
``reason``/``details`` set, so input records = kept + rejected per file.
:func:`sniff` tells by content which source reads a file.
"""

from __future__ import annotations

import io
import zlib
from typing import BinaryIO, Iterator, Protocol

import pyarrow as pa

from stages.sources.lines import compression_of

#: What :func:`sniff` can answer.
KINDS = ("warc", "jsonl", "parquet")
#: Bytes of a file's start that :func:`sniff` wants (a gzip header and the start of its first member).
HEAD_BYTES = 1 << 16
_INFLATED = HEAD_BYTES  # decompressed bytes looked at: a WARC header, or the first line of JSON
PARQUET_MAGIC = b"PAR1"
#: Names of JSON lines files: the tiebreak when the content cannot tell (a first line longer than the head).
JSONL_NAMES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json.gz", ".json.zst", ".json", ".ndjson", ".ndjson.gz")


class Source(Protocol):
    """Reads an input file into Arrow batches."""

    name: str  # "documents"
    label: str  # the funnel's first step, e.g. "documents read from JSON lines / Parquet"
    provides: tuple[str, ...]  # columns of its rows
    reasons: tuple[str, ...]  # reasons it can give at read time

    def read(self, stream: BinaryIO, uri: str, stats) -> Iterator[pa.Table]:
        """Rows of ``stream`` (the file at ``uri``); rejected ones with ``reason``/``details`` set; counts in ``stats``."""
        ...


class SourceError(ValueError):
    """A file a source cannot read at all (its rows are unknown); the message names it."""


def _inflate(head: bytes, compression: str) -> bytes:
    """The first decompressed bytes of a compressed head (cut anywhere); b"" if it is damaged."""
    try:
        if compression == "gzip":
            return zlib.decompressobj(31).decompress(head, _INFLATED)
        import zstandard

        # A stream reader stops at the end of its input and never inflates more than asked (a bomb stays small).
        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(head)).read(_INFLATED)
    except Exception:
        return b""


def sniff(head: bytes, name: str) -> str | None:
    """``warc``, ``jsonl``, ``parquet`` or None, from a file's first bytes (``HEAD_BYTES`` of them or fewer).

    By content: ``PAR1`` (the tail's ``PAR1`` is :func:`sniff_stream`'s to
    check), or the first decompressed bytes of plain, gzip or zstd data:
    ``WARC/`` (plain or gzip: what the WARC reader reads), or ``{`` opening a
    first line that closes with ``}``.  ``name`` breaks the tie when that first
    line does not end within the head (a long first document): JSON lines only
    if the name says so.  Anything else (an empty file, a PNG, a tar,
    pretty-printed JSON, random bytes) is None.
    """
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    compression = compression_of(head)
    data = _inflate(head, compression) if compression else head
    data = data.removeprefix(b"\xef\xbb\xbf").lstrip()
    if data.startswith(b"WARC/"):
        return "warc" if compression != "zstd" else None
    if data.startswith(b"{"):
        end = data.find(b"\n")
        if end >= 0:
            return "jsonl" if data[:end].rstrip().endswith(b"}") else None
        return "jsonl" if name.lower().endswith(JSONL_NAMES) else None
    return None


def _read_up_to(stream: BinaryIO, n: int) -> bytes:
    """``n`` bytes, or fewer at the end (a read may return less than asked)."""
    parts, got = [], 0
    while got < n and (data := stream.read(n - got)):
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def sniff_stream(stream: BinaryIO, name: str) -> str | None:
    """:func:`sniff` on a seekable stream, with Parquet's closing ``PAR1`` checked; the position is kept."""
    start = stream.tell()
    try:
        kind = sniff(_read_up_to(stream, HEAD_BYTES), name)
        if kind == "parquet":
            end = stream.seek(0, 2)
            stream.seek(max(end - len(PARQUET_MAGIC), start))
            if end - start < 2 * len(PARQUET_MAGIC) or stream.read(len(PARQUET_MAGIC)) != PARQUET_MAGIC:
                return None
        return kind
    finally:
        stream.seek(start)
