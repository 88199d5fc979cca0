"""Gopher quality rules, each with a hand-computed measurement."""

import pytest

from stages.filters.gopher_quality import GopherQualityConfig, GopherQualityFilter
from tests.filters_helpers import table, verdict, verdicts

# 11 words, 35 characters (3+3+3+3+3+4+1+4+4+1+6): mean length 35/11 = 3.18;
# stop words: the, and, have, with.
LINE = "The cat and the dog have a home with a garden."
GOOD = "\n".join([LINE] * 5)  # 55 words


@pytest.fixture(scope="module")
def gq():
    return GopherQualityFilter()


def test_good_document_is_kept(gq):
    assert verdict(gq, GOOD) == (None, None)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", ("gopher_quality:empty_text", "0 == 0")),
        ("hello", ("gopher_quality:min_doc_words", "1 < 50")),
        ("!!! ... --- #", ("gopher_quality:min_doc_words", "0 < 50")),  # punctuation is not words
        (LINE, ("gopher_quality:min_doc_words", "11 < 50")),
        (" ".join(["ab"] * 60), ("gopher_quality:min_avg_word_length", "2 < 3")),
        (" ".join(["abcdefghijk"] * 60), ("gopher_quality:max_avg_word_length", "11 > 10")),
    ],
)
def test_word_count_and_length(gq, text, expected):
    assert verdict(gq, text) == expected


def test_max_doc_words():
    # 60 words > 50 allowed.
    small = GopherQualityFilter(GopherQualityConfig(max_doc_words=50))
    assert verdict(small, GOOD + "\n" + "The end and all that was there is here.") == (
        "gopher_quality:max_doc_words",
        "64 > 50",
    )


def test_hash_ratio_counts_words_not_hash_tokens(gq):
    # 6 '#' / 55 words = 0.1091 > 0.1.  DataTrove divides by its tokens, the
    # '#' included (6/61 = 0.098), and would keep this.
    assert verdict(gq, GOOD + " #" * 6) == ("gopher_quality:hash_ratio", "0.1091 > 0.1")
    # 5 / 55 = 0.0909: kept.
    assert verdict(gq, GOOD + " #" * 5) == (None, None)


def test_ellipsis_ratio(gq):
    # Two ellipses a line ("..." and "…"), 5 lines: 10 / 55 words = 0.1818.
    line = "The cat... and the dog… have a home with a garden."
    assert verdict(gq, "\n".join([line] * 5)) == ("gopher_quality:ellipsis_ratio", "0.1818 > 0.1")


def test_bullet_lines_ignore_blank_lines(gq):
    # 10 of 10 non-blank lines start with a bullet; the blank lines between them
    # (resiliparse writes lists that way) do not dilute the ratio.
    bullets = "\n\n".join(f"• {LINE}" if i % 2 else f"- {LINE}" for i in range(10))
    assert verdict(gq, bullets) == ("gopher_quality:bullet_lines", "1 > 0.9")
    # 9 of 10 = 0.9 is not more than 0.9.
    nine = "\n".join([f"• {LINE}"] * 9 + [LINE])
    assert verdict(gq, nine) == (None, None)


def test_ellipsis_lines(gq):
    # 2 of 5 lines end with an ellipsis: 0.4 > 0.3 (2 ellipses / 55 words is fine).
    text = "\n".join([LINE] * 3 + [LINE[:-1] + "..."] * 2)
    assert verdict(gq, text) == ("gopher_quality:ellipsis_lines", "0.4 > 0.3")


def test_alpha_words(gq):
    # 55 alphabetic words + 14 numbers: 55/69 = 0.7971 < 0.8.
    assert verdict(gq, GOOD + " 2021" * 14) == ("gopher_quality:alpha_words", "0.7971 < 0.8")
    # 13 numbers: 55/68 = 0.8088, kept.
    assert verdict(gq, GOOD + " 2021" * 13) == (None, None)


def test_punctuation_tokens_are_not_words(gq):
    # Edited prose is full of dashes and quotes.  They are not words, so the
    # ratio stays 55/55.  (DataTrove counts them: 55/85 = 0.65 and drops it.)
    assert verdict(gq, GOOD + " — ' \"" * 10) == (None, None)


def test_stop_words(gq):
    no_stop = " ".join(["cats dogs birds fish lions"] * 12)  # 60 words, none a stop word
    assert verdict(gq, no_stop) == ("gopher_quality:stop_words", "0 < 2")
    assert verdict(gq, no_stop + " The") == ("gopher_quality:stop_words", "1 < 2")
    # Case does not matter; "that's" counts as "that".
    assert verdict(gq, no_stop + " THE that's") == (None, None)


def test_stop_words_per_language(gq):
    german = " ".join(["Katzen Hunde Vögel Fische Löwen"] * 12)
    assert verdict(gq, german, "de") == ("gopher_quality:stop_words", "0 < 2")
    assert verdict(gq, german + " der und", "de") == (None, None)  # FineWeb-2's German list
    # French elision: "l'homme" contains the stop word "l'" (FineWeb-2's list).
    french = " ".join(["chats chiens oiseaux poissons lions"] * 12)
    assert verdict(gq, french + " l'homme d'abord", "fr") == (None, None)
    # Korean particles are attached to the word: 문서의 = 문서 + 의, 서버에 = 서버 + 에.
    korean = " ".join(["아파치 서버 설정 모듈 문서"] * 12)
    assert verdict(gq, korean, "ko") == ("gopher_quality:stop_words", "0 < 2")
    assert verdict(gq, korean + " 문서의 서버에", "ko") == (None, None)


def test_rules_that_do_not_apply_are_skipped_and_recorded(gq):
    swahili = " ".join(["paka mbwa ndege samaki simba"] * 12)
    chinese = "我们在北京的公园里散步了。" * 10  # 80 words: 我们 在 北京 的 ... (ICU)
    out = gq(table([swahili, chinese], ["sw", "zh"]))
    assert out.column("reason").to_pylist() == [None, None]
    assert out.column("filter_skipped").to_pylist() == [
        ["gopher_quality:stop_words: no stop-word list for sw"],
        ["gopher_quality:avg_word_length: thresholds are for alphabetic words, not zh"],
    ]


def test_unknown_language_skips_stop_words(gq):
    out = gq(table([GOOD], [None]))
    assert out.column("reason").to_pylist() == [None]
    assert out.column("filter_skipped").to_pylist() == [["gopher_quality:stop_words: no stop-word list for None"]]


def test_rules_can_be_switched_off():
    off = GopherQualityFilter(GopherQualityConfig(min_doc_words=None, min_stop_words=None))
    assert verdict(off, "hello world again") == (None, None)


def test_one_megabyte_of_one_line(gq):
    text = (LINE + "\n") * (1_000_000 // (len(LINE) + 1))  # 21,276 lines, 234,036 words
    assert verdict(gq, text) == ("gopher_quality:max_doc_words", "234036 > 100000")


def test_batch_keeps_row_order(gq):
    got = verdicts(gq, [GOOD, "hello", GOOD])
    assert [r for r, _ in got] == [None, "gopher_quality:min_doc_words", None]
