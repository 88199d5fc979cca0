"""Decontamination in a run: real prose (the samples' extracted pages) with eval passages planted verbatim in
some pages and short phrases of them in others, read as JSON lines, through every phase.  The eval index is
built once, by a Ray task (never in the driver), and shipped to the final phase's workers; every planted page that
reaches the final phase is removed with its eval items named, none of the others; the card has a row per eval set."""

from __future__ import annotations

import json
import random
import tracemalloc
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from pipeline import eval_index
from pipeline.config import ConfigError, parse_config
from pipeline.runner import plan_context, run
from stages.decontam import EvalSetError
from tests.stages.decontam.test_decontam import corpus, eval_files  # noqa: F401  (the planted corpus and its eval files: fixtures)
from tests.stages.test_mix import card_text

pytestmark = pytest.mark.ray

OFF = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}


@pytest.fixture(scope="module")
def decontaminated(ray_local, corpus, eval_files, tmp_path_factory):  # noqa: F811
    folder = tmp_path_factory.mktemp("pages")
    (folder / "pages.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "url": f"https://pages.example/{i}", "text": t}) + "\n"
            for i, t in zip(corpus.ids, corpus.pages, strict=False)
        )
    )
    out = tmp_path_factory.mktemp("out")
    config = parse_config(
        {
            "inputs": [str(folder / "pages.jsonl")],
            "output": str(out),
            "filters": OFF,
            "langid": {"enabled": False},
            "decontam": {"eval_sets": eval_files},
            "shards": {"shuffle": {"groups": 2}},
        }
    )
    return out, run(config, progress=False)


def test_every_planted_page_is_removed_and_no_other(decontaminated, corpus):  # noqa: F811
    out, record = decontaminated
    assert record["status"] == "ok", record
    deduped = set(pq.read_table(out / "documents" / "deduped", columns=["id"]).column("id").to_pylist())
    # dedup keeps one page of a near-duplicate cluster: a planted
    # page may go there (its copy without the passage stays)
    planted = {i for i in corpus.planted if i in deduped}
    assert len(planted) >= 24
    rejected = pq.read_table(out / "rejected" / "final").to_pylist()
    removed = {r["id"]: r for r in rejected if r["reason"] == "contaminated"}
    assert set(removed) == planted
    for i, r in removed.items():
        assert r["stage"] == "decontam" and set(r["details"].split(", ")) == corpus.planted[i]
    final = set(pq.read_table(out / "documents" / "final", columns=["id"]).column("id").to_pylist())
    assert final == deduped - planted - {
        r["id"] for r in rejected
    }  # only planted pages, and nothing else decontam did
    assert {p for p in corpus.phrases if p in deduped} <= final  # short phrases of eval items never trigger
    assert not set(corpus.planted) & final


def test_the_index_is_built_once_and_the_card_has_a_row_per_eval_set(decontaminated, corpus):  # noqa: F811
    out, record = decontaminated
    final = record["phases"]["final"]
    index = final["decontam_index"]
    assert [s["name"] for s in index["eval_sets"]] == ["passages", "lines", "mmlu"] and index["kind"] == "exact"
    plan = {p["name"]: p for p in record["plan"]["phases"]}
    assert [s["name"] for s in plan["final"]["stages"]][:1] == ["decontam"]  # first: before PII rewrites the text
    stats = json.loads((out / "card" / "stats.json").read_text())
    d = stats["decontam"]
    assert d["present"] and d["phase"] == "final"
    rejected = pq.read_table(out / "rejected" / "final").to_pylist()
    labels = [set(r["details"].split(", ")) for r in rejected if r["reason"] == "contaminated"]
    for row in d["sets"]:
        assert row["documents"] == sum(any(x.startswith(row["name"] + ":") for x in ls) for ls in labels)
        assert row["items_found"] == len({x for ls in labels for x in ls if x.startswith(row["name"] + ":")})
        assert row["items"] == len(corpus.items[row["name"]])
    assert stats["funnel_adds_up"] and all(c["ok"] for c in stats["checks"]), stats["checks"]
    readme = card_text(out)
    assert "## Decontamination" in readme and "| `mmlu` |" in readme


def test_a_missing_eval_file_is_a_plan_time_error(tmp_path):
    config = parse_config(
        {
            "inputs": [str(tmp_path)],
            "output": str(tmp_path / "out"),
            "decontam": {"eval_sets": [str(tmp_path / "missing.jsonl")]},
        }
    )
    (tmp_path / "x.jsonl").write_text('{"text": "a"}\n')
    with pytest.raises(ConfigError, match=r"decontam\.eval_sets\[0\]\.path: no dataset at"):
        plan_context(config, progress=False)


def _big_eval_set(path, items: int) -> None:
    rng = random.Random(4)
    vocab = ["".join(rng.choice("abcdefghij") for _ in range(6)) for _ in range(5000)]
    lines = (json.dumps({"text": " ".join(rng.choice(vocab) for _ in range(60))}) + "\n" for _ in range(items))
    path.write_text("".join(lines))


def test_the_driver_never_holds_the_index(ray_local, tmp_path):
    _big_eval_set(tmp_path / "big.jsonl", 40_000)  # ~17 MB of items, an index of ~40 MB
    config = parse_config(
        {
            "inputs": [str(tmp_path)],
            "output": str(tmp_path / "out"),
            "decontam": {"eval_sets": [str(tmp_path / "big.jsonl")]},
        }
    )
    ctx = SimpleNamespace(config=config, workers=lambda: 2)
    tracemalloc.start()
    try:
        index, stats = eval_index.build(ctx)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert stats.eval_sets[0].items == 40_000 and stats.nbytes > 30 << 20
    assert peak < stats.nbytes / 10, f"the driver allocated {peak >> 20} MB"  # built in the driver: ~4x the index
    found = ray_local.get(index)  # what the workers get: the whole index
    assert found.stats.keys == stats.keys and len(found.item_offsets) == 40_001


def test_an_eval_set_error_in_the_build_task_is_the_sets_own_line(ray_local, tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"text": "one two three four five six seven eight"}\n{"text": 5\n')
    config = parse_config(
        {
            "inputs": [str(tmp_path)],
            "output": str(tmp_path / "out"),
            "decontam": {"eval_sets": [str(tmp_path / "bad.jsonl")]},
        }
    )
    with pytest.raises(EvalSetError, match=r"^eval set 'bad' \(.*bad.jsonl\): line 2 is not JSON"):
        eval_index.build(SimpleNamespace(config=config, workers=lambda: 2))
