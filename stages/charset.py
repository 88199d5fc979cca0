"""Decode HTTP payloads to text: HTTP header, then ``<meta>``, then detection.

Detection is uchardet (via resiliparse), then charset-normalizer when
uchardet's answer does not decode.
A declared charset is trusted only if the bytes decode under it strictly; a
wrong declaration falls through to the next source, so a mislabelled page is
still read correctly, and bytes that are valid UTF-8 (and not plain ASCII) are
read as UTF-8 whatever the page declares (a legacy declaration over UTF-8 bytes
is what makes mojibake).  Labels are mapped the way browsers do (WHATWG: e.g.
``iso-8859-1`` means windows-1252), and only the encodings of the web are ever
used: a label Python knows but browsers do not (``undefined``, ``utf-7``,
``unicode_escape``, ``rot13``...) is unknown, so no record can make a codec
raise or yield text Arrow refuses.  UTF-16 is recognised by its BOM or by where
its NUL bytes are.  Nothing here raises on bad bytes: binary payloads and text
that only decodes into replacement characters are rejected with their own
reasons.
"""

from __future__ import annotations

import codecs
import re

import charset_normalizer
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field
from resiliparse.parse.encoding import detect_encoding, map_encoding_to_html5

from stages.base import reject_where, set_column

_META_RE = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_:.\-]+)""", re.IGNORECASE)


class CharsetConfig(BaseModel):
    """Parameters of payload decoding."""

    model_config = ConfigDict(extra="forbid")

    meta_scan_bytes: int = Field(
        4096, ge=256, le=1 << 20, description="how far into the page to look for <meta charset>"
    )
    max_control_fraction: float = Field(
        0.05, ge=0, le=1, description="pages whose first 4 KB have more C0 control bytes (not tab/CR/LF) are binary"
    )
    max_replacement_fraction: float = Field(
        0.02, ge=0, le=1, description="pages that only decode with more U+FFFD than this are undecodable"
    )


#: Python codecs that decode the WHATWG encodings (and the supersets detectors
#: name, e.g. cp949 for euc-kr): the only ones ever used.
WEB_CODECS = frozenset(
    ["utf-8", "utf-16-le", "utf-16-be", "cp866", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "cp874", "ascii"]
    + [f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 14, 15, 16)]
    + [f"cp{n}" for n in range(1250, 1259)]
    + [
        "gbk",
        "gb2312",
        "gb18030",
        "big5",
        "big5hkscs",
        "euc_jp",
        "iso2022_jp",
        "shift_jis",
        "cp932",
        "euc_kr",
        "cp949",
    ]
)


def _label(name: str | bytes | None) -> str | None:
    """The Python codec of a web encoding label (WHATWG-mapped), or None for any other label."""
    if not name:
        return None
    if isinstance(name, bytes):
        name = name.decode("ascii", "ignore")
    name = name.strip().strip("\"'").lower()
    if not name or len(name) > 64 or not name.isprintable():
        return None
    web = map_encoding_to_html5(name, fallback_utf8=False)
    if web is None:  # not a WHATWG label: a detector's Python name (cp949, mac_cyrillic)?
        try:
            web = map_encoding_to_html5(codecs.lookup(name).name, fallback_utf8=False) or codecs.lookup(name).name
        except (LookupError, ValueError):
            return None
    try:
        web = codecs.lookup(web).name
    except (LookupError, ValueError):
        return None
    return web if web in WEB_CODECS else None


_LATIN1_TEXT = bytes(range(0x20, 0x7F)) + bytes(range(0xA0, 0x100)) + b"\t\n\r"  # U+0000-U+00FF that are text


def utf16_variant(head: bytes) -> str | None:
    """``utf-16-le``/``-be`` if ``head`` is UTF-16 HTML: a BOM, or NULs in every other
    byte (ASCII markup in UTF-16 has them; 5% is a CJK page with little markup) next to
    printable Latin-1, with a ``<`` among it (16-bit binary data has the NULs, not that)."""
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le"
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be"
    pairs = len(head) // 2
    if pairs < 16:
        return None
    even, odd = head[0 : 2 * pairs : 2].count(0), head[1 : 2 * pairs : 2].count(0)
    if odd >= 0.05 * pairs and even <= 0.02 * pairs:
        variant, low, high = "utf-16-le", head[0 : 2 * pairs : 2], head[1 : 2 * pairs : 2]
    elif even >= 0.05 * pairs and odd <= 0.02 * pairs:
        variant, low, high = "utf-16-be", head[1 : 2 * pairs : 2], head[0 : 2 * pairs : 2]
    else:
        return None
    latin1 = bytes(lo for lo, hi in zip(low, high, strict=False) if hi == 0)
    not_text = len(latin1.translate(None, _LATIN1_TEXT))
    return variant if b"<" in latin1 and not_text <= 0.05 * len(latin1) else None


_CONTROL_BYTES = bytes(c for c in range(32) if c not in (9, 10, 12, 13))


def _control_fraction(head: bytes) -> float:
    if not head:
        return 0.0
    return (len(head) - len(head.translate(None, _CONTROL_BYTES))) / len(head)


class Decoder:
    """Decode one payload; returns (text | None, charset, source)."""

    def __init__(self, config: CharsetConfig | None = None):
        self.config = config or CharsetConfig()

    def declared(self, payload: bytes, http_charset: str | None) -> tuple[str | None, str]:
        """The first known charset the page declares (HTTP header, then <meta>)."""
        for charset, source in self._declarations(payload, http_charset):
            if charset is not None:
                return charset, source
        return None, "none"

    def _declarations(self, payload: bytes, http_charset: str | None):
        yield _label(http_charset), "http"
        m = _META_RE.search(payload[: self.config.meta_scan_bytes])
        yield (_label(m.group(1)) if m else None), "meta"

    def candidates(self, payload: bytes, http_charset: str | None):
        yield from self._declarations(payload, http_charset)
        yield _label(detect_encoding(payload)), "detected"
        # uchardet misses some legacy CJK pages (EUC-KR reads as "utf-8");
        # charset-normalizer is slower but only runs when all else failed.
        best = charset_normalizer.from_bytes(payload[:65536]).best()
        yield (_label(best.encoding) if best else None), "detected"

    def decode(self, payload: bytes, http_charset: str | None) -> tuple[str | None, str | None, str]:
        utf16 = utf16_variant(payload[:4096])
        if utf16 is not None:
            return self._judged(_decode_utf16(payload, utf16), utf16, "bom" if payload[:2] in _UTF16_BOMS else "utf16")
        if _control_fraction(payload[:4096]) > self.config.max_control_fraction:
            return None, None, "binary"
        bom = payload.startswith(codecs.BOM_UTF8)
        if bom:
            payload = payload[3:]
            try:
                return payload.decode("utf-8"), "utf-8", "bom"
            except UnicodeDecodeError:
                pass  # a BOM over other bytes: the candidates below, then the replacement check
        elif not payload.isascii():
            try:  # valid UTF-8 beyond ASCII is UTF-8, whatever is declared (else mojibake)
                text = payload.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                said = next(
                    (source for charset, source in self._declarations(payload, http_charset) if charset == "utf-8"),
                    None,
                )
                return text, "utf-8", said or "valid_utf8"
        tried = {"utf-8"} if bom or not payload.isascii() else set()
        for charset, source in self.candidates(payload, http_charset):
            if charset is None or charset in tried:
                continue
            tried.add(charset)
            try:
                return payload.decode(charset), charset, source
            except Exception:  # UnicodeDecodeError; nothing else from a web codec, but never the file's problem
                continue
        # Nothing decodes cleanly: UTF-8 with replacement, judged below.
        return self._judged(payload.decode("utf-8", "replace"), "utf-8", "bom" if bom else "fallback")

    def _judged(self, text: str, charset: str, source: str) -> tuple[str | None, str | None, str]:
        """``text`` unless too much of it is U+FFFD (then undecodable)."""
        if text.count("\ufffd") > self.config.max_replacement_fraction * max(len(text), 1):
            return None, None, "undecodable"
        return text, charset, source


_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _decode_utf16(payload: bytes, variant: str) -> str:
    if payload[:2] in _UTF16_BOMS:
        payload = payload[2:]
    if len(payload) % 2:  # a cut page: drop the half character
        payload = payload[:-1]
    return payload.decode(variant, "replace")


class DecodeStage:
    """``payload`` (bytes) -> ``html`` (str), ``charset``, ``charset_source``.

    Most of the web is UTF-8: pages that declare UTF-8 (or nothing) are
    validated and converted by Arrow in one vectorized cast, without a round
    trip through Python strings; only the rest are decoded one by one.
    """

    name = "decode"
    label = "text decoded (charset)"
    needs = ("payload", "http_charset")
    adds = ("html", "charset", "charset_source")
    #: the Arrow types of what it adds and keeps (the extraction drops ``html``), and what it removes
    types = {"charset": pa.string(), "charset_source": pa.string()}
    drops = ("payload",)
    reasons = ("binary_payload", "undecodable")

    def __init__(self, config: CharsetConfig | None = None):
        self.decoder = Decoder(config)
        self.config = self.decoder.config

    def __call__(self, batch: pa.Table) -> pa.Table:
        column = batch.column("payload")
        # Only the heads go to Python (BOM, control bytes, <meta>): the whole
        # payloads would be a copy of every page for nothing on the fast path.
        heads = pc.binary_slice(column, 0, max(4096, self.config.meta_scan_bytes)).to_pylist()
        declared = batch.column("http_charset").to_pylist()
        n = len(heads)
        charsets: list[str | None] = [None] * n
        sources: list[str] = ["binary"] * n
        utf8_rows, slow_rows = [], []
        for i, (head, http_charset) in enumerate(zip(heads, declared, strict=False)):
            head = head or b""
            if _control_fraction(head[:4096]) > self.config.max_control_fraction:
                if utf16_variant(head[:4096]) is not None:
                    slow_rows.append(i)
                continue
            charset, source = (
                (None, "bom") if head.startswith(codecs.BOM_UTF8) else self.decoder.declared(head, http_charset)
            )
            if source != "bom" and charset in (None, "utf-8"):
                utf8_rows.append(i)
                charsets[i], sources[i] = "utf-8", source if charset else "valid_utf8"
            else:
                slow_rows.append(i)
        utf8_rows, utf8_html, invalid = _cast_utf8(column, utf8_rows)
        slow_rows = sorted(slow_rows + invalid)
        slow_html = []
        for i in slow_rows:
            text, charsets[i], sources[i] = self.decoder.decode(column[i].as_py() or b"", declared[i])
            slow_html.append(text)
        html = _assemble(n, [(utf8_rows, utf8_html), (slow_rows, _strings(slow_html))])
        batch = set_column(batch, "html", html)
        batch = set_column(batch, "charset", pa.array(charsets, pa.string()))
        batch = set_column(batch, "charset_source", pa.array(sources, pa.string()))
        batch = batch.drop_columns(["payload"])
        batch = reject_where(batch, [s == "binary" for s in sources], "binary_payload")
        return reject_where(batch, [s == "undecodable" for s in sources], "undecodable")


def _strings(texts: list[str | None]) -> pa.Array:
    """Python strings as Arrow; a lone surrogate (which Arrow refuses) becomes U+FFFD."""
    try:
        return pa.array(texts, pa.large_string())
    except (UnicodeEncodeError, pa.ArrowInvalid):
        return pa.array(
            [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if t is not None else None for t in texts],
            pa.large_string(),
        )


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Sorted row numbers as runs of consecutive rows: [(start, stop), ...]."""
    runs: list[tuple[int, int]] = []
    for i in rows:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def _cast_utf8(column: pa.ChunkedArray, rows: list[int]) -> tuple[list[int], pa.ChunkedArray, list[int]]:
    """Arrow-validated UTF-8 of ``rows``: (valid rows, their strings, invalid rows).

    Runs of consecutive rows are cast as slices, which shares the payloads' bytes
    (a cast to string only validates): no copy of the batch's HTML is made."""
    valid, invalid, chunks = [], [], []
    for start, stop in _runs(rows):
        try:
            chunks += column.slice(start, stop - start).cast(pa.large_string()).chunks
            valid += range(start, stop)
            continue
        except pa.ArrowInvalid:  # rare: find the rows of the run that are not UTF-8 after all
            pass
        for i in range(start, stop):
            try:
                chunks += column.slice(i, 1).cast(pa.large_string()).chunks
                valid.append(i)
            except pa.ArrowInvalid:
                invalid.append(i)
    return valid, pa.chunked_array(chunks, type=pa.large_string()), invalid


def _assemble(n: int, parts: list[tuple[list[int], pa.Array | pa.ChunkedArray]]) -> pa.ChunkedArray:
    """Put (rows, values) parts back into row order (each part's rows sorted); rows in no part are null.

    Built of slices of the parts (a run of consecutive rows of one part is one slice), so the
    strings are not copied."""
    where: list[tuple[int, int] | None] = [None] * n  # row -> (part, index in the part)
    values = []
    for p, (rows, vals) in enumerate(parts):
        values.append(vals if isinstance(vals, pa.ChunkedArray) else pa.chunked_array([vals], type=pa.large_string()))
        for k, i in enumerate(rows):
            where[i] = (p, k)
    chunks, row = [], 0
    while row < n:
        stop = row + 1
        if where[row] is None:
            while stop < n and where[stop] is None:
                stop += 1
            chunks.append(pa.nulls(stop - row, pa.large_string()))
        else:
            p, k = where[row]
            while stop < n and where[stop] == (p, k + stop - row):
                stop += 1
            chunks += values[p].slice(k, stop - row).chunks
        row = stop
    return pa.chunked_array(chunks, type=pa.large_string())
