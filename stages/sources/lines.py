"""The lines of a text file, decompressed as they stream, each under a size bound.

JSON lines dumps come plain, gzipped or zstd-compressed (the codec is told by
magic bytes, not the name) and run to tens of GB, with lines from a few bytes
to a whole book.  Memory stays bounded: the file is read in chunks, and a
line longer than the bound is skipped to its newline without being kept
(:class:`Line` ``data`` is None), so a 2 GB line costs one chunk.

Blank lines (ASCII whitespace only) are skipped at C speed (a regex match of
the run of whitespace, a count of the newlines in it), never one Python step
each: a GiB of them costs a few seconds, as the WARC reader's gaps do.  A
compressed file whose data inflate more than ``max_ratio`` times the compressed
bytes its decoder took, past ``RATIO_FLOOR`` (the WARC reader's bound on a
record's Content-Encoding, :mod:`stages.http_decode`), raises :class:`Bomb`: a
32 KB file of a GiB of blank lines or of ``{}`` records is cut in its first
MiB instead of giving millions of rows.

Damaged compressed data cuts the line it falls in (``Line.cut`` says how) and
never the lines before it.  gzip goes through :class:`stages.gunzip.Gunzip`
(ISA-L, 2.5x zlib here), which resumes at the next intact member; zstd through
Arrow's decoder, which raises on a truncated frame where ``zstandard``'s
stream reader would stop silently (but drops what the failing read had
decoded: that is then read again with ``zstandard``).  An I/O error of the underlying file (S3
giving up) is not damage: it propagates, so the unit fails and is retried.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import pyarrow as pa

from stages.gunzip import Gunzip, GzipError, GzipGap
from stages.http_decode import RATIO_FLOOR

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 << 20  # decompressed bytes per read
#: compressed bytes Arrow's zstd decoder gets a read: what it took is known to within this (the ratio bound)
ZSTD_STEP = 4 << 10
#: raw bytes fetched per read of the file: an S3 file's every read is a request
READ_AHEAD = 8 << 20


def compression_of(head: bytes) -> str | None:
    """``gzip``, ``zstd`` or None (plain), by the first bytes of a file."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


class Damage(Exception):
    """Compressed data that cannot be decoded; ``resumable``: reading goes on after it."""

    def __init__(self, message: str, resumable: bool):
        super().__init__(message)
        self.resumable = resumable


class Bomb(Exception):
    """Compressed data that inflate past the ratio bound: the rest of the file is not read."""


class Watched:
    """A file-like view of ``raw`` that remembers an error its own reads raised, and counts the bytes read.

    Arrow's decoders report damaged data and a failed read of the file alike as
    ``OSError``; this tells them apart.
    """

    def __init__(self, raw, step: int | None = None):
        self.raw = raw
        self.error: BaseException | None = None
        self.closed = False
        self.got = 0  # bytes its reads returned
        self.step = step  # at most this many bytes a read (a decoder then takes no more than it decodes)

    def read(self, n: int = -1) -> bytes:
        if self.step is not None:
            n = self.step if n < 0 else min(n, self.step)
        try:
            data = self.raw.read(n)
        except BaseException as e:
            self.error = e
            raise
        self.got += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def seekable(self) -> bool:
        return self.raw.seekable()

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:  # the caller owns ``raw``
        self.closed = True


def native(raw: BinaryIO) -> pa.NativeFile:
    return raw if isinstance(raw, pa.NativeFile) else pa.PythonFile(raw, mode="r")


class Decompressed:
    """``read(n)``: the decompressed bytes of ``raw`` from its current position; raises :class:`Damage`, and
    :class:`Bomb` once they are more than ``max_ratio`` times the compressed bytes read (past ``RATIO_FLOOR``)."""

    def __init__(self, raw: BinaryIO, max_ratio: float | None = None):
        start = raw.tell()
        self.compression = compression_of(raw.read(4))
        raw.seek(start)
        self.max_ratio = max_ratio
        self.out = 0  # decompressed bytes returned
        self._start = start
        buffered = pa.BufferedInputStream(native(raw), READ_AHEAD)
        if self.compression == "gzip":
            self._gz = Gunzip(buffered, raw_offset=start)
            self._read, self._packed = self._read_gzip, lambda: self._gz.in_pos - start
        elif self.compression == "zstd":
            self._raw, self._out = raw, 0
            self._watched = Watched(buffered, step=ZSTD_STEP)
            self._zst = pa.CompressedInputStream(pa.PythonFile(self._watched, mode="r"), "zstd")
            self._read, self._packed = self._read_zstd, lambda: self._watched.got
        else:
            self._read = buffered.read

    def read(self, n: int) -> bytes:
        data = self._read(n)
        self.out += len(data)
        if self.compression is not None and self.max_ratio and self.out >= RATIO_FLOOR:
            packed = max(self._packed(), 1)  # what the decoder took: a bomb is caught in its first MiB
            if self.out > self.max_ratio * packed:
                raise Bomb(
                    f"{self.compression} data inflate past {self.out:,} bytes from {packed:,} compressed bytes "
                    f"(more than {self.max_ratio:g} times)"
                )
        return data

    def _read_gzip(self, n: int) -> bytes:
        try:
            return self._gz.read1(n)
        except GzipGap as e:
            raise Damage(f"damaged gzip data: {e}", resumable=True) from e
        except (EOFError, GzipError) as e:
            raise Damage(f"gzip data ends damaged: {e}", resumable=False) from e

    def _read_zstd(self, n: int) -> bytes:
        try:
            data = self._zst.read(n)
        except OSError as e:
            if self._watched.error is not None:
                raise self._watched.error from e
            rest = self._salvage(f"zstd data ends damaged: {e}")
            self._read = lambda _n: next(rest, b"")
            return self._read(n)
        self._out += len(data)
        return data

    def _salvage(self, damage: str) -> Iterator[bytes]:
        """What Arrow decoded but dropped before the damage: decode again with ``zstandard``, which
        stops there without an error, skipping what was returned; then the damage."""
        import zstandard

        self._raw.seek(self._start)
        reader = zstandard.ZstdDecompressor().stream_reader(
            pa.BufferedInputStream(native(self._raw), READ_AHEAD), read_across_frames=True
        )
        skip = self._out
        try:
            while data := reader.read(min(CHUNK, skip) if skip else CHUNK):
                if skip:
                    skip -= len(data)
                else:
                    yield data
        except zstandard.ZstdError:
            pass  # the damage: reported below
        raise Damage(damage, resumable=False)


@dataclass(frozen=True, slots=True)
class Line:
    """One line, without its newline.

    ``data`` is None when the line is longer than the bound (``size`` says how
    long); ``cut`` is set when damaged compressed data ended it early.
    """

    number: int  # 1-based
    data: bytes | None
    size: int
    cut: str | None = None


#: A run of whitespace (bytes.strip's set): matched, not searched for what follows it (3x faster on a blank run).
_BLANK = re.compile(rb"\s*")


def iter_lines(
    read: Callable[[int], bytes],
    max_bytes: int,
    on_damage: Callable[[str], None],
    on_blank: Callable[[int], None] | None = None,
) -> Iterator[Line]:
    """The lines of what ``read`` returns that are not blank, each kept only if at most ``max_bytes`` long.

    Blank lines (ASCII whitespace only) are skipped at C speed: ``on_blank`` hears how many, and the
    numbers of the lines after them count them.  ``on_damage`` hears of every :class:`Damage`; the line
    it cut is yielded with ``cut`` set (blank or not), and reading stops at damage that cannot be resumed.
    """
    blank = on_blank or (lambda k: None)
    number = 0
    parts: list[bytes] = []  # the line being read, when it spans chunks
    size = 0  # its length so far
    over = False  # it is longer than max_bytes: its bytes are not kept
    while True:
        try:
            chunk = read(CHUNK)
        except Damage as e:
            on_damage(str(e))
            if size or over:
                number += 1
                yield Line(number, None if over else b"".join(parts), size, cut=str(e))
                parts, size, over = [], 0, False
            if e.resumable:
                continue
            return
        if not chunk:
            break
        pos = 0  # where the next line of the chunk starts
        if size or over:  # the pending line
            end = chunk.find(b"\n")
            piece = chunk if end < 0 else chunk[:end]
            size += len(piece)
            if not over and size > max_bytes:
                over, parts = True, []
            elif not over:
                parts.append(piece)
            if end < 0:
                continue
            number += 1
            data = None if over else b"".join(parts)
            if data is not None and not data.strip():
                blank(1)
            else:
                yield Line(number, data, size)
            parts, size, over = [], 0, False
            pos = end + 1
        while True:
            found = _BLANK.match(chunk, pos).end()  # the first byte that is not whitespace
            if found == len(chunk):  # blank lines to the end, and maybe the blank start of a line
                last = chunk.rfind(b"\n", pos)
                if last >= 0:
                    number += (newlines := chunk.count(b"\n", pos, last + 1))
                    blank(newlines)
                tail = chunk[max(last + 1, pos) :]
                parts, size = ([tail], len(tail)) if tail else ([], 0)
                if size > max_bytes:
                    over, parts = True, []
                break
            start = max(chunk.rfind(b"\n", pos, found) + 1, pos)  # the line's own start
            if start > pos:
                number += (newlines := chunk.count(b"\n", pos, start))
                blank(newlines)
            end = chunk.find(b"\n", found)
            if end < 0:  # the line goes on in the next chunk
                parts, size = [chunk[start:]], len(chunk) - start
                if size > max_bytes:
                    over, parts = True, []
                break
            number += 1
            piece = chunk[start:end]
            yield Line(number, piece if len(piece) <= max_bytes else None, len(piece))
            pos = end + 1
    if size or over:  # a last line without a newline
        number += 1
        data = None if over else b"".join(parts)
        if data is not None and not data.strip():
            blank(1)
        else:
            yield Line(number, data, size)
