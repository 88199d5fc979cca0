"""The candidate pass: RE2 prefilter vs Python spans, chunk ownership, and windows == presidio on the whole text."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings, strategies as st

from stages.pii import PiiConfig, PiiStage
from stages.pii.candidates import candidate_pattern, pieces
from stages.pii.config import PATTERN_ENTITIES
from stages.pii.redact import Finding, resolve

CASES = Path(__file__).resolve().parents[2] / "fixtures" / "pii" / "cases.jsonl"
PATTERN = candidate_pattern(PiiConfig(), list(PATTERN_ENTITIES))

# characters candidates are made of, and some that look like them in other scripts
ALPHABET = st.sampled_from(
    list("0123456789 .-/:@()+#abcDEFxyzZ_\n\t") + ["\u00a0", "\u2013", "\uff10", "\u0663", "\u3000", "é", "ß"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=60), min_size=1, max_size=20))
def test_re2_prefilter_finds_every_document_python_finds(texts):
    # a document the Python regex has a candidate in must pass Arrow's RE2 scan (a superset is fine)
    re2 = pc.match_substring_regex(pa.array(texts, pa.large_string()), PATTERN.re2).to_pylist()
    for text, hit in zip(texts, re2, strict=False):
        if PATTERN.python.search(text):
            assert hit, text


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 500), st.integers(1, 20000), st.integers(1000, 5000), st.integers(2, 600))
def test_every_position_is_owned_once_and_short_entities_fit(start, length, chunk, overlap):
    overlap = min(overlap * 2, chunk - 2) // 2 * 2
    end = start + length
    ps = pieces(0, start, end, chunk, overlap)
    owners = [0] * length
    for p in ps:
        assert start <= p.start <= p.own_start <= p.own_end <= p.end <= end and p.end - p.start <= chunk
        for pos in range(p.own_start, p.own_end):
            owners[pos - start] += 1
            # an entity of up to overlap/2 characters starting here lies inside this piece
            assert min(pos + overlap // 2, end) <= p.end
    assert owners == [1] * length


def _whole_text_findings(stage: PiiStage, text: str, lang: str) -> list[Finding]:
    """presidio's analyzer (the stage's own engine) on the whole text, with the stage's thresholds."""
    entities = stage.pattern_entities
    floor = min(stage.thresholds[e] for e in entities)
    found = [
        Finding(r.start, r.end, r.entity_type, round(r.score, 4))
        for r in stage.analyzer.analyze(
            text=text, language=stage._language(lang), entities=entities, score_threshold=floor
        )
        if r.score >= stage.thresholds[r.entity_type]
    ]
    return resolve(found)


@pytest.fixture(scope="module")
def stage() -> PiiStage:
    return PiiStage(PiiConfig())


def test_windows_find_what_presidio_finds_on_the_whole_text(stage):
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]
    # whole paragraphs one after another: long documents whose windows merge and split
    docs = [(" ".join(c["text"] for c in cases[i : i + 12]), cases[i]["lang"]) for i in range(0, len(cases), 12)]
    docs += [(c["text"], c["lang"]) for c in cases[:60]]
    texts, langs = [t for t, _ in docs], [lang for _, lang in docs]
    windowed = stage.detect(texts, langs)
    total = 0
    for i, (text, lang) in enumerate(docs):
        whole = _whole_text_findings(stage, text, lang)
        assert windowed.get(i, []) == whole, text[:200]
        total += len(whole)
    assert total > 100


def test_small_chunks_find_the_same_as_one_call(stage):
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]
    text = " ".join(c["text"] for c in cases[:80])
    small = PiiStage(PiiConfig(chunk_chars=1000))
    assert small.detect([text], ["en"]) == stage.detect([text], ["en"])
