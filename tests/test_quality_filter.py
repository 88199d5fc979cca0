"""Quality filtering: a threshold, or the best fraction of each language (a global cut applied batch by batch)."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stages.base import ChainStats, run_chain
from stages.quality import Cutoff, QualityFilterConfig, QualityFilterStage, top_fraction_cutoffs


def docs(ids, langs, scores) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.string()),
        "language": pa.array(langs, pa.string()),
        "quality_score": pa.array(scores, pa.float32()),
        "text": pa.array([f"text of {i}" for i in ids], pa.large_string()),
    })


def kept_ids(stage: QualityFilterStage, table: pa.Table) -> list[str]:
    kept, _ = run_chain([stage], table, ChainStats())
    return kept.column("id").to_pylist()


# ---------------------------------------------------------------- threshold


def test_threshold_rejects_lower_and_missing_scores():
    table = docs(["a", "b", "c", "d"], ["en"] * 4, [0.9, 0.5, 0.49, None])
    stats = ChainStats()
    kept, rejected = run_chain([QualityFilterStage(QualityFilterConfig(threshold=0.5))], table, stats)
    assert kept.column("id").to_pylist() == ["a", "b"]  # equal to the threshold is kept
    (rej,) = rejected
    assert rej.column("id").to_pylist() == ["c", "d"]
    assert set(rej.column("stage").to_pylist()) == {"quality_filter"} and set(rej.column("reason").to_pylist()) == {"quality"}
    details = [json.loads(d) for d in rej.column("details").to_pylist()]
    assert details == [{"score": pytest.approx(0.49, abs=1e-6), "threshold": 0.5}, {"score": None, "threshold": 0.5}]
    assert stats.rejected == {"quality": 2}
    assert kept.column_names == table.column_names  # the filter adds no columns to what it keeps


def test_earlier_reasons_are_kept():
    table = docs(["a", "b"], ["en", "en"], [0.1, 0.9]).append_column("reason", pa.array(["language", None]))
    table = table.append_column("details", pa.array(["x", None], pa.string()))
    out = QualityFilterStage(QualityFilterConfig(threshold=0.5))(table)
    assert out.column("reason").to_pylist() == ["language", None]


# ---------------------------------------------------------------- cutoffs


def test_ceil_of_the_fraction_per_language():
    ids = [f"d{i:02d}" for i in range(13)]
    langs = ["en"] * 10 + ["de"] * 3
    scores = [0.1 * i for i in range(10)] + [0.5, 0.2, 0.9]
    cut = top_fraction_cutoffs(langs, scores, ids, 0.3)
    assert (cut["en"].kept, cut["en"].total) == (3, 10)  # 0.3 x 10 is 3 (not 4 by float noise)
    assert (cut["de"].kept, cut["de"].total) == (1, 3)  # ceil(0.9)
    stage = QualityFilterStage(QualityFilterConfig(top_fraction=0.3), cut)
    assert sorted(kept_ids(stage, docs(ids, langs, scores))) == ["d07", "d08", "d09", "d12"]


def test_ties_are_broken_by_smallest_id_across_batches():
    ids = ["e", "c", "a", "d", "b"]
    table = docs(ids, ["en"] * 5, [0.7] * 5)
    cut = top_fraction_cutoffs(table.column("language"), table.column("quality_score"), table.column("id"), 0.4)
    assert cut["en"] == Cutoff(score=pytest.approx(0.7), id="b", kept=2, total=5)
    stage = QualityFilterStage(QualityFilterConfig(top_fraction=0.4), cut)
    kept = kept_ids(stage, table.slice(0, 2)) + kept_ids(stage, table.slice(2))  # two batches
    assert sorted(kept) == ["a", "b"]


def test_one_document_languages_empty_input_and_unknown_languages(caplog):
    cut = top_fraction_cutoffs(["en", "en", "en", "fy"], [0.2, 0.3, 0.4, 0.01], ["1", "2", "3", "4"], 0.01)
    assert cut["fy"].kept == 1 and cut["en"].kept == 1  # a language is never emptied
    assert top_fraction_cutoffs([], [], [], 0.5) == {}
    stage = QualityFilterStage(QualityFilterConfig(top_fraction=0.01), cut)
    table = docs(["1", "2", "3", "4", "5"], ["en", "en", "en", "fy", "xx"], [0.2, 0.3, 0.4, 0.01, 0.0])
    stats = ChainStats()
    kept, _ = run_chain([stage], table, stats)
    assert kept.column("id").to_pylist() == ["3", "4", "5"]  # xx has no cutoff: kept, counted, logged
    assert stats.counters["quality_filter.no_cutoff"] == 1
    assert "without a cutoff" in caplog.text
    empty = QualityFilterStage(QualityFilterConfig(top_fraction=0.5), {})
    assert kept_ids(empty, table) == ["1", "2", "3", "4", "5"]


def test_missing_scores_rank_last_and_missing_language_is_a_group():
    ids, langs, scores = ["a", "b", "c", "d"], ["en", "en", None, None], [None, 0.1, None, 0.8]
    cut = top_fraction_cutoffs(langs, scores, ids, 0.5)
    assert cut["en"].id == "b" and cut[""].id == "d"
    stage = QualityFilterStage(QualityFilterConfig(top_fraction=0.5), cut)
    assert kept_ids(stage, docs(ids, langs, scores)) == ["b", "d"]
    everything = top_fraction_cutoffs(langs, scores, ids, 1.0)
    assert everything["en"].score == -math.inf and everything["en"].id == "a"
    assert kept_ids(QualityFilterStage(QualityFilterConfig(top_fraction=1.0), everything), docs(ids, langs, scores)) == ids
    assert Cutoff.from_dict(json.loads(json.dumps(everything["en"].to_dict()))) == everything["en"]


def test_rejected_details_carry_score_and_cutoff():
    ids, langs, scores = ["a", "b"], ["en", "en"], [0.25, 0.75]
    stage = QualityFilterStage(QualityFilterConfig(top_fraction=0.5), top_fraction_cutoffs(langs, scores, ids, 0.5))
    _, (rej,) = run_chain([stage], docs(ids, langs, scores), ChainStats())
    assert json.loads(rej.column("details")[0].as_py()) == {"score": 0.25, "cutoff": 0.75, "top_fraction": 0.5}


def test_bad_settings():
    with pytest.raises(ValueError, match="set threshold or top_fraction, not both"):
        QualityFilterConfig(threshold=0.5, top_fraction=0.5)
    with pytest.raises(ValueError, match="needs the per-language cutoffs"):
        QualityFilterStage(QualityFilterConfig(top_fraction=0.5))
    with pytest.raises(ValueError, match="neither threshold nor top_fraction"):
        QualityFilterStage(QualityFilterConfig())
    with pytest.raises(ValueError, match="top_fraction: must be in"):
        top_fraction_cutoffs(["en"], [0.5], ["a"], 0)
    with pytest.raises(ValueError, match="no quality_score column"):
        QualityFilterStage(QualityFilterConfig(threshold=0.5))(pa.table({"id": ["a"], "text": ["x"]}))


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["en", "de", "ja", None]), st.sampled_from([0.0, 0.25, 0.5, 0.5000001, 1.0, None])),
        max_size=60,
    ),
    fraction=st.floats(min_value=0.01, max_value=1.0),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=4),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_batches_keep_exactly_the_global_top_fraction(rows, fraction, cuts, seed):
    """Whatever the batching, the kept set is the best ceil(f x n) of each language by (score desc, id asc)."""
    rng = np.random.default_rng(seed)
    ids = [f"id{j:03d}" for j in rng.permutation(len(rows))]
    langs = [r[0] for r in rows]
    scores = [r[1] for r in rows]
    table = docs(ids, langs, scores)
    stage = QualityFilterStage(QualityFilterConfig(top_fraction=fraction), top_fraction_cutoffs(langs, table.column("quality_score"), ids, fraction))
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    kept = [i for lo, hi in zip(bounds, bounds[1:]) for i in kept_ids(stage, table.slice(lo, hi - lo))]
    f32 = table.column("quality_score").to_pylist()  # the float32 values the filter sees
    expected = []
    for lang in set(langs):
        members = [(-(s if s is not None else -math.inf), i) for i, l, s in zip(ids, langs, f32) if l == lang]
        n_keep = max(1, math.ceil(round(fraction * len(members), 6)))
        expected += [i for _, i in sorted(members)[:n_keep]]
    assert sorted(kept) == sorted(expected)
