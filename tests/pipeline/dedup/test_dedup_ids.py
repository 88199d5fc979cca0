"""Repeated document ids across parts (issue 13): the id is unique in phase 2's output."""

from __future__ import annotations

import json
import random

import pyarrow.parquet as pq
import pytest

from core.storage import Storage
from tests.dedup_standalone import run_dedup
from tests.pipeline.dedup.test_dedup_steps import config, corpus, outputs, prose, removed, write_phase1

pytestmark = pytest.mark.ray


def with_repeated_ids():
    """The phase-2 test corpus plus documents that repeat an id of unit-a; returns (parts, expected removals)."""
    parts, expected = corpus()
    first = next(d for d in parts["unit-a"] if d["id"] not in expected)
    rng = random.Random(3)
    # unit-b repeats it with another text (a re-used id), unit-c with the same text (the record twice)
    parts["unit-b"] = parts["unit-b"] + [{"id": first["id"], "text": prose(rng)}]
    parts["unit-c"] = [{"id": first["id"], "text": first["text"]}, {"id": "doc-900", "text": prose(rng)}]
    return parts, expected, first["id"]


def id_rejections(root) -> list[dict]:
    _, rejected = outputs(root)
    return [r for t in rejected.values() for r in t.to_pylist() if r["reason"] == "duplicate_id"]


@pytest.mark.parametrize(
    "dedup", [{}, {"partition_rows": 800, "components": {"local_max_edges": 0}}], ids=["local", "distributed"]
)
def test_repeated_ids_are_removed_naming_the_kept_part(ray_local, tmp_path, dedup):
    parts, expected, repeated = with_repeated_ids()
    write_phase1(tmp_path, parts)
    summary = run_dedup(config(tmp_path, **dedup), Storage(str(tmp_path)), workers=2, progress=False)
    rows = id_rejections(tmp_path)
    assert sorted(r["source"] for r in rows) == ["unit-b", "unit-c"]
    for r in rows:
        assert r["id"] == repeated and json.loads(r["details"]) == {
            "kept_id": repeated,
            "kept_part": "unit-a",
            "copies": 3,
        }
    assert summary["duplicate_ids"] == 2 and summary["rejected_by_reason"]["duplicate_id"] == 2
    # the other decisions are those of the corpus without the repeats, and every output id is unique
    assert {k: v for k, v in removed(tmp_path).items() if k != repeated} == expected
    kept, _ = outputs(tmp_path)
    ids = [i for t in kept.values() for i in t.column("id").to_pylist()]
    assert len(ids) == len(set(ids)) and repeated in ids
    assert summary["in"] == summary["kept"] + summary["rejected"] == 68


def test_repeated_ids_are_removed_when_there_is_no_other_duplicate(ray_local, tmp_path):
    rng = random.Random(8)
    parts = {
        "a": [{"id": "x", "text": prose(rng)}, {"id": "y", "text": prose(rng)}],
        "b": [{"id": "x", "text": prose(rng)}],
    }
    write_phase1(tmp_path, parts)
    summary = run_dedup(config(tmp_path), Storage(str(tmp_path)), workers=2, progress=False)
    assert summary["edges"] == 0 and summary["rejected_by_reason"] == {"duplicate_id": 1}
    rejected = pq.read_table(tmp_path / "rejected" / "deduped" / "part-b.parquet").to_pylist()
    assert [(r["id"], json.loads(r["details"])["kept_part"]) for r in rejected] == [("x", "a")]
