"""Obfuscated PII forms are found (normalized views, offsets back to the original) and their look-alikes kept."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from stages.pii import PiiConfig, PiiStage
from stages.pii.normalize import PERCENT_ROUNDS, text_view

OBFUSCATED = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[2] / "fixtures" / "pii" / "obfuscated.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
]


@pytest.fixture(scope="module")
def stage() -> PiiStage:
    return PiiStage(PiiConfig())


def redact(stage: PiiStage, *texts: str, lang: str = "en") -> list[str]:
    return (
        stage(pa.table({"text": pa.array(texts, pa.large_string()), "language": [lang] * len(texts)}))
        .column("text")
        .to_pylist()
    )


@pytest.fixture(scope="module")
def fixture_out(stage) -> list[str]:
    out = stage(
        pa.table(
            {
                "text": pa.array([c["text"] for c in OBFUSCATED], pa.large_string()),
                "language": [c["lang"] for c in OBFUSCATED],
            }
        )
    )
    return out.column("text").to_pylist()


def test_every_obfuscated_form_is_redacted_whole(fixture_out):
    assert len(OBFUSCATED) >= 9
    left = [
        (c["id"], p["value"])
        for c, out in zip(OBFUSCATED, fixture_out, strict=False)
        for p in c["pii"]
        if p["value"] in out
    ]
    assert left == []
    typed = [
        (c["id"], p["type"])
        for c, out in zip(OBFUSCATED, fixture_out, strict=False)
        for p in c["pii"]
        if out != c["text"].replace(p["value"], f"<{p['type']}>")
    ]
    assert typed == []  # the whole obfuscated form is the placeholder, nothing else changed


def test_their_lookalikes_are_kept(fixture_out):
    touched = [
        (c["id"], p["value"])
        for c, out in zip(OBFUSCATED, fixture_out, strict=False)
        for p in c["not_pii"]
        if p["value"] not in out
    ]
    assert touched == []


@pytest.mark.parametrize(
    "text",
    [
        "Meet me (at) noon (dot) sharp.",  # no domain with a public suffix
        "We met [at] the office [dot] Later that day...",
        "Firmware 4111.1111.1111.1112 and 1.2.3.4 and 2024.05.12.1030",  # fails Luhn; versions, dates
        "The ratio 1234.5678 and 3.14159 and 10.0.19045.4529.",
        "Words like ab12 cdef ghij, mp3 file, de12 abcd efgh ijkl, sha1 ae34f0c1d2e3b4a5c6d7.",
        "２０２４年５月１２日、価格は１２，８００円、時間は１２：３０です。",
        "A decimal 12.34 (dot) 56 and x (at) y.",
    ],
)
def test_lookalikes_of_the_tricks_stay_byte_identical(stage, text):
    assert redact(stage, text) == [text]


def test_a_full_width_form_in_a_long_document_maps_back_exactly(stage):
    head = "Plain words come first. " * 400
    text = (
        head
        + "Mail ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｏｒｇ or john (at) example (dot) org, tel ０３０ １２３４５６７８."
        + " Then more." * 50
    )
    assert redact(stage, text, lang="de") == [
        head + "Mail <EMAIL_ADDRESS> or <EMAIL_ADDRESS>, tel <PHONE_NUMBER>." + " Then more." * 50
    ]


def test_view_offsets_point_at_the_whole_original_form():
    text = "x john (at) mail (dot) example (dot) com y"
    view = text_view(text)
    assert view.text == "x john@mail.example.com y"
    start = view.text.index("john")
    assert view.span(start, start + len("john@mail.example.com")) == (2, len(text) - 2)
    assert view.span(0, 1) == (0, 1) and view.span(len(view.text) - 1, len(view.text)) == (len(text) - 1, len(text))


def test_percent_decoding_is_bounded_and_tolerant():
    assert text_view("a%2540b.com", decode_percent=True).text == "a@b.com"  # double-encoded
    deep = "a%" + "25" * (PERCENT_ROUNDS + 2) + "40b.com"
    assert "@" not in text_view(deep, decode_percent=True).text  # more rounds than that is an attack: left encoded
    for bad in ("100%", "%zz%4", "%E2%82 done", "%C3%28"):  # invalid escapes and invalid UTF-8 stay as they are
        assert text_view(bad, decode_percent=True).text == bad
    assert text_view("536%2D22%2D1974").text == "536%2D22%2D1974"  # off unless asked for (the stage's text)
