"""The decompressed bytes of a WARC file, with absolute offsets.

What the record framer (:mod:`stages.warc_frame`) needs from a file, whatever
its compression: peek and read at the current offset, put bytes back, skip
(a seek when the file is plain), move back to an earlier offset (cheap: from
the nearest gzip member start), find the next ``WARC/1.x`` line, and say what
damage it met.  Damaged gzip data is a *gap*: reads return nothing until
:meth:`Stream.resume`, so the record it cut ends there and the framer goes on
with the member after it.  A gzip file that is cut short is a terminal
``error``.
"""

from __future__ import annotations

import re
from collections import deque
from typing import BinaryIO

from stages.gunzip import Gunzip, GzipError, GzipGap

_CHUNK = 1 << 16
_FIND_CARRY = 32  # bytes kept between scanned chunks, so a match may straddle them
RECORD_MAGIC = b"WARC/1."


class Stream:
    """Decompressed bytes of ``raw`` (gzip or plain) at absolute offsets."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._seekable = _can_seek(raw)
        self._raw_start = raw.tell() if self._seekable else 0
        head = raw.read(2)
        self.gzipped = head == b"\x1f\x8b"
        if self._seekable:
            raw.seek(self._raw_start)
        else:
            self._raw = _Prefixed(raw, head)
        #: total decompressed length, once known (plain seekable files: at once)
        self.length: int | None = self._plain_length() if not self.gzipped else None
        self.gap: GzipGap | None = None  # damage skipped; reads return b"" until resume()
        self.error: str | None = None  # terminal: nothing more can be read
        self._member_starts: deque[int] = deque()  # offsets of gzip members read ahead (in or after the buffer)
        self._open_at(0, self._raw_start)

    # ------------------------------------------------------------------ setup

    def _plain_length(self) -> int | None:
        if not self._seekable:
            return None
        end = self._raw.seek(0, 2)
        self._raw.seek(self._raw_start)
        return end - self._raw_start

    def _open_at(self, out_offset: int, raw_offset: int) -> None:
        """Restart decompression at a member start (or a plain offset)."""
        self._buf, self._off, self._base = b"", 0, out_offset
        if self.gzipped:
            shared = getattr(self, "_gz", None)
            self._gz = Gunzip(
                self._raw,
                raw_offset - self._raw_start,
                out_offset,
                resync_prefix=RECORD_MAGIC,
                checkpoints=shared.checkpoints if shared is not None else None,
            )
        self._inner_pos = out_offset

    @property
    def pos(self) -> int:
        """Absolute offset of the next byte to be read."""
        return self._base + self._off

    # ------------------------------------------------------------------ raw access

    def _inner_read(self, n: int) -> bytes:
        """Up to ``n`` new bytes from the source (one gzip member at most); b"" at a gap or the end."""
        if self.gap is not None or self.error is not None:
            return b""
        if not self.gzipped:
            data = self._raw.read(n)
            self._inner_pos += len(data)
            if not data and self.length is None:
                self.length = self._inner_pos
            return data
        try:
            data = self._gz.read1(n)
        except GzipGap as gap:
            self.gap = gap
            return b""
        except (EOFError, GzipError) as e:
            self.error = str(e)
            return b""
        if data and self._gz.member_start:
            starts = self._member_starts
            while starts and starts[0] < self._base:  # behind the buffer: never looked at again
                starts.popleft()
            if not starts or starts[-1] < self._inner_pos:
                starts.append(self._inner_pos)
        self._inner_pos += len(data)
        if not data:
            self.length = self._inner_pos
        return data

    def _fill(self, n: int) -> bool:
        """Have at least ``n`` unread bytes buffered if the source has them; False if it had none."""
        while len(self._buf) - self._off < n:
            data = self._inner_read(max(_CHUNK, n - (len(self._buf) - self._off)))
            if not data:
                return False
            self._base += self._off
            self._buf, self._off = self._buf[self._off :] + data, 0
        return True

    # ------------------------------------------------------------------ reading

    def peek(self, n: int) -> bytes:
        """Up to ``n`` bytes at the current offset, not consumed."""
        self._fill(n)
        return self._buf[self._off : self._off + n]

    def match_ahead(self, pattern: re.Pattern, limit: int, skip: int = 0) -> tuple[re.Match | None, int]:
        """Search the next ``limit`` bytes (from ``skip`` bytes on) without consuming them: (the
        match, in ``buffer()`` coordinates, or None; how many bytes there were)."""
        self._fill(limit)
        end = min(len(self._buf), self._off + limit)
        return pattern.search(self._buf, self._off + min(skip, end - self._off), end), end - self._off

    def buffer(self) -> tuple[bytes, int]:
        """The read-ahead buffer and where the current offset is in it (for ``match_ahead``)."""
        return self._buf, self._off

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end or a gap)."""
        avail = len(self._buf) - self._off
        if n <= avail:
            out = self._buf[self._off : self._off + n]
            self._off += n
            return out
        parts = [self._buf[self._off :]]
        got = avail
        self._base += len(self._buf)
        self._buf, self._off = b"", 0
        while got < n:
            data = self._inner_read(n - got)
            if not data:
                break
            parts.append(data)
            got += len(data)
            self._base += len(data)
        return b"".join(parts)

    def unread(self, data: bytes) -> None:
        """Put bytes just read back in front of the current offset."""
        if not data:
            return
        self._base += self._off - len(data)
        self._buf, self._off = data + self._buf[self._off :], 0

    def skip(self, n: int, stop_at_record_member: bool = True) -> tuple[int, bool]:
        """Consume up to ``n`` bytes: (bytes skipped, stopped early at a gzip member that starts a record).

        A plain file is seeked.  In a gzip file, a member that starts inside
        the skipped bytes with ``WARC/1.`` is where a record starts (Common
        Crawl and warcio write one record per member): a Content-Length that
        reaches past it is wrong, and the skip stops there.
        """
        avail = len(self._buf) - self._off
        if stop_at_record_member and self.gzipped:
            start, end = self.pos, self.pos + min(n, avail)
            for m in self._member_starts:  # members already read ahead into the buffer
                if start < m < end and self._buf.startswith(RECORD_MAGIC, m - self._base):
                    self._off = m - self._base
                    return m - start, True
        if n <= avail:
            self._off += n
            return n, False
        skipped = avail
        self._base += len(self._buf)
        self._buf, self._off = b"", 0
        if not self.gzipped and self._seekable:
            step = min(n - skipped, max(self.length - self._inner_pos, 0))
            self._raw.seek(step, 1)
            self._inner_pos += step
            self._base += step
            return skipped + step, False
        while skipped < n:
            data = self._inner_read(min(n - skipped, 1 << 20))
            if not data:
                break
            if stop_at_record_member and self.gzipped and self._gz.member_start and data.startswith(RECORD_MAGIC):
                self._buf = data
                return skipped, True
            skipped += len(data)
            self._base += len(data)
        return skipped, False

    def find(self, pattern: re.Pattern, keep: int = 0) -> tuple[int | None, bytes]:
        """Move to the next match of ``pattern``: (its offset or
        None at the end, the first ``keep`` bytes passed over)."""
        kept = []
        kept_len = 0
        while True:
            m = pattern.search(self._buf, self._off)
            if m is not None:
                end = m.start()
            else:
                end = max(len(self._buf) - _FIND_CARRY, self._off)
            if kept_len < keep:
                piece = self._buf[self._off : min(end, self._off + keep - kept_len)]
                kept.append(piece)
                kept_len += len(piece)
            self._off = end
            if m is not None:
                return self.pos, b"".join(kept)
            data = self._inner_read(_CHUNK)
            if not data:  # the end (or a gap): what is left cannot hold a match
                if kept_len < keep:
                    kept.append(self._buf[self._off : self._off + keep - kept_len])
                self._base += len(self._buf)
                self._buf, self._off = b"", 0
                return None, b"".join(kept)
            self._base += self._off
            self._buf, self._off = self._buf[self._off :] + data, 0

    # ------------------------------------------------------------------ moving back

    def move_to(self, target: int) -> None:
        """Go to absolute offset ``target`` (back to an earlier one too)."""
        if target >= self._base and target <= self._base + len(self._buf):
            self._off = target - self._base
            return
        if target > self.pos:
            self.skip(target - self.pos, stop_at_record_member=False)
            return
        # Backwards beyond the buffer: restart at the nearest member start (or seek a plain file).
        if not self._seekable:
            raise OSError("cannot move back in a stream that is not seekable")
        self.gap = self.error = None
        if self.gzipped:
            out_off, raw_off = max((c for c in self._gz.checkpoints if c[0] <= target), default=(0, 0))
            self._raw.seek(self._raw_start + raw_off)
            self._open_at(out_off, self._raw_start + raw_off)
            self.skip(target - out_off, stop_at_record_member=False)
        else:
            self._raw.seek(self._raw_start + target)
            self._open_at(target, self._raw_start + target)

    # ------------------------------------------------------------------ damage

    def resume(self) -> GzipGap | None:
        """Go on after a gap: the next read starts at the member after the damage."""
        gap, self.gap = self.gap, None
        return gap


class _Prefixed:
    """A stream that cannot seek, with its first, already-read bytes put back."""

    def __init__(self, raw: BinaryIO, head: bytes):
        self.raw, self.head = raw, head

    def seekable(self) -> bool:
        return False

    def read(self, n: int = -1) -> bytes:
        head, self.head = self.head, b""
        if n is not None and 0 <= n <= len(head):
            self.head = head[n:]
            return head[:n]
        return head + self.raw.read(-1 if n is None or n < 0 else n - len(head))


def _can_seek(raw) -> bool:
    try:
        return bool(raw.seekable())
    except Exception:
        return False
