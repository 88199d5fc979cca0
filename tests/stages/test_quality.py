"""fastText classifiers: training, loading, scoring, configuration errors (the quality model as the example)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import BaseModel, ValidationError

from classifiers import train_quality
from classifiers.quality import QualityModelError, QualityScorer, load_model, prepare_texts
from pipeline.config import _describe
from stages.base import ChainStats, run_chain
from stages.classify import ClassifierConfig, ClassifyStage
from stages.quality import QualityConfig


def quality(model, **kw) -> ClassifierConfig:
    return ClassifierConfig(name="quality", model=str(model), label="hq", **kw)


GOOD = (
    "the committee reviewed evidence from several independent studies and published a careful analysis of results"
).split()
BAD = "buy cheap pills casino bonus click here free winner hot deals limited offer discount now".split()
SHARED = "and of to a in is page".split()


def corpus(n: int, vocab: list[str], seed: int) -> list[str]:
    """``n`` documents of 40-80 words drawn from ``vocab`` and a few shared words, some with newlines."""
    rng = np.random.default_rng(seed)
    words = vocab + SHARED
    docs = []
    for _ in range(n):
        w = rng.choice(words, size=int(rng.integers(40, 80)))
        lines = [" ".join(w[j : j + 12]) for j in range(0, len(w), 12)]
        docs.append("\n".join(lines))
    return docs


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Positives and negatives as Parquet and JSON lines."""
    d = tmp_path_factory.mktemp("quality-data")
    pos, neg = corpus(60, GOOD, 1), corpus(60, BAD, 2)
    pq.write_table(pa.table({"text": pos, "url": ["u"] * 60}), d / "pos.parquet")
    with open(d / "neg.jsonl", "w") as f:
        for t in neg:
            f.write(json.dumps({"text": t, "lang": "en"}) + "\n")
    with open(d / "labeled.jsonl", "w") as f:
        for t, lab in [*((t, "good") for t in pos), *((t, "spam") for t in neg)]:
            f.write(json.dumps({"body": t, "kind": lab}) + "\n")
    return d, pos, neg


SMALL = ["--dim", "8", "--epoch", "10", "--lr", "0.5", "--bucket", "10000", "--seed", "3"]


def train(sets_dir, out, *extra) -> int:
    return train_quality.main(
        [
            "--positives",
            str(sets_dir / "pos.parquet"),
            "--negatives",
            str(sets_dir / "neg.jsonl"),
            "-o",
            str(out),
            *SMALL,
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def model_path(sets, tmp_path_factory):
    out = tmp_path_factory.mktemp("quality-model") / "model.bin"
    assert train(sets[0], out) == 0
    return out


def test_train_save_load_score_round_trip(sets, model_path, capsys):
    _, pos, neg = sets
    metrics = json.loads(train_quality.metrics_path_for(model_path).read_text())
    assert metrics["labels"] and sorted(metrics["labels"]) == ["cc", "hq"]
    assert metrics["data"]["train"] == {"cc": 54, "hq": 54} and metrics["data"]["valid"] == {"cc": 6, "hq": 6}
    assert metrics["valid_metrics"]["per_label"]["hq"]["f1"] == 1.0  # the two vocabularies barely overlap
    assert metrics["sha256"] == hashlib.sha256(model_path.read_bytes()).hexdigest()

    stage = ClassifyStage([quality(model_path)])
    batch = pa.table({"id": [f"d{i}" for i in range(6)], "text": pos[:3] + neg[:3]})
    out = stage(batch)
    assert out.column_names == ["id", "text", "quality_score", "quality_label"]
    assert out.schema.field("quality_score").type == pa.float32()
    score = out.column("quality_score").to_numpy()
    assert (score[:3] > 0.9).all() and (score[3:] < 0.1).all()
    assert out.column("quality_label").to_pylist() == ["hq"] * 3 + ["cc"] * 3
    assert ((score >= 0) & (score <= 1)).all()


def test_scores_match_fasttext_predict(model_path, sets):
    """The batch path gives what fastText's own predict() gives for each document."""
    _, pos, neg = sets
    texts = pos[:5] + neg[:5] + ["", "unknownword"]
    model = load_model(str(model_path))
    scores, labels = QualityScorer(str(model_path), "hq").score(pa.array(texts))
    for text, s, lab in zip(texts, scores, labels.to_pylist(), strict=False):
        names, probs = model.predict(text.replace("\n", " "), k=-1)
        expected = dict(zip(names, probs, strict=False))["__label__hq"]
        assert s == pytest.approx(min(expected, 1.0), abs=1e-6)
        assert lab == names[0].removeprefix("__label__")


def test_positive_label_is_configurable(model_path, sets):
    _, pos, neg = sets
    texts = pa.array(pos[:4] + neg[:4])
    hq, labels = QualityScorer(str(model_path), "hq").score(texts)
    cc, labels2 = QualityScorer(str(model_path), "__label__cc").score(texts)  # with or without the prefix
    np.testing.assert_allclose(hq + cc, 1.0, atol=1e-4)  # softmax over two labels
    assert labels.to_pylist() == labels2.to_pylist()
    with pytest.raises(
        QualityModelError, match=r"^quality.positive_label: 'good' is not a label of .* \(its labels: "
    ):
        QualityScorer(str(model_path), "good")


def test_text_preparation():
    out = prepare_texts(pa.chunked_array([["Ab\nCd\n\nÉf", None, "xyz"]]), lowercase=True, max_chars=6)
    assert out.to_pylist() == ["ab cd ", "", "xyz"]
    assert prepare_texts(pa.array(["A\nB"])).to_pylist() == ["A B"]


def test_max_chars_and_newlines_reach_the_model(model_path, sets):
    _, pos, neg = sets
    doc = pos[0] + "\n" + neg[0]
    full = QualityScorer(str(model_path), "hq").score(pa.array([doc]))[0][0]
    head = QualityScorer(str(model_path), "hq", max_chars=len(pos[0])).score(pa.array([doc]))[0][0]
    only_pos = QualityScorer(str(model_path), "hq").score(pa.array([pos[0].replace("\n", " ")]))[0][0]
    assert head == only_pos and head != full


def test_empty_and_null_texts_are_scored(model_path):
    stage = ClassifyStage([quality(model_path)])
    out = stage(pa.table({"id": ["a", "b", "c"], "text": pa.array(["", None, "   \n "], pa.large_string())}))
    assert out.column("quality_score").null_count == 0  # the end-of-line token alone gets a prediction
    assert stage.drain_counters() == {"unscored.quality": 0}
    empty = stage(pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())}))
    assert len(empty) == 0 and empty.schema.field("quality_score").type == pa.float32()


def test_stage_in_a_chain_removes_nothing(model_path, sets):
    _, pos, neg = sets
    batch = pa.table({"id": ["a", "b"], "text": [pos[0], neg[0]]})
    stats = ChainStats()
    kept, rejected = run_chain([ClassifyStage([quality(model_path)])], batch, stats)
    assert len(kept) == 2 and rejected == [] and stats.docs_in["classifiers"] == 2


# ---------------------------------------------------------------- errors name the field


class _Run(BaseModel):
    quality: QualityConfig


def one_line_errors(data: dict) -> list[str]:
    with pytest.raises(ValidationError) as e:
        _Run.model_validate({"quality": data})
    return [_describe(err) for err in e.value.errors()]


def test_bad_model_path_is_a_one_line_config_error(tmp_path):
    (msg,) = one_line_errors({"enabled": True, "model": str(tmp_path / "missing.bin")})
    assert msg.startswith("config error: quality.model: ") and "no fastText model file at" in msg and "\n" not in msg
    (tmp_path / "notes.txt").write_text("not a model")
    (msg,) = one_line_errors({"enabled": True, "model": str(tmp_path / "notes.txt")})
    assert msg.startswith("config error: quality.model: ") and "is not a fastText model" in msg
    (msg,) = one_line_errors({"enabled": True})
    assert "quality.model is required when quality.enabled is true" in msg
    (msg,) = one_line_errors({"filter": {"threshold": 0.5}})
    assert "quality.filter needs scores" in msg
    (msg,) = one_line_errors({"max_chars": 0})
    assert msg.startswith("config error: quality.max_chars: ")


def test_bad_model_at_stage_level(tmp_path, model_path):
    """Past the config (e.g. a file removed after validation), the stage says which field is wrong."""
    with pytest.raises(QualityModelError, match=r"^classifiers.0.model: no fastText model file at "):
        ClassifyStage(
            [
                ClassifierConfig.model_construct(
                    name="quality", model=str(tmp_path / "gone.bin"), label="hq", lowercase=False, max_chars=None
                )
            ]
        )
    data = model_path.read_bytes()
    # Cut inside the dictionary fastText's loader would spin forever; cut inside a matrix it reads zeros.
    for cut in (200, len(data) - 100):
        broken = tmp_path / f"cut-{cut}.bin"
        broken.write_bytes(data[:cut])
        with pytest.raises(QualityModelError, match=r"^quality.model: .*cut-\d+.bin' is truncated"):
            load_model(str(broken))
    (tmp_path / "long.bin").write_bytes(data + b"\0\0")
    with pytest.raises(QualityModelError, match=r"has 2 bytes after the model"):
        load_model(str(tmp_path / "long.bin"))


def test_word_vector_model_is_refused(tmp_path):
    import fasttext

    corpus_file = tmp_path / "c.txt"
    corpus_file.write_text("\n".join(corpus(30, GOOD, 5)) + "\n")
    with train_quality.zeroed_allocations():
        wv = fasttext.train_unsupervised(
            str(corpus_file), dim=4, epoch=1, minCount=1, thread=1, verbose=0, bucket=1000
        )
    wv.save_model(str(tmp_path / "wv.bin"))
    with pytest.raises(QualityModelError, match=r"^quality.model: .* is a word-vector model"):
        load_model(str(tmp_path / "wv.bin"))


def test_the_quality_section_of_earlier_configs_is_the_quality_classifier(model_path):
    """``quality:`` keeps working: it is read as the classifiers
    entry named quality; a bad path names quality.model."""
    from pipeline.config import ConfigError, parse_config

    cfg = parse_config(
        {
            "inputs": ["x"],
            "output": "o",
            "quality": {"enabled": True, "model": str(model_path), "max_chars": 9, "filter": {"top_fraction": 0.5}},
        }
    )
    (c,) = cfg.classifiers
    assert (c.name, c.model, c.label, c.max_chars, c.filter.top_fraction) == ("quality", str(model_path), "hq", 9, 0.5)
    assert cfg.quality is None and "quality" not in cfg.model_dump()  # recorded as the classifiers entry only
    assert parse_config({"inputs": ["x"], "output": "o", "quality": {"enabled": False}}).classifiers == []
    with pytest.raises(ConfigError, match=r"^config error: quality.model: .*no fastText model file"):
        parse_config({"inputs": ["x"], "output": "o", "quality": {"enabled": True, "model": "nope.bin"}})
    with pytest.raises(ConfigError, match=r"keep only the classifiers entry"):
        parse_config(
            {
                "inputs": ["x"],
                "output": "o",
                "quality": {"enabled": True, "model": str(model_path)},
                "classifiers": [{"name": "quality", "model": str(model_path), "label": "hq"}],
            }
        )
    assert (
        QualityConfig(enabled=True, model=str(model_path), filter={"threshold": 0.5}).replacement()
        == f"classifiers: [{{name: quality, model: {model_path}, label: hq, filter: {{threshold: 0.5}}}}]"
    )


def test_every_field_is_described():
    def walk(model, prefix=""):
        for name, f in model.model_fields.items():
            sub = f.annotation if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel) else None
            yield prefix + name, f
            if sub:
                yield from walk(sub, f"{prefix}{name}.")

    for model in (QualityConfig, ClassifierConfig):
        for name, f in walk(model):
            assert f.description, name


# ---------------------------------------------------------------- training


def test_training_is_deterministic_with_a_seed(sets, tmp_path):
    assert train(sets[0], tmp_path / "a.bin") == 0
    assert train(sets[0], tmp_path / "b.bin") == 0
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    assert train(sets[0], tmp_path / "c.bin", "--seed", "4") == 0
    assert (tmp_path / "c.bin").read_bytes() != (tmp_path / "a.bin").read_bytes()


def test_labeled_data_jsonl_and_quantized_output(sets, tmp_path):
    d = sets[0]
    out, full = tmp_path / "m.ftz", tmp_path / "m.bin"
    argv = ["--data", str(d / "labeled.jsonl"), "--text-column", "body", "--label-column", "kind",
            "--positive-label", "good", *SMALL]  # fmt: skip
    assert train_quality.main([*argv, "-o", str(out)]) == 0
    metrics = json.loads((tmp_path / "m.metrics.json").read_text())
    assert train_quality.main([*argv, "-o", str(full)]) == 0
    assert out.stat().st_size < full.stat().st_size / 5
    assert metrics["quantized"] and metrics["positive_label"] == "good"
    scores, labels = QualityScorer(str(out), "good").score(pa.array(sets[1][:3] + sets[2][:3]))
    assert labels.to_pylist() == ["good"] * 3 + ["spam"] * 3


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--data", "{d}/labeled.jsonl", "--text-column", "body", "--label-column", "nope"],
            "no column 'nope' (its columns: body, kind)",
        ),
        (["--data", "{d}/missing-*.parquet"], "no data file matches"),
        (["--positives", "{d}/pos.parquet"], "--positives and --negatives go together"),
        (
            ["--data", "{d}/labeled.jsonl", "--text-column", "body", "--label-column", "kind"],
            "--positive-label 'hq' is not among",
        ),
        (
            ["--positives", "{d}/pos.parquet", "--negatives", "{d}/neg.jsonl", "--valid-fraction", "1"],
            "--valid-fraction",
        ),
    ],
)
def test_bad_training_input_is_one_line(sets, tmp_path, capsys, argv, message):
    rc = train_quality.main([a.format(d=sets[0]) for a in argv] + ["-o", str(tmp_path / "m.bin")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and "\n" not in err


def test_split_is_stratified_and_seeded():
    labels = np.array(["a"] * 50 + ["b"] * 7 + ["c"] * 1, dtype=object)
    tr, va = train_quality.split(labels, 0.2, seed=1, balance=False)
    assert sorted(np.r_[tr, va].tolist()) == list(range(58))
    assert (labels[va] == "a").sum() == 10 and (labels[va] == "b").sum() == 1 and (labels[va] == "c").sum() == 0
    tr2, va2 = train_quality.split(labels, 0.2, seed=1, balance=False)
    assert tr.tolist() == tr2.tolist() and va.tolist() == va2.tolist()
    tr3, va3 = train_quality.split(labels, 0.2, seed=1, balance=True)
    assert len(tr3) + len(va3) == 3


def test_roc_auc_matches_pairwise_count():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, 40).astype(np.float32)  # many ties
    positive = rng.random(40) < 0.4
    pairs = [(p, n) for p in scores[positive] for n in scores[~positive]]
    expected = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)
    assert train_quality.roc_auc(scores, positive) == pytest.approx(expected)
    assert train_quality.roc_auc(scores, np.ones(40, bool)) is None


def test_label_tokens_inside_texts_do_not_become_labels(tmp_path):
    train_quality.write_training_file(
        tmp_path / "t.txt", pa.array(["see __label__cc here", "__label__x\nnext"]), ["hq", "two words"], False, None
    )
    assert (tmp_path / "t.txt").read_text().splitlines() == ["__label__hq see  here", "__label__two_words  next"]
