"""Paragraph and line dedup, per document (stages/dedup/paragraphs.py) and its settings: no Ray."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.config import ConfigError, parse_config
from stages.dedup.config import ParagraphsConfig
from stages.dedup.paragraphs import hash_pieces, piece_text, remove_pieces, split_pieces, split_text

LONG = "The harbor master counted the boats that came in before the storm."


def hashes(texts, **cfg) -> list[tuple[int, int, int]]:
    t = hash_pieces(pa.array(texts, pa.large_string()), ParagraphsConfig(**cfg))
    return list(zip(t.column("hash").to_pylist(), t.column("row").to_pylist(), t.column("idx").to_pylist(), strict=False))


def test_a_text_with_blank_lines_is_split_at_them_and_one_without_at_every_newline():
    texts = pa.array(["A one\nA two\n\nB\n \t\n\nC", "x\ny\nz", "", None], pa.large_string())
    p = split_pieces(texts, "paragraph")
    assert p.values.to_pylist() == ["A one\nA two", "B", "C", "x", "y", "z", "", ""]
    assert p.row.tolist() == [0, 0, 0, 1, 1, 1, 2, 3] and p.idx.tolist() == [0, 1, 2, 0, 1, 2, 0, 0]
    lines = split_pieces(texts, "line")
    assert lines.values.to_pylist()[:6] == ["A one", "A two", "", "B", " \t", ""]


# Any mix of the characters that matter to the split rule: both splits must agree piece for piece.
_TEXT = st.text(alphabet=st.sampled_from(["a", "b", " ", "\t", "\r", "\n", "\n", "\x0b", "\x0c", "\u2028", "\xa0", "é"]), max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=6), st.sampled_from(["paragraph", "line"]))
def test_the_arrow_split_and_the_python_split_agree(texts, unit):
    p = split_pieces(pa.array(texts, pa.large_string()), unit)
    for row, text in enumerate(texts):
        pieces, seps = split_text(text, unit)
        assert p.values.filter(pa.array(p.row == row)).to_pylist() == pieces
        assert len(seps) == len(pieces) - 1 and "".join(x for pair in zip(pieces, seps + [""], strict=False) for x in pair) == text
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
    variants = [LONG, LONG.upper(), f"\u201c{LONG}\u201d", "  " + LONG.replace(" ", "   ") + "\t", LONG.replace("storm", "storm!")]
    got = hashes(["\n".join(variants)])
    assert len({h for h, _, _ in got}) == 1 and [i for _, _, i in got] == [0, 1, 2, 3, 4]
    dated = hashes(["Updated 12 March 2024: " + LONG, "Updated 3 March 1999: " + LONG])
    assert dated[0][0] == dated[1][0]  # numbers become 0 (CCNet: every digit)
    other = hashes([LONG, LONG.replace("boats", "ships")])
    assert other[0][0] != other[1][0]


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
    for bad in ({"min_count": 1}, {"unit": "sentence"}, {"mode": "all"}, {"min_chars": -1}, {"top": 10_000}, {"spam": 1}):
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
