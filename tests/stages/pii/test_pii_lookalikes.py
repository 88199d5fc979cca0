"""Look-alikes stay, PII goes: the fixture set (tests/fixtures/pii/cases.jsonl); NER with an installed pipeline."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from stages.pii import PiiConfig, PiiStage

CASES = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[2] / "fixtures" / "pii" / "cases.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
]


@pytest.fixture(scope="module")
def redacted() -> list[str]:
    stage = PiiStage(PiiConfig())
    out = stage(
        pa.table(
            {"text": pa.array([c["text"] for c in CASES], pa.large_string()), "language": [c["lang"] for c in CASES]}
        )
    )
    return out.column("text").to_pylist()


def test_fixture_set_covers_every_type():
    pii = Counter(p["type"] for c in CASES for p in c["pii"])
    look = Counter(p["type"] for c in CASES for p in c["not_pii"])
    assert set(pii) == {
        "EMAIL_ADDRESS",
        "PHONE_NUMBER",
        "IP_ADDRESS",
        "CREDIT_CARD",
        "IBAN_CODE",
        "US_SSN",
        "URL_CREDENTIALS",
    }
    assert len(look) == 14 and min(look.values()) >= 50
    assert {c["lang"] for c in CASES} == {"en", "de", "fr", "es"}


def test_lookalikes_are_untouched(redacted):
    touched = [
        (c["id"], item["type"], item["value"])
        for c, out in zip(CASES, redacted, strict=False)
        for item in c["not_pii"]
        if item["value"] not in out
    ]
    assert touched == []


def test_planted_pii_is_gone(redacted):
    left = [
        (c["id"], item["type"], item["value"])
        for c, out in zip(CASES, redacted, strict=False)
        for item in c["pii"]
        if item["value"] in out
    ]
    assert left == []


def test_person_and_location_with_an_installed_spacy_pipeline(tmp_path):
    # a real spaCy pipeline saved to disk (an entity ruler: no model to download), named by its path
    import spacy

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERSON", "pattern": "Ada Lovelace"}, {"label": "GPE", "pattern": "London"}])
    nlp.to_disk(tmp_path / "ner")
    cfg = PiiConfig.model_validate(
        {"ner_models": {"en": str(tmp_path / "ner")}, "entities": {"person": True, "location": "annotate"}}
    )
    stage = PiiStage(cfg)
    text = "Ada Lovelace wrote from London to charles@example.org about the engine."
    out = stage(pa.table({"text": pa.array([text, text], pa.large_string()), "language": ["en", "de"]}))
    assert out.column("text").to_pylist() == [
        "<PERSON> wrote from London to <EMAIL_ADDRESS> about the engine.",  # en: the pipeline runs
        "Ada Lovelace wrote from London to <EMAIL_ADDRESS> about the engine.",  # de: no pipeline for it
    ]
    assert out.column("pii_location").to_pylist() == [1, 0] and out.column("pii_person").to_pylist() == [1, 0]
