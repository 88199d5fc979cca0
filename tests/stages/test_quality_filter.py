"""Classifier filters: a threshold (below or above, per language), or the best fraction of each language
(a global cut applied batch by batch), with the quality classifier as the example."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from stages.base import ChainStats, run_chain
from stages.classify import ClassifierConfig, ClassifierFilterConfig, ClassifierFilterStage
from stages.top_fraction import Cutoff, top_fraction_cutoffs


def flt(cutoffs=None, name="quality", **rule) -> ClassifierFilterStage:
    """The filter of a classifier ``name`` with ``rule`` (its model is never loaded)."""
    config = ClassifierConfig.model_construct(
        name=name, model="-", label="x", lowercase=False, max_chars=None, filter=ClassifierFilterConfig(**rule)
    )
    return ClassifierFilterStage(config, cutoffs)


def docs(ids, langs, scores) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "language": pa.array(langs, pa.string()),
            "quality_score": pa.array(scores, pa.float32()),
            "text": pa.array([f"text of {i}" for i in ids], pa.large_string()),
        }
    )


def kept_ids(stage: ClassifierFilterStage, table: pa.Table) -> list[str]:
    kept, _ = run_chain([stage], table, ChainStats())
    return kept.column("id").to_pylist()


# ---------------------------------------------------------------- threshold


def test_threshold_rejects_lower_and_missing_scores():
    table = docs(["a", "b", "c", "d"], ["en"] * 4, [0.9, 0.5, 0.49, None])
    stats = ChainStats()
    kept, rejected = run_chain([flt(threshold=0.5)], table, stats)
    assert kept.column("id").to_pylist() == ["a", "b"]  # equal to the threshold is kept
    (rej,) = rejected
    assert rej.column("id").to_pylist() == ["c", "d"]
    assert set(rej.column("stage").to_pylist()) == {"quality_filter"} and set(rej.column("reason").to_pylist()) == {
        "quality"
    }
    details = [json.loads(d) for d in rej.column("details").to_pylist()]
    assert details == [
        {"score": pytest.approx(0.49, abs=1e-6), "threshold": 0.5, "language": "en"},
        {"score": None, "threshold": 0.5, "language": "en"},
    ]
    assert stats.rejected == {"quality": 2}
    assert kept.column_names == table.column_names  # the filter adds no columns to what it keeps


def test_earlier_reasons_are_kept():
    table = docs(["a", "b"], ["en", "en"], [0.1, 0.9]).append_column("reason", pa.array(["language", None]))
    table = table.append_column("details", pa.array(["x", None], pa.string()))
    out = flt(threshold=0.5)(table)
    assert out.column("reason").to_pylist() == ["language", None]


def toxicity(ids, langs, scores) -> pa.Table:
    return docs(ids, langs, scores).rename_columns(["id", "language", "toxicity_score", "text"])


def test_remove_above_a_threshold_keeps_missing_scores():
    """A score where high is bad (toxicity): above the threshold goes; nothing shows a missing score is bad."""
    stage = flt(name="toxicity", threshold=0.5, remove="above")
    kept, (rej,) = run_chain([stage], toxicity(["a", "b", "c", "d"], ["en"] * 4, [0.9, 0.5, 0.1, None]), ChainStats())
    assert kept.column("id").to_pylist() == ["b", "c", "d"]
    assert (rej.column("stage")[0].as_py(), rej.column("reason")[0].as_py()) == ("toxicity_filter", "toxicity")
    assert json.loads(rej.column("details")[0].as_py()) == {
        "score": pytest.approx(0.9),
        "threshold": 0.5,
        "remove": "above",
        "language": "en",
    }


def test_thresholds_per_language_by_code_or_fineweb2_name():
    stage = flt(threshold=0.5, by_language={"de": 0.2, "rus_Cyrl": 0.8})
    table = docs(
        ["en1", "en2", "de1", "de2", "ru1", "ru2"],
        ["en", "en", "de", "de", "ru", "ru"],
        [0.4, 0.6, 0.3, 0.1, 0.7, 0.9],
    )
    assert kept_ids(stage, table) == ["en2", "de1", "ru2"]


def test_top_fraction_per_language():
    ids = [f"{code}{i}" for code in ("en", "de") for i in range(10)]
    langs = ["en"] * 10 + ["de"] * 10
    scores = [i / 10 for i in range(10)] * 2
    rule = ClassifierFilterConfig(top_fraction=0.2, by_language={"de": 0.5})
    cut = top_fraction_cutoffs(langs, scores, ids, rule.value_for)
    assert (cut["en"].kept, cut["de"].kept) == (2, 5)
    assert sorted(kept_ids(flt(cut, top_fraction=0.2, by_language={"de": 0.5}), docs(ids, langs, scores))) == [
        "de5",
        "de6",
        "de7",
        "de8",
        "de9",
        "en8",
        "en9",
    ]


# ---------------------------------------------------------------- cutoffs


def test_ceil_of_the_fraction_per_language():
    ids = [f"d{i:02d}" for i in range(13)]
    langs = ["en"] * 10 + ["de"] * 3
    scores = [0.1 * i for i in range(10)] + [0.5, 0.2, 0.9]
    cut = top_fraction_cutoffs(langs, scores, ids, 0.3)
    assert (cut["en"].kept, cut["en"].total) == (3, 10)  # 0.3 x 10 is 3 (not 4 by float noise)
    assert (cut["de"].kept, cut["de"].total) == (1, 3)  # ceil(0.9)
    stage = flt(cut, top_fraction=0.3)
    assert sorted(kept_ids(stage, docs(ids, langs, scores))) == ["d07", "d08", "d09", "d12"]


def test_ties_are_broken_by_smallest_id_across_batches():
    ids = ["e", "c", "a", "d", "b"]
    table = docs(ids, ["en"] * 5, [0.7] * 5)
    cut = top_fraction_cutoffs(table.column("language"), table.column("quality_score"), table.column("id"), 0.4)
    assert cut["en"] == Cutoff(score=pytest.approx(0.7), id="b", kept=2, total=5)
    stage = flt(cut, top_fraction=0.4)
    kept = kept_ids(stage, table.slice(0, 2)) + kept_ids(stage, table.slice(2))  # two batches
    assert sorted(kept) == ["a", "b"]


def test_one_document_languages_empty_input_and_unknown_languages(caplog):
    cut = top_fraction_cutoffs(["en", "en", "en", "fy"], [0.2, 0.3, 0.4, 0.01], ["1", "2", "3", "4"], 0.01)
    assert cut["fy"].kept == 1 and cut["en"].kept == 1  # a language is never emptied
    assert top_fraction_cutoffs([], [], [], 0.5) == {}
    stage = flt(cut, top_fraction=0.01)
    table = docs(["1", "2", "3", "4", "5"], ["en", "en", "en", "fy", "xx"], [0.2, 0.3, 0.4, 0.01, 0.0])
    stats = ChainStats()
    kept, _ = run_chain([stage], table, stats)
    assert kept.column("id").to_pylist() == ["3", "4", "5"]  # xx has no cutoff: kept, counted, logged
    assert stats.counters["quality_filter.no_cutoff"] == 1
    assert "without a cutoff" in caplog.text
    empty = flt({}, top_fraction=0.5)
    assert kept_ids(empty, table) == ["1", "2", "3", "4", "5"]


def test_missing_scores_rank_last_and_missing_language_is_a_group():
    ids, langs, scores = ["a", "b", "c", "d"], ["en", "en", None, None], [None, 0.1, None, 0.8]
    cut = top_fraction_cutoffs(langs, scores, ids, 0.5)
    assert cut["en"].id == "b" and cut[""].id == "d"
    stage = flt(cut, top_fraction=0.5)
    assert kept_ids(stage, docs(ids, langs, scores)) == ["b", "d"]
    everything = top_fraction_cutoffs(langs, scores, ids, 1.0)
    assert everything["en"].score == -math.inf and everything["en"].id == "a"
    assert kept_ids(flt(everything, top_fraction=1.0), docs(ids, langs, scores)) == ids
    assert Cutoff.from_dict(json.loads(json.dumps(everything["en"].to_dict()))) == everything["en"]


def test_rejected_details_carry_score_and_cutoff():
    ids, langs, scores = ["a", "b"], ["en", "en"], [0.25, 0.75]
    stage = flt(top_fraction_cutoffs(langs, scores, ids, 0.5), top_fraction=0.5)
    _, (rej,) = run_chain([stage], docs(ids, langs, scores), ChainStats())
    assert json.loads(rej.column("details")[0].as_py()) == {
        "score": 0.25,
        "cutoff": 0.75,
        "top_fraction": 0.5,
        "language": "en",
    }


def test_bad_settings():
    with pytest.raises(ValueError, match="set threshold or top_fraction, not both"):
        ClassifierFilterConfig(threshold=0.5, top_fraction=0.5)
    with pytest.raises(ValueError, match="needs the per-language cutoffs"):
        flt(top_fraction=0.5)
    with pytest.raises(ValueError, match="neither threshold nor top_fraction"):
        flt()
    with pytest.raises(ValueError, match="for a score where high is bad use threshold with remove: above"):
        ClassifierFilterConfig(top_fraction=0.5, remove="above")
    with pytest.raises(ValueError, match="by_language changes the threshold or top_fraction per language"):
        ClassifierFilterConfig(by_language={"de": 0.5})
    with pytest.raises(ValueError, match=r"by_language: values must be in \[1e-09, 1\]"):
        ClassifierFilterConfig(top_fraction=0.5, by_language={"de": 0})
    with pytest.raises(ValueError, match="top_fraction: must be in"):
        top_fraction_cutoffs(["en"], [0.5], ["a"], 0)
    with pytest.raises(ValueError, match="quality_filter: the documents have no quality_score column"):
        flt(threshold=0.5)(pa.table({"id": ["a"], "text": ["x"]}))


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
    stage = flt(top_fraction_cutoffs(langs, table.column("quality_score"), ids, fraction), top_fraction=fraction)
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    kept = [i for lo, hi in zip(bounds, bounds[1:], strict=False) for i in kept_ids(stage, table.slice(lo, hi - lo))]
    f32 = table.column("quality_score").to_pylist()  # the float32 values the filter sees
    expected = []
    for lang in set(langs):
        members = [
            (-(s if s is not None else -math.inf), i)
            for i, code, s in zip(ids, langs, f32, strict=False)
            if code == lang
        ]
        n_keep = max(1, math.ceil(round(fraction * len(members), 6)))
        expected += [i for _, i in sorted(members)[:n_keep]]
    assert sorted(kept) == sorted(expected)
