"""WARC, JSON lines and Parquet inputs in one run: each file read by its source (told by content), the
documents through the same stages, the `source` column naming each file, and the card's funnel adding
up for the run and for each kind of input."""

from __future__ import annotations

import gzip
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config import parse_config
from pipeline.runner import run
from tests.conftest import Page, html

pytestmark = pytest.mark.ray

WORDS = (
    "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver river "
    "mountain lantern orchard thunder velvet compass"
).split()


def _prose(rng: random.Random, sentences: int) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(14)).capitalize() + " and the other." for _ in range(sentences)
    )


@pytest.fixture(scope="module")
def mixed(ray_local, tmp_path_factory):
    rng = random.Random(7)
    src = tmp_path_factory.mktemp("in")
    shared = _prose(rng, 40)  # one text in all three inputs: dedup works across sources
    from tests.conftest import write_warc

    write_warc(
        src / "crawl.warc.gz",
        [Page(f"https://crawl.example/{i}", html(f"Page {i}", _prose(rng, 40)).encode()) for i in range(4)]
        + [Page("https://crawl.example/shared", html("Shared", shared).encode())],
    )
    lines = [
        json.dumps({"content": _prose(rng, 40), "meta": {"url": f"https://wiki.example/{i}"}, "lang_hint": "en"})
        for i in range(3)
    ]
    lines += [
        json.dumps({"content": shared, "meta": {"url": "https://wiki.example/shared"}}),
        "{not json",
        '"a string"',
        json.dumps({"content": ""}),
        json.dumps({"content": 42}),
    ]
    (src / "wiki.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    pq.write_table(
        pa.table(
            {
                "content": [_prose(rng, 40) for _ in range(3)] + [None],
                "meta": [{"url": f"https://code.example/{i}"} for i in range(4)],
            }
        ),
        src / "code.parquet",
    )
    out = tmp_path_factory.mktemp("out")
    off = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}
    cfg = parse_config(
        {
            "inputs": [str(src / "*")],
            "output": str(out),
            "filters": off,
            "langid": {"min_score": 0.0},
            "documents": {"text": "content", "url": "meta.url"},
            "pii": {"enabled": False},
            "shards": {"shuffle": {"groups": 2}},
        }
    )
    return out, run(cfg, progress=False)


def test_each_input_is_read_by_its_source_and_every_record_is_accounted_for(mixed):
    out, record = mixed
    extracted = record["phases"]["extracted"]
    assert record["status"] == "ok" and extracted["failed_units"] == {}
    assert extracted["files_by_kind"] == {"warc": 1, "documents": 2}
    # WARC: 5 responses (plus its warcinfo/request/metadata records,
    # counted, never rows); JSON lines: 8 records; Parquet: 4
    assert extracted["rows"] == 5 + 8 + 4 == extracted["kept"] + extracted["rejected"]
    reasons = extracted["rejected_by_reason"]
    assert reasons == {"malformed_line": 1, "not_object": 1, "no_text": 2, "wrong_type": 1}
    kept = pq.read_table(out / "documents" / "extracted").to_pylist()
    by_file = {r["source"].rsplit("/", 1)[-1] for r in kept}
    assert by_file == {"crawl.warc.gz", "wiki.jsonl.gz", "code.parquet"}
    assert {r["url"] for r in kept if r["source"].endswith("wiki.jsonl.gz")} >= {"https://wiki.example/0"}


def test_dedup_works_across_sources(mixed):
    out, record = mixed
    removed = record["phases"]["deduped"]["rejected_by_reason"]
    assert (
        removed.get("exact_duplicate", 0) + removed.get("duplicate", 0) == 1
    )  # the shared text of the WARC and the JSON lines
    kept = pq.read_table(out / "documents" / "deduped").to_pylist()
    assert sum(r["url"].endswith("/shared") for r in kept) == 1


def test_the_card_s_funnel_adds_up_for_the_run_and_for_each_source(mixed):
    out, record = mixed
    stats = json.loads((out / "card" / "stats.json").read_text())
    assert stats["funnel_adds_up"] and all(c["ok"] for c in stats["checks"]), stats["checks"]
    by_source = stats["funnel_by_source"]
    assert set(by_source) == {"warc", "documents"} and all(f["adds_up"] for f in by_source.values())
    # each kind's funnel starts from its own records and the two together make the run's documents
    assert by_source["documents"]["funnel"][0]["in"] == 12 and by_source["documents"]["funnel"][0]["out"] == 12
    assert by_source["warc"]["funnel"][0]["out"] == 5
    last = {k: f["funnel"][-1]["out"] for k, f in by_source.items()}
    assert sum(last.values()) == next(r for r in stats["funnel"] if r["phase"] == "shards")["in"]
    # the files are outside the working directory: the card names them by their name
    kinds = {f["file"].rsplit("/", 1)[-1]: f["kind"] for f in stats["sources"]["per_file"]}
    assert kinds == {"crawl.warc.gz": "warc", "wiki.jsonl.gz": "documents", "code.parquet": "documents"}
    card = (out / "README.md").read_text()
    assert "JSON lines / Parquet inputs (adds up" in card and "WARC inputs (adds up" in card


@pytest.fixture(scope="module")
def named(ray_local, tmp_path_factory):
    """WARC + JSON lines + Parquet inputs as named sources with other filters (C4 on for the crawl only), and an
    input given by an absolute path outside the working directory (every input here is)."""
    rng = random.Random(11)
    src = tmp_path_factory.mktemp("named-in")
    from tests.conftest import write_warc

    write_warc(
        src / "crawl.warc.gz",
        [Page(f"https://crawl.example/{i}", html(f"Page {i}", _prose(rng, 40)).encode()) for i in range(4)],
    )
    lines = [
        json.dumps({"content": _prose(rng, 40), "meta": {"url": f"https://wiki.example/{i}"}, "extra": {"n": i}})
        for i in range(3)
    ]
    (src / "wiki.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    pq.write_table(
        pa.table(
            {
                "content": [_prose(rng, 40) for _ in range(3)],
                "meta": [{"url": f"https://code.example/{i}"} for i in range(3)],
            }
        ),
        src / "code.parquet",
    )
    out = tmp_path_factory.mktemp("named-out")
    off = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "fineweb", "c4")}
    cfg = parse_config(
        {
            "output": str(out),
            "filters": off,
            "langid": {"min_score": 0.0},
            "documents": {"text": "content", "url": "meta.url"},
            "shards": {"shuffle": {"groups": 2}},
            "sources": [
                {"name": "web", "inputs": [str(src / "crawl.warc.gz")], "filters": {"c4": {"enabled": True}}},
                {"name": "wiki", "inputs": [str(src / "wiki.jsonl.gz")]},
                {"name": "code", "inputs": [str(src / "code.parquet")]},
            ],
        }
    )
    return out, run(cfg, progress=False)


def test_every_part_of_a_phase_has_one_schema_and_the_root_loads_as_a_dataset(named, tmp_path):
    """Issue 38.6: parts of three schemas (WARC parts without ``metadata``, dumps without the HTTP and charset columns,
    sources with C4 off without ``c4_*``) made ``datasets.load_dataset(OUTPUT_ROOT)`` fail with a CastError."""
    import datasets
    import yaml

    out, record = named
    assert record["status"] == "ok"
    for phase in ("extracted", "deduped", "final"):
        schemas = {f.name: pq.read_schema(f) for f in sorted((out / "documents" / phase).glob("*.parquet"))}
        assert len(schemas) == 3
        first = next(iter(schemas.values()))
        assert all(s.equals(first) for s in schemas.values()), {n: s.names for n, s in schemas.items()}
        assert {"metadata", "http_status", "charset", "c4_lines_removed", "source_name"} <= set(first.names)
    final = pq.read_table(out / "documents" / "final").to_pylist()
    by_source = {r["source_name"]: r for r in final}
    assert by_source["code"]["http_status"] is None and by_source["code"]["c4_lines_removed"] is None
    assert by_source["web"]["metadata"] is None and by_source["web"]["c4_lines_removed"] is not None
    card = (out / "README.md").read_text()
    configs = yaml.safe_load(card.split("---")[1])["configs"]
    for config in configs:
        loaded = datasets.load_dataset(str(out), config["config_name"], split="train", cache_dir=str(tmp_path / "c"))
        assert loaded.num_rows == len(final) and loaded.num_rows == record["phases"]["final"]["kept"]
    assert len(datasets.load_dataset(str(out), split="train", cache_dir=str(tmp_path / "d"))) == len(final)


def test_published_columns_name_inputs_as_the_card_does(named):
    """The ``source`` column named an input given by an absolute path by that path (the machine's folders); it names
    it as the card does (outside the working directory: by its name), in every phase and in the rejected rows."""
    out, _ = named
    for folder in ("documents", "rejected"):
        for phase in ("extracted", "deduped", "final"):
            for f in (out / folder / phase).glob("*.parquet"):
                sources = set(pq.read_table(f, columns=["source"]).column("source").to_pylist())
                assert sources <= {"crawl.warc.gz", "wiki.jsonl.gz", "code.parquet"}, (f, sources)
    stats = json.loads((out / "card" / "stats.json").read_text())
    assert {f["file"] for f in stats["sources"]["per_file"]} == {"crawl.warc.gz", "wiki.jsonl.gz", "code.parquet"}
    tokenizer = json.loads((out / "shards" / "manifest.json").read_text())["tokenizer"]
    assert not tokenizer["path"].startswith("/") and len(tokenizer["sha256"]) == 64
