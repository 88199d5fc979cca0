"""The lines of a text file, decompressed as they stream, each under a size bound.

JSON lines dumps come plain, gzipped or zstd-compressed (the codec is told by
magic bytes, not the name) and run to tens of GB, with lines from a few bytes
to a whole book.  Memory stays bounded: the file is read in chunks, and a
line longer than the bound is skipped to its newline without being kept
(:class:`Line` ``data`` is None), so a 2 GB line costs one chunk.

Damaged compressed data cuts the line it falls in (``Line.cut`` says how) and
never the lines before it.  gzip goes through :class:`stages.gunzip.Gunzip`
(ISA-L, 2.5x zlib here), which resumes at the next intact member; zstd through
Arrow's decoder, which raises on a truncated frame where ``zstandard``'s
stream reader would stop silently (but drops what the failing read had
decoded: that is then read again with ``zstandard``).  An I/O error of the underlying file (S3
giving up) is not damage: it propagates, so the unit fails and is retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator

import pyarrow as pa

from stages.gunzip import Gunzip, GzipError, GzipGap

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 1 << 20  # decompressed bytes per read
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


class Watched:
    """A file-like view of ``raw`` that remembers an error its own reads raised.

    Arrow's decoders report damaged data and a failed read of the file alike as
    ``OSError``; this tells them apart.
    """

    def __init__(self, raw):
        self.raw = raw
        self.error: BaseException | None = None
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        try:
            return self.raw.read(n)
        except BaseException as e:
            self.error = e
            raise

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
    """``read(n)``: the decompressed bytes of ``raw`` from its current position; raises :class:`Damage`."""

    def __init__(self, raw: BinaryIO):
        start = raw.tell()
        self.compression = compression_of(raw.read(4))
        raw.seek(start)
        buffered = pa.BufferedInputStream(native(raw), READ_AHEAD)
        if self.compression == "gzip":
            self._gz = Gunzip(buffered, raw_offset=start)
            self._read = self._read_gzip
        elif self.compression == "zstd":
            self._raw, self._start, self._out = raw, start, 0
            self._watched = Watched(buffered)
            self._zst = pa.CompressedInputStream(pa.PythonFile(self._watched, mode="r"), "zstd")
            self._read = self._read_zstd
        else:
            self._read = buffered.read

    def read(self, n: int) -> bytes:
        return self._read(n)

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
        reader = zstandard.ZstdDecompressor().stream_reader(pa.BufferedInputStream(native(self._raw), READ_AHEAD), read_across_frames=True)
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


def iter_lines(read: Callable[[int], bytes], max_bytes: int, on_damage: Callable[[str], None]) -> Iterator[Line]:
    """Lines of what ``read`` returns, each kept only if at most ``max_bytes`` long.

    ``on_damage`` hears of every :class:`Damage`; the line it cut is yielded
    with ``cut`` set, and reading stops at damage that cannot be resumed.
    """
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
        pieces = chunk.split(b"\n")
        tail = pieces.pop()  # after the last newline: the start of a line
        if pieces and (size or over):  # the pending line ends in this chunk
            first = pieces[0]
            size += len(first)
            over = over or size > max_bytes
            number += 1
            yield Line(number, None if over else b"".join(parts) + first, size)
            parts, size, over = [], 0, False
            pieces = pieces[1:]
        for piece in pieces:
            number += 1
            yield Line(number, piece if len(piece) <= max_bytes else None, len(piece))
        if tail:
            size += len(tail)
            if not over and size > max_bytes:
                over, parts = True, []
            elif not over:
                parts.append(tail)
    if size or over:  # a last line without a newline
        number += 1
        yield Line(number, None if over else b"".join(parts), size)
