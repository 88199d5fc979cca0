"""Word splitting: what the Gopher, repetition and FineWeb rules count as a word."""

import pyarrow as pa
import pytest

from stages.filters.words import BatchWords, count_line_words, count_words, split_words


@pytest.mark.parametrize(
    "text, words",
    [
        ("", []),
        ("hello", ["hello"]),
        ("!!! ... --- # | •", []),  # only punctuation: no word at all
        ("Hello, world!", ["Hello", "world"]),
        ("It's 3.5% (approx.) — e.g. U.S.", ["It's", "3.5", "approx", "e.g", "U.S"]),
        ("#hashtag @user", ["hashtag", "user"]),
        # Combining marks end Hindi words: "में" keeps both of its marks.
        ("यह घर में है।", ["यह", "घर", "में", "है"]),
        ("Ünïcödé naïve café", ["Ünïcödé", "naïve", "café"]),
    ],
)
def test_split_words_space_delimited(text, words):
    assert split_words(text) == words


def test_scripts_without_spaces_are_segmented():
    # ICU's dictionary word breaker; punctuation segments (。) are not words.
    assert split_words("私は東京大学の学生です。") == ["私", "は", "東京", "大学", "の", "学生", "です"]
    assert split_words("ภาษาไทยเป็นภาษา") == ["ภาษา", "ไทย", "เป็น", "ภาษา"]
    # Mixed scripts: Latin tokens are split on spaces, the Han run by ICU.
    assert split_words("Python 中华人民共和国成立。Really!") == ["Python", "中华", "人民", "共和国", "成立", "Really"]


def test_count_words_matches_split_words():
    texts = [
        "",
        "Hello, world! It's 3.5% — fine...",
        "यह घर में है। और वह?",
        "私は東京大学の学生です。 OK.",
        "tabs\tand\u00a0no-break\u3000spaces",
        "- • # ...",
    ]
    assert count_words(pa.array(texts)).tolist() == [len(split_words(t)) for t in texts]


def test_line_words_as_c4_counts_them():
    # C4 counts whitespace tokens, punctuation included ("|" is a word here) ...
    assert count_line_words("Home | About us") == 4
    # ... but a Japanese line has no spaces: its words are segmented.
    assert count_line_words("私は学生です。") == 4  # 私 は 学生 です


def test_batch_words_flattens_documents_in_order():
    bw = BatchWords(["a bb", "", None, "ccc"])
    assert bw.counts.tolist() == [2, 0, 0, 1]
    assert bw.doc.tolist() == [0, 0, 3]
    assert bw.lengths.tolist() == [1, 2, 3]
    assert bw.words.to_pylist() == ["a", "bb", "ccc"]
