"""Seed corpora for the fuzz targets, from samples/ and samples/broken/.

    python fuzz/make_corpus.py            # writes fuzz/corpus/<target>/

warc:    single records and runs of three (plain, with a leading mode byte 0,
         and the same with mode 1 so the harness gzips them), and the broken
         sample files whole (.warc.gz, mode 0);
gunzip:  gzip members of records, pairs of them, and the broken .warc.gz files;
http:    HTTP blocks of response records (capped at 64 KB), a few gzip-encoded;
charset: "<declared charset>\\n<payload>" of responses;
extract: decoded HTML of responses, capped at 128 KB.
"""

from __future__ import annotations

import gzip
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stages.charset import Decoder  # noqa: E402
from stages.http_decode import parse_response  # noqa: E402

OUT = Path(__file__).resolve().parent / "corpus"
MAX_SEED = 1 << 17
PER_FILE = 60  # records taken from each sample file


def records(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes())
    parts = data.split(b"WARC/1.0\r\n")
    return [b"WARC/1.0\r\n" + p for p in parts[1:]]


def put(target: str, data: bytes) -> None:
    if not data or len(data) > MAX_SEED:
        return
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def main() -> None:
    decoder = Decoder()
    for path in sorted((ROOT / "samples").glob("*.warc.gz")):
        recs = records(path)
        responses = [r for r in recs if b"WARC-Type: response" in r[:300]]
        step = max(1, len(responses) // PER_FILE)
        for i, rec in enumerate(responses[::step]):
            put("warc", b"\0" + rec)
            put("warc", b"\1" + rec)
            j = recs.index(rec)
            put("warc", b"\0" + b"".join(recs[max(j - 1, 0) : j + 2]))
            put("gunzip", gzip.compress(rec) + gzip.compress(recs[min(j + 1, len(recs) - 1)]))
            block = rec.split(b"\r\n\r\n", 1)[1][:-4]
            put("http", block[: 1 << 16])
            try:
                resp = parse_response(block)
            except ValueError:
                continue
            mime, charset = resp.mime_and_charset()
            put("charset", (charset or "").encode("latin-1", "replace") + b"\n" + resp.body[: 1 << 16])
            if "html" in mime and i % 3 == 0:
                text, _, _ = decoder.decode(resp.body, charset)
                if text:
                    put("extract", text[: 1 << 17].encode("utf-8"))
                encoded = block.split(b"\r\n\r\n", 1)[0] + b"\r\nContent-Encoding: gzip\r\n\r\n" + gzip.compress(resp.body)
                put("http", encoded[: 1 << 16])
    for path in sorted((ROOT / "samples" / "broken").glob("*.warc.gz")):
        data = path.read_bytes()
        put("warc", b"\0" + data)
        put("gunzip", data)
    for target in ("warc", "gunzip", "http", "charset", "extract"):
        print(target, len(list((OUT / target).glob("*"))), "seeds")


if __name__ == "__main__":
    main()
