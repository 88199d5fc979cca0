"""The dataset card on a hand-made output that has every phase (PII counts, quality scores, shards),
written from the documented columns and manifest fields, without Ray: numbers recomputed
independently, PII never shown, local and s3:// alike, a phase that did not finish a part, an
empty output, and the process-pool path."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.card import collect
from pipeline.card.parts import hosts
from pipeline.card.report import main as report_main
from pipeline.config import RunConfig
from stages.base import REJECTED_SCHEMA
from tests.pipeline.card.test_card_expected import expected, host, numbers
from tests.pipeline.card.test_card_svg import parse_svg

WORDS = "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver".split()
HOSTS = [
    "www.news.example",
    "blog.example.org",
    "shop.example.com",
    "203.0.113.9",
    "[2001:db8::7]",
    "forum.example.net",
]
#: Values a PII detector misses (benchmarks/results/pii_eval.md) or that hide in URLs: never in the card.
PLANTED = [
    "0491 570 156",
    "user@host.dom",
    "hunter2secret",
    "203.0.113.9",
    "DE89 3704 0044 0532 0130 00",
    "4111 1111 1111 1111",
    "2001:db8::7",
]
INPUTS = ["in/CC-MAIN-2024-10-a.warc.gz", "in/CC-MAIN-2024-10-b.warc.gz", "in/empty.warc.gz"]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _url(rng: random.Random, i: int) -> str:
    return f"https://{rng.choice(HOSTS)}/p/{i}"


def _table(rows: list[dict], schema: pa.Schema | None = None) -> pa.Table:
    if schema is not None:
        return pa.Table.from_pylist(rows, schema=schema)
    return pa.Table.from_pylist(rows)


def _write(root: Path, kind: str, phase: str, part: str, table: pa.Table) -> None:
    (root / kind / phase).mkdir(parents=True, exist_ok=True)
    pq.write_table(table, root / kind / phase / f"part-{part}.parquet")


def _marker(root: Path, phase: str, unit: str, **fields) -> None:
    """A unit's marker as pipeline.result.UnitResult writes it."""
    (root / "_done" / phase).mkdir(parents=True, exist_ok=True)
    (root / "_done" / phase / f"{unit}.json").write_text(json.dumps({"unit": unit, "fingerprint": "x", **fields}))


def _rejected(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist([{k: r.get(k) for k in REJECTED_SCHEMA.names} for r in rows], schema=REJECTED_SCHEMA)


def make_output(root: Path, seed: int = 7, docs_per_file: int = 60, empty: bool = False) -> Path:
    """An output of every phase from the documented columns: extracted -> deduped -> final -> shards."""
    rng = random.Random(seed)
    config = RunConfig.model_validate({"inputs": ["in/*.warc.gz"], "output": str(root)}).model_dump(mode="json")
    # a model file that is not on this machine: `curate report` cannot rebuild the config and says so
    config["classifiers"] = [
        {
            "name": "quality",
            "model": "/nowhere/quality.ftz",
            "label": "hq",
            "lowercase": False,
            "max_chars": None,
            "filter": {"threshold": 0.5, "remove": "below", "top_fraction": None, "by_language": {}},
        }
    ]
    config["output"]["rejected_text"] = True
    config["pii"] = {"entities": {"phone_number": "annotate"}}
    totals = {p: {"kept": 0, "rejected": 0} for p in ("extracted", "deduped", "final")}
    final_kept: list[dict] = []
    for f_i, source in enumerate(INPUTS):
        part = Path(source).name.removesuffix(".warc.gz") + f"-{f_i:08x}"
        n = 0 if empty or "empty" in source else docs_per_file
        _marker(
            root,
            "extracted",
            part,
            stage_docs_in={s: n for s in ("url_filter", "decode", "extract", "langid", "gopher_quality", "quality")},
            totals={
                "responses": n,
                "rows": n,
                "malformed_records": 1 if n else 0,
                "records_by_type": {"response": n, "request": n, "warcinfo": 1} if n else {"warcinfo": 1},
            },
            outputs={"source": source, "kind": "warc", "documents_part": bool(n)},
        )
        if not n:
            continue
        kept, rej = [], []
        for i in range(n):
            doc = {
                "id": f"urn:uuid:{f_i}-{i:04d}",
                "url": _url(rng, i),
                "source": source,
                "text": _text(rng, rng.randint(5, 400)),
                "language": rng.choice(["en", "en", "de", "fr", None]),
                "quality_score": None if i % 17 == 0 else round(rng.random(), 3),
            }
            roll = rng.random()
            if roll < 0.1:
                rej.append({**doc, "stage": "read", "reason": "not_html", "details": "application/json"})
            elif roll < 0.2:
                planted = (
                    f"call {PLANTED[0]} or mail {PLANTED[1]}; card {PLANTED[5]}, IBAN {PLANTED[4]}. " + doc["text"]
                )
                rej.append(
                    {
                        **doc,
                        "url": f"https://admin:{PLANTED[2]}@{PLANTED[3]}/login?next={i}",
                        "text": planted,
                        "stage": "gopher_quality",
                        "reason": "gopher_quality:min_doc_words",
                        "details": "12 < 50",
                    }
                )
            elif roll < 0.25:
                rej.append(
                    {
                        **doc,
                        "url": f"http://[{PLANTED[6]}]/x",
                        "stage": "langid",
                        "reason": "language_score",
                        "details": "en:0.2 < 0.65",
                    }
                )
            else:
                kept.append(doc)
        _write(root, "documents", "extracted", part, _table(kept))
        _write(root, "rejected", "extracted", part, _rejected(rej))
        totals["extracted"]["kept"] += len(kept)
        totals["extracted"]["rejected"] += len(rej)
        # dedup: every 4th document heads a cluster with the next one or two
        d_kept, d_rej = [], []
        i = 0
        while i < len(kept):
            size = 1 + (i % 4 == 0) * rng.choice([1, 2])
            head, dups = kept[i], kept[i + 1 : i + size]
            d_kept.append({**head, "dup_cluster_size": 1 + len(dups)})
            for j, d in enumerate(dups):
                d_rej.append(
                    {
                        **d,
                        "stage": "dedup",
                        "reason": "exact_duplicate" if j == 0 else "duplicate",
                        "details": json.dumps({"kept_id": head["id"], "cluster_size": 1 + len(dups)}),
                    }
                )
            i += 1 + len(dups)
        _write(
            root,
            "documents",
            "deduped",
            part,
            _table(
                d_kept,
                pa.schema(
                    [
                        ("id", pa.string()),
                        ("url", pa.string()),
                        ("source", pa.string()),
                        ("text", pa.large_string()),
                        ("language", pa.string()),
                        ("quality_score", pa.float32()),
                        ("dup_cluster_size", pa.int32()),
                    ]
                ),
            ),
        )
        _write(root, "rejected", "deduped", part, _rejected(d_rej))
        _marker(root, "deduped", part, outputs={"documents_part": True}, **{"in": len(kept)})
        totals["deduped"]["kept"] += len(d_kept)
        totals["deduped"]["rejected"] += len(d_rej)
        # final: the quality threshold, then PII counts
        f_kept, f_rej = [], []
        for d in d_kept:
            if d["quality_score"] is None or d["quality_score"] < 0.5:
                f_rej.append(
                    {**d, "stage": "quality_filter", "reason": "quality", "details": json.dumps({"threshold": 0.5})}
                )
            else:
                f_kept.append(
                    {
                        **d,
                        "pii_email_address": rng.choice([0, 0, 1, 3]),
                        "pii_phone_number": rng.choice([0, 0, 0, 2]),
                        "pii_ip_address": 0,
                    }
                )
        _write(root, "documents", "final", part, _table(f_kept))
        _write(root, "rejected", "final", part, _rejected(f_rej))
        _marker(
            root,
            "final",
            part,
            outputs={"documents_part": True},
            stage_docs_in={"quality_filter": len(d_kept), "pii": len(f_kept)},
        )
        totals["final"]["kept"] += len(f_kept)
        totals["final"]["rejected"] += len(f_rej)
        final_kept += f_kept
    # shards: one document without tokens, the rest in two groups of both formats
    no_tokens = final_kept[:1]
    written = len(final_kept) - len(no_tokens)
    if no_tokens:
        _write(
            root,
            "rejected",
            "shards",
            "group-00000",
            _rejected([{**no_tokens[0], "stage": "tokenize", "reason": "no_tokens"}]),
        )
    formats = {}
    for fmt, per_shard in (("mds", 7), ("webdataset", 5)):
        shards = []
        left = written
        while left > 0:
            k = min(per_shard, left)
            shards.append(
                {
                    "name": f"group-00000/shard.{len(shards):05d}",
                    "bytes": 1000 + 37 * k,
                    "sha256": "0" * 64,
                    "samples": k,
                    "tokens": 123 * k,
                }
            )
            left -= k
        formats[fmt] = {
            "shards": shards,
            "samples": sum(s["samples"] for s in shards),
            "tokens": sum(s["tokens"] for s in shards),
            "bytes": sum(s["bytes"] for s in shards),
            "index": f"shards/{fmt}/index.json",
        }
    (root / "shards").mkdir(parents=True, exist_ok=True)
    (root / "shards" / "manifest.json").write_text(
        json.dumps(
            {
                "run": "fixture",
                "source": "final",
                "documents": written,
                "tokenizer": {"path": "samples/tokenizer/tokenizer.json", "sha256": "ab" * 32, "dtype": "uint16"},
                "config_sha256": "cd" * 8,
                "groups": ["group-00000"],
                "formats": formats,
            }
        )
    )
    for unit in ("group-00000", "_manifest"):
        _marker(root, "shards", unit, totals={"documents": written})
    record = {
        "name": "fixture",
        "status": "ok",
        "config": config,
        "command": ["curate", "run", "fixture.yaml"],
        "versions": {"python": "3.11", "curate-pipeline": "0.1.0"},
        "inputs": INPUTS,
        "phases_run": ["extracted", "deduped", "final", "shards"],
        "started": "2026-01-01T00:00:00+00:00",
        "finished": "2026-01-01T00:10:00+00:00",
        "phases": {p: {**t, "seconds": 1.5} for p, t in totals.items()},
    }
    (root / "run.json").write_text(json.dumps(record))
    return root


def _card(out: Path) -> dict:
    return json.loads((out / "card" / "stats.json").read_text())


def _check_plots(out: Path, card: dict) -> None:
    assert card["plots"] and all((out / "card" / name).exists() for name in card["plots"])
    for name in card["plots"]:
        parse_svg((out / "card" / name).read_bytes())  # well-formed SVG, at least 100 px each way, inert


@pytest.fixture
def fixture_output(tmp_path) -> Path:
    return make_output(tmp_path / "out")


def test_card_of_every_phase_matches_an_independent_recount(fixture_output, capsys):
    out = fixture_output
    assert report_main([str(out)]) == 0
    assert "card: " in capsys.readouterr().out
    card = _card(out)
    assert numbers(card) == numbers(expected(out, card))  # every number, and no number it did not recount
    assert card["funnel_adds_up"] and all(c["ok"] for c in card["checks"])
    assert card["run"]["parts_by"].startswith("markers")  # the model file of the recorded config is not here
    # the phases that were being built when the card was written light up from their columns and manifest
    assert card["pii"]["present"] and card["pii"]["entities"]["PHONE_NUMBER"]["action"] == "annotate"
    (quality,) = card["classifiers"]["entries"]
    assert quality["name"] == "quality" and quality["removed"] > 0 and quality["threshold"] == 0.5
    assert card["tokens"]["present"] and card["tokens"]["formats"]["mds"]["shards"] >= 2
    steps = [r["step"] for r in card["funnel"]]
    assert steps[:2] == ["records", "extracted:read"] and steps[-3:] == [
        "final:quality_filter",
        "final:pii",
        "shards:tokenize",
    ]
    assert card["funnel"][-1]["out"] == card["tokens"]["documents"] == card["summary"]["documents"]
    readme = (out / "README.md").read_text()
    assert readme.startswith("---\npretty_name: fixture")
    for section in (
        "Summary",
        "Sources",
        "Processing",
        "Funnel",
        "Languages",
        "Classifiers",
        "Deduplication",
        "PII",
        "Tokens",
        "Known limitations",
        "How to reproduce",
    ):
        assert f"\n## {section}\n" in readme
    meta = yaml.safe_load(readme[4:].split("\n---\n", 1)[0])
    # one config, the documents after PII redaction; the shards are uploaded beside them, outside the configs
    assert meta["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "documents/final/*.parquet"}]}
    ]
    assert "'shards/webdataset/*.tar'" in readme and "'documents/final/*.parquet'" in readme
    assert f"{card['summary']['documents']:,} documents" in readme and "CC-MAIN-2024-10" in readme
    _check_plots(out, card)


def test_examples_never_show_a_planted_pii_value(fixture_output):
    raw = pq.read_table(fixture_output / "rejected" / "extracted").to_pylist()
    assert any(v in (r["text"] or "") + r["url"] for r in raw for v in PLANTED[:3])  # the values are in the data...
    assert report_main([str(fixture_output)]) == 0
    card = _card(fixture_output)
    shown = (fixture_output / "README.md").read_text() + (fixture_output / "card" / "stats.json").read_text()
    assert [v for v in PLANTED if v in shown] == []  # ...and never in the card
    texts = [e for e in card["examples"] if e["reason"] == "gopher_quality:min_doc_words"]
    assert texts and all(
        e["url"].startswith("https://<IP_ADDRESS>/login?next=") and e["text"] for e in texts
    )  # no userinfo, no IP


def test_report_on_s3_writes_the_same_card(fixture_output, s3_server, capsys):
    assert report_main([str(fixture_output)]) == 0
    local = (fixture_output / "card" / "stats.json").read_bytes()
    fs = pafs.S3FileSystem(
        endpoint_override=s3_server.removeprefix("http://"),
        scheme="http",
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    )
    fs.create_dir("card-bucket")
    pafs.copy_files(str(fixture_output), "card-bucket/run", destination_filesystem=fs)
    fs.delete_dir("card-bucket/run/card")
    assert report_main(["s3://card-bucket/run", "--endpoint-url", s3_server]) == 0
    assert "card: s3://card-bucket/run/README.md" in capsys.readouterr().out
    with fs.open_input_stream("card-bucket/run/card/stats.json") as f:
        assert f.read() == local
    names = {i.base_name for i in fs.get_file_info(pafs.FileSelector("card-bucket/run/card"))}
    assert {"stats.json", "funnel.svg", "pii.svg", "classifiers.svg"} <= names
    assert fs.get_file_info("card-bucket/run/README.md").type == pafs.FileType.File  # the card at the root


def test_a_part_a_phase_did_not_finish_is_a_step_of_its_own(fixture_output):
    part = sorted((fixture_output / "documents" / "final").glob("*.parquet"))[0]
    lost = pq.read_table(fixture_output / "documents" / "deduped" / part.name).num_rows
    part.unlink()
    (fixture_output / "rejected" / "final" / part.name).unlink()
    (fixture_output / "_done" / "final" / f"{part.stem.removeprefix('part-')}.json").unlink()
    assert report_main([str(fixture_output)]) == 1  # the manifest no longer matches: a failed check, exit 1
    card = _card(fixture_output)
    gap = next(r for r in card["funnel"] if r["step"] == "final:not_processed")
    assert gap["removed"] == lost and card["funnel_adds_up"]
    assert numbers(card) == numbers(expected(fixture_output, card))
    assert "not processed" in (fixture_output / "README.md").read_text()


def test_an_output_without_any_document_still_gets_a_card(tmp_path):
    out = make_output(tmp_path / "out", empty=True)
    assert report_main([str(out)]) == 0
    card = _card(out)
    assert card["summary"]["documents"] == 0 and card["summary"]["documents_share"] is None
    assert numbers(card) == numbers(expected(out, card))
    assert card["funnel_adds_up"]
    _check_plots(out, card)
    assert "**0 documents**" in (out / "README.md").read_text()


def test_process_pool_and_in_process_aggregates_agree(fixture_output, monkeypatch):
    assert report_main([str(fixture_output)]) == 0
    here = _card(fixture_output)
    monkeypatch.setattr(collect, "LOCAL_MAX_PARTS", 0)
    assert report_main([str(fixture_output), "--workers", "2"]) == 0
    assert _card(fixture_output) == here


def test_a_rebuilt_card_drops_the_plots_it_no_longer_draws(fixture_output):
    assert report_main([str(fixture_output)]) == 0
    card = fixture_output / "card"
    for name in ("old_plot.svg", "funnel.png", "old_plot.png"):  # a plot no longer drawn; PNGs of an older card
        (card / name).write_bytes(b"x")
    (card / "notes.txt").write_bytes(b"someone's")
    assert report_main([str(fixture_output)]) == 0
    assert not [n for n in ("old_plot.svg", "funnel.png", "old_plot.png") if (card / n).exists()]
    assert (card / "notes.txt").exists() and (card / "funnel.svg").exists()


def test_not_an_output_is_a_one_line_error(tmp_path, capsys):
    assert report_main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path}/run.json not found: not the output of a curate run"


URLS = [
    "https://User:Pw@WWW.Example.com:8080/a?b#c",
    "http://[2001:DB8::1]:80/",
    "https://203.0.113.5/x",
    "ftp://a@b@c.org/",
    "http://example.com",
    "https://www.www.example.com/",
    "mailto:someone@example.com",
    "not a url",
    "https:///path",
    "HTTP://Mixed.Case.Example/",
    "https://xn--bcher-kva.example/",
    "https://münchen.example/",
]


def test_arrow_hosts_agree_with_urlsplit():
    assert hosts(pa.array(URLS)).to_pylist() == [host(u) for u in URLS]


def test_a_part_file_no_marker_names_is_not_counted(fixture_output):
    assert report_main([str(fixture_output)]) == 0
    before = _card(fixture_output)
    # left by an earlier run with other inputs
    stale = fixture_output / "documents" / "final" / "part-stale-00000000.parquet"
    shutil.copy(next((fixture_output / "documents" / "final").glob("*.parquet")), stale)
    assert report_main([str(fixture_output)]) == 0
    after = _card(fixture_output)
    assert after["phases"]["final"]["parts"] == before["phases"]["final"]["parts"] == 2
    assert after["funnel"] == before["funnel"]


def test_every_planted_pii_value_of_the_samples_is_redacted_or_masked():
    from pipeline.card.examples import SHOW_CHARS, redact, show_text
    from tests.conftest import SAMPLES

    truth = [json.loads(line) for line in (SAMPLES / "ground_truth.jsonl").read_text().splitlines()]
    rows = [t for t in truth if t["pii"]]
    assert len(rows) > 150

    # each document's planted values in one short text, as the start of a removed page would show them
    def as_written(p: dict) -> str:  # URL credentials are listed as user:password, written inside a URL
        return f"ftp://{p['value']}@files.example.org/" if p["type"] == "URL_CREDENTIALS" else p["value"]

    texts = ["Contact: " + "; ".join(as_written(p) for p in t["pii"])[: SHOW_CHARS - 20] for t in rows]
    shown = [show_text(t, len(t)) for t in redact(texts)]
    leaks = [(p["type"], p["value"]) for t, s in zip(rows, shown, strict=False) for p in t["pii"] if p["value"] in s]
    assert leaks == []
    typed = sum(any(f"<{p['type']}>" in s for p in t["pii"]) for t, s in zip(rows, shown, strict=False))
    assert typed > 0.5 * len(rows)  # most found by the PII stage itself (typed placeholders), the rest masked
