"""The WARC reader on real WARC files written by warcio, intact and damaged."""

from __future__ import annotations

import gzip

import pytest

from stages.base import REASON
from stages.warc import ReadStats, WarcConfig, WarcReader
from tests.conftest import Page, html


def read(path, config=None):
    stats = ReadStats()
    with open(path, "rb") as f:
        rows = [r for t in WarcReader(config).iter_batches(f, str(path), stats) for r in t.to_pylist()]
    return rows, stats


def pages(n):
    return [
        Page(f"http://example.com/{i}", html(f"Page {i}", f"Paragraph number {i} " * 20).encode()) for i in range(n)
    ]


def test_reads_responses_and_counts_other_types(warc_factory):
    path = warc_factory("a.warc.gz", pages(3), with_requests=True)
    rows, stats = read(path)
    assert [r["url"] for r in rows] == [f"http://example.com/{i}" for i in range(3)]
    assert all(r[REASON] is None for r in rows)
    assert stats.records_by_type == {"warcinfo": 1, "request": 3, "response": 3}
    assert stats.malformed_records == 0
    assert rows[0]["id"].startswith("urn:uuid:") and "<" not in rows[0]["id"]
    assert rows[0]["payload"].startswith(b"<!doctype html>")
    assert rows[0]["warc_date"] is not None and rows[0]["http_status"] == 200 and rows[0]["http_charset"] == "utf-8"


def test_uncompressed_warc_gives_the_same_rows(warc_factory):
    gz, _ = read(warc_factory("a.warc.gz", pages(4)))
    plain, _ = read(warc_factory("a.warc", pages(4), gzip=False))
    assert [(r["url"], r["payload"]) for r in gz] == [(r["url"], r["payload"]) for r in plain]


def test_non_html_and_error_responses_are_rows_with_reasons(warc_factory):
    path = warc_factory(
        "mixed.warc.gz",
        [
            Page("http://x.org/robots.txt", b"User-agent: *\nDisallow:\n", "text/plain"),
            Page("http://x.org/a.png", b"\x89PNG\r\n\x1a\n" + bytes(100), "image/png"),
            Page("http://x.org/gone", html("404", "not here").encode(), status="404 Not Found"),
            Page("http://x.org/moved", b"", status="301 Moved Permanently", headers=[("Location", "http://x.org/")]),
            Page("http://x.org/sniffed-pdf", b"%PDF-1.4 ...", "text/html", identified_type="application/pdf"),
            Page("http://x.org/untyped", html("Untyped", "text").encode(), content_type=None),
            Page("http://x.org/empty", b"   ", "text/html"),
            Page("http://x.org/ok", html("Fine", "a paragraph").encode()),
        ],
    )
    rows, stats = read(path)
    got = {r["url"].rsplit("/", 1)[1]: (r[REASON], r["details"]) for r in rows}
    assert got == {
        "robots.txt": ("not_html", "text/plain"),
        "a.png": ("not_html", "image/png"),
        "gone": ("http_status", "404"),
        "moved": ("http_status", "301"),
        "sniffed-pdf": ("not_html", "application/pdf"),
        "untyped": (None, None),  # no Content-Type: sniffed as HTML from the bytes
        "empty": ("empty", None),
        "ok": (None, None),
    }
    assert all(r["payload"] == b"" for r in rows if r[REASON])  # rejected rows carry no bytes


def test_too_large_payload_is_rejected_without_reading_it(warc_factory):
    big = html("Big", "x" * 200_000).encode()
    rows, _ = read(
        warc_factory("big.warc.gz", [Page("http://x.org/big", big)] + pages(1)), WarcConfig(max_payload_bytes=100_000)
    )
    assert rows[0][REASON] == "too_large" and "100000" in rows[0]["details"]
    assert rows[1][REASON] is None


def test_content_encoding_gzip_is_decoded(warc_factory):
    body = html("Zipped", "compressed body").encode()
    rows, _ = read(
        warc_factory(
            "ce.warc.gz", [Page("http://x.org/z", gzip.compress(body), headers=[("Content-Encoding", "gzip")])]
        )
    )
    assert rows[0][REASON] is None and rows[0]["payload"] == body


def test_truncated_gzip_keeps_every_record_before_the_cut(warc_factory, tmp_path, caplog):
    data = warc_factory("t.warc.gz", pages(10)).read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: int(len(data) * 0.75)])
    rows, stats = read(cut)
    intact = [r for r in rows if r[REASON] is None]
    assert len(intact) >= 6 and [r["url"] for r in intact] == [f"http://example.com/{i}" for i in range(len(intact))]
    assert stats.malformed_records >= 1
    assert any("ends early" in e for e in stats.errors)
    # A record the cut went through is accounted for, not dropped silently.
    assert all(r[REASON] in (None, "truncated_record") for r in rows)


def _raw_records(path):
    return gzip.decompress(path.read_bytes()).split(b"WARC/1.0\r\n")[1:]


def _join(records):
    return b"".join(b"WARC/1.0\r\n" + r for r in records)


def test_content_length_too_long_resyncs_on_the_next_header(warc_factory, tmp_path):
    recs = _raw_records(warc_factory("cl.warc.gz", pages(5)))
    # records: warcinfo, then 5 responses; make the 2nd response claim 5000 more bytes
    head, rest = recs[2].split(b"\r\n\r\n", 1)
    lines = [
        line
        if not line.startswith(b"Content-Length: ")
        else b"Content-Length: %d" % (int(line.split(b": ")[1]) + 5000)
        for line in head.split(b"\r\n")
    ]
    recs[2] = b"\r\n".join(lines) + b"\r\n\r\n" + rest
    bad = tmp_path / "cl-long.warc"
    bad.write_bytes(_join(recs))
    rows, stats = read(bad)
    assert [r["url"][-1] for r in rows] == list("01234")
    # The record ends where the next one starts: its payload is whole, the length was wrong.
    assert [r[REASON] for r in rows] == [None] * 5
    assert rows[1]["payload"] == pages(5)[1].body
    assert stats.malformed_records == 1 and "Content-Length" in stats.errors[0]


def test_content_length_too_short_resyncs_on_the_next_header(warc_factory, tmp_path):
    recs = _raw_records(warc_factory("cl.warc.gz", pages(5)))
    head, rest = recs[3].split(b"\r\n\r\n", 1)
    lines = [
        line if not line.startswith(b"Content-Length: ") else b"Content-Length: 150" for line in head.split(b"\r\n")
    ]
    recs[3] = b"\r\n".join(lines) + b"\r\n\r\n" + rest
    bad = tmp_path / "cl-short.warc"
    bad.write_bytes(_join(recs))
    rows, stats = read(bad)
    assert [r["url"][-1] for r in rows] == list("01234")  # nothing after the bad record is lost
    assert stats.malformed_records == 1


def test_garbage_between_records_is_skipped(warc_factory, tmp_path):
    recs = _raw_records(warc_factory("g.warc.gz", pages(3)))
    data = _join(recs[:2]) + b"\x00garbage that is not a record\r\n" * 50 + _join(recs[2:])
    bad = tmp_path / "garbage.warc"
    bad.write_bytes(data)
    rows, stats = read(bad)
    assert [r["url"][-1] for r in rows] == list("012")
    assert stats.malformed_records == 1


@pytest.mark.parametrize(
    "content, expect_error",
    [(b"", False), (b"this is not a warc file\n" * 100, True), (gzip.compress(b"<html>no warc</html>"), True)],
    ids=["empty", "text", "gzipped-html"],
)
def test_files_that_are_not_warcs(tmp_path, content, expect_error):
    p = tmp_path / "x.warc.gz"
    p.write_bytes(content)
    rows, stats = read(p)
    assert rows == []
    assert bool(stats.errors) == expect_error
    assert stats.malformed_records == (1 if expect_error else 0)


def test_corrupt_gzip_member_stops_cleanly(warc_factory, tmp_path):
    data = bytearray(warc_factory("c.warc.gz", pages(6)).read_bytes())
    mid = len(data) // 2
    data[mid : mid + 40] = b"\xff" * 40
    p = tmp_path / "corrupt.warc.gz"
    p.write_bytes(bytes(data))
    rows, stats = read(p)
    assert 1 <= len(rows) < 6
    assert stats.malformed_records >= 1 and stats.errors


def test_batches_respect_batch_size(warc_factory):
    path = warc_factory("b.warc.gz", pages(7))
    stats = ReadStats()
    with open(path, "rb") as f:
        sizes = [len(t) for t in WarcReader(WarcConfig(batch_size=3)).iter_batches(f, "b", stats)]
    assert sizes == [3, 3, 1]


def test_sniffed_compression_type_defers_to_the_declared_type(warc_factory):
    body = html("Zipped", "compressed body").encode()
    page = Page(
        "http://x.org/z",
        gzip.compress(body),
        headers=[("Content-Encoding", "gzip")],
        identified_type="application/gzip",
    )
    rows, _ = read(warc_factory("ce2.warc.gz", [page]))
    assert rows[0][REASON] is None and rows[0]["content_type"] == "text/html" and rows[0]["payload"] == body


# The hand-made broken files in samples/broken (see expected.json there): every
# intact record is read, where warcio and fastwarc alone lose some.
SAMPLES_BROKEN = __import__("tests.conftest", fromlist=["SAMPLES"]).SAMPLES / "broken"


@pytest.mark.parametrize(
    "name, urls, reasons, malformed",
    [
        ("truncated.warc.gz", ["page1", "page2", "page3"], [None, None, "truncated_record"], 1),
        ("bad-content-length.warc.gz", ["page1", "page2", "page3", "page4", "page5"], [None] * 5, 2),
        ("not-a-warc.warc.gz", [], [], 1),
        ("empty.warc.gz", [], [], 0),
    ],
)
def test_sample_broken_files(name, urls, reasons, malformed):
    rows, stats = read(SAMPLES_BROKEN / name)
    assert [r["url"].rsplit("/", 1)[1].removesuffix(".html") for r in rows] == urls
    assert [r[REASON] for r in rows] == reasons
    assert stats.malformed_records == malformed


HOSTILE = {
    k: v for k, v in __import__("json").loads((SAMPLES_BROKEN / "expected.json").read_text()).items() if "expect" in v
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_sample_hostile_files(name):
    """samples/broken/hostile-*: every intact page kept, each hostile response rejected with its reason."""
    rows, stats = read(SAMPLES_BROKEN / name)
    expect = HOSTILE[name]
    assert {r["url"].rsplit("/", 1)[1]: r[REASON] for r in rows} == expect["expect"]
    assert sum(r[REASON] is None for r in rows) >= expect["intact_records"]
    assert stats.malformed_records == expect["malformed_records"]
    assert len({r["id"] for r in rows}) == len(rows)
