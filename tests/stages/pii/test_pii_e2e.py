"""End to end: PII in the URLs of a WARC never reaches a published output -- documents/final, the MDS
samples (read back with streaming.StreamingDataset), the WebDataset .json members, the card."""

from __future__ import annotations

import json
import random
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest

from pipeline.config import parse_config
from pipeline.runner import run
from tests.conftest import Page, html, write_warc

pytestmark = pytest.mark.ray

WORDS = "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver orange".split()
# (URL, what of it must never be published)
URLS = [
    (
        "https://user:s3cretpw@site-a.example/peter.parker@yahoo.com/?ssn=536-22-1974&page=2",
        ["s3cretpw", "peter.parker", "536-22-1974"],
    ),
    ("https://site-b.example/pay?cc=4111%201111%201111%201111&iban=DE89370400440532013000", ["4111", "DE89"]),
    ("https://site-c.example/u/john.smith%2540gmail.com/profile", ["john.smith"]),
    ("https://site-d.example/q?mail=ann%40example.org&tel=%2B49%2030%2012345678", ["ann%40", "ann@", "12345678"]),
    ("https://site-e.example/card/4012.8888.8888.1881#contact=bob@example.net", ["4012.8888", "bob@"]),
]
PLAIN = [f"https://site-{c}.example/articles/2024/05/{i}" for c in "fgh" for i in range(3)]
NOT_HTML = "https://admin:hunter2xyz@203.0.113.9/export.json?owner=eve@example.com"
SECRETS = [s for _, ss in URLS for s in ss] + ["hunter2xyz", "203.0.113.9", "eve@example.com"]


def _page(rng: random.Random, url: str, i: int) -> Page:
    paras = [
        " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(6)) for _ in range(3)
    ]
    return Page(url, html(f"Page {i} {rng.random():.6f}", *paras).encode())


@pytest.fixture(scope="module")
def output(ray_local, tmp_path_factory):
    rng = random.Random(5)
    src = tmp_path_factory.mktemp("warcs")
    pages = [_page(rng, u, i) for i, (u, _) in enumerate(URLS)] + [_page(rng, u, 100 + i) for i, u in enumerate(PLAIN)]
    pages.append(Page(NOT_HTML, b'{"owner": "x"}', content_type="application/json"))
    write_warc(src / "a.warc.gz", pages[::2])
    write_warc(src / "b.warc.gz", pages[1::2])
    out = tmp_path_factory.mktemp("out") / "run"
    config = parse_config(
        {
            "inputs": [str(src / "*.warc.gz")],
            "output": {"root": str(out), "rejected_text": True},
            "langid": {"min_score": 0.0},
            "filters": {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")},
            "shards": {"shuffle": {"groups": 2}, "mds": {"size_limit": 4096}, "webdataset": {"maxcount": 4}},
        }
    )
    record = run(config, progress=False)
    assert record["status"] == "ok"
    return out


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_documents_final_holds_redacted_urls_only(output):
    final = pq.read_table(output / "documents" / "final").to_pylist()
    assert len(final) == len(URLS) + len(PLAIN)
    assert _leaks(json.dumps(final, default=str)) == []
    by_host = {urlsplit(d["url"]).hostname: d for d in final}
    for url, _ in URLS:  # same scheme and host, parseable, counted
        d = by_host[urlsplit(url).hostname]
        assert urlsplit(d["url"]).scheme == "https" and d["pii_url"] >= 1, d["url"]
    assert by_host["site-a.example"]["url"] == "https://site-a.example/%3CEMAIL_ADDRESS%3E/?ssn=%3CUS_SSN%3E&page=2"
    assert sorted(d["url"] for d in final if d["pii_url"] == 0) == sorted(PLAIN)  # the rest untouched
    assert "url_original" not in final[0]


def test_mds_samples_read_back_hold_no_url_pii(output, tmp_path):
    import streaming

    ds = streaming.StreamingDataset(local=str(output / "shards" / "mds"), remote=None, shuffle=False, batch_size=1)
    samples = [ds[i] for i in range(len(ds))]
    assert len(samples) == len(URLS) + len(PLAIN)
    urls = [s["url"] for s in samples]
    assert _leaks(json.dumps(urls)) == [] and sum("%3C" in u for u in urls) == len(URLS)


def test_webdataset_json_members_hold_no_url_pii(output):
    import webdataset as wds

    index = json.loads((output / "shards" / "webdataset" / "index.json").read_text())
    members = [
        s["json"]
        for s in wds.WebDataset(
            [str(output / "shards" / "webdataset" / s["url"]) for s in index["shardlist"]], shardshuffle=False
        ).decode()
    ]
    assert len(members) == len(URLS) + len(PLAIN)
    assert _leaks(json.dumps(members)) == [] and sum("%3C" in m["url"] for m in members) == len(URLS)


def test_the_card_shows_no_url_pii(output):
    card = (output / "README.md").read_text() + (output / "card" / "stats.json").read_text()
    assert _leaks(card) == []
    stats = json.loads((output / "card" / "stats.json").read_text())
    shown = [e["url"] for e in stats["examples"]]
    assert "https://<IP_ADDRESS>/export.json?owner=<EMAIL_ADDRESS>" in shown  # the removed non-HTML record
