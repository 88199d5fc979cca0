"""Hostile WARC files for samples/broken/: one per defect class of issue 13.

    python samples/broken/make_hostile.py [OUT_DIR]     # default: this folder

Every file has intact pages before and after the hostile records; the reader
must keep every intact page, reject each hostile response with a named reason
(or count it as malformed when it is not a response), and never fail the file.
What the file holds and what to expect go into expected.json beside the other
broken files (entries of files not written here are kept).  Deterministic:
the same bytes on every run.

  hostile-lying-length.warc.gz   a response declaring 5 GB that is 300 bytes, a metadata record
                                 whose Content-Length runs past the end of the file
  hostile-encoding-bombs.warc.gz Content-Encoding bombs: gzip (256 MiB of zeros), br and zstd (2 GiB)
  hostile-gzip-damage.warc.gz    a corrupt gzip member, garbage between members, a cut member
                                 followed by more members
  hostile-garbage.warc           garbage between records that does not end with a newline
  hostile-records.warc.gz        charset labels Python accepts but browsers do not (undefined, a NUL,
                                 utf-7), HTTP status 40000, a repeated WARC-Record-ID, a UTF-16 page,
                                 iso-8859-1 declared over UTF-8, a 1 MB page of '<div></b>'
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import json
import re
import sys
import uuid
from pathlib import Path

import brotli
import zstandard
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HERE = Path(__file__).resolve().parent
PROSE = (
    "The town council met on Tuesday evening to discuss the library budget. Members agreed that the reading "
    "rooms need better lighting, more seats for students and longer opening hours during the exam season. "
)


def _id(*parts) -> str:
    d = hashlib.sha1(("hostile\x1f" + "\x1f".join(map(str, parts))).encode()).digest()
    return f"<urn:uuid:{uuid.UUID(bytes=d[:16], version=4)}>"


def page_html(name: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{name}</title></head><body><article>'
        f"<h1>{name}</h1><p>{PROSE * 3}</p><p>{PROSE * 2}</p></article></body></html>"
    )


def record(
    name: str,
    body: bytes,
    *,
    headers=(),
    status: str = "200 OK",
    content_type: str = "text/html; charset=utf-8",
    record_type: str = "response",
    rid: str | None = None,
) -> bytes:
    """One record (uncompressed) written by warcio."""
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=False, warc_version="1.0")
    url = f"https://hostile.example.org/{name}"
    date = "2026-01-12T06:00:00Z"
    if record_type == "response":
        hdrs = [*headers, ("Content-Type", content_type)] if content_type else list(headers)
        http = StatusAndHeaders(status, hdrs, protocol="HTTP/1.1")
        rec = w.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            http_headers=http,
            warc_headers_dict={"WARC-Record-ID": rid or _id(name), "WARC-Date": date},
        )
    else:
        rec = w.create_warc_record(
            url,
            record_type,
            payload=io.BytesIO(body),
            warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Record-ID": rid or _id(name, record_type), "WARC-Date": date},
        )
    w.write_record(rec)
    return buf.getvalue()


def good(name: str) -> bytes:
    return record(name, page_html(name).encode())


def members(*recs: bytes) -> bytes:
    return b"".join(gzip.compress(r, compresslevel=9, mtime=0) for r in recs)


def with_length(rec: bytes, n: int) -> bytes:
    return re.sub(rb"\r\nContent-Length: \d+\r\n", b"\r\nContent-Length: %d\r\n" % n, rec, count=1)


def _zeros(n: int, compress) -> bytes:
    chunk = b"\0" * (1 << 20)
    return b"".join(compress(chunk) for _ in range(n >> 20))


def gzip_bomb(n: int) -> bytes:
    c = __import__("zlib").compressobj(9, 8, 31)
    return _zeros(n, c.compress) + c.flush()


def br_bomb(n: int) -> bytes:
    c = brotli.Compressor(quality=1)
    return _zeros(n, c.process) + c.finish()


def zstd_bomb(n: int) -> bytes:
    c = zstandard.ZstdCompressor(level=1).compressobj()
    return _zeros(n, c.compress) + c.flush()


def lying_length() -> tuple[bytes, dict]:
    liar = with_length(record("liar.html", b"<html><body>really short</body></html>"), 5_000_000_000)
    meta = with_length(record("page2.html", b"fetchTimeMs: 120\r\n", record_type="metadata"), 10_000_000)
    data = members(good("page1.html"), liar, good("page2.html"), meta, good("page3.html"), good("page4.html"))
    return data, {
        "problem": "CC-style members; a response declares Content-Length "
        "5,000,000,000 but holds 300 bytes; a metadata "
        "record declares 10,000,000 bytes, past the end of the file",
        "intact_records": 4,
        "expect": {
            "page1.html": None,
            "liar.html": "too_large",
            "page2.html": None,
            "page3.html": None,
            "page4.html": None,
        },
        "malformed_records": 2,
        "observed": {
            "fastwarc 2.0.1": "2 responses (page1, liar), then a clean end: the rest of the file is lost",
            "warcio 1.8.1": "all 5 responses, with 'Record not followed by "
            "newline' warnings (it resyncs at each gzip member)",
        },
    }


def encoding_bombs() -> tuple[bytes, dict]:
    bombs = [
        ("gzip-bomb.html", "gzip", gzip_bomb(256 << 20)),
        ("br-bomb.html", "br", br_bomb(2 << 30)),
        ("zstd-bomb.html", "zstd", zstd_bomb(2 << 30)),
    ]
    recs = [good("page1.html")]
    for name, coding, body in bombs:
        recs += [record(name, body, headers=[("Content-Encoding", coding)]), good(name.replace("bomb", "after"))]
    return members(*recs), {
        "problem": "HTTP Content-Encoding bombs between intact pages: gzip of 256 MiB of zeros, br and zstd of 2 GiB",
        "intact_records": 4,
        "expect": {
            "page1.html": None,
            "gzip-bomb.html": "decompression_bomb",
            "gzip-after.html": None,
            "br-bomb.html": "decompression_bomb",
            "br-after.html": None,
            "zstd-bomb.html": "decompression_bomb",
            "zstd-after.html": None,
        },
        "malformed_records": 0,
        "observed": {
            "fastwarc 2.0.1": "7 responses (it does not decode Content-Encoding "
            "unless asked; asked, it inflates each bomb whole)",
            "warcio 1.8.1": "4 responses, inflating the gzip bomb whole (256 MiB), then AttributeError on the br one",
        },
    }


def gzip_damage() -> tuple[bytes, dict]:
    parts = [gzip.compress(good(f"page{i}.html"), compresslevel=9, mtime=0) for i in range(1, 8)]
    corrupt = bytearray(parts[2])
    corrupt[len(corrupt) // 2 : len(corrupt) // 2 + 24] = b"\xff" * 24
    data = (
        parts[0]
        + parts[1]
        + bytes(corrupt)
        + parts[3]
        + b"\x00\x01 not gzip, not padding " * 8
        + parts[4]
        + parts[5][: len(parts[5]) // 2]
        + parts[6]
    )
    return data, {
        "problem": "7 pages, one gzip member each: page3's member is "
        "corrupt in the middle, garbage sits between page4 "
        "and page5, page6's member is cut in half and page7 follows it",
        "intact_records": 5,
        "expect": {"page1.html": None, "page2.html": None, "page4.html": None, "page5.html": None, "page7.html": None},
        "malformed_records": 3,
        "observed": {
            "fastwarc 2.0.1": "2 responses, then OSError('Gzip decompression error: data error')",
            "warcio 1.8.1": "2 responses, then ArchiveLoadFailed('Invalid WARC record')",
        },
    }


def garbage() -> tuple[bytes, dict]:
    data = (
        good("page1.html")
        + b"garbage that does not end with a newline"
        + good("page2.html")
        + b"\r\n\r\nWARC/1.0 but not a record"
        + good("page3.html")
        + b"\x00" * 5
        + good("page4.html")
    )
    return data, {
        "problem": "uncompressed; garbage after three of the records, none of it ending with a newline",
        "intact_records": 4,
        "expect": {f"page{i}.html": None for i in range(1, 5)},
        "malformed_records": 3,
        "observed": {
            "fastwarc 2.0.1": "1 response, then OSError('Invalid WARC header')",
            "warcio 1.8.1": "1 response, then ArchiveLoadFailed('Invalid WARC record, first line: garbage ...')",
        },
    }


def hostile_records() -> tuple[bytes, dict]:
    de = page_html("Grüße aus Köln: Straße, Maß und Bäume")
    recs = [
        good("page1.html"),
        record("charset-undefined.html", page_html("undefined").encode(), content_type="text/html; charset=undefined"),
        record("charset-nul.html", page_html("nul").encode(), content_type="text/html; charset=utf-8\x00x"),
        record("charset-utf7.html", page_html("utf7 +2D3cAA-").encode(), content_type="text/html; charset=utf-7"),
        record("status-40000.html", page_html("status").encode(), status="40000 Too Big"),
        record("page1-again.html", page_html("repeat").encode(), rid=_id("page1.html")),
        record(
            "utf16.html", codecs.BOM_UTF16_LE + page_html("UTF-16 page").encode("utf-16-le"), content_type="text/html"
        ),
        record("latin1-over-utf8.html", de.encode("utf-8"), content_type="text/html; charset=iso-8859-1"),
        record("div-unmatched-end.html", ("<html><body>" + "<div></b>" * 110_000).encode()),
        good("page2.html"),
    ]
    return members(*recs), {
        "problem": "record contents that used to fail the whole file or be mangled: charset labels Python accepts but "
        "browsers do not (undefined, a NUL, utf-7), HTTP status 40000 (int16), a repeated WARC-Record-ID, "
        "a UTF-16 page (BOM), iso-8859-1 declared over UTF-8 bytes, 1 MB of '<div></b>' (nests 110,000 deep)",
        "intact_records": 7,
        "expect": {
            "page1.html": None,
            "charset-undefined.html": None,
            "charset-nul.html": None,
            "charset-utf7.html": None,
            "status-40000.html": "bad_http",
            "page1-again.html": "duplicate_record_id",
            "utf16.html": None,
            "latin1-over-utf8.html": None,
            "div-unmatched-end.html": None,
            "page2.html": None,
        },
        "expect_after_extraction": {"div-unmatched-end.html": ["extract_error", "extract_timeout"]},
        "malformed_records": 0,
        "observed": {
            "fastwarc 2.0.1": "10 responses (the record contents are the caller's problem)",
            "warcio 1.8.1": "10 responses",
        },
    }


FILES = {
    "hostile-lying-length.warc.gz": lying_length,
    "hostile-encoding-bombs.warc.gz": encoding_bombs,
    "hostile-gzip-damage.warc.gz": gzip_damage,
    "hostile-garbage.warc": garbage,
    "hostile-records.warc.gz": hostile_records,
}


def write_all(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    expected_path = out_dir / "expected.json"
    expected = json.loads(expected_path.read_text()) if expected_path.exists() else {}
    for name, make in FILES.items():
        data, info = make()
        (out_dir / name).write_bytes(data)
        expected[name] = {
            **info,
            "reader_expectation": "ours (stages/warc.py): 'expect' is url name -> reason (null = kept)",
        }
    expected_path.write_text(json.dumps(expected, indent=2) + "\n")


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
