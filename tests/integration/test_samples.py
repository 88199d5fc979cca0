"""Checks on the committed sample WARC files in samples/ and their ground truth.

The samples are built by samples/make_samples.py; these tests only read them.
"""

from __future__ import annotations

import codecs
import collections
import gzip
import json
from html import escape
from pathlib import Path

import pytest
from fastwarc.warc import ArchiveIterator as FastIterator, WarcRecordType
from warcio.archiveiterator import ArchiveIterator as WarcioIterator

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
WARCS = sorted(SAMPLES.glob("CC-MAIN-*.warc.gz"))
KINDS = {
    "prose",
    "nav",
    "spam",
    "near_duplicate",
    "exact_duplicate",
    "pii",
    "pii_prose",
    "non_html",
    "http_error",
    "redirect",
    "odd",
}
PII_TYPES = {"EMAIL_ADDRESS", "PHONE_NUMBER", "IP_ADDRESS", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "URL_CREDENTIALS"}
NOT_PII_TYPES = {
    "ISBN",
    "VERSION",
    "ORDER_NUMBER",
    "TRACKING_NUMBER",
    "DATE",
    "TIME",
    "PRICE",
    "COORDINATES",
    "SPORTS_SCORE",
    "STATISTIC",
    "HEX_HASH",
    "UUID",
    "CARD_LIKE",
    "PRODUCT_CODE",
}


def _norm(label):
    return codecs.lookup(label).name if label else None


@pytest.fixture(scope="module")
def truth() -> dict[str, dict]:
    rows = [
        json.loads(line) for line in (SAMPLES / "ground_truth.jsonl").read_text(encoding="utf-8").splitlines() if line
    ]
    by_id = {r["id"]: r for r in rows}
    assert len(by_id) == len(rows), "duplicate ids in ground_truth.jsonl"
    return by_id


@pytest.fixture(scope="module")
def warcio_view() -> dict[str, list[dict]]:
    """file name -> records in order, read with warcio."""
    out = {}
    for path in WARCS:
        recs = []
        with open(path, "rb") as fh:
            for rec in WarcioIterator(fh):
                h = rec.rec_headers
                recs.append(
                    {
                        "type": rec.rec_type,
                        "id": h.get_header("WARC-Record-ID"),
                        "concurrent": h.get_header("WARC-Concurrent-To"),
                        "warcinfo": h.get_header("WARC-Warcinfo-ID"),
                        "uri": h.get_header("WARC-Target-URI"),
                        "ctype": rec.http_headers.get_header("Content-Type") if rec.http_headers else None,
                    }
                )
        out[path.name] = recs
    return out


@pytest.fixture(scope="module")
def fast_view() -> dict[str, list[dict]]:
    """file name -> records in order, read with fastwarc (given a path string: it must not get a Python stream)."""
    out = {}
    for path in WARCS:
        recs = []
        for rec in FastIterator(str(path), parse_http=True, fsspec_args=False):
            item = {"type": rec.headers.get("WARC-Type"), "id": rec.headers.get("WARC-Record-ID")}
            if rec.record_type == WarcRecordType.response:
                item["http"] = {k.lower(): v for k, v in rec.http_headers}
                item["truncated"] = rec.headers.get("WARC-Truncated")
                item["body"] = rec.reader.read()
            recs.append(item)
        out[path.name] = recs
    return out


def _bodies(fast_view) -> dict[str, tuple[bytes, dict, str | None]]:
    return {
        r["id"].strip("<>"): (r["body"], r["http"], r["truncated"])
        for recs in fast_view.values()
        for r in recs
        if "body" in r
    }


def _decoded(body: bytes, http: dict) -> bytes:
    return gzip.decompress(body) if http.get("content-encoding") == "gzip" else body


# ------------------------------------------------------------------------------------------------ files


def test_files_exist_and_small():
    assert len(WARCS) == 6  # five from the first generation, the sixth holds the pii_prose pages
    total = sum(p.stat().st_size for p in WARCS)
    assert total < 20 * 1024 * 1024, total
    for name in ("ground_truth.jsonl", "ground_truth.md", "README.md", "make_samples.py"):
        assert (SAMPLES / name).is_file(), name
    for name in (
        "truncated.warc.gz",
        "bad-content-length.warc.gz",
        "not-a-warc.warc.gz",
        "empty.warc.gz",
        "expected.json",
    ):
        assert (SAMPLES / "broken" / name).is_file(), name
    expected = json.loads((SAMPLES / "broken" / "expected.json").read_text())
    on_disk = {p.name for p in (SAMPLES / "broken").iterdir() if p.suffix in (".gz", ".warc")}
    assert set(expected) == on_disk  # every broken file is described, and every description has its file
    assert (SAMPLES / "broken" / "empty.warc.gz").stat().st_size == 0
    assert not (SAMPLES / "broken" / "not-a-warc.warc.gz").read_bytes().startswith(b"\x1f\x8b")
    with pytest.raises(EOFError):
        gzip.decompress((SAMPLES / "broken" / "truncated.warc.gz").read_bytes())


def test_warcio_and_fastwarc_agree(warcio_view, fast_view):
    for name in warcio_view:
        a = [(r["type"], r["id"]) for r in warcio_view[name]]
        b = [(r["type"], r["id"]) for r in fast_view[name]]
        assert len(a) == len(b), name
        assert a == b, name
        counts = collections.Counter(t for t, _ in a)
        assert counts["warcinfo"] == 1 and a[0][0] == "warcinfo", name
        assert counts["request"] == counts["response"] == counts["metadata"] > 0, (name, counts)
    assert sum(len(v) for v in warcio_view.values()) >= 2000  # "a few thousand" records


def test_block_and_payload_digests():
    for path in WARCS:
        for rec in FastIterator(str(path), parse_http=False, fsspec_args=False):
            assert rec.verify_block_digest(), (path.name, rec.headers.get("WARC-Record-ID"))
        for rec in FastIterator(str(path), parse_http=True, fsspec_args=False, record_types=WarcRecordType.response):
            assert rec.verify_payload_digest(), (path.name, rec.headers.get("WARC-Record-ID"))


def test_record_links(warcio_view):
    for name, recs in warcio_view.items():
        info_id = recs[0]["id"]
        by_id = {r["id"]: r for r in recs}
        for r in recs[1:]:
            assert r["warcinfo"] == info_id, (name, r["id"])
            assert r["concurrent"] in by_id, (name, r["id"])
            other = by_id[r["concurrent"]]
            assert other["uri"] == r["uri"]
            if r["type"] in ("request", "metadata"):
                assert other["type"] == "response"


# ------------------------------------------------------------------------------------------------ ground truth


def test_ids_match_ground_truth(warcio_view, truth):
    seen = {}
    for name, recs in warcio_view.items():
        for r in recs:
            if r["type"] == "response":
                rid = r["id"].strip("<>")
                seen[rid] = (name, r["uri"])
    assert set(seen) == set(truth), (len(set(seen) - set(truth)), len(set(truth) - set(seen)))
    for rid, (name, uri) in seen.items():
        assert truth[rid]["file"] == name
        assert truth[rid]["url"] == uri


def test_ground_truth_fields(truth):
    for r in truth.values():
        assert r["kind"] in KINDS, r
        assert r["expect"] in ("keep", "reject"), r
        assert {p["type"] for p in r["pii"]} <= PII_TYPES, r
        assert {p["type"] for p in r["not_pii"]} <= NOT_PII_TYPES, r
        assert set(r["charset_declared"]) == {"http", "meta"}
        if r["charset"]:
            codecs.lookup(r["charset"])
        if r["language"]:
            assert len(r["language"]) == 2
    kinds = collections.Counter(r["kind"] for r in truth.values())
    assert all(kinds[k] > 0 for k in KINDS), kinds


def test_http_charset_matches_header(fast_view, truth):
    bodies = _bodies(fast_view)
    for rid, r in truth.items():
        ctype = bodies[rid][1].get("content-type", "")
        declared = ctype.split("charset=", 1)[1].strip() if "charset=" in ctype else None
        assert _norm(declared) == _norm(r["charset_declared"]["http"]), (r["url"], ctype, r["charset_declared"])


def test_html_decodes_with_its_charset(fast_view, truth):
    bodies = _bodies(fast_view)
    langs, charsets = collections.Counter(), collections.Counter()
    for rid, r in truth.items():
        if (
            r["identified_payload_type"] not in ("text/html", "application/xhtml+xml", "application/gzip")
            or not r["charset"]
        ):
            continue
        body, http, truncated = bodies[rid]
        text = _decoded(body, http).decode(r["charset"], errors="ignore" if truncated else "strict")
        if r["status"] == 200 and r["charset_declared"]["meta"]:
            assert r["charset_declared"]["meta"].lower() in text[:5000].lower(), r["url"]
        langs[r["language"]] += 1
        charsets[_norm(r["charset"])] += 1
    assert {"en", "de", "fr", "es", "ja", "zh", "ru", "ko"} <= set(langs), langs
    for cs in (
        "utf-8",
        "iso8859-1",
        "cp1252",
        "shift_jis",
        "euc_jp",
        "iso2022_jp",
        "euc_kr",
        "gbk",
        "koi8-r",
        "cp1251",
    ):
        assert charsets[cs] > 0, (cs, charsets)


def test_duplicate_clusters(truth, warcio_view):
    position = {}
    for fi, name in enumerate(sorted(warcio_view)):
        for ri, r in enumerate(warcio_view[name]):
            position[r["id"].strip("<>")] = (fi, ri)
    clusters = collections.defaultdict(list)
    for r in truth.values():
        if r["dup_cluster"]:
            assert r["kind"] in ("near_duplicate", "exact_duplicate"), r
            clusters[r["dup_cluster"]].append(r)
        else:
            assert r["kind"] not in ("near_duplicate", "exact_duplicate"), r
    near = {c: m for c, m in clusters.items() if m[0]["kind"] == "near_duplicate"}
    assert len(near) >= 30
    spread = sum(len({m["file"] for m in members}) >= 2 for members in near.values())
    assert spread >= 0.9 * len(near), (spread, len(near))
    for cid, members in clusters.items():
        assert len(members) >= 2, cid
        assert len({m["kind"] for m in members}) == 1, cid
        first = min(members, key=lambda m: position[m["id"]])
        assert first["dup_variation"] == [], (cid, first["url"])
        assert [m for m in members if m["expect"] == "keep"] in ([first], []), cid
        for m in members:
            if m is not first:
                assert m["dup_variation"] and m["expect"] == "reject", (cid, m["url"])


def test_exact_duplicates_share_payload(fast_view, truth):
    bodies = _bodies(fast_view)
    clusters = collections.defaultdict(set)
    for rid, r in truth.items():
        if r["kind"] == "exact_duplicate":
            clusters[r["dup_cluster"]].add(bodies[rid][0])
    assert clusters and all(len(b) == 1 for b in clusters.values())


def test_pii_values_in_page(fast_view, truth):
    bodies = _bodies(fast_view)
    n = 0
    for rid, r in truth.items():
        if not r["pii"]:
            continue
        body, http, _ = bodies[rid]
        text = _decoded(body, http).decode(r["charset"])
        for item in r["pii"]:
            assert item["value"] in text, (r["url"], item)
            n += 1
    assert n >= 200
    types = collections.Counter(p["type"] for r in truth.values() for p in r["pii"])
    assert all(types[t] > 0 for t in PII_TYPES), types


def test_pii_prose_pages(fast_view, truth):
    """The prose pages with planted PII: en/de/fr/es, every PII type and look-alike type, each value verbatim."""
    bodies = _bodies(fast_view)
    rows = [r for r in truth.values() if r["kind"] == "pii_prose"]
    assert {r["language"] for r in rows} == {"en", "de", "fr", "es"}
    assert {r["file"] for r in rows} == {WARCS[-1].name}  # a file of their own: the first five stayed as they were
    assert {p["type"] for r in rows for p in r["pii"]} == PII_TYPES
    assert {p["type"] for r in rows for p in r["not_pii"]} == NOT_PII_TYPES
    for r in rows:
        assert r["expect"] == "keep" and r["pii"] and r["not_pii"], r["url"]
        text = bodies[r["id"]][0].decode(r["charset"])
        for item in r["pii"] + r["not_pii"]:
            assert escape(item["value"], quote=False) in text, (r["url"], item)


def test_hostile_broken_files_are_what_their_generator_writes(tmp_path):
    import runpy

    hostile = runpy.run_path(str(SAMPLES / "broken" / "make_hostile.py"))
    hostile["write_all"](tmp_path)
    for name in hostile["FILES"]:
        assert (tmp_path / name).read_bytes() == (SAMPLES / "broken" / name).read_bytes(), name
    expected = json.loads((SAMPLES / "broken" / "expected.json").read_text())
    regenerated = json.loads((tmp_path / "expected.json").read_text())
    assert {k: expected[k] for k in regenerated} == regenerated
