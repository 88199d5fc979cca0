"""Two named sources through a whole run at 30/70 of the output tokens: the shards hold the shares, the same
config gives the same bytes (twice, and on Ray's shuffle as in the driver), each source's own settings
apply, dedup keeps the copy of the preferred source, and the manifest and the card report the mix."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.card.report import main as report_main
from pipeline.config import parse_config
from pipeline.runner import run
from tests.pipeline.card.test_card_svg import parse_svg, texts
from tests.stages.test_mix import card_text

pytestmark = pytest.mark.ray

OFF = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}


def _words(rng: random.Random, vocab: list[str], n: int) -> str:
    sentences, left = [], n
    while left > 0:
        k = min(left, rng.randint(8, 20))
        sentences.append(" ".join(rng.choice(vocab) for _ in range(k)).capitalize() + ".")
        left -= k
    return " ".join(sentences)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    """web: 500 documents (field text), books: 40 longer ones (field body): very different raw sizes; one text in both;
    a repetitive page in each, which only web's own settings (Gopher repetition on) remove."""
    rng = random.Random(22)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(3000)]
    folder = tmp_path_factory.mktemp("sources")
    shared = _words(rng, vocab, 300)
    loop = " ".join(["the same line again and again"] * 60)
    web = [
        {"id": f"web-{i}", "url": f"https://web.example/{i}", "text": _words(rng, vocab, rng.randint(30, 600))}
        for i in range(500)
    ]
    web += [
        {"id": "web-shared", "url": "https://web.example/shared", "text": shared},
        {"id": "web-loop", "url": "https://web.example/loop", "text": loop},
    ]
    books = [
        {"id": f"book-{i}", "url": f"https://books.example/{i}", "body": _words(rng, vocab, rng.randint(400, 1500))}
        for i in range(40)
    ]
    books += [
        {"id": "book-shared", "url": "https://books.example/shared", "body": shared},
        {"id": "book-loop", "url": "https://books.example/loop", "body": loop.replace("again", "once more")},
    ]
    for name, rows in (("web", web), ("books", books)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _config(src: Path, out: Path, **extra) -> dict:
    return parse_config(
        {
            "output": str(out),
            "sources": [
                {
                    "name": "web",
                    "inputs": [str(src / "web.jsonl")],
                    "filters": {"gopher_repetition": {"enabled": True}},
                },
                {"name": "books", "inputs": [str(src / "books.jsonl")], "documents": {"text": "body"}},
            ],
            "filters": OFF,
            "langid": {"enabled": False},
            "pii": {"enabled": False},
            "mix": {"weights": {"web": 0.3, "books": 0.7}},
            "dedup": {"keep": {"source_priority": ["books"]}},
            "shards": {"shuffle": {"groups": 3}, "layout": {"metadata": ["source_name"]}, **extra.pop("shards", {})},
            **extra,
        }
    )


@pytest.fixture(scope="module")
def mixed(ray_local, sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("mixed")
    return out, run(_config(sources, out), progress=False)


@pytest.fixture(scope="module")
def samples(mixed, tmp_path_factory) -> list[tuple[str, str, int]]:
    """(id, source_name, tokens) of every sample, as a trainer reads them from the MDS shards (in shard order)."""
    import streaming

    out, _ = mixed
    cache = tmp_path_factory.mktemp("mds-cache")  # streaming decompresses into its local folder: never the output
    ds = streaming.StreamingDataset(remote=str(out / "shards" / "mds"), local=str(cache), shuffle=False, batch_size=1)
    return [(s["id"], s["source_name"], len(s["tokens"])) for s in (ds[i] for i in range(len(ds)))]


def _tokens(samples) -> dict[str, int]:
    tokens: dict[str, int] = {}
    for _, source, n in samples:
        tokens[source] = tokens.get(source, 0) + n
    return tokens


def _digest(root: Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "shards").rglob("*"))
        if p.is_file()
    }


def test_the_shards_hold_30_and_70_percent_of_the_tokens(mixed, samples):
    out, record = mixed
    assert record["status"] == "ok", record
    tokens = _tokens(samples)
    total = sum(tokens.values())
    assert abs(tokens["web"] / total - 0.3) <= 0.005 and abs(tokens["books"] / total - 0.7) <= 0.005, tokens
    final = pq.read_table(out / "documents" / "deduped", columns=["source_name", "id"])  # final has no work: pii off
    raw = {s: final.column("source_name").to_pylist().count(s) for s in ("web", "books")}
    assert raw["web"] > 10 * raw["books"]  # web is by far the larger source, yet gets the smaller share
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    mix = manifest["mix"]
    assert {k: v["tokens_drawn"] for k, v in mix["sources"].items()} == tokens
    assert mix["tokens"] == total == manifest["formats"]["mds"]["tokens"]
    assert mix["sources"]["books"]["epochs"] > 1 > mix["sources"]["web"]["epochs"]  # books repeated, web subsampled
    assert mix["sources"]["books"]["samples"] > mix["sources"]["books"]["documents_drawn"] == raw["books"]


def test_repeats_are_new_samples_spread_over_the_shuffle(samples):
    ids = [i for i, _, _ in samples]
    assert len(ids) == len(set(ids))
    repeats = [i for i in ids if "#" in i]
    assert repeats and all(i.split("#")[0] in ids for i in repeats)
    positions = [ids.index(i) for i in ids if i.startswith("book-3#") or i == "book-3"]
    assert max(positions) - min(positions) > 1  # the copies of a document are not side by side


def test_each_source_runs_with_its_own_settings_and_dedup_keeps_the_preferred_copy(mixed):
    out, record = mixed
    rejected = pq.read_table(out / "rejected" / "extracted").to_pylist()
    assert [r["id"] for r in rejected if r["stage"] == "gopher_repetition"] == ["web-loop"]  # web's own rules only
    kept = pq.read_table(out / "documents" / "extracted", columns=["id", "source_name"]).to_pylist()
    assert {"book-loop", "book-0"} <= {r["id"] for r in kept}  # books: field `body`, repetition rules off
    removed = pq.read_table(out / "rejected" / "deduped").to_pylist()
    assert [r["id"] for r in removed if r["reason"] in ("exact_duplicate", "duplicate")] == ["web-shared"]
    assert json.loads([r for r in removed if r["id"] == "web-shared"][0]["details"])["kept_id"] == "book-shared"
    plan = {p["name"]: p for p in record["plan"]["phases"]}
    assert plan["extracted"]["overrides"] == {
        "web": {"filters.gopher_repetition.enabled": True},
        "books": {"documents.text": "body"},
    }


def test_the_manifest_and_the_card_report_the_mix(mixed):
    out, _ = mixed
    stats = json.loads((out / "card" / "stats.json").read_text())
    assert stats["funnel_adds_up"] and all(c["ok"] for c in stats["checks"]), stats["checks"]
    assert stats["mix"]["present"] and set(stats["mix"]["sources"]) == {"web", "books"}
    step = next(r for r in stats["funnel"] if r["step"] == "shards:mix")
    assert step["out"] == stats["mix"]["samples"] and step["by_reason"]
    readme = card_text(out)
    assert "## Training mix" in readme and "| `books` |" in readme and "mix.svg)" in readme
    shown = texts(parse_svg((out / "card" / "mix.svg").read_bytes()))  # a bar per source, with its epochs
    assert {"web", "books"} <= set(shown) and sum(t.endswith(" epochs") for t in shown) == 2


def test_documents_samples_and_repeats_are_three_numbers_everywhere(mixed, samples, tmp_path):
    out, _ = mixed
    ids = [i for i, _, _ in samples]
    distinct = {i.split("#")[0] for i in ids}
    dataset = len(pq.read_table(out / "documents" / "deduped", columns=["id"]))  # the default config's rows
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    numbers = (manifest["documents"], manifest["samples"], manifest["repeats"])
    assert numbers == (len(distinct), len(ids), len(ids) - len(distinct))
    assert manifest["repeats"] > 0 and dataset > len(distinct)  # books repeated, web subsampled
    stats = json.loads((out / "card" / "stats.json").read_text())
    s = stats["summary"]
    numbers = (s["documents"], s["samples"], s["repeats"], s["dataset_documents"])
    assert numbers == (len(distinct), len(ids), manifest["repeats"], dataset)
    assert s["documents_share"] == round(len(distinct) / s["responses"], 4)
    assert stats["tokens"]["samples"] == len(ids) and stats["phases"]["shards"]["parts"] == 3  # its 3 groups
    check = next(c for c in stats["checks"] if "shards manifest" in c["check"])
    assert check["ok"] and check["check"].startswith(f"samples in the shards manifest ({len(ids)}) = documents")
    assert f"of {len(distinct)} distinct documents" in check["check"]
    readme = card_text(out)
    assert f"**{len(distinct):,} documents**" in readme
    assert (
        f"drawn from the {dataset:,} documents of `documents/deduped/` into **{len(ids):,} samples** in the "
        f"shards ({manifest['repeats']:,} of them repeats" in readme
    )
    assert f"{len(ids):,} samples of {len(distinct):,} distinct documents" in readme  # the Tokens section
    assert "### shards: ran (3 groups)" in readme
    # a check that compares numbers fails when they disagree: the manifest's samples one short
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    manifest["samples"] -= 1
    (bad / "shards" / "manifest.json").write_text(json.dumps(manifest))
    assert report_main([str(bad)]) == 1
    checks = json.loads((bad / "card" / "stats.json").read_text())["checks"]
    check = next(c for c in checks if "shards manifest" in c["check"])
    assert not check["ok"]


def test_a_source_repeated_past_4_epochs_is_a_warning_and_a_known_limitation(mixed, sources, tmp_path, caplog):
    out, _ = mixed
    again = tmp_path / "again"
    shutil.copytree(out, again)
    config = _config(sources, again).model_dump(mode="json")
    tokens = json.loads((out / "shards" / "manifest.json").read_text())["mix"]["tokens"]
    config["mix"].update(weights={"web": 0.15, "books": 0.85}, tokens=4 * tokens)  # more samples than documents/final
    with caplog.at_level("WARNING", logger="pipeline.mixing"):
        record = run(parse_config(config), progress=False, phases=["shards", "card"])
    assert record["status"] == "ok"
    epochs = json.loads((again / "shards" / "manifest.json").read_text())["mix"]["sources"]["books"]["epochs"]
    assert epochs > 4
    assert any("source 'books' is drawn" in r.getMessage() and "epochs" in r.getMessage() for r in caplog.records)
    limitations = card_text(again).split("## Known limitations", 1)[1].split("## ", 1)[0]
    assert f"Source `books` is repeated {epochs:.1f} epochs in the shards" in limitations
    assert "`web`" not in limitations
    assert "Source `books`" not in card_text(out).split("## Known limitations", 1)[1].split("## ", 1)[0]  # 3.6 epochs
    # size_categories counts the default config's rows (documents/deduped here), not the samples
    summary = json.loads((again / "card" / "stats.json").read_text())["summary"]
    assert summary["samples"] >= 1000 > summary["dataset_documents"]
    assert yaml.safe_load(card_text(again).split("---\n")[1])["size_categories"] == ["n<1K"]


def test_the_same_config_gives_the_same_bytes(mixed, sources, tmp_path):
    out, _ = mixed
    again = tmp_path / "again"
    assert run(_config(sources, again), progress=False)["status"] == "ok"
    assert _digest(out) == _digest(again)
    on_ray = tmp_path / "on_ray"  # the same documents through Ray Data's shuffle instead of the driver's
    shutil.copytree(again, on_ray)
    shutil.rmtree(on_ray / "shards")
    shutil.rmtree(on_ray / "_done" / "shards")
    assert (
        run(_config(sources, on_ray, shards={"local_max_docs": 0}), progress=False, phases=["shards"])["status"]
        == "ok"
    )
    assert _digest(on_ray) == _digest(out)
