"""The projected scorer (classifiers/projected.py) and the shared tokenization (classifiers/fasttext_tokens.py)
give what fastText's own predict gives: every model shape we support, texts made to trip the tokenizer."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from classifiers import train_quality
from classifiers.fasttext_tokens import fnv1a, fnv1a_array, tokenize
from classifiers.projected import ProjectedModel, ProjectedScorer, Unsupported
from classifiers.quality import QualityModelError, QualityScorer, load_model, prepare_texts
from tests.conftest import REPO

DEMO = [
    REPO / "samples" / "quality" / "model.ftz",
    REPO / "samples" / "classifiers" / "edu.ftz",
    REPO / "samples" / "classifiers" / "toxicity.ftz",
]
THREADS = [
    json.loads(line)["text"] for line in (REPO / "samples" / "classifiers" / "train.jsonl").read_text().splitlines()
]


def fasttext_probs(path, texts: list[str], labels: list[str]) -> np.ndarray:
    """fastText's own predict on each text (newlines to spaces, as the pipeline prepares a line)."""
    model = load_model(str(path))
    out = []
    for t in texts:
        names, probs = model.predict(t.replace("\n", " "), k=-1)
        out.append(
            [dict(zip(names, probs, strict=False)).get(lab, 0.0) for lab in labels]
            if len(names)
            else [np.nan] * len(labels)
        )
    return np.array(out, dtype=np.float64)


def projected_probs(path, texts: list[str]) -> tuple[np.ndarray, list[str]]:
    model = ProjectedModel.load(str(path))
    return model.probabilities(
        tokenize(prepare_texts(pa.array(texts, pa.large_string()), one_line=False))
    ) + 1e-5, model.labels


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    """Models of every shape: dense, trigrams with one-vs-all, negative sampling, quantized without a cutoff,
    and two that must fall back to fastText (hierarchical softmax, character n-grams)."""
    d = tmp_path_factory.mktemp("projected")
    pq.write_table(pa.table({"text": THREADS[:200]}), d / "pos.parquet")
    pq.write_table(pa.table({"text": THREADS[200:]}), d / "neg.parquet")
    shapes = {
        "dense.bin": [],
        "ova3.bin": ["--loss", "ova", "--word-ngrams", "3"],
        "ns1.bin": ["--loss", "ns", "--word-ngrams", "1"],
        "quant.ftz": [],
        "hs.bin": ["--loss", "hs"],
        "subwords.bin": ["--minn", "2", "--maxn", "4"],
    }
    for name, extra in shapes.items():
        argv = [
            "--positives",
            str(d / "pos.parquet"),
            "--negatives",
            str(d / "neg.parquet"),
            "-o",
            str(d / name),
            "--dim",
            "8",
            "--bucket",
            "20000",
            "--epoch",
            "2",
            *extra,
        ]
        assert train_quality.main(argv) == 0
    return {name: d / name for name in shapes}


def test_fnv_hash_is_fastText_s_signed_char_variant():
    words = ["abc", "é", "日本語", "z" * 300, ""]
    assert fnv1a_array(pa.array(words)).tolist() == [fnv1a(w.encode()) for w in words]
    unsigned = ((2166136261 ^ 0xE9) * 16777619) & 0xFFFFFFFF  # the textbook FNV-1a of the byte 0xE9
    assert (
        fnv1a(b"\xe9") == ((2166136261 ^ 0xFFFFFFE9) * 16777619) & 0xFFFFFFFF != unsigned
    )  # fastText's: sign-extended


@pytest.mark.parametrize("path", DEMO, ids=lambda p: p.name)
def test_the_demonstration_models_score_as_fasttext(path):
    texts = THREADS[:150] + [
        "",
        "   ",
        "\n\n",
        "a </s> b",
        "x __label__hq y",
        "NUL\x00split",
        "tab\tand\rcr\x0bvt\x0cff",
    ]
    mine, labels = projected_probs(path, texts)
    np.testing.assert_allclose(mine, fasttext_probs(path, texts, labels), atol=1e-6)


@pytest.mark.parametrize("name", ["dense.bin", "ns1.bin", "quant.ftz"])
def test_other_model_shapes_score_as_fasttext(models, name):
    texts = THREADS[:200]
    mine, labels = projected_probs(models[name], texts)
    np.testing.assert_allclose(mine, fasttext_probs(models[name], texts, labels), atol=1e-6)


def test_one_vs_all_follows_fastText_s_sigmoid_table(models):
    """fastText's sigmoid is a 512-step table read at float32 logits: where a logit sits on a step's edge the two
    sums (float32 vectors there, float64 projections here) can fall on either side: one step, rarely."""
    texts = THREADS[:200]
    mine, labels = projected_probs(models["ova3.bin"], texts)
    diff = np.abs(mine - fasttext_probs(models["ova3.bin"], texts, labels)).max(axis=1)
    assert (diff <= 1e-6).mean() >= 0.97 and diff.max() <= 0.0079


@pytest.mark.parametrize("name", ["hs.bin", "subwords.bin"])
def test_models_it_does_not_reproduce_are_refused(models, name):
    with pytest.raises(Unsupported):
        ProjectedModel.load(str(models[name]))


words = st.sampled_from(
    ["the", "and", "idiot", "docs", "</s>", "__label__toxic", "__label__x", "é", "日本", "", "a" * 70]
)
seps = st.sampled_from([" ", "  ", "\n", "\t", "\r", "\x0b", "\x0c", "\x00", " \n "])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(words, seps), max_size=30), min_size=1, max_size=8))
def test_any_text_tokenizes_and_scores_as_fasttext(docs):
    texts = ["".join(w + s for w, s in doc) for doc in docs]
    mine, labels = projected_probs(DEMO[2], texts)
    np.testing.assert_allclose(mine, fasttext_probs(DEMO[2], texts, labels), atol=1e-6)


def test_the_scorer_gives_the_binding_s_columns():
    texts = pa.array(THREADS[:40] + [""], pa.large_string())
    for path, label in zip(DEMO, ["hq", "edu", "toxic"], strict=False):
        s1, l1 = ProjectedScorer(path, label).score_tokens(tokenize(prepare_texts(texts, one_line=False)))
        s2, l2 = QualityScorer(str(path), label).score(texts)
        np.testing.assert_allclose(s1, s2, atol=1e-6)
        assert l1.to_pylist() == l2.to_pylist()
    with pytest.raises(
        QualityModelError, match=r"^classifiers.2.label: 'nope' is not a label of .*toxicity.ftz \(its labels: "
    ):
        ProjectedScorer(DEMO[2], "nope", "classifiers.2")
