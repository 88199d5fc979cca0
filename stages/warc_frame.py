"""Split a WARC byte stream into records, whatever the damage.

A record is a ``WARC/1.x`` header block, a blank line, ``Content-Length``
bytes of block, and ``\\r\\n\\r\\n``.  This framer trusts none of it: a
Content-Length is checked against where the next record really starts, so a
record whose length is wrong (too short, too long, past the end of the file,
past its gzip member) costs only itself; garbage between records is skipped to
the next ``WARC/1.x`` line (with or without a newline before it); damaged gzip
data cuts the record it hits and reading goes on at the next member.  Every
such problem is reported through ``problem(message)`` and counted by the
caller as a malformed record.

Blocks are read into memory only when the caller wants them (``keep``: a
response within the payload limit, or a small record); larger ones are
skipped, which for a plain file is a seek.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from stages.warc_stream import RECORD_MAGIC, Stream

#: a record's first line; a resync candidate anywhere (no newline needed before it)
HEADER_RE = re.compile(rb"WARC/1\.[01]\r?\n")
_HEADER_END_RE = re.compile(rb"\r?\n\r?\n")
MAX_HEADER_BYTES = 1 << 16  # a WARC header block longer than this is garbage
SMALL_BLOCK = 1 << 16  # blocks up to this size are read (cheaper to check than to skip)
_SEPARATORS = b"\r\n\t "
_SEPARATOR_BYTES = (b"\r", b"\n", b"\t", b" ")


@dataclass
class RawRecord:
    """One record as framed: its header fields and, if kept, its block."""

    offset: int
    fields: dict[str, str]  # lower-case names; the first of repeated fields
    declared: int  # Content-Length
    block: bytes | None  # None when skipped
    cut: str | None = None  # why the block is incomplete (damage or the end of the input)


class Framer:
    """Iterate the records of a :class:`Stream`.

    ``keep(fields, declared)`` says whether to read a block into memory;
    ``problem(message)`` receives one message per malformed stretch.
    """

    def __init__(self, stream: Stream, keep: Callable[[dict, int], bool], problem: Callable[[str], None]):
        self.stream = stream
        self.keep = keep
        self.problem = problem
        # No header end before this offset (a failed search): the next candidate does not search
        # those bytes again, or 'WARC/1.0' lines without a blank one would cost 64 KB each.
        self._no_header_end_before = 0

    def __iter__(self) -> Iterator[RawRecord]:
        s = self.stream
        last = -1
        while True:
            self._skip_separators()
            head = s.peek(len(RECORD_MAGIC))
            if not head:
                if s.gap is not None:
                    self.problem(str(s.resume()))
                    continue
                if s.error is not None:
                    self.problem(f"input ends early ({s.error}); every record before it was read")
                return
            if head != RECORD_MAGIC:
                start = s.pos
                found, _ = s.find(HEADER_RE)
                where = f"resynced at offset {found}" if found is not None else "no record after it"
                self.problem(
                    f"{(found if found is not None else s.pos) - start} bytes "
                    f"that are not a WARC record at offset {start}; {where}"
                )
                continue
            if s.pos <= last:  # every step moves forward; a bug must not become an endless loop
                raise RuntimeError(f"WARC framer went back from offset {last} to {s.pos}")
            last = s.pos
            rec = self._header()
            if rec is not None:
                yield rec if rec.cut is not None else self._block(rec)

    def _skip_separators(self) -> None:
        s = self.stream
        while s.peek(1) in _SEPARATOR_BYTES:  # rarely true: the record end was consumed with its block
            head = s.peek(1 << 16)
            s.read(len(head) - len(head.lstrip(_SEPARATORS)))

    def _header(self) -> RawRecord | None:
        """Parse the header block at the current offset; on failure report it and move past its first byte."""
        s = self.stream
        offset = s.pos
        want = 4096
        skip = max(self._no_header_end_before - 3 - offset, 0)  # a terminator may straddle the mark
        m, avail = s.match_ahead(_HEADER_END_RE, want, skip) if skip < want else (None, want)
        if m is None and avail == want:
            want = MAX_HEADER_BYTES
            m, avail = s.match_ahead(_HEADER_END_RE, want, skip)
        if m is None:
            self._no_header_end_before = offset + avail
        if m is None and avail < want:
            # The data ends inside the header: a record cut there (a response still gets its row).
            head = s.read(avail)
            fields = _parse_fields(head)
            length = fields.get("content-length", "").strip()
            declared = int(length) if length.isascii() and length.isdigit() else 0
            why = "damaged compressed data" if s.gap is not None else "the input ends inside the WARC header"
            if s.gap is None and s.error is None:
                self.problem(f"record at offset {offset}: {why}")
            return RawRecord(offset, fields, declared, None, cut=why)
        if m is None:
            return self._bad_header(offset, "no end of the WARC header")
        buf, off = s.buffer()
        if not HEADER_RE.match(buf, off):
            return self._bad_header(offset, "the first line is not WARC/1.0 or WARC/1.1")
        fields = _parse_fields(buf[off : m.start()])
        length = fields.get("content-length", "").strip()
        if not length.isascii() or not length.isdigit():
            return self._bad_header(
                offset, f"Content-Length {length[:40]!r} is not a number" if length else "no Content-Length"
            )
        s.read(m.end() - off)
        return RawRecord(offset, fields, int(length), None)

    def _bad_header(self, offset: int, why: str) -> None:
        s = self.stream
        s.read(1)
        found, _ = s.find(HEADER_RE)
        where = f"resynced at offset {found}" if found is not None else "no record after it"
        self.problem(f"bad WARC header at offset {offset} ({why}); {where}")
        return None

    def _block(self, rec: RawRecord) -> RawRecord:
        s = self.stream
        n = rec.declared
        start = s.pos
        if self.keep(rec.fields, n):
            rec.block = s.read(n)
            if len(rec.block) < n:
                if s.gap is not None or s.error is not None:
                    return self._cut(rec)
                # The input ended: the next record, if any, is in what was read.
                m = HEADER_RE.search(rec.block)
                if m is None:
                    return self._cut(rec, f"Content-Length {n} runs past the end of the input, and no record follows")
                s.unread(rec.block[m.start() :])
                rec.block = _strip_end(rec.block[: m.start()])
                return self._misframed(rec, "runs past the end of the input")
            if self._clean_end():
                return rec
            m = HEADER_RE.search(rec.block)
            if m is not None:  # too long: the next record starts inside what was read
                s.unread(rec.block[m.start() :])
                rec.block = _strip_end(rec.block[: m.start()])
                return self._misframed(rec, "is too long")
            # Too short: the block goes on up to the next record.
            at, rest = s.find(HEADER_RE, keep=max(n, SMALL_BLOCK) + 1)
            if len(rest) <= max(n, SMALL_BLOCK):
                rec.block = _strip_end(rec.block + rest)
            return self._misframed(rec, "is too short", at)
        if s.length is not None and start + n > s.length and s.gap is None:
            return self._misframed(rec, "runs past the end of the input", s.find(HEADER_RE)[0])
        skipped, at_member = s.skip(n)
        if at_member:
            return self._misframed(rec, "runs into the next gzip member", s.pos)
        if skipped < n:
            if s.gap is not None or s.error is not None:
                return self._cut(rec)
            what = "runs past the end of the input"
        elif self._clean_end():
            return rec
        else:
            what = "does not end the record"
        s.move_to(start)  # the next record starts somewhere in what was skipped
        return self._misframed(rec, what, s.find(HEADER_RE)[0])

    def _cut(self, rec: RawRecord, why: str | None = None) -> RawRecord:
        s = self.stream
        if why is not None:
            self.problem(f"record at offset {rec.offset}: {why}")
        rec.cut = why or ("damaged compressed data" if s.gap is not None else "the input ends inside this record")
        return rec

    def _misframed(self, rec: RawRecord, what: str, at: int | None = -1) -> RawRecord:
        """Report a Content-Length that does not match where the next record starts."""
        at = self.stream.pos if at == -1 else at
        where = f"the next record starts at offset {at}" if at is not None else "no record follows"
        self.problem(f"record at offset {rec.offset}: Content-Length {rec.declared} {what}; {where}")
        return rec

    def _clean_end(self) -> bool:
        """After a block: ``\\r\\n\\r\\n`` (or a shorter newline run before the next record, the end or damage)."""
        s = self.stream
        tail = s.peek(4 + len(RECORD_MAGIC))
        if tail.startswith(b"\r\n\r\n"):
            s.read(4)
            return True
        rest = tail.lstrip(b"\r\n")
        if not rest or rest.startswith(RECORD_MAGIC):
            s.read(len(tail) - len(rest))
            return True
        return False


def _strip_end(block: bytes) -> bytes:
    """A block without the record separator that ended it."""
    if block.endswith(b"\r\n\r\n"):
        return block[:-4]
    return block.rstrip(b"\r\n") if block.endswith(b"\n") else block


def _parse_fields(header: bytes) -> dict[str, str]:
    """WARC header lines -> {lower-case name: value}; the first of repeated names wins."""
    fields: dict[str, str] = {}
    last = None
    for line in header.decode("utf-8", "replace").split("\n")[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            if last is not None and line[:1] in (" ", "\t"):  # a folded continuation line
                fields[last] += " " + line.strip()
            continue
        if line[:1] in (" ", "\t"):
            if last is not None:
                fields[last] += " " + line.strip()
            continue
        key = name.strip().lower()
        if key not in fields:
            fields[key] = value.strip()
            last = key
        else:
            last = None
    return fields
