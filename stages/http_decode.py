"""The HTTP response inside a WARC ``response`` record: status, headers, body.

Parsing is lenient where servers are sloppy (LF-only lines, a missing blank
line, broken chunking falls back to the bytes as sent) and strict where a lie
would cost the worker: a ``Content-Encoding`` (gzip, deflate, br, zstd) is
inflated in a stream, and stops as soon as the output would exceed the payload
limit (``too_large``) or the output/input ratio says it is a decompression
bomb (``decompression_bomb``), so a 23 KB record that claims 2 GiB costs a few
megabytes, never the 2 GiB.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from isal import isal_zlib

_STATUS_RE = re.compile(rb"HTTP/[0-9.]+[ \t]+([0-9]+)")
_HEADER_END_RE = re.compile(rb"\r?\n\r?\n")
MAX_HEADER_BYTES = 1 << 16
_IN_STEP = 1 << 14  # encoded bytes fed to an inflater at a time
#: the ratio limit applies once the output is this large (tiny pages of spaces compress 50x)
RATIO_FLOOR = 1 << 20


class HttpError(ValueError):
    """The block is not a usable HTTP response (the record is rejected as ``bad_http``)."""


class PayloadRejected(Exception):
    """Decoding the body was stopped; ``reason`` names why."""

    def __init__(self, reason: str, details: str):
        super().__init__(details)
        self.reason, self.details = reason, details


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    def mime_and_charset(self) -> tuple[str, str | None]:
        """``text/html; charset=utf-8`` -> (``text/html``, ``utf-8``)."""
        mime, _, params = self.content_type.partition(";")
        charset = None
        for param in params.split(";"):
            name, _, value = param.partition("=")
            if name.strip().lower() == "charset":
                charset = value.strip().strip("\"'") or None
        return mime.strip().lower(), charset


def parse_response(block: bytes) -> HttpResponse:
    """Status line, headers and body of an HTTP response block."""
    m = _STATUS_RE.match(block)
    if m is None:
        raise HttpError(f"no HTTP status line ({block[:40]!r})")
    digits = m.group(1)
    if len(digits) != 3 or digits < b"100":  # RFC 9110: three digits, 1xx to 5xx (the column is int16)
        raise HttpError(f"HTTP status {digits[:12].decode()} is not a status code")
    end = _HEADER_END_RE.search(block, 0, MAX_HEADER_BYTES + 4)
    if end is None:
        if len(block) > MAX_HEADER_BYTES:
            raise HttpError(f"no end of the HTTP headers in the first {MAX_HEADER_BYTES} bytes")
        head, body = block, b""
    else:
        head, body = block[: end.start()], block[end.end() :]
    headers: dict[str, str] = {}
    for line in head.decode("latin-1").split("\n")[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            continue
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return HttpResponse(int(digits), headers, body)


def decoded_body(resp: HttpResponse, max_bytes: int, max_ratio: float) -> bytes:
    """The body without its transfer and content encodings, within ``max_bytes``.

    Raises :class:`PayloadRejected` (``too_large``, ``decompression_bomb``,
    ``bad_encoding``).  An unknown content coding is left as sent (the charset
    stage judges the bytes); a stream that is cut short gives what it holds,
    as a browser shows a truncated page.
    """
    body = resp.body
    if "chunked" in resp.headers.get("transfer-encoding", "").lower():
        body = dechunk(body)
    codings = [c.strip().lower() for c in resp.headers.get("content-encoding", "").split(",")]
    for coding in reversed([c for c in codings if c and c != "identity"]):
        inflate = _DECODERS.get(coding)
        if inflate is None:
            continue  # e.g. "utf-8", "none", "text": servers that misuse the header
        body = inflate(body, max_bytes, max_ratio)
    if len(body) > max_bytes:
        raise PayloadRejected("too_large", f"decoded payload of {len(body)} bytes > max_payload_bytes {max_bytes}")
    return body


def dechunk(body: bytes) -> bytes:
    """Undo ``Transfer-Encoding: chunked``; bytes as sent if the first chunk size is not one."""
    out, pos = [], 0
    while True:
        eol = body.find(b"\n", pos)
        if eol < 0:
            break
        size_field = body[pos:eol].split(b";", 1)[0].strip()
        try:
            size = int(size_field, 16)
        except ValueError:
            if not out:
                return body
            break
        if size == 0:
            break
        start = eol + 1
        out.append(body[start : start + size])
        pos = start + size
        if body[pos : pos + 2] == b"\r\n":
            pos += 2
        elif body[pos : pos + 1] == b"\n":
            pos += 1
    return b"".join(out)


class _Budget:
    """Output so far against the size and ratio limits."""

    def __init__(self, coding: str, max_bytes: int, max_ratio: float):
        self.coding, self.max_bytes, self.max_ratio = coding, max_bytes, max_ratio
        self.out = 0

    def room(self) -> int:
        return self.max_bytes + 1 - self.out

    def add(self, n_out: int, n_in: int) -> None:
        self.out += n_out
        ratio = self.out / max(n_in, 1)
        if self.out > self.max_bytes or (self.out > RATIO_FLOOR and ratio > self.max_ratio):
            if ratio > self.max_ratio:
                raise PayloadRejected(
                    "decompression_bomb",
                    f"Content-Encoding {self.coding}: {n_in} bytes inflate "
                    f"past {self.out} bytes (ratio > {self.max_ratio:g})",
                )
            raise PayloadRejected(
                "too_large", f"Content-Encoding {self.coding}: decoded payload > max_payload_bytes {self.max_bytes}"
            )


def _zlib(data: bytes, wbits: int, coding: str, max_bytes: int, max_ratio: float) -> bytes:
    budget = _Budget(coding, max_bytes, max_ratio)
    out: list[bytes] = []
    fed = 0
    d = isal_zlib.decompressobj(wbits)
    pending = b""
    try:
        while True:
            if not pending:
                if fed >= len(data):
                    break
                pending = data[fed : fed + _IN_STEP]
                fed += len(pending)
            chunk = d.decompress(pending, budget.room())
            pending = d.unconsumed_tail
            budget.add(len(chunk), fed - len(pending))
            out.append(chunk)
            if d.eof:
                rest = d.unused_data + data[fed:]
                if wbits == 31 and rest.startswith(b"\x1f\x8b"):  # another gzip member
                    d, pending, data, fed = isal_zlib.decompressobj(wbits), b"", rest, 0
                    continue
                break
        if not d.eof:  # cut short: what inflate still holds
            out.append(d.flush())
    except isal_zlib.error as e:
        if not out or not any(out):
            raise PayloadRejected("bad_encoding", f"Content-Encoding {coding}: {e}") from None
        # Damage after some output: keep what decoded (the page is cut there).
    return b"".join(out)


def _gzip(data: bytes, max_bytes: int, max_ratio: float) -> bytes:
    return _zlib(data, 31, "gzip", max_bytes, max_ratio)


def _deflate(data: bytes, max_bytes: int, max_ratio: float) -> bytes:
    # RFC 9110 says zlib-wrapped; many servers send raw deflate.
    wrapped = len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] * 256 + data[1]) % 31 == 0
    return _zlib(data, 15 if wrapped else -15, "deflate", max_bytes, max_ratio)


def _brotli(data: bytes, max_bytes: int, max_ratio: float) -> bytes:
    import brotli

    budget = _Budget("br", max_bytes, max_ratio)
    d = brotli.Decompressor()
    out: list[bytes] = []
    fed = 0
    try:
        while not d.is_finished():
            if d.can_accept_more_data():
                if fed >= len(data):
                    break
                piece = data[fed : fed + _IN_STEP]
                fed += len(piece)
            else:
                piece = b""
            chunk = d.process(piece, output_buffer_limit=min(budget.room(), 1 << 20))
            if not chunk and not piece and not d.can_accept_more_data():
                break  # no progress possible (never seen; a guard against a busy loop)
            budget.add(len(chunk), fed)
            out.append(chunk)
    except brotli.error as e:
        if not any(out):
            raise PayloadRejected("bad_encoding", f"Content-Encoding br: {e}") from None
    return b"".join(out)


def _zstd(data: bytes, max_bytes: int, max_ratio: float) -> bytes:
    import zstandard

    budget = _Budget("zstd", max_bytes, max_ratio)
    out: list[bytes] = []
    source = io.BytesIO(data)
    # The window a frame asks for is memory: 8 MiB is zstd's own default for levels 1-19.
    reader = zstandard.ZstdDecompressor(max_window_size=1 << 23).stream_reader(source, read_size=_IN_STEP)
    try:
        while True:
            chunk = reader.read(min(budget.room(), 1 << 20))
            if not chunk:
                break
            budget.add(len(chunk), source.tell())
            out.append(chunk)
    except zstandard.ZstdError as e:
        if not any(out):
            raise PayloadRejected("bad_encoding", f"Content-Encoding zstd: {e}") from None
    return b"".join(out)


_DECODERS = {"gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate, "br": _brotli, "zstd": _zstd}
