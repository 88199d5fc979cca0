"""Phase ``final``: the quality filter after dedup (threshold, and the exact top fraction per language
over every part), on documents scored in phase 1 by the demonstration model."""

from __future__ import annotations

import json
import math
import random

import pyarrow.parquet as pq
import pytest

from pipeline.config import parse_config
from pipeline.runner import run
from stages.top_fraction import top_fraction_cutoffs
from tests.conftest import REPO, Page, html

pytestmark = pytest.mark.ray

WORDS = (
    "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver "
    "cheap casino bonus click buy free offer deal win prize now best"
).split()


@pytest.fixture
def corpus(warc_factory, tmp_path):
    rng = random.Random(9)
    for f in range(3):
        pages = []
        for i in range(6):
            text = " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(20))
            lang_page = html(f"Page {f}-{i}", text)
            pages.append(Page(f"https://s{f}.example/{i}", lang_page.encode()))
        warc_factory(f"f{f}.warc.gz", pages)
    return tmp_path


def _config(src, out, rule):
    return parse_config(
        {
            "inputs": [str(src / "*.warc.gz")],
            "output": str(out),
            "langid": {"min_score": 0.0},
            "filters": {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")},
            "quality": {"enabled": True, "model": str(REPO / "samples" / "quality" / "model.ftz"), "filter": rule},
            "shards": {"enabled": False},
            "card": {"enabled": False},  # tested on their own
        }
    )


def test_top_fraction_over_all_parts_equals_the_reference(ray_local, corpus, tmp_path):
    out = tmp_path / "out"
    record = run(_config(corpus, out, {"top_fraction": 0.5}), progress=False)
    final = record["phases"]["final"]
    deduped = pq.read_table(out / "documents" / "deduped")
    assert final["in"] == deduped.num_rows == 18 and final["kept"] + final["rejected"] == final["in"]
    assert final["kept"] == sum(
        math.ceil(0.5 * n)
        for n in deduped.group_by("language").aggregate([("id", "count")]).column("id_count").to_pylist()
    )
    cut = top_fraction_cutoffs(deduped.column("language"), deduped.column("quality_score"), deduped.column("id"), 0.5)
    kept = pq.read_table(out / "documents" / "final")
    expected = {
        r["id"]
        for r in deduped.to_pylist()
        if (r["quality_score"], r["id"]) >= (cut[r["language"]].score, "")
        and (r["quality_score"] > cut[r["language"]].score or r["id"] <= cut[r["language"]].id)
    }
    assert set(kept.column("id").to_pylist()) == expected
    rejected = pq.read_table(out / "rejected" / "final").to_pylist()
    assert {r["reason"] for r in rejected} == {"quality"}
    assert all(json.loads(r["details"])["top_fraction"] == 0.5 for r in rejected)
    assert "text" in kept.column_names and "quality_score" in kept.column_names


def test_threshold_and_rerun_after_a_changed_rule(ray_local, corpus, tmp_path):
    out = tmp_path / "out"
    run(_config(corpus, out, {"threshold": 0.5}), progress=False)
    scores = pq.read_table(out / "documents" / "deduped").column("quality_score").to_pylist()
    kept = pq.read_table(out / "documents" / "final").column("quality_score").to_pylist()
    assert sorted(kept) == sorted(s for s in scores if s is not None and s >= 0.5)
    again = run(_config(corpus, out, {"threshold": 0.9}), progress=False)
    assert again["phases"]["extracted"]["units_skipped"] == 3 and again["phases"]["deduped"]["units_skipped"] == 1
    assert again["phases"]["final"]["units_skipped"] == 0
    assert again["phases"]["final"]["kept"] == sum(1 for s in scores if s is not None and s >= 0.9)
