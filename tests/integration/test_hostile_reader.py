"""Hostile WARC input costs only its own record (issue 13), at the reader.

Each test puts intact records written by warcio before and after one hostile
record and checks that every intact record is read whole, the hostile one is
rejected with a named reason (or, when it is not a response, counted as
malformed), and nothing else is lost.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib

import brotli
import pytest
import zstandard

from stages.base import REASON
from stages.warc import BATCH_SCHEMA, ReadStats, WarcConfig, WarcReader, _to_table
from tests.conftest import Page, html, write_warc

INTACT = "The committee met on Tuesday to discuss the library budget and the reading rooms. " * 8


def pages(prefix: str, n: int) -> list[Page]:
    return [Page(f"http://ok.example/{prefix}{i}", html(f"{prefix} {i}", INTACT).encode()) for i in range(n)]


def records(tmp_path, page_list: list[Page], name: str = "r.warc") -> list[bytes]:
    """Uncompressed records as warcio writes them (the warcinfo first)."""
    data = write_warc(tmp_path / name, page_list, gzip=False).read_bytes()
    return [b"WARC/1.0\r\n" + r for r in data.split(b"WARC/1.0\r\n")[1:]]


def with_length(record: bytes, n: int) -> bytes:
    return re.sub(rb"\r\nContent-Length: \d+\r\n", b"\r\nContent-Length: %d\r\n" % n, record, count=1)


def members(recs: list[bytes]) -> bytes:
    """One gzip member per record, as Common Crawl writes them."""
    return b"".join(gzip.compress(r) for r in recs)


def read(data: bytes, config: WarcConfig | None = None):
    stats = ReadStats()
    rows = [r for t in WarcReader(config).iter_batches(io.BytesIO(data), "hostile.warc", stats) for r in t.to_pylist()]
    return rows, stats


def by_url(rows) -> dict[str, dict]:
    return {r["url"]: r for r in rows}


def assert_intact_kept(rows, intact: list[Page]) -> None:
    got = by_url(rows)
    for p in intact:
        assert got[p.url][REASON] is None, (p.url, got[p.url][REASON], got[p.url]["details"])
        assert got[p.url]["payload"] == p.body, p.url


ENCODINGS = ["plain", "members", "one-member"]


def encode(recs: list[bytes], how: str) -> bytes:
    if how == "members":
        return members(recs)
    joined = b"".join(recs)
    return gzip.compress(joined) if how == "one-member" else joined


# ------------------------------------------------------------------------------------------ class 1


@pytest.mark.parametrize("how", ENCODINGS)
def test_a_lying_content_length_far_above_the_limit_costs_only_its_record(tmp_path, how):
    before, after = pages("before", 3), pages("after", 3)
    liar = Page("http://evil.example/liar", html("liar", "short").encode())
    recs = records(tmp_path, before + [liar] + after)
    recs[4] = with_length(recs[4], 5_000_000_000)  # warcinfo, 3 before, the liar
    rows, stats = read(encode(recs, how))
    assert [r["url"] for r in rows] == [p.url for p in before + [liar] + after]
    assert_intact_kept(rows, before + after)
    bad = by_url(rows)[liar.url]
    assert bad[REASON] == "too_large" and "5000000000" in bad["details"]
    assert stats.malformed_records == 1 and "Content-Length 5000000000" in stats.errors[0]


def test_a_lying_length_in_a_small_member_stops_at_the_next_member_already_read(tmp_path):
    # Small members: the liar's header and the next members come in one read-ahead, so the
    # member boundary must be found in the buffer, not only in what is read after it.
    tiny = [Page(f"http://ok.example/t{i}", b"<html><body><p>tiny page %d</p></body></html>" % i) for i in range(60)]
    recs = records(tmp_path, tiny)
    recs[2] = with_length(recs[2], 5_000_000_000)  # the second page
    rows, stats = read(members(recs))
    assert [r["url"] for r in rows] == [p.url for p in tiny]
    assert [r[REASON] for r in rows] == [None, "too_large"] + [None] * 58
    assert stats.malformed_records == 1 and "next gzip member" in stats.errors[0]


@pytest.mark.parametrize("how", ENCODINGS)
@pytest.mark.parametrize("record_type", ["request", "metadata"])
def test_a_request_or_metadata_record_running_past_the_end_costs_only_itself(tmp_path, how, record_type):
    before, after = pages("before", 2), pages("after", 2)
    odd = Page("http://evil.example/odd", b"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", record_type=record_type)
    recs = records(tmp_path, before + [odd] + after)
    recs[3] = with_length(recs[3], len(b"".join(recs)) * 3)  # past the end of the file
    rows, stats = read(encode(recs, how))
    assert [r["url"] for r in rows] == [p.url for p in before + after]
    assert_intact_kept(rows, before + after)
    assert stats.records_by_type[record_type] == 1 and stats.malformed_records == 1


def test_a_content_length_a_little_too_short_or_long_keeps_the_payload_whole(tmp_path):
    before, after = pages("before", 2), pages("after", 2)
    short, long = (
        Page("http://odd.example/short", html("short", INTACT).encode()),
        Page("http://odd.example/long", html("long", INTACT).encode()),
    )
    recs = records(tmp_path, before + [short, long] + after)
    n = lambda r: int(re.search(rb"Content-Length: (\d+)", r).group(1))  # noqa: E731
    recs[3], recs[4] = with_length(recs[3], n(recs[3]) - 100), with_length(recs[4], n(recs[4]) + 300)
    for how in ENCODINGS:
        rows, stats = read(encode(recs, how))
        assert_intact_kept(rows, before + [short, long] + after)
        assert stats.malformed_records == 2, how


# ------------------------------------------------------------------------------------------ class 2

BOMB_SIZE = 200 << 20  # 200 MiB of zeros: the reader stops at max_payload_bytes whatever the size


def _gzip_bomb(n: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    return b"".join(c.compress(chunk) for _ in range(n >> 20)) + c.flush()


def _deflate_bomb(n: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate, as many servers send it
    chunk = b"\0" * (1 << 20)
    return b"".join(c.compress(chunk) for _ in range(n >> 20)) + c.flush()


def _br_bomb(n: int) -> bytes:
    c = brotli.Compressor(quality=1)
    chunk = b"\0" * (1 << 20)
    return b"".join(c.process(chunk) for _ in range(n >> 20)) + c.finish()


def _zstd_bomb(n: int) -> bytes:
    return zstandard.ZstdCompressor(level=1).compress(b"\0" * n)


@pytest.mark.parametrize(
    "coding, bomb", [("gzip", _gzip_bomb), ("deflate", _deflate_bomb), ("br", _br_bomb), ("zstd", _zstd_bomb)]
)
def test_a_content_encoding_bomb_is_rejected_without_inflating_it(tmp_path, coding, bomb):
    before, after = pages("before", 2), pages("after", 2)
    body = bomb(BOMB_SIZE)
    evil = Page("http://evil.example/bomb", body, headers=[("Content-Encoding", coding)])
    rows, stats = read(members(records(tmp_path, before + [evil] + after)))
    assert_intact_kept(rows, before + after)
    bad = by_url(rows)[evil.url]
    assert bad[REASON] == "decompression_bomb" and coding in bad["details"], bad["details"]
    assert stats.malformed_records == 0


def test_an_encoded_page_that_inflates_past_the_limit_is_too_large(tmp_path):
    import random

    rng = random.Random(0)
    words = [bytes(rng.choice(b"abcdefghijklmnop") for _ in range(rng.randrange(3, 9))) for _ in range(2000)]
    text = b" ".join(rng.choice(words) for _ in range(300_000))  # ~2 MB of text, compresses ~3x
    evil = Page("http://big.example/page", gzip.compress(text), headers=[("Content-Encoding", "gzip")])
    before, after = pages("before", 1), pages("after", 1)
    rows, _ = read(members(records(tmp_path, before + [evil] + after)), WarcConfig(max_payload_bytes=1_000_000))
    assert_intact_kept(rows, before + after)
    bad = by_url(rows)[evil.url]
    assert bad[REASON] == "too_large" and "max_payload_bytes 1000000" in bad["details"]


def test_corrupt_encoded_content_is_bad_encoding_and_a_cut_stream_keeps_what_it_holds(tmp_path):
    body = html("Zipped", INTACT).encode()
    corrupt = Page(
        "http://odd.example/corrupt", b"\x1f\x8b\x08\x00" + b"\xff" * 200, headers=[("Content-Encoding", "gzip")]
    )
    cut = Page("http://odd.example/cut", gzip.compress(body)[:-30], headers=[("Content-Encoding", "gzip")])
    fine = Page("http://odd.example/fine", zlib.compress(body), headers=[("Content-Encoding", "deflate")])
    rows, _ = read(members(records(tmp_path, [corrupt, cut, fine])))
    got = by_url(rows)
    assert got[corrupt.url][REASON] == "bad_encoding"
    assert (
        got[cut.url][REASON] is None
        and body.startswith(got[cut.url]["payload"][:-8])
        and len(got[cut.url]["payload"]) > 100
    )
    assert got[fine.url][REASON] is None and got[fine.url]["payload"] == body


# ------------------------------------------------------------------------------------------ class 4


def test_a_corrupt_gzip_member_costs_only_its_record(tmp_path):
    before, after = pages("before", 3), pages("after", 3)
    victim = Page("http://victim.example/v", html("victim", INTACT).encode())
    recs = records(tmp_path, before + [victim] + after)
    parts = [gzip.compress(r) for r in recs]
    bad = bytearray(parts[4])
    bad[len(bad) // 2 : len(bad) // 2 + 16] = b"\xff" * 16
    parts[4] = bytes(bad)
    rows, stats = read(b"".join(parts))
    assert_intact_kept(rows, before + after)
    if victim.url in by_url(rows):  # the damage may leave its header readable: then it is a cut record
        assert by_url(rows)[victim.url][REASON] == "truncated_record"
    assert stats.malformed_records == 1
    assert "skipped to the next gzip member" in stats.errors[0] and "ends" not in stats.errors[0]


@pytest.mark.parametrize(
    "garbage", [b"\x00\x01garbage", b"HTTP/1.1 200 OK\r\n\r\n<html>", b"\x1f\x8b\x08\x00broken header"]
)
def test_garbage_between_gzip_members_is_skipped(tmp_path, garbage):
    before, after = pages("before", 3), pages("after", 3)
    recs = records(tmp_path, before + after)
    data = members(recs[:4]) + garbage * 50 + members(recs[4:])
    rows, stats = read(data)
    assert_intact_kept(rows, before + after)
    assert len(rows) == 6 and stats.malformed_records == 1


def test_a_truncated_gzip_member_followed_by_more_members(tmp_path):
    before, after = pages("before", 2), pages("after", 2)
    cut = Page("http://cut.example/c", html("cut", INTACT).encode())
    recs = records(tmp_path, before + [cut] + after)
    parts = [gzip.compress(r) for r in recs]
    parts[3] = parts[3][: len(parts[3]) * 2 // 3]
    rows, stats = read(b"".join(parts))
    assert_intact_kept(rows, before + after)
    assert by_url(rows).get(cut.url, {REASON: "truncated_record"})[REASON] == "truncated_record"
    assert stats.malformed_records == 1 and "ends" not in stats.errors[0]


# ------------------------------------------------------------------------------------------ class 5


@pytest.mark.parametrize("how", ["plain", "one-member"])
@pytest.mark.parametrize("garbage", [b"no newline at the end", b"\r\n\r\nWARC/1.0 but not a header", b"\x00" * 7])
def test_garbage_without_a_newline_does_not_cost_the_next_record(tmp_path, how, garbage):
    before, after = pages("before", 2), pages("after", 2)
    recs = records(tmp_path, before + after)
    joined = b"".join(recs[:3]) + garbage + b"".join(recs[3:])
    rows, stats = read(gzip.compress(joined) if how == "one-member" else joined)
    assert [r["url"] for r in rows] == [p.url for p in before + after]
    assert_intact_kept(rows, before + after)
    assert stats.malformed_records >= 1


# ------------------------------------------------------------------------------------------ class 6 (reader side)


@pytest.mark.parametrize("status", [b"40000 Too Big For int16", b"99999 X", b"7 Short", b"-200 Negative", b"OK 200"])
def test_an_impossible_http_status_is_bad_http(tmp_path, status):
    before, after = pages("before", 1), pages("after", 1)
    recs = records(tmp_path, before + [Page("http://odd.example/status", b"<html>x</html>")] + after)
    recs[2] = re.sub(rb"HTTP/1\.1 200 OK", b"HTTP/1.1 " + status, recs[2])
    rows, _ = read(b"".join(recs))
    assert_intact_kept(rows, before + after)
    assert by_url(rows)["http://odd.example/status"][REASON] == "bad_http"


def test_a_charset_parameter_with_a_nul_is_carried_not_fatal(tmp_path):
    evil = Page(
        "http://odd.example/nul", html("nul", INTACT).encode(), content_type="text/html; charset=utf-8\x00evil"
    )
    rows, _ = read(b"".join(records(tmp_path, pages("a", 1) + [evil] + pages("b", 1))))
    assert len(rows) == 3 and by_url(rows)[evil.url]["http_charset"] == "utf-8\x00evil"


def test_a_row_arrow_refuses_costs_only_itself():
    good = {
        "id": "a",
        "url": "http://ok/",
        "source": "s",
        "http_status": 200,
        "payload": b"<html>",
        "reason": None,
        "details": None,
    }
    bad = dict(good, id="b", http_status=70_000)  # int16 overflow, as a status the validation had missed would be
    stats = ReadStats()
    table = _to_table([good, bad, dict(good, id="c")], stats)
    assert table.schema == BATCH_SCHEMA
    assert table.column("id").to_pylist() == ["a", "b", "c"]
    assert table.column("reason").to_pylist() == [None, "read_error", None]
    assert stats.counters == {"error.ArrowInvalid": 1}


# ------------------------------------------------------------------------------------------ repeated ids


def test_a_repeated_record_id_is_rejected_so_ids_stay_unique(tmp_path):
    recs = records(tmp_path, pages("p", 3))
    dup = recs[2]  # the second response, again, further on
    rows, stats = read(b"".join(recs + [dup]))
    ids = [r["id"] for r in rows]
    assert len(ids) == 4 and len(set(ids)) == 4
    assert [r[REASON] for r in rows] == [None, None, None, "duplicate_record_id"]
    assert rows[3]["id"].startswith(rows[1]["id"] + "@") and "offset" in rows[3]["details"]
    assert stats.counters["duplicate_record_id"] == 1
