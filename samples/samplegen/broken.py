"""Deliberately malformed files for samples/broken/ (kept apart from the main samples).

truncated.warc.gz            valid gzip members, the file is cut in the middle of the 3rd member
bad-content-length.warc.gz   5 records, #2 declares a Content-Length 100 bytes too SHORT,
                             #4 declares one 500 bytes too LONG (its block runs into record #5)
not-a-warc.warc.gz           an S3 "AccessDenied" XML error document saved under a WARC name
empty.warc.gz                zero bytes
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import uuid
import zlib

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

HTML = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Broken sample {n}</title></head>'
    "<body><h1>Record {n}</h1><p>This page lives in a deliberately malformed WARC file. A robust reader should report "
    "the damage and carry on with the next file instead of crashing the whole job.</p></body></html>\n"
)


def _id(seed: int, *parts) -> str:
    d = hashlib.sha1((f"broken\x1f{seed:d}\x1f" + "\x1f".join(map(str, parts))).encode()).digest()
    return f"<urn:uuid:{uuid.UUID(bytes=d[:16], version=4)}>"


def _good_record(seed: int, i: int) -> bytes:
    """One intact response record (page i+1) as its own gzip member, written by warcio."""
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True, warc_version="1.0")
    body = HTML.format(n=i + 1).encode()
    http = StatusAndHeaders(
        "200 OK",
        [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
        protocol="HTTP/1.1",
    )
    rec = w.create_warc_record(
        f"https://broken.example.org/page{i + 1}.html",
        "response",
        payload=io.BytesIO(body),
        length=len(body),
        http_headers=http,
        warc_headers_dict={
            "WARC-Type": "response",
            "WARC-Date": f"2026-01-12T05:00:{i:02d}Z",
            "WARC-Record-ID": _id(seed, "good", i),
        },
    )
    w.write_record(rec)
    return buf.getvalue()


def _gz(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
    return c.compress(data) + c.flush()


def _raw_record(seed: int, i: int, delta: int) -> bytes:
    """A response record written by hand whose Content-Length is off by `delta` bytes."""
    body = HTML.format(n=i + 1).encode()
    block = (
        f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Date: 2026-01-12T05:01:{i:02d}Z\r\n"
        f"WARC-Record-ID: {_id(seed, 'raw', i)}\r\nWARC-Target-URI: https://broken.example.org/page{i + 1}.html\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(block) + delta}\r\n\r\n"
    ).encode()
    return _gz(head + block + b"\r\n\r\n")


def write_all(out_dir: str, seed: int) -> None:
    os.makedirs(out_dir, exist_ok=True)
    members = [_good_record(seed, i) for i in range(3)]
    cut = len(members[0]) + len(members[1]) + len(members[2]) // 2
    with open(os.path.join(out_dir, "truncated.warc.gz"), "wb") as f:
        f.write(b"".join(members)[:cut])

    recs = [
        _good_record(seed, 0),
        _raw_record(seed, 1, -100),
        _good_record(seed, 2),
        _raw_record(seed, 3, +500),
        _good_record(seed, 4),
    ]
    with open(os.path.join(out_dir, "bad-content-length.warc.gz"), "wb") as f:
        f.write(b"".join(recs))

    with open(os.path.join(out_dir, "not-a-warc.warc.gz"), "wb") as f:
        f.write(
            b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message>'
            b"<RequestId>8F2B3C1D0E4A5B6C</RequestId><HostId>c2FtcGxlLWhvc3QtaWQtbm90LWEtcmVhbC1vbmU=</HostId></Error>\n"
        )

    open(os.path.join(out_dir, "empty.warc.gz"), "wb").close()

    expected = {  # "observed": what the readers in the project's venv did with the file
        "truncated.warc.gz": {
            "problem": "3 records, the file ends in the middle of the 3rd gzip member",
            "intact_records": 2,
            "observed": {
                "warcio 1.8.1": "2 records, no exception",
                "fastwarc 2.0.1": "3 records, the 3rd silently cut short",
            },
        },
        "bad-content-length.warc.gz": {
            "problem": "5 records (page1..page5); record 2 declares a Content-Length 100 bytes too short, "
            "record 4 one 500 bytes too long",
            "intact_records": 3,
            "observed": {
                "warcio 1.8.1": "prints 'Record not followed by newline' warnings, resyncs at each gzip member and "
                "yields all 5 records (record 2 with its body cut short)",
                "fastwarc 2.0.1": "yields records 1 and 2, then raises OSError('Invalid WARC header')",
            },
        },
        "not-a-warc.warc.gz": {
            "problem": "not gzip, not WARC: an S3 AccessDenied XML body",
            "intact_records": 0,
            "observed": {
                "warcio 1.8.1": "raises ArchiveLoadFailed",
                "fastwarc 2.0.1": "raises OSError('Invalid WARC header')",
            },
        },
        "empty.warc.gz": {
            "problem": "zero-byte file",
            "intact_records": 0,
            "observed": {"warcio 1.8.1": "0 records", "fastwarc 2.0.1": "0 records"},
        },
    }
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
