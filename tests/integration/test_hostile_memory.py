"""Memory bound on decompression bombs (issue 13, class 2), measured.

A worker's front end (reader -> decode -> extract) runs in a child process on
a WARC holding 2 GiB Content-Encoding bombs (gzip, br, zstd) and a 2 GiB
response inside the WARC's own gzip, between intact pages; the child's peak
RSS must stay under 1 GiB (it is ~0.1-0.2 GiB: every inflate stops at
max_payload_bytes).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import brotli
import zstandard
from isal import isal_zlib

from tests.conftest import REPO

GIB = 1 << 30
CHUNK = b"\0" * (1 << 20)
PAGE = (
    "<html><body><article><h1>Budget</h1><p>"
    + "The council met on Tuesday to discuss the library budget. " * 20
    + "</p></article></body></html>"
).encode()

CHILD = r"""
import json, sys
from stages.base import ChainStats, run_chain
from stages.charset import DecodeStage
from stages.extract import ExtractStage
from stages.warc import ReadStats, WarcReader
stats, chain, out = ReadStats(), ChainStats(), {}
with open(sys.argv[1], "rb") as raw:
    for batch in WarcReader().iter_batches(raw, "bombs", stats):
        kept, rejected = run_chain([DecodeStage(), ExtractStage()], batch, chain)
        out.update({u: None for u in kept.column("url").to_pylist()})
        for r in rejected:
            out.update(zip(r.column("url").to_pylist(), r.column("reason").to_pylist()))
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec, so a child of a large pytest
# process would report the parent's peak (1.5 GB in a full CI run) instead of its own
hwm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"reasons": out, "peak_rss": hwm,
                  "malformed": stats.malformed_records}))
"""


def _stream(compress, finish, n: int) -> bytes:
    return b"".join(compress(CHUNK) for _ in range(n >> 20)) + finish()


def _record(url: str, http_block_parts: list[bytes], length: int) -> list[bytes]:
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{abs(hash(url)):032x}>\r\n"
        f"WARC-Target-URI: {url}\r\nWARC-Date: 2026-01-12T00:00:00Z\r\nContent-Length: {length}\r\n\r\n"
    ).encode()
    return [head, *http_block_parts, b"\r\n\r\n"]


def _member(parts: list[bytes]) -> bytes:
    c = isal_zlib.compressobj(1, isal_zlib.DEFLATED, 31)
    return b"".join(c.compress(p) for p in parts) + c.flush()


def _encoded_response(url: str, coding: str, body: bytes) -> bytes:
    http = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: {coding}\r\n\r\n".encode() + body
    return _member(_record(url, [http], len(http)))


def _huge_response(url: str, n: int) -> bytes:
    """A response whose 2 GiB payload is in the WARC itself (one gzip member, streamed)."""
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    c = isal_zlib.compressobj(1, isal_zlib.DEFLATED, 31)
    head, _, tail = _record(url, [http], len(http) + n)
    return (
        c.compress(head)
        + c.compress(http)
        + b"".join(c.compress(CHUNK) for _ in range(n >> 20))
        + c.compress(tail)
        + c.flush()
    )


def _intact(url: str) -> bytes:
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + PAGE
    return gzip.compress(b"".join(_record(url, [http], len(http))))


def test_a_worker_stays_under_1_gib_on_2_gib_bombs(tmp_path):
    gz = isal_zlib.compressobj(1, isal_zlib.DEFLATED, 31)
    br = brotli.Compressor(quality=1)
    zs = zstandard.ZstdCompressor(level=1).compressobj()
    path = tmp_path / "bombs.warc.gz"
    path.write_bytes(
        b"".join(
            [
                _intact("http://ok/1"),
                _encoded_response("http://evil/gzip", "gzip", _stream(gz.compress, gz.flush, 2 * GIB)),
                _intact("http://ok/2"),
                _encoded_response("http://evil/br", "br", _stream(br.process, br.finish, 2 * GIB)),
                _encoded_response("http://evil/zstd", "zstd", _stream(zs.compress, zs.flush, 2 * GIB)),
                _huge_response("http://evil/huge", 2 * GIB),
                _intact("http://ok/3"),
            ]
        )
    )
    assert path.stat().st_size < 8 << 20
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, cwd=REPO, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"peak RSS of the worker on 2 GiB bombs: {result['peak_rss'] / 2**20:.0f} MiB")
    assert result["reasons"] == {
        "http://ok/1": None,
        "http://ok/2": None,
        "http://ok/3": None,
        "http://evil/gzip": "decompression_bomb",
        "http://evil/br": "decompression_bomb",
        "http://evil/zstd": "decompression_bomb",
        "http://evil/huge": "too_large",
    }
    assert result["malformed"] == 0
    assert result["peak_rss"] < GIB
