"""Paragraph and line dedup, per document (stages/dedup/paragraphs.py) and its settings: no Ray."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from pipeline.config import ConfigError, parse_config
from stages.dedup.config import ParagraphsConfig
from stages.dedup.paragraphs import (
    CCNET_PUNCT,
    ccnet_normalize,
    hash_pieces,
    normalized_pieces,
    piece_text,
    remove_pieces,
    split_pieces,
    split_text,
)

LONG = "The harbor master counted the boats that came in before the storm."


def hashes(texts, **cfg) -> list[tuple[int, int, int]]:
    t = hash_pieces(pa.array(texts, pa.large_string()), ParagraphsConfig(**cfg))
    return list(
        zip(t.column("hash").to_pylist(), t.column("row").to_pylist(), t.column("idx").to_pylist(), strict=False)
    )


def test_a_text_with_blank_lines_is_split_at_them_and_one_without_at_every_newline():
    texts = pa.array(["A one\nA two\n\nB\n \t\n\nC", "x\ny\nz", "", None], pa.large_string())
    p = split_pieces(texts, "paragraph")
    assert p.values.to_pylist() == ["A one\nA two", "B", "C", "x", "y", "z", "", ""]
    assert p.row.tolist() == [0, 0, 0, 1, 1, 1, 2, 3] and p.idx.tolist() == [0, 1, 2, 0, 1, 2, 0, 0]
    lines = split_pieces(texts, "line")
    assert lines.values.to_pylist()[:6] == ["A one", "A two", "", "B", " \t", ""]


# Any mix of the characters that matter to the split rule: both splits must agree piece for piece.
_TEXT = st.text(
    alphabet=st.sampled_from(["a", "b", " ", "\t", "\r", "\n", "\n", "\x0b", "\x0c", "\u2028", "\xa0", "é"]),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=6), st.sampled_from(["paragraph", "line"]))
def test_the_arrow_split_and_the_python_split_agree(texts, unit):
    p = split_pieces(pa.array(texts, pa.large_string()), unit)
    for row, text in enumerate(texts):
        pieces, seps = split_text(text, unit)
        assert p.values.filter(pa.array(p.row == row)).to_pylist() == pieces
        assert (
            len(seps) == len(pieces) - 1
            and "".join(x for pair in zip(pieces, seps + [""], strict=False) for x in pair) == text
        )
        assert remove_pieces(text, unit, set()) == text


def test_removing_pieces_keeps_the_other_pieces_and_their_separators():
    text = "A\n\nB\n \n\nC\n\nD"
    assert remove_pieces(text, "paragraph", {1}) == "A\n \n\nC\n\nD"  # C keeps the separator before it
    assert remove_pieces(text, "paragraph", {0}) == "B\n \n\nC\n\nD"
    assert remove_pieces(text, "paragraph", {3}) == "A\n\nB\n \n\nC"
    assert remove_pieces(text, "paragraph", {0, 1, 2, 3}) == ""
    assert remove_pieces("a\nb\nc", "line", {1}) == "a\nc"
    assert piece_text(text, "paragraph", 2) == "C" and piece_text(text, "paragraph", 9) == ""


def test_case_quotes_numbers_and_spacing_do_not_change_a_hash_but_words_do():
    variants = [
        LONG,
        LONG.upper(),
        f"\u201c{LONG}\u201d",
        "  " + LONG.replace(" ", "   ") + "\t",
        LONG.replace("storm", "storm!"),
    ]
    got = hashes(["\n".join(variants)])
    assert len({h for h, _, _ in got}) == 1 and [i for _, _, i in got] == [0, 1, 2, 3, 4]
    dated = hashes(["Updated 12 March 2024: " + LONG, "Updated 3 March 1999: " + LONG])
    assert dated[0][0] == dated[1][0]  # numbers become 0 (CCNet: every digit)
    other = hashes([LONG, LONG.replace("boats", "ships")])
    assert other[0][0] != other[1][0]


def _ccnet_reference(line: str) -> str:
    """CCNet's normalize_for_dedup as cc_net/text_normalizer.py defines it: strip, lower, every \\d to 0, its Unicode
    punctuation list and the characters 0-31 and 127-159 deleted."""
    line = line.strip()
    if not line:
        return line
    line = re.sub(r"\d", "0", line.lower())
    return "".join(c for c in line if c not in CCNET_PUNCT and not (ord(c) < 32 or 127 <= ord(c) < 160))


PROBES = [
    "Hello, World!",
    "  Tabs\tand  double  spaces  ",
    "Price: $1,299.99 (was 1.499)",
    "Call 555-0100 now.",
    "\u201cQuoted\u201d \u00abguillemets\u00bb \u2018single\u2019",
    "em\u2014dash en\u2013dash",
    "ellipsis\u2026 end",
    "\uff08\u5168\u89d2\uff09\u3001\u3002\uff01\uff1f",
    "Arabic digits \u0661\u0662\u0663 and \u096b",
    "\x01control\x1f and \x7f\x9f",
    "MiXeD CaSe \u00c9T\u00c9",
    "ﬁnancial ligature",
    "snake_case #hash @at",
    "\u00a0nbsp at ends\u00a0",
    "\x1c a\x1d",
    "",
    "   ",
    "a\u3000b",
    "\u300c\u300d\u300a\u300b\u3010\u3011\u2014\u25ba\uff05\uff5e",
]


def test_the_ccnet_normalizer_is_ccnets():
    got = ccnet_normalize(pa.array(PROBES, pa.large_string())).to_pylist()
    assert got == [_ccnet_reference(p) for p in PROBES]
    # ASCII punctuation and inner spaces are kept, a tab deleted (a control character), each digit its own 0:
    # not what curate's normalizer does
    curate = normalized_pieces(pa.array(PROBES[:4], pa.large_string()), ParagraphsConfig()).to_pylist()
    assert got[:4] == [
        "hello, world!",
        "tabsand  double  spaces",
        "price: $0,000.00 (was 0.000)",
        "call 000-0000 now.",
    ]
    assert curate == ["hello world", "tabs and double spaces", "price 0 was 0", "call 0 0 now"]


def test_the_ccnet_normalizer_tells_apart_what_curates_joins():
    a = "The harbor master counted the boats, before the storm."
    b = "The harbor master counted the boats before the storm"
    assert hashes([a, b])[0][0] == hashes([a, b])[1][0]
    ccnet = hashes([a, b], normalizer="ccnet")
    assert ccnet[0][0] != ccnet[1][0]
    assert hashes([a.upper(), a], normalizer="ccnet")[0][0] == hashes([a.upper(), a], normalizer="ccnet")[1][0]


def test_short_and_empty_pieces_are_never_counted():
    text = "\n".join(["Share", "", "   ", "----", "Read more about it", LONG])
    assert [i for _, _, i in hashes([text], unit="line")] == [5]  # 'Read more about it' is 18 characters
    assert [i for _, _, i in hashes([text], unit="line", min_chars=0)] == [0, 4, 5]
    assert [i for _, _, i in hashes([text], unit="line", min_chars=0, min_words=4)] == [4, 5]
    assert [i for _, _, i in hashes([text], min_chars=0)] == [0, 1]  # blank lines: two paragraphs
    assert hashes(["", None], min_chars=0) == []


def test_settings_have_bounds_and_name_the_field():
    cfg = parse_config({"inputs": ["x"], "output": "o", "dedup": {"paragraphs": {"enabled": True, "unit": "line"}}})
    assert cfg.dedup.paragraphs.unit == "line" and cfg.dedup.paragraphs.mode == "keep_first"
    for bad in (
        {"min_count": 1},
        {"unit": "sentence"},
        {"mode": "all"},
        {"min_chars": -1},
        {"top": 10_000},
        {"spam": 1},
    ):
        with pytest.raises(ConfigError) as e:
            parse_config({"inputs": ["x"], "output": "o", "dedup": {"paragraphs": bad}})
        assert f"dedup.paragraphs.{next(iter(bad))}" in str(e.value)
    with pytest.raises(ConfigError, match="dedup.enabled: true"):
        parse_config({"inputs": ["x"], "output": "o", "dedup": {"enabled": False, "paragraphs": {"enabled": True}}})


def test_the_most_repeated_paragraphs_are_redacted_or_left_out(monkeypatch):
    from pipeline.dedup import paragraphs as step

    cfg = parse_config({"inputs": ["x"], "output": "o"})
    (text,) = step._redacted(["Write to john.smith@gmail.com about the harbor and its boats today."], cfg)
    assert "john.smith" not in text and "harbor and its boats" in text

    import stages.pii.public

    def broken(*a, **k):
        raise RuntimeError("no redactor here")

    monkeypatch.setattr(stages.pii.public, "PublicRedactor", broken)
    assert step._redacted(["Write to john.smith@gmail.com"], cfg) == [None]  # never shown unredacted
