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

MODELS = {
    "quality": (REPO / "samples" / "quality" / "model.ftz", "hq"),
    "edu": (REPO / "samples" / "classifiers" / "edu.ftz", "edu"),
    "toxicity": (REPO / "samples" / "classifiers" / "toxicity.ftz", "toxic"),
}
TEXTS = [
    "The configuration file sets the server's document root.\nEach directive takes one argument.",
    "You are a complete idiot, shut up.\nNobody asked for your opinion, you pathetic loser.",
    "buy cheap pills casino bonus click here",
    "",
    None,
]


def entry(name: str, **kw) -> dict:
    model, label = MODELS[name]
    return {"name": name, "model": str(model), "label": label, **kw}


def batch() -> pa.Table:
    return pa.table({"id": [f"d{i}" for i in range(len(TEXTS))], "text": pa.array(TEXTS, pa.large_string())})


def count_preparations(monkeypatch) -> list:
    """Records each preparation made: (engine, lowercase, max_chars)."""
    import classifiers.fasttext_tokens as tokens

    calls = []
    lines, tokenize = fasttext_scoring.prepared_lines, tokens.tokenize
    monkeypatch.setattr(fasttext_scoring, "prepared_lines", lambda *a: calls.append(("fasttext", *a[1:])) or lines(*a))
    monkeypatch.setattr(tokens, "tokenize", lambda t: calls.append(("projected",)) or tokenize(t))
    return calls


@pytest.mark.parametrize("engine", ["fasttext", "auto"])
def test_three_models_score_as_each_alone_and_share_one_preparation(monkeypatch, engine):
    calls = count_preparations(monkeypatch)
    config = [ClassifierConfig(**entry(n), engine=engine) for n in MODELS]
    stage = ClassifyStage(config)
    out = stage(batch())
    # fastText: one set of prepared lines for three models; auto: three models share one tokenization (projected)
    assert calls == ([("fasttext", False, None)] if engine == "fasttext" else [("projected",)])
    assert stage.engines == ["fasttext" if engine == "fasttext" else "projected"] * 3
    assert out.column_names == [
        "id",
        "text",
        "quality_score",
        "quality_label",
        "edu_score",
        "edu_label",
        "toxicity_score",
        "toxicity_label",
    ]
    for c in config:
        alone, labels = QualityScorer(c.model, c.label).score(batch().column("text"))
        np.testing.assert_allclose(out.column(c.score_column).to_numpy(zero_copy_only=False), alone, atol=1e-6)
        assert out.column(c.label_column).to_pylist() == labels.to_pylist()
    tox = out.column("toxicity_score").to_pylist()
    assert tox[1] > 0.5 > tox[0] and out.column("edu_score")[0].as_py() > out.column("edu_score")[1].as_py()
    empty = stage(batch().slice(0, 0))  # a batch the filters emptied
    assert len(empty) == 0 and empty.schema.field("edu_score").type == pa.float32()


def test_each_preparation_once_and_one_model_per_file(monkeypatch):
    calls = count_preparations(monkeypatch)
    quality = MODELS["quality"][0]
    stage = ClassifyStage(
        [
            ClassifierConfig(**entry("quality")),
            ClassifierConfig(**entry("edu", max_chars=20)),
            ClassifierConfig(name="quality_head", model=str(quality), label="hq", max_chars=20),
            ClassifierConfig(**entry("toxicity", lowercase=True)),
            ClassifierConfig(name="quality_too", model=str(quality), label="hq", engine="fasttext"),
        ]
    )
    out = stage(batch())
    # auto: a model alone in its preparation runs in fastText, two that share one are projected
    assert stage.engines == ["fasttext", "projected", "projected", "fasttext", "fasttext"]
    assert sorted(calls, key=str) == sorted(
        [("fasttext", False, None), ("projected",), ("fasttext", True, None)], key=str
    )
    assert stage.scorers[0].model is stage.scorers[4].model  # the same file loads once per process
    head = QualityScorer(str(quality), "hq", max_chars=20).score(batch().column("text"))[0]
    np.testing.assert_allclose(out.column("quality_head_score").to_numpy(zero_copy_only=False), head, atol=1e-6)
    assert stage.drain_counters() == {
        f"unscored.{n}": 0 for n in ("quality", "edu", "quality_head", "toxicity", "quality_too")
    }


def test_engine_projected_names_a_model_it_cannot_run(tmp_path):
    import pyarrow.parquet as pq

    from classifiers import train_quality

    pq.write_table(pa.table({"text": ["good words here"] * 20}), tmp_path / "p.parquet")
    pq.write_table(pa.table({"text": ["bad words there"] * 20}), tmp_path / "n.parquet")
    assert (
        train_quality.main(
            [
                "--positives",
                str(tmp_path / "p.parquet"),
                "--negatives",
                str(tmp_path / "n.parquet"),
                "-o",
                str(tmp_path / "hs.bin"),
                "--loss",
                "hs",
                "--dim",
                "4",
                "--bucket",
                "1000",
            ]
        )
        == 0
    )
    hs = {"name": "hs", "model": str(tmp_path / "hs.bin"), "label": "hq"}
    with pytest.raises(
        ValueError,
        match=r"^classifiers.0.engine: projected cannot run .*hs.bin.*hierarchical softmax.*use fasttext or auto",
    ):
        ClassifyStage([ClassifierConfig(**hs, engine="projected")])
    stage = ClassifyStage([ClassifierConfig(**hs), ClassifierConfig(**entry("edu"))])  # auto: hs stays in fastText
    assert stage.engines == ["fasttext", "fasttext"]


def config(**changes) -> dict:
    return {"inputs": ["x"], "output": "o", **changes}


@pytest.mark.parametrize(
    "classifiers, extra, message",
    [
        ([entry("edu"), entry("edu")], {}, "config error: classifiers: Value error, two classifiers are named 'edu'"),
        (
            [{**entry("edu"), "name": "Edu-1"}],
            {},
            "config error: classifiers.0.name: 'Edu-1' is not a classifier name",
        ),
        (
            [{**entry("edu"), "name": "language"}],
            {},
            "config error: classifiers.0.name: 'language' is taken: language_score",
        ),
        (
            [{**entry("edu"), "label": "nope", "model": "missing.ftz"}],
            {},
            "config error: classifiers.0.model: no fastText model file",
        ),
        (
            [entry("toxicity", filter={"top_fraction": 0.5, "remove": "above"})],
            {},
            "config error: classifiers.0.filter: top_fraction keeps",
        ),
        (
            [entry("edu")],
            {"dedup": {"keep": {"score_column": "quality_score2"}}},
            "config error: dedup.keep.score_column: no classifier "
            "writes 'quality_score2' (this run's scores: edu_score)",
        ),
    ],
)
def test_bad_settings_are_one_line_naming_the_field(classifiers, extra, message):
    with pytest.raises(ConfigError) as e:
        parse_config(config(classifiers=classifiers, **extra))
    assert str(e.value).startswith(message.replace("Value error, ", "")) and "\n" not in str(e.value), str(e.value)


def test_a_label_the_model_does_not_have_is_named_when_the_stage_is_built():
    with pytest.raises(
        ValueError,
        match=r"^classifiers.0.label: 'nope' is not a label of .*edu.ftz \(its labels: (edu, other|other, edu)\)",
    ):
        ClassifyStage([ClassifierConfig(**{**entry("edu"), "label": "nope"})])


def test_dedup_keeps_by_any_score_and_the_plan_declares_each_classifier():
    c = parse_config(
        config(
            classifiers=[
                entry("edu"),
                entry("toxicity", filter={"threshold": 0.4, "remove": "above", "by_language": {"de": 0.6}}),
            ],
            dedup={"keep": {"score_column": "edu_score"}},
            shards={"layout": {"metadata": ["edu_score", "toxicity_label"]}},
        )
    )
    plan, _ = build_plan(c, DEFAULT_PHASES)
    scoring = plan.stage("extracted", "classifiers")
    assert (
        scoring.adds == ("edu_score", "edu_label", "toxicity_score", "toxicity_label")
        and scoring.label == "scored by edu, toxicity"
    )
    flt = plan.stage("final", "toxicity_filter")
    assert (flt.needs, flt.reasons, flt.section) == (("toxicity_score",), ("toxicity",), "classifiers.1.filter")
    assert flt.label == "toxicity-filtered (above 0.4 removed, per language: de 0.6)"
    assert plan.stage("final", "edu_filter") is None
    with pytest.raises(
        ConfigError, match="shards.layout.metadata: no stage of this run adds the column.s. quality_score"
    ):
        build_plan(
            parse_config(config(classifiers=[entry("edu")], shards={"layout": {"metadata": ["quality_score"]}})),
            DEFAULT_PHASES,
        )


def test_settings_fingerprints_split_scoring_from_filtering():
    """A changed filter redoes only the final phase; a changed model or preparation redoes phase 1."""
    from pipeline.engine.settings import map_phase  # what a map phase's units' fingerprints cover: its components
    from pipeline.phases.extracted import ExtractedPhase
    from pipeline.phases.final import FinalPhase

    def extracted(c):
        return map_phase(ExtractedPhase(), c, None)

    def final(c):
        return map_phase(FinalPhase(), c, None)

    a = parse_config(config(classifiers=[entry("toxicity", filter={"threshold": 0.5, "remove": "above"})]))
    b = parse_config(config(classifiers=[entry("toxicity", filter={"threshold": 0.7, "remove": "above"})]))
    c = parse_config(
        config(classifiers=[entry("toxicity", max_chars=1000, filter={"threshold": 0.5, "remove": "above"})])
    )
    assert extracted(a) == extracted(b) != extracted(c)
    assert final(a) != final(b) and final(a) == final(c)
