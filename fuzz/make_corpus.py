"""Seed corpora for the fuzz targets, from samples/ and samples/broken/.

    python fuzz/make_corpus.py            # writes fuzz/corpus/<target>/

warc:    single records and runs of three (plain, with a leading mode byte 0,
         and the same with mode 1 so the harness gzips them), and the broken
         sample files whole (.warc.gz, mode 0);
gunzip:  gzip members of records, pairs of them, and the broken .warc.gz files;
http:    HTTP blocks of response records (capped at 64 KB), a few gzip-encoded;
charset: "<declared charset>\\n<payload>" of responses;
extract: decoded HTML of responses, capped at 128 KB;
url:     the responses' URLs (mode byte 0 and 1: 1 plants PII in the query) and hostile ones;
card:    hostile strings; and fuzz/data/card_stats.json, the stats.json the card target renders
         (the card of tests/pipeline/card/test_card_fixture.py's output), regenerated.
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
    urls: list[str] = []
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
            target = rec.split(b"WARC-Target-URI: ", 1)[1].split(b"\r\n", 1)[0] if b"WARC-Target-URI: " in rec else b""
            urls.append(target.decode("utf-8", "replace"))
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
                encoded = (
                    block.split(b"\r\n\r\n", 1)[0] + b"\r\nContent-Encoding: gzip\r\n\r\n" + gzip.compress(resp.body)
                )
                put("http", encoded[: 1 << 16])
    for path in sorted((ROOT / "samples" / "broken").glob("*.warc.gz")):
        data = path.read_bytes()
        put("warc", b"\0" + data)
        put("gunzip", data)
    for url in urls + HOSTILE_URLS:
        put("url", b"\0" + url.encode())
        put("url", b"\1" + url.encode())
    for s in HOSTILE_STRINGS:
        put("card", b"\1" + s.encode())
    put("card", b"\0" + HOSTILE_STRINGS[0].encode())
    card_stats()
    for target in ("warc", "gunzip", "http", "charset", "extract", "url", "card"):
        print(target, len(list((OUT / target).glob("*"))), "seeds")


HOSTILE_URLS = [
    "https://user:pass@host.example/peter.parker@yahoo.com/?ssn=536-22-1974&cc=4111%201111%201111%201111",
    "http://81.2.69.161./x?email=john.smith%2540gmail.com#frag",
    "https://[::1]:8080/%ZZ%",
    "mailto:a@b.c",
    "http://a.example/" + "x" * 10_000,
    "https://a.example/\r\n\x00?q=%00",
    "//no-scheme.example/a/../b",
]
HOSTILE_STRINGS = [
    "$\\foo$.example.com",
    "`<img src=x onerror=alert(1)>`",
    "a|b|c\n\n| x |",
    "\u202eevil",
    "```yaml\n---\n",
    "<details><summary>x</summary>",
    "[l](javascript:alert(1))",
    "#",
    "- item",
    "&amp;",
    "\x00",
]


def card_stats() -> None:
    """fuzz/data/card_stats.json: the card of the test fixture's output (every phase, every section)."""
    import shutil
    import tempfile

    from pipeline.card.report import main as report
    from tests.pipeline.card.test_card_fixture import make_output

    with tempfile.TemporaryDirectory() as tmp:
        out = make_output(Path(tmp) / "out")
        report([str(out)])
        (ROOT / "fuzz" / "data").mkdir(exist_ok=True)
        shutil.copy(out / "card" / "stats.json", ROOT / "fuzz" / "data" / "card_stats.json")


if __name__ == "__main__":
    main()
