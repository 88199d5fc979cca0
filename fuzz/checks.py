"""What each fuzz target checks, as plain functions of the input bytes.

The atheris harnesses (``fuzz_<target>.py``) call these under coverage
guidance; ``tests/integration/test_hostile_fuzz_findings.py`` replays every input saved in
``fuzz/regressions/<target>/`` through the same function, without atheris.
A check raises (an AssertionError or anything else) on a finding.
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402

from stages.base import REASON, ChainStats, run_chain  # noqa: E402
from stages.charset import Decoder, DecodeStage  # noqa: E402
from stages.extract import ExtractConfig, ExtractStage  # noqa: E402
from stages.gunzip import Gunzip, GzipError, GzipGap  # noqa: E402
from stages.http_decode import HttpError, PayloadRejected, decoded_body, parse_response  # noqa: E402
from stages.warc import BATCH_SCHEMA, ReadStats, WarcConfig, WarcReader  # noqa: E402

TARGETS = ("gunzip", "warc", "http", "charset", "extract", "url", "card")


# ------------------------------------------------------------------------------------------ gunzip

GUNZIP_MAX_OUT = 1 << 24  # a bomb inside the fuzzed bytes is fine; reading it all is not the point


def check_gunzip(data: bytes) -> None:
    """Any bytes inflate with only EOFError/GzipError at the end, and reading goes on after every gap."""
    gz = Gunzip(io.BytesIO(data), resync_prefix=b"WARC/" if data[-1:] == b"W" else b"")
    total = gaps = 0
    while total < GUNZIP_MAX_OUT:
        try:
            chunk = gz.read1(1 << 16)
        except GzipGap as gap:
            gaps += 1
            assert gap.resumed_at > gap.damaged_at, (gap.damaged_at, gap.resumed_at)
            assert gaps <= len(data), "more gaps than input bytes: no progress"
            continue
        except (EOFError, GzipError):
            return
        if not chunk:
            return
        assert len(chunk) <= 1 << 16
        total += len(chunk)


# ------------------------------------------------------------------------------------------ warc

WARC_CONFIG = WarcConfig(max_payload_bytes=200_000, batch_size=4)
_READER = WarcReader(WARC_CONFIG)


def as_members(data: bytes) -> bytes:
    """gzip one member per ``WARC/1.`` (as Common Crawl writes files)."""
    parts = data.split(b"WARC/1.")
    members = [parts[0]] + [b"WARC/1." + p for p in parts[1:]]
    return b"".join(gzip.compress(m, compresslevel=1) for m in members if m)


def check_warc(data: bytes) -> None:
    """The first byte picks the form: even = the bytes as given (a .warc or a
    .warc.gz), odd = the rest gzip-compressed one member per record, so
    mutations of plain records also reach the gzip path.  No exception
    escapes; batches have the schema; ids are unique; a kept row has a payload
    within the limit and a rejected one none; every response counted is a row."""
    if not data:
        return
    body = as_members(data[1:]) if data[0] & 1 else data[1:]
    stats = ReadStats()
    rows = []
    for table in _READER.iter_batches(io.BytesIO(body), "fuzz", stats):
        assert table.schema == BATCH_SCHEMA, table.schema
        rows.extend(table.to_pylist())
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids), "duplicate ids in one file's output"
    for r in rows:
        assert r["source"] == "fuzz" and r["id"]
        if r[REASON] is None:
            assert r["payload"] and len(r["payload"]) <= WARC_CONFIG.max_payload_bytes, len(r["payload"] or b"")
        else:
            assert r["payload"] == b"", r[REASON]
    assert stats.records_by_type.get("response", 0) == len(rows), (stats.records_by_type, len(rows))
    assert len(stats.errors) <= 20


# ------------------------------------------------------------------------------------------ http

HTTP_LIMIT = 100_000


def check_http(data: bytes) -> None:
    """Only HttpError or PayloadRejected come out; a decoded body is never over the limit."""
    try:
        resp = parse_response(data)
    except HttpError:
        return
    assert 100 <= resp.status <= 999, resp.status
    resp.mime_and_charset()
    try:
        body = decoded_body(resp, HTTP_LIMIT, 50)
    except PayloadRejected as e:
        assert e.reason in ("too_large", "decompression_bomb", "bad_encoding"), e.reason
        return
    assert len(body) <= HTTP_LIMIT


# ------------------------------------------------------------------------------------------ charset

_DECODER = Decoder()
_DECODE = DecodeStage()
SOURCES = ("http", "meta", "detected", "bom", "utf16", "valid_utf8", "fallback", "binary", "undecodable")


def check_charset(data: bytes) -> None:
    """The first line is the HTTP charset label, the rest the payload: any label with any
    bytes decodes to text Arrow accepts, or is rejected as binary/undecodable; the
    batch stage never raises."""
    label_bytes, _, payload = data.partition(b"\n")
    label = label_bytes[:80].decode("latin-1") or None
    text, charset, source = _DECODER.decode(payload, label)
    assert source in SOURCES, source
    assert (text is None) == (source in ("binary", "undecodable")), source
    if text is not None:
        pa.array([text], pa.large_string())  # raises on a lone surrogate
    batch = pa.table(
        {
            "payload": pa.array([payload, payload[: len(payload) // 2]], pa.large_binary()),
            "http_charset": [label, None],
        }
    )
    out = _DECODE(batch)
    assert out.num_rows == 2 and "html" in out.column_names


# ------------------------------------------------------------------------------------------ extract

EXTRACT_TIMEOUT_S = 1.0
_EXTRACT = None


def _extract_stage() -> ExtractStage:
    global _EXTRACT
    if _EXTRACT is None:
        _EXTRACT = ExtractStage(ExtractConfig(timeout_s=EXTRACT_TIMEOUT_S))
    return _EXTRACT


def _cpu_seconds(stage: ExtractStage) -> float:
    """CPU of this process, of the helpers it reaped, and of the live helper (the page may run there)."""
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = time.process_time() + reaped.ru_utime + reaped.ru_stime
    helper = stage._helper._proc if stage._helper is not None else None
    if helper is not None and helper.poll() is None:
        try:
            fields = Path(f"/proc/{helper.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def check_extract(data: bytes) -> None:
    """The HTML as UTF-8 through the stage (the chain's per-record catch included):
    one row out, rejected only with an extraction reason, no error counted, and never
    more than 3x the time limit of CPU (the page's own, in this process or the helper;
    wall time on a shared machine under nice says little, and a hang is libFuzzer's -timeout)."""
    stage = _extract_stage()
    html = data.decode("utf-8", "replace")
    if stage.config.isolate_tags is not None and html.count("<") > stage.config.isolate_tags:
        stage._isolated().ready()  # a (re)start is not the page's cost
    cpu0 = _cpu_seconds(stage)
    stats = ChainStats()
    kept, rejected = run_chain([stage], pa.table({"id": ["f"], "html": pa.array([html], pa.large_string())}), stats)
    cpu = _cpu_seconds(stage) - cpu0
    assert cpu < 3 * EXTRACT_TIMEOUT_S, f"{cpu:.1f} s of CPU > 3 x {EXTRACT_TIMEOUT_S} s"
    assert kept.num_rows + sum(r.num_rows for r in rejected) == 1
    for r in rejected:
        assert set(r.column(REASON).to_pylist()) <= {"no_text", "extract_timeout", "extract_error"}, r.column(
            REASON
        ).to_pylist()
    assert not any(k.startswith("extract.error.") or "batch_error" in k for k in stats.counters), stats.counters


# ------------------------------------------------------------------------------------------ url

#: Values planted in a fuzzed URL (first byte odd), found nowhere in the seeds: none may survive redaction.
PLANTED_QUERY = "e=planted.fuzz.value%40example.com&ssn=409-52-2002&cc=5555%205555%205555%204444"
PLANTED_PARTS = ("planted.fuzz.value", "409-52-2002", "5555 5555 5555 4444")


@functools.lru_cache(maxsize=1)
def _pii():
    from stages.pii import PiiConfig, PiiStage
    from stages.pii.public import PublicRedactor

    return PiiStage(PiiConfig()), PublicRedactor()


def check_url(data: bytes) -> None:
    """A URL (UTF-8, first byte: odd = PII planted in its query) through the PII stage's URL redaction
    (documents/final and the shards) and the card's PublicRedactor: never an error, the result splits
    (or is null: not even its origin splits), no userinfo left, no planted value left, and the card's
    redaction is idempotent (what it publishes has nothing left to redact)."""
    from urllib.parse import unquote, urlsplit

    if not data:
        return
    url = data[1:].decode("utf-8", "replace")
    if data[0] & 1:
        url += ("&" if "?" in url else "?") + PLANTED_QUERY
    stage, public = _pii()
    out = stage(pa.table({"id": ["f"], "text": ["no pii here"], "url": [url]})).column("url")[0].as_py()
    published = public.urls([url])[0]
    for result in (out, published):
        if result is None:  # not even its origin splits: no URL is published
            continue
        parts = urlsplit(result)  # raises on nothing: a URL that cannot be split was cut to scheme://host/
        assert "@" not in parts.netloc, f"userinfo left in {result!r}"
        if data[0] & 1:
            seen = unquote(unquote(result))
            assert not any(v in seen for v in PLANTED_PARTS), f"planted PII left in {result!r}"
    assert public.urls([published])[0] == published, (published, public.urls([published])[0])


# ------------------------------------------------------------------------------------------ card

CARD_STATS = Path(__file__).resolve().parent / "data" / "card_stats.json"


@functools.lru_cache(maxsize=1)
def _card_base() -> dict:
    import json

    return json.loads(CARD_STATS.read_text())


def check_card(data: bytes) -> None:
    """The fuzzed string (UTF-8, first byte: 0 mod 8 = also through the plots) planted in every string
    field of a card's stats.json, rendered: the front matter is YAML with our keys only, the Markdown holds
    no HTML but the card's own, every table row keeps its cells, and the plots are well-formed, inert SVG."""
    import tests.pipeline.card.test_card_hostile as card
    from pipeline.card import plots
    from pipeline.card.render import render

    fuzzed = data[1:].decode("utf-8", "replace")
    original = card.evil
    card.evil = lambda tag: f"{fuzzed}{tag}"
    try:
        stats, _ = card.hostile(_card_base())
    finally:
        card.evil = original
    readme = render(stats, stats["examples"])
    meta, body = card.split_card(readme)
    assert set(meta) <= {
        "pretty_name",
        "language",
        "license",
        "license_name",
        "license_link",
        "size_categories",
        "source_datasets",
        "task_categories",
        "task_ids",
        "configs",
    }, sorted(meta)
    card.assert_only_our_html(card.rendered(body), {f"{p}.svg" for p in plots.PLOTS})
    card.assert_tables_whole(body)
    if data[:1] and data[0] % 8 == 0:
        from tests.pipeline.card.test_card_svg import parse_svg

        images, failed = plots.draw_all(stats)
        assert not failed, failed
        for image in images.values():
            parse_svg(image)  # well-formed UTF-8 SVG, nothing that runs or links


CHECKS = {
    "gunzip": check_gunzip,
    "warc": check_warc,
    "http": check_http,
    "charset": check_charset,
    "extract": check_extract,
    "url": check_url,
    "card": check_card,
}


def warm_up(target: str) -> None:
    """Run a check once on a small input first: lazy imports (pyarrow pulls in pandas on its
    first table) take seconds on a busy machine, and libFuzzer would report them as a hang."""
    page = b"<html><body><p>warm up</p></body></html>"
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + page
    inputs = {
        "gunzip": gzip.compress(b"WARC/1.0\r\n"),
        "warc": b"\0WARC/1.0\r\nWARC-Type: response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n" % (len(http), http),
        "http": http,
        "charset": b"utf-8\n" + page,
        "extract": page,
        "url": b"\1https://user:pass@a.example/x?q=1",
        "card": b"\0warm up",
    }
    CHECKS[target](inputs[target])
