"""Sources: what turns an input file into the first Arrow batches of a run.

A source reads one file (a seekable binary stream: a pyarrow NativeFile, local
or S3) into batches of rows; a row it rejects at read time already has
``reason``/``details`` set, so input records = kept + rejected per file.
:func:`sniff` tells by content which source reads a file.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol

import pyarrow as pa

#: Bytes of a file's start that :func:`sniff` wants (a gzip header and the start of its first member).
HEAD_BYTES = 1 << 16
_INFLATED = HEAD_BYTES  # decompressed bytes looked at: a WARC header, or the first line of JSON
PARQUET_MAGIC = b"PAR1"
#: Names of JSON lines files: the tiebreak when the content cannot tell (a first line longer than the head).
JSONL_NAMES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json.gz", ".json.zst", ".json", ".ndjson", ".ndjson.gz")
_COMPRESSIONS = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
_FORMAT_NAMES = {
    "warc": "WARC",
    "arc": "ARC (the pre-2008 archive format)",
    "jsonl": "JSON lines",
    "json": "JSON",
    "parquet": "Parquet",
    "html": "HTML",
    "xml": "XML",
    "text": "plain text",
    "empty": "empty",
    "unknown": "of unknown content",
}
#: (format, compression) pairs each source kind reads.
READABLE = {
    "warc": {("warc", None), ("warc", "gzip")},
    "documents": {("jsonl", None), ("jsonl", "gzip"), ("jsonl", "zstd"), ("parquet", None)},
}


@dataclass(frozen=True)
class Sniffed:
    """What an input's first bytes say it is: its format and the compression around it.

    ``format``: warc, arc, jsonl, json, parquet, html, xml, text, empty or unknown;
    ``compression``: gzip, zstd, bzip2, xz or None.
    """

    format: str
    compression: str | None = None

    @property
    def kind(self) -> str | None:
        """The source kind that reads it (``warc``, ``documents``), or None."""
        return next((k for k, pairs in READABLE.items() if (self.format, self.compression) in pairs), None)

    def describe(self) -> str:
        what = _FORMAT_NAMES[self.format]
        if self.format == "empty":
            return "an empty file" if self.compression is None else f"{self.compression} data holding nothing"
        if self.compression is None:
            article = "an" if what[0] in "AEHIOX" else "a"  # an ARC, an HTML, an XML file
            return f"{article} {what} file" if self.format != "unknown" else "a file of unknown content"
        return f"{self.compression}-compressed {what}"


class NotAnInputError(ValueError):
    """An input file that no source reads (by its content, whatever its name); the message names it."""


def check_input(found: Sniffed, uri: str) -> str:
    """The source kind of a file, or NotAnInputError naming it and saying what it is."""
    if found.kind is None:
        raise NotAnInputError(
            f"input {uri} is not a WARC, JSON lines or Parquet file: it is {found.describe()} "
            "(give WARC files, plain or gzipped; JSON lines, plain, gzip or zstd; or Parquet)"
        )
    return found.kind


class Source(Protocol):
    """What a source kind is (stages/sources/kinds.py ``SOURCES`` holds the classes): it describes itself, names
    the stages only its rows need, counts what it reads and reads an input file into Arrow batches.  The
    README's "Adding a source" lists these members (tests/stages/sources/test_source_contract.py checks both)."""

    name: str  # the kind: "warc", "documents" (READABLE's values)
    label: str  # the funnel's first step, e.g. "documents read from JSON lines / Parquet"
    records_label: str  # what its records are, on the card: "HTTP responses among the WARC records"
    provides: tuple[str, ...]  # columns of its rows
    reasons: tuple[str, ...]  # reasons it can give at read time
    section: str  # its config section: RunConfig.<section>

    @classmethod
    def from_run(cls, config) -> Source:
        """The source as a run's config sets it up (``config.<section>``)."""
        ...

    @staticmethod
    def stages(config) -> list:
        """StageSpecs that only its rows need, before the run's common stages."""
        ...

    @staticmethod
    def new_stats():
        """An empty counter of one file's reading, passed to :meth:`read`."""
        ...

    @staticmethod
    def totals(stats) -> dict:
        """What the run records of a file's reading; ``rows``: records that became rows."""
        ...

    def read(self, stream: BinaryIO, uri: str, stats) -> Iterator[pa.Table]:
        """Rows of ``stream`` (the file at ``uri``); rejected ones
        with ``reason``/``details`` set; counts in ``stats``."""
        ...


class SourceError(ValueError):
    """A file a source cannot read at all (its rows are unknown); the message names it."""


def _inflate(head: bytes, compression: str) -> bytes:
    """The first decompressed bytes of a compressed head (cut anywhere), never more than ``_INFLATED``
    (a bomb stays small); raises on data damaged at its start."""
    import bz2
    import lzma

    if compression == "gzip":
        return zlib.decompressobj(31).decompress(head, _INFLATED)
    if compression == "zstd":
        import zstandard

        # A stream reader stops at the end of its input and never inflates more than asked.
        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(head)).read(_INFLATED)
    if compression == "bzip2":
        return bz2.BZ2Decompressor().decompress(head, _INFLATED)
    return lzma.LZMADecompressor().decompress(head, _INFLATED)


def _content(data: bytes, name: str) -> str:
    data = data.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not data:
        return "empty"
    if data.startswith(b"{"):  # JSON lines: a first line that is one object (pretty-printed JSON is not)
        end = data.find(b"\n")
        if end >= 0:
            return "jsonl" if data[:end].rstrip().endswith(b"}") else "json"
        return "jsonl" if name.lower().endswith(JSONL_NAMES) else "json"
    for prefix, fmt in (
        (b"WARC/", "warc"),
        (b"filedesc://", "arc"),
        (PARQUET_MAGIC, "parquet"),
        (b"[", "json"),
        (b"<?xml", "xml"),
        (b"<", "html"),
    ):
        if data.startswith(prefix):
            return fmt
    sample = data[:512]
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as e:  # a multi-byte character cut at the end of the sample is still text
        text = sample[: e.start].decode("utf-8") if e.start >= len(sample) - 3 else ""
    return "text" if text and all(c.isprintable() or c in "\r\n\t" for c in text) else "unknown"


def sniff(head: bytes, name: str = "") -> Sniffed:
    """What the first bytes of a file (``HEAD_BYTES`` of them, or fewer) say it is.

    Compressed data is decompressed as far as those bytes go and looked at in turn: a ``.jsonl.gz``
    is gzip-compressed JSON lines whatever its name.  ``name`` breaks one tie only: a first JSON line
    that does not end within the head is JSON lines if the name says so.  Damaged compressed data is
    ``unknown``.  (A Parquet file's closing ``PAR1`` is :func:`sniff_stream`'s to check.)
    """
    if not head:
        return Sniffed("empty")
    for magic, compression in _COMPRESSIONS:
        if head.startswith(magic):
            try:
                inner = _inflate(head, compression)
            except Exception:  # damaged at its very start: nothing a reader can use
                return Sniffed("unknown", compression)
            return Sniffed(_content(inner, name) if inner else "empty", compression)
    return Sniffed(_content(head, name))


def _read_up_to(stream: BinaryIO, n: int) -> bytes:
    """``n`` bytes, or fewer at the end (a read may return less than asked)."""
    parts, got = [], 0
    while got < n and (data := stream.read(n - got)):
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def sniff_stream(stream: BinaryIO, name: str) -> Sniffed:
    """:func:`sniff` on a seekable stream, with Parquet's closing ``PAR1`` checked; the position is kept."""
    start = stream.tell()
    try:
        found = sniff(_read_up_to(stream, HEAD_BYTES), name)
        if found.format == "parquet" and found.compression is None:
            end = stream.seek(0, 2)
            stream.seek(max(end - len(PARQUET_MAGIC), start))
            if end - start < 2 * len(PARQUET_MAGIC) or stream.read(len(PARQUET_MAGIC)) != PARQUET_MAGIC:
                return Sniffed("unknown")
        return found
    finally:
        stream.seek(start)
