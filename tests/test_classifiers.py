"""classifiers: several fastText models in one pass: the text prepared once per preparation, each model loaded
once per process, its columns and reasons declared to the plan, its settings checked with the field named."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import classifiers.quality as fasttext_scoring
from classifiers.quality import QualityScorer
from pipeline.config import ConfigError, parse_config
from pipeline.phases import DEFAULT_PHASES
from pipeline.plan import build_plan
from stages.classify import ClassifierConfig, ClassifyStage
from tests.conftest import REPO

MODELS = {"quality": (REPO / "samples" / "quality" / "model.ftz", "hq"),
          "edu": (REPO / "samples" / "classifiers" / "edu.ftz", "edu"),
          "toxicity": (REPO / "samples" / "classifiers" / "toxicity.ftz", "toxic")}
TEXTS = ["The configuration file sets the server's document root.\nEach directive takes one argument.",
         "You are a complete idiot, shut up.\nNobody asked for your opinion, you pathetic loser.",
         "buy cheap pills casino bonus click here", "", None]


def entry(name: str, **kw) -> dict:
    model, label = MODELS[name]
    return {"name": name, "model": str(model), "label": label, **kw}


def batch() -> pa.Table:
    return pa.table({"id": [f"d{i}" for i in range(len(TEXTS))], "text": pa.array(TEXTS, pa.large_string())})


def test_three_models_score_as_each_alone_and_share_one_preparation(monkeypatch):
    calls = []
    real = fasttext_scoring.prepared_lines
    monkeypatch.setattr(fasttext_scoring, "prepared_lines", lambda *a: calls.append(a[1:]) or real(*a))
    config = [ClassifierConfig(**entry(n)) for n in MODELS]
    out = ClassifyStage(config)(batch())
    assert calls == [(False, None)]  # one preparation, three models
    assert out.column_names == ["id", "text", "quality_score", "quality_label", "edu_score", "edu_label", "toxicity_score", "toxicity_label"]
    for c in config:
        alone, labels = QualityScorer(c.model, c.label).score(batch().column("text"))
        np.testing.assert_array_equal(out.column(c.score_column).to_numpy(zero_copy_only=False), alone)
        assert out.column(c.label_column).to_pylist() == labels.to_pylist()
    tox = out.column("toxicity_score").to_pylist()
    assert tox[1] > 0.5 > tox[0] and out.column("edu_score")[0].as_py() > out.column("edu_score")[1].as_py()


def test_each_preparation_once_and_one_model_per_file(monkeypatch):
    calls = []
    real = fasttext_scoring.prepared_lines
    monkeypatch.setattr(fasttext_scoring, "prepared_lines", lambda *a: calls.append(a[1:]) or real(*a))
    quality = MODELS["quality"][0]
    stage = ClassifyStage([ClassifierConfig(**entry("quality")), ClassifierConfig(**entry("edu", max_chars=20)),
                           ClassifierConfig(name="quality_head", model=str(quality), label="hq", max_chars=20),
                           ClassifierConfig(**entry("toxicity", lowercase=True))])
    out = stage(batch())
    assert sorted(calls, key=str) == sorted([(False, None), (False, 20), (True, None)], key=str)  # 3 preparations for 4 models
    assert stage.scorers[0].model is stage.scorers[2].model  # the same file loads once per process
    head = QualityScorer(str(quality), "hq", max_chars=20).score(batch().column("text"))[0]
    np.testing.assert_array_equal(out.column("quality_head_score").to_numpy(zero_copy_only=False), head)
    assert stage.drain_counters() == {"unscored.quality": 0, "unscored.edu": 0, "unscored.quality_head": 0, "unscored.toxicity": 0}


def config(**changes) -> dict:
    return {"inputs": ["x"], "output": "o", **changes}


@pytest.mark.parametrize("classifiers, extra, message", [
    ([entry("edu"), entry("edu")], {}, "config error: classifiers: Value error, two classifiers are named 'edu'"),
    ([{**entry("edu"), "name": "Edu-1"}], {}, "config error: classifiers.0.name: 'Edu-1' is not a classifier name"),
    ([{**entry("edu"), "name": "language"}], {}, "config error: classifiers.0.name: 'language' is taken: language_score"),
    ([{**entry("edu"), "label": "nope", "model": "missing.ftz"}], {}, "config error: classifiers.0.model: no fastText model file"),
    ([entry("toxicity", filter={"top_fraction": 0.5, "remove": "above"})], {}, "config error: classifiers.0.filter: top_fraction keeps"),
    ([entry("edu")], {"dedup": {"keep": {"score_column": "quality_score2"}}},
     "config error: dedup.keep.score_column: no classifier writes 'quality_score2' (this run's scores: edu_score)"),
])
def test_bad_settings_are_one_line_naming_the_field(classifiers, extra, message):
    with pytest.raises(ConfigError) as e:
        parse_config(config(classifiers=classifiers, **extra))
    assert str(e.value).startswith(message.replace("Value error, ", "")) and "\n" not in str(e.value), str(e.value)


def test_a_label_the_model_does_not_have_is_named_when_the_stage_is_built():
    with pytest.raises(ValueError, match=r"^classifiers.0.label: 'nope' is not a label of .*edu.ftz \(its labels: (edu, other|other, edu)\)"):
        ClassifyStage([ClassifierConfig(**{**entry("edu"), "label": "nope"})])


def test_dedup_keeps_by_any_score_and_the_plan_declares_each_classifier():
    c = parse_config(config(classifiers=[entry("edu"), entry("toxicity", filter={"threshold": 0.4, "remove": "above",
                                                                                   "by_language": {"de": 0.6}})],
                            dedup={"keep": {"score_column": "edu_score"}}, shards={"layout": {"metadata": ["edu_score", "toxicity_label"]}}))
    plan, _ = build_plan(c, DEFAULT_PHASES)
    scoring = plan.stage("extracted", "classifiers")
    assert scoring.adds == ("edu_score", "edu_label", "toxicity_score", "toxicity_label") and scoring.label == "scored by edu, toxicity"
    flt = plan.stage("final", "toxicity_filter")
    assert (flt.needs, flt.reasons, flt.section) == (("toxicity_score",), ("toxicity",), "classifiers.1.filter")
    assert flt.label == "toxicity-filtered (above 0.4 removed, per language: de 0.6)"
    assert plan.stage("final", "edu_filter") is None
    with pytest.raises(ConfigError, match="shards.layout.metadata: no stage of this run adds the column.s. quality_score"):
        build_plan(parse_config(config(classifiers=[entry("edu")], shards={"layout": {"metadata": ["quality_score"]}})), DEFAULT_PHASES)


def test_settings_fingerprints_split_scoring_from_filtering():
    """A changed filter redoes only the final phase; a changed model or preparation redoes phase 1."""
    from pipeline.phases.extracted import ExtractedPhase
    from pipeline.phases.final import FinalPhase

    a = parse_config(config(classifiers=[entry("toxicity", filter={"threshold": 0.5, "remove": "above"})]))
    b = parse_config(config(classifiers=[entry("toxicity", filter={"threshold": 0.7, "remove": "above"})]))
    c = parse_config(config(classifiers=[entry("toxicity", max_chars=1000, filter={"threshold": 0.5, "remove": "above"})]))
    assert ExtractedPhase().settings(a) == ExtractedPhase().settings(b) != ExtractedPhase().settings(c)
    assert FinalPhase().settings(a) != FinalPhase().settings(b) and FinalPhase().settings(a) == FinalPhase().settings(c)
