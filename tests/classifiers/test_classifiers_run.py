"""jobs/classifiers.yaml: three demonstration classifiers (quality, edu, toxicity) and a toxicity filter on the
sample WARCs plus generated forum threads: scores in the final documents and the shards' metadata, what each
filter removed, and the card's tables."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pipeline.config import load_config
from pipeline.runner import run
from tests.conftest import REPO

pytestmark = pytest.mark.ray

JOB = REPO / "jobs" / "classifiers.yaml"
THREADS = {
    r["id"]: r for r in map(json.loads, (REPO / "samples" / "classifiers" / "comments.jsonl").read_text().splitlines())
}
NAMES = ("quality", "edu", "toxicity")


@pytest.fixture(scope="module")
def sample(ray_local, tmp_path_factory):
    out = tmp_path_factory.mktemp("classifiers")
    config = load_config(
        JOB,
        inputs=[str(REPO / "samples" / "*.warc.gz"), str(REPO / "samples" / "classifiers" / "comments.jsonl")],
        output=str(out),
    )
    config.classifiers = [c.model_copy(update={"model": str(REPO / c.model)}) for c in config.classifiers]
    config.shards.tokenize.tokenizer = str(REPO / config.shards.tokenize.tokenizer)
    record = run(config, progress=False)
    assert record["status"] == "ok"
    return out, record


def test_every_final_document_carries_the_three_scores(sample):
    out, _ = sample
    final = pq.read_table(out / "documents" / "final")
    for name in NAMES:
        assert final.column(f"{name}_score").null_count == 0 and f"{name}_label" in final.column_names
    rows = final.select(["id", "toxicity_score", "quality_score"]).to_pylist()
    assert (
        max(r["toxicity_score"] for r in rows) <= 0.5 and min(r["quality_score"] for r in rows) >= 0.5
    )  # the two filters held
    deduped = set(pq.read_table(out / "documents" / "deduped", columns=["id"]).column("id").to_pylist())
    kept = {r["id"] for r in rows}
    assert all(
        i in kept for i, t in THREADS.items() if t["label"] == "civil" and i in deduped
    )  # no civil thread removed


def test_the_toxicity_filter_removed_the_insulting_threads_only(sample):
    out, record = sample
    rejected = pq.read_table(out / "rejected" / "final").to_pylist()
    toxic = [r for r in rejected if r["reason"] == "toxicity"]
    assert {r["stage"] for r in toxic} == {"toxicity_filter"}
    assert all(THREADS[r["id"]]["label"] == "toxic" for r in toxic)
    deduped = set(pq.read_table(out / "documents" / "deduped", columns=["id"]).column("id").to_pylist())
    insulting = [i for i, t in THREADS.items() if t["label"] == "toxic" and i in deduped]
    # a demonstration model, not a perfect one: at least 90% of the
    # insulting threads that reached the filter, no other document
    assert len(toxic) >= 0.9 * len(insulting) and len(insulting) > 30
    details = json.loads(toxic[0]["details"])
    assert (
        details["remove"] == "above"
        and details["threshold"] == 0.5
        and details["score"] > 0.5
        and details["language"] in ("en", "de", "fr")
    )
    assert record["phases"]["final"]["rejected_by_reason"]["toxicity"] == len(toxic)


def test_the_plan_declares_each_classifier(sample):
    _, record = sample
    phases = {p["name"]: p for p in record["plan"]["phases"]}
    (scoring,) = [s for s in phases["extracted"]["stages"] if s["name"] == "classifiers"]
    assert scoring["adds"] == [f"{n}_{c}" for n in NAMES for c in ("score", "label")]
    filters = {s["name"]: s for s in phases["final"]["stages"]}
    assert filters["toxicity_filter"]["reasons"] == ["toxicity"] and filters["toxicity_filter"]["needs"] == [
        "toxicity_score"
    ]
    assert filters["quality_filter"]["reasons"] == ["quality"] and "edu_filter" not in filters  # edu is a tag only


def test_the_shards_carry_the_scores(sample, tmp_path):
    streaming = pytest.importorskip("streaming")
    out, _ = sample
    ds = streaming.StreamingDataset(
        remote=str(out / "shards" / "mds"), local=str(tmp_path / "cache"), shuffle=False, batch_size=1
    )
    final = {
        r["id"]: r
        for r in pq.read_table(
            out / "documents" / "final", columns=["id", "language", *[f"{n}_score" for n in NAMES]]
        ).to_pylist()
    }
    assert len(ds) == len(final)
    for i in range(0, len(ds), 37):
        s = ds[i]
        doc = final[s["id"]]
        assert s["language"] == doc["language"]
        for n in NAMES:
            assert float(s[f"{n}_score"]) == pytest.approx(doc[f"{n}_score"], abs=1e-6)


def test_the_card_shows_each_classifier_per_language(sample):
    out, record = sample
    stats = json.loads(next(out.glob("**/stats.json")).read_text())
    entries = {e["name"]: e for e in stats["classifiers"]["entries"]}
    assert list(entries) == list(NAMES)
    assert all(e["demonstration"] for e in entries.values())  # told by the models' sha256
    tox = entries["toxicity"]
    assert tox["removed"] == record["phases"]["final"]["rejected_by_reason"]["toxicity"]
    assert sum(tox["removed_by_language"].values()) == tox["removed"] and set(tox["removed_by_language"]) <= {
        "en",
        "de",
        "fr",
    }
    scored = tox["by_language"]["extracted"]
    assert sum(v["scored"] for v in scored.values()) == tox["by_phase"]["extracted"]["scored"]
    assert scored["ja"]["mean"] < 0.05 < scored["de"]["mean"]  # no thread is Japanese; some German ones insult
    assert entries["edu"]["removed"] == 0 and entries["edu"]["filter_phase"] is None
    readme = next(p for p in out.glob("**/README.md") if "## Classifiers" in p.read_text()).read_text()
    section = readme.split("## Classifiers", 1)[1].split("\n## ", 1)[0]
    for name in NAMES:
        assert f"### {name}" in section and f"`{name}_score`" in section
    assert "**demonstration** model" in section and "| language | scored | mean |" in section
    assert "classifiers.svg" in readme


def test_the_run_s_scores_are_fastText_s(sample):
    """Three models sharing a preparation run projected (engine auto): their scores are fastText's own."""
    import numpy as np

    from classifiers.quality import QualityScorer

    out, _ = sample
    docs = pq.read_table(out / "documents" / "extracted")
    config = load_config(JOB)
    for c in config.classifiers:
        expected, labels = QualityScorer(str(REPO / c.model), c.label).score(docs.column("text"))
        np.testing.assert_allclose(docs.column(c.score_column).to_numpy(zero_copy_only=False), expected, atol=1e-6)
        assert docs.column(c.label_column).to_pylist() == labels.to_pylist()
