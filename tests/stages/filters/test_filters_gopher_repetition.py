"""Gopher repetition rules (Table A1), each with a hand-computed measurement."""

import pytest

from stages.filters.gopher_repetition import (
    GopherRepetitionConfig,
    GopherRepetitionFilter,
    duplicates,
    ngram_chars,
)
from stages.filters.words import BatchWords
from tests.filters_helpers import verdict, verdicts

P = "The committee met on Tuesday to review the annual budget."  # 57 characters
PROSE = "\n\n".join([P, "Members questioned the cost of new roads.", "A vote is expected next month, officials said."])


@pytest.fixture(scope="module")
def gr():
    return GopherRepetitionFilter()


def ngrams_only(top=None, dup=None):
    cfg = GopherRepetitionConfig(
        dup_line_frac=None, dup_para_frac=None, dup_line_char_frac=None, dup_para_char_frac=None,
        top_n_grams=top or {}, dup_n_grams=dup or {},
    )  # fmt: skip
    return GopherRepetitionFilter(cfg)


def test_duplicates_counts_repeats_not_first_occurrences():
    assert duplicates(["a", "bb", "a", "a", "bb"]) == (3, 4)  # a, a, bb repeat: 1+1+2 characters
    assert duplicates([]) == (0, 0)


def test_unique_prose_is_kept(gr):
    assert verdict(gr, PROSE) == (None, None)


def test_empty_text(gr):
    assert verdict(gr, "  \n ") == ("gopher_repetition:empty_text", "0 == 0")


def test_duplicate_paragraph_fraction(gr):
    # Paragraphs P, Q, P, P: 2 repeats of 4 = 0.5 > 0.3.
    text = "\n\n".join([P, "Another paragraph here.", P, P])
    assert verdict(gr, text) == ("gopher_repetition:dup_para_frac", "0.5 > 0.3")


def test_duplicate_paragraph_characters(gr):
    # Paragraphs P, s1, s2, P: 1 repeat of 4 (0.25, fine) but it holds
    # 57 of 57+2+10+2+10+2+57 = 140 characters: 0.4071 > 0.2.
    text = "\n\n".join([P, "short one.", "short two.", P])
    assert len(text) == 140
    assert verdict(gr, text) == ("gopher_repetition:dup_para_char_frac", "0.4071 > 0.2")


def test_duplicate_line_fraction(gr):
    # One paragraph of lines L, a, L, L: 2 repeats of 4 lines.
    text = "\n".join([P, "Another line here.", P, P])
    assert verdict(gr, text) == ("gopher_repetition:dup_line_frac", "0.5 > 0.3")


def test_duplicate_line_characters(gr):
    # Lines P, s1, s2, s3, P: 1 repeat of 5 (0.2, fine) holding 57 of
    # 57 + 3*(1+10) + 1 + 57 = 148 characters: 0.3851 > 0.2.
    text = "\n".join([P, "short one.", "short two.", "short six.", P])
    assert len(text) == 148
    assert verdict(gr, text) == ("gopher_repetition:dup_line_char_frac", "0.3851 > 0.2")


def test_top_2_gram(gr):
    # 16 two-letter words, 47 characters.  "aa bb" occurs 3 times (5 characters
    # each): 15/47 = 0.3191 > 0.2.
    text = "aa bb aa bb aa bb cc dd ee ff gg hh ii jj kk ll"
    assert len(text) == 47
    assert verdict(gr, text) == ("gopher_repetition:top_2_gram", "0.3191 > 0.2")


def test_top_n_gram_ties_go_to_the_first_seen():
    # "aa bb" and "cc dd" both occur twice; as Counter.most_common, the first
    # seen wins.  A longer tie later must not be taken instead.
    bw = BatchWords(["aa bb xx aa bb cccc dddd yy cccc dddd"])
    top, _ = ngram_chars(bw, {2})
    assert top[2].tolist() == [10.0]  # len("aa bb") * 2


def test_duplicate_5_grams_count_overlapping_characters_once():
    # Words A B C D E F A B C D E F (2 characters each, 35 characters in all).
    # Repeated 5-grams start at words 6 (ABCDE) and 7 (BCDEF); together they
    # cover words 6..11: 12 characters, 12/35 = 0.3429.  (DataTrove's
    # skip-ahead loop stops after the first repeat and counts 10.)
    text = "aa bb cc dd ee ff aa bb cc dd ee ff"
    assert len(text) == 35
    f = ngrams_only(dup={5: 0.15})
    assert verdict(f, text) == ("gopher_repetition:dup_5_gram", "0.3429 > 0.15")
    _, dup = ngram_chars(BatchWords([text]), {5, 6, 7})
    # n=6: only ABCDEF at 6 repeats -> 12; n=7: nothing repeats.
    assert [dup[5][0], dup[6][0], dup[7][0]] == [12, 12, 0]


def test_ngrams_do_not_cross_documents():
    # Each document alone has no repeated 5-gram; together they would.
    texts = ["aa bb cc dd ee", "aa bb cc dd ee"]
    top, dup = ngram_chars(BatchWords(texts), {2, 5})
    assert dup[5].tolist() == [0, 0]
    assert top[2].tolist() == [5, 5]  # each document's top 2-gram occurs once


def test_short_documents_have_no_ngrams():
    top, dup = ngram_chars(BatchWords(["one", "", "two words"]), {2, 3, 10})
    assert top[2].tolist() == [0, 0, 9]  # "two words" once: 9 characters
    assert top[3].tolist() == dup[10].tolist() == [0, 0, 0]


def test_one_megabyte_of_one_line(gr):
    n = 1_000_000 // (len(P) + 1)  # 17,241 copies of one line
    text = (P + "\n") * n
    # Paragraphs: one.  Lines: n copies and the empty string after the last
    # newline; n - 1 of the n + 1 are repeats.
    assert verdict(gr, text) == ("gopher_repetition:dup_line_frac", f"{(n - 1) / (n + 1):.4g} > 0.3")


def test_batch_order_and_mixed_scripts(gr):
    chinese = "我们在北京的公园里散步了。" * 6  # one repeated sentence: every 5-gram repeats
    got = verdicts(gr, [PROSE, chinese, "\n".join([P, "x", P, P])], ["en", "zh", "en"])
    assert got[0] == (None, None)
    assert got[1][0] == "gopher_repetition:top_2_gram"
    assert got[2][0] == "gopher_repetition:dup_line_frac"


def test_top_n_gram_limits_may_exceed_one():
    """A top n-gram's characters times its count can exceed the text's (FineWeb-2 sets limits up to 6.8)."""
    from stages.filters.gopher_repetition import GopherRepetitionConfig

    text = " ".join(["a"] * 40)
    stage = GopherRepetitionFilter(
        GopherRepetitionConfig(
            dup_line_frac=None,
            dup_para_frac=None,
            dup_line_char_frac=None,
            dup_para_char_frac=None,
            top_n_grams={2: 1.4},
            dup_n_grams={},
        )
    )
    reason, details = verdict(stage, text)
    assert reason == "gopher_repetition:top_2_gram" and details == "1.481 > 1.4"
    with pytest.raises(ValueError, match="from 0 to 100"):
        GopherRepetitionConfig(top_n_grams={2: 101})
    with pytest.raises(ValueError, match="from 0 to 1"):
        GopherRepetitionConfig(dup_n_grams={5: 1.5})
