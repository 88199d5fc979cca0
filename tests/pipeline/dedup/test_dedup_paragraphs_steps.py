"""Paragraph dedup inside phase 2 on Ray: exact removals against a truth by construction, the rewrite, the
rules applied again, determinism over workers and shuffle paths, and what reruns it."""

from __future__ import annotations

import hashlib
import json
import random

import pyarrow.parquet as pq
import pytest

from benchmarks.paragraph_dedup import outcome, quoted_corpus, read_rows, write_parts
from core.storage import Storage
from pipeline.config import parse_config
from tests.dedup_standalone import run_dedup
from tests.pipeline.dedup.test_dedup_steps import prose, write_phase1

pytestmark = pytest.mark.ray

DOCS = quoted_corpus(pages=8)


def config(root, filters: bool = True, **paragraphs):
    data = {"inputs": ["unused"], "output": str(root), "dedup": {"paragraphs": {"enabled": True, **paragraphs}}}
    if not filters:
        data["filters"] = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}
    return parse_config(data)


def digests(root) -> dict[str, str]:
    out = {}
    for top in ("documents/deduped", "rejected/deduped"):
        for f in sorted((root / top).glob("*.parquet")):
            out[f"{top}/{f.name}"] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def test_keep_first_removes_every_extra_copy_and_nothing_else(ray_local, tmp_path):
    storage = Storage(str(tmp_path))
    parts = write_parts(storage, DOCS)
    summary = run_dedup(config(tmp_path), storage, workers=2, progress=False)
    o = outcome(storage, parts)
    assert o.repeated_keys > 20 and o.to_remove > 100  # blocks, reposts the MinHash left, quotes
    assert (o.wrong_unique, o.wrong_first, o.missed) == (0, 0, 0)
    assert o.removed == o.to_remove and o.exact_texts == o.documents
    p = summary["paragraphs"]
    assert p["removed"] == o.removed and p["mode"] == "keep_first" and p["unit"] == "paragraph"
    # the columns: pieces and characters removed per document; kept + rejected = in per part
    kept = read_rows(
        storage, "documents", "deduped", columns=["id", "text", "para_dedup_removed", "para_dedup_chars_removed"]
    )
    by_id = {d.id: d for d in DOCS}
    for r in kept:
        assert len(by_id[r["id"]].text) - len(r["text"]) == r["para_dedup_chars_removed"]
        assert (r["para_dedup_removed"] > 0) == (r["text"] != by_id[r["id"]].text)
    assert sum(r["para_dedup_chars_removed"] for r in kept) <= p["chars_removed"]
    for unit, docs in parts.items():
        marker = json.loads((tmp_path / "_done" / "deduped" / f"{unit}.json").read_text())
        assert marker["in"] == len(docs) == marker["kept"] + marker["rejected"]
    # the most repeated: the bio block, on every page of its site that document dedup kept
    top = p["top"][0]
    assert top["count"] >= 8 and len(top["hash"]) == 16
    assert len(top["text"]) <= 101 and top["text"].endswith("…") and top["cut_after_redaction"]  # redacted, then cut
    assert [t["count"] for t in p["top"]] == sorted((t["count"] for t in p["top"]), reverse=True)


def test_min_count_removes_every_copy_of_what_is_seen_often_enough(ray_local, tmp_path):
    storage = Storage(str(tmp_path))
    parts = write_parts(storage, DOCS)
    run_dedup(config(tmp_path, filters=False, mode="min_count", min_count=3), storage, workers=2, progress=False)
    o = outcome(storage, parts, mode="min_count", min_count=3)
    assert o.to_remove > 100 and (o.wrong_unique, o.missed) == (0, 0) and o.exact_texts == o.documents


def test_min_count_keeps_the_first_copy_of_a_paragraph_repeated_inside_one_document(ray_local, tmp_path):
    # CCNet counts a paragraph once per document: one repeated only inside a document keeps its first copy there
    from benchmarks.paragraph_dedup import Doc

    rng = random.Random(3)
    own, shared = prose(rng, 40), prose(rng, 40)
    docs = [
        Doc("a", "https://a.example/1", None, None, [prose(rng, 40), own, prose(rng, 40), own, shared, own]),
        Doc("b", "https://b.example/1", None, None, [prose(rng, 40), shared, prose(rng, 40)]),
        Doc("c", "https://c.example/1", None, None, [prose(rng, 40), prose(rng, 40)]),
    ]
    storage = Storage(str(tmp_path))
    write_parts(storage, docs, parts=2)
    cfg = config(tmp_path, filters=False, mode="min_count", min_count=2)
    run_dedup(cfg, storage, workers=2, progress=False)
    kept = {r["id"]: r["text"].split("\n") for r in read_rows(storage, "documents", "deduped", columns=["id", "text"])}
    assert kept["a"] == [docs[0].lines[0], own, docs[0].lines[2]]  # `own`'s later copies and `shared` (2 documents) go
    assert kept["b"] == [docs[1].lines[0], docs[1].lines[2]] and kept["c"] == docs[2].lines


def test_same_bytes_with_one_or_two_workers_and_with_many_partitions(ray_local, tmp_path):
    runs = {"w1": (1, {}), "w2": (2, {}), "shuffled": (2, {"partition_rows": 100})}
    results = {}
    for name, (workers, extra) in runs.items():
        root = tmp_path / name
        storage = Storage(str(root))
        write_parts(storage, DOCS)
        cfg = config(root)
        cfg = cfg.model_copy(update={"dedup": cfg.dedup.model_copy(update=extra)})
        summary = run_dedup(cfg, storage, workers=workers, progress=False)
        results[name] = digests(root)
        if name == "shuffled":
            assert summary["paragraphs"]["partitions"] > 1
            assert len(list((root / "dedup" / "paragraphs" / "top").glob("*.parquet"))) > 1
        else:
            assert summary["paragraphs"]["partitions"] == 1
        results[name + "-summary"] = {k: v for k, v in summary["paragraphs"].items() if k != "partitions"}
    assert results["w1"] == results["w2"] == results["shuffled"] and len(results["w1"]) == 6
    assert results["w1-summary"] == results["w2-summary"] == results["shuffled-summary"]


def _block_corpus():
    """Three pages sharing a block: the second has nothing else (left empty), the third a short line (too short)."""
    rng = random.Random(3)
    block = [prose(rng, 40) for _ in range(4)]
    docs = [
        {"id": "doc-a", "text": "\n".join([prose(rng, 60) for _ in range(8)] + block)},
        {"id": "doc-b", "text": "\n".join(block)},
        {"id": "doc-c", "text": "\n".join(["A short note on the harbor and its boats today."] + block)},
    ]
    return {"unit-a": docs[:1], "unit-b": docs[1:]}


def test_a_document_left_empty_or_too_short_is_rejected_with_the_rule(ray_local, tmp_path):
    write_phase1(tmp_path, _block_corpus())
    # document dedup off: the three pages are near copies by their block (here only the paragraph step is tested)
    cfg = parse_config(
        {
            "inputs": ["unused"],
            "output": {"root": str(tmp_path), "rejected_text": True},
            "dedup": {"paragraphs": {"enabled": True}, "exact": {"enabled": False}, "minhash": {"enabled": False}},
        }
    )
    summary = run_dedup(cfg, Storage(str(tmp_path)), workers=2, progress=False)
    rejected = {
        r["id"]: r
        for r in read_rows(
            Storage(str(tmp_path)), "rejected", "deduped", columns=["id", "stage", "reason", "details", "text"]
        )
    }
    assert rejected["doc-b"]["reason"] == "paragraph_dedup:empty" and rejected["doc-b"]["text"] == ""
    assert rejected["doc-c"]["reason"].startswith("gopher_quality:")  # the run's Gopher rule, on the new text
    assert rejected["doc-c"]["text"] == "A short note on the harbor and its boats today."
    assert {r["stage"] for r in rejected.values()} == {"paragraph_dedup"}
    details = json.loads(rejected["doc-c"]["details"])
    assert details["paragraphs_removed"] == 4 and details["rule_details"]
    assert summary["paragraphs"]["documents_rejected"] == 2 and summary["kept"] == 1
    kept = pq.read_table(tmp_path / "documents" / "deduped" / "part-unit-a.parquet")
    assert kept.column("para_dedup_removed").to_pylist() == [0]  # the first occurrence stays
    empty = pq.read_table(tmp_path / "documents" / "deduped" / "part-unit-b.parquet")
    assert len(empty) == 0 and "para_dedup_removed" in empty.column_names  # same schema as the other parts


def test_unit_line_splits_a_paragraph_that_unit_paragraph_keeps_whole(ray_local, tmp_path):
    rng = random.Random(4)
    shared = [prose(rng, 30) for _ in range(2)]
    own = [prose(rng, 120) for _ in range(2)]
    # the second document repeats the first line of a two-line paragraph, not the paragraph
    parts = {
        "unit-a": [{"id": "doc-a", "text": f"{own[0]}\n\n{shared[0]}\n{shared[1]}"}],
        "unit-b": [{"id": "doc-b", "text": f"{own[1]}\n\n{shared[0]}\nsomething else entirely, and long enough"}],
    }
    texts = {}
    for unit in ("paragraph", "line"):
        root = tmp_path / unit
        write_phase1(root, parts)
        run_dedup(config(root, filters=False, unit=unit), Storage(str(root)), workers=2, progress=False)
        texts[unit] = {
            r["id"]: r["text"] for r in read_rows(Storage(str(root)), "documents", "deduped", columns=["id", "text"])
        }
    assert texts["paragraph"]["doc-b"] == parts["unit-b"][0]["text"]
    assert texts["line"]["doc-b"] == f"{own[1]}\n\nsomething else entirely, and long enough"
    assert texts["line"]["doc-a"] == parts["unit-a"][0]["text"]


def test_turning_it_on_or_changing_it_reruns_the_phase_and_off_changes_nothing(ray_local, tmp_path):
    storage = Storage(str(tmp_path))
    write_parts(storage, DOCS)
    off = run_dedup(parse_config({"inputs": ["unused"], "output": str(tmp_path)}), storage, workers=2, progress=False)
    assert "paragraphs" not in off
    plain = pq.read_table(next((tmp_path / "documents" / "deduped").glob("*.parquet")))
    assert "para_dedup_removed" not in plain.column_names
    on = run_dedup(config(tmp_path), storage, workers=2, progress=False)
    assert "skipped" not in on and on["paragraphs"]["removed"] > 0
    assert run_dedup(config(tmp_path), storage, workers=2, progress=False)["skipped"] is True
    changed = run_dedup(config(tmp_path, mode="min_count"), storage, workers=2, progress=False)
    assert "skipped" not in changed and changed["paragraphs"]["removed"] > on["paragraphs"]["removed"]
    refilter = run_dedup(config(tmp_path, filters=False, mode="min_count"), storage, workers=2, progress=False)
    assert "skipped" not in refilter  # the rules it applies again are part of what it depends on
