"""The batch (Arrow/numpy) computations of the filters against the per-document Python definitions.

Each fast path must give exactly what the rule as written in Python gives:
the character classes on every code point, and the word, line, sentence,
lower-case and n-gram computations on hand-picked cases and on random strings
made of the characters where they could disagree.
"""

import random
import re
import unicodedata
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from stages.base import ChainStats, run_chain
from stages.filters import FiltersConfig, batch_cache, build_filters, lines as ln, words as words_module
from stages.filters.c4 import _LINE_BREAKS, SPLITLINES_RE2, count_sentences, count_sentences_batch
from stages.filters.charclasses import SPACE, WHITESPACE
from stages.filters.gopher_repetition import duplicates, ngram_chars
from stages.filters.words import BatchWords, count_words, split_words, word_lists
from tests.filters_helpers import table

# Characters where Python and a fast path could disagree: every kind of
# whitespace and line break, combining marks, letters and digits of other
# scripts, punctuation around words, CJK (ICU), NUL, case oddities.
ALPHABET = [
    "a", "b", "Z", "7", "é", "ß", "ǅ", "²", "½", "Ⅻ", "〇", "_", "-", ".", "!", "?", "'", "’", '"', "”", "»", "」",
    "。", "！", "।", "[", "]", "{", "#", "…", "\u0301", "\u093f", "\u200b", "\ufeff", "\x00", " ", "\t", "\n",
    "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u1680", "\u2000", "\u2028", "\u2029",
    "\u202f", "\u3000", "İ", "K", "ſ", "Σ", "σ", "文", "の", "ไ", "한", "👍",
]  # fmt: skip


def random_texts(n: int, seed: int, max_len: int = 40) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, max_len))) for _ in range(n)]


# ---------------------------------------------------------------- character classes
def test_space_class_is_python_whitespace_on_every_code_point():
    chars = pa.array([chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF])
    got = pc.match_substring_regex(chars, f"^[{SPACE}]$").to_numpy(zero_copy_only=False)
    want = np.array([c.isspace() for c in chars.to_pylist()])
    assert (got == want).all()
    assert WHITESPACE == "".join(c for c in chars.to_pylist() if c.isspace())
    assert "\x0b" in WHITESPACE  # RE2's own \s misses it


def test_the_stored_classes_are_what_this_interpreter_computes():
    import json

    from stages.filters import charclasses as cc

    stored = json.loads(cc._CACHE.read_text(encoding="utf-8"))
    computed = cc._python_classes()
    assert (cc.SPACE_RANGES, cc.ALNUM_RANGES, cc.MARK_RANGES) == tuple([tuple(r) for r in c] for c in computed)
    if stored["interpreter"] == cc._interpreter():  # another Python or Unicode version computes its own
        assert [stored[k] for k in ("space", "alnum", "marks")] == [[list(r) for r in c] for c in computed]


def test_splitlines_breaks():
    # str.splitlines() breaks at whitespace characters only (its documented list), so these are all.
    breaks = {c for c in WHITESPACE if len(f"x{c}y".splitlines()) == 2}
    assert set(_LINE_BREAKS) == breaks and "\x0b" in breaks and "\x1f" not in breaks


def test_code_point_classes_are_pythons():
    table = words_module._CLASSES
    cps = np.arange(0x110000)
    sample = np.concatenate([cps[:0x3000], cps[0x3000::97]])  # all of the BMP start, a stride beyond
    for cp in sample:
        ch = chr(cp)
        assert bool(table[cp] & 1) == ch.isspace(), hex(cp)
        assert bool(table[cp] & 2) == ch.isalnum(), hex(cp)
        assert bool(table[cp] & 4) == (unicodedata.category(ch)[0] == "M"), hex(cp)


# ---------------------------------------------------------------- words
def test_word_lists_are_split_words():
    texts = random_texts(400, seed=1) + ["", "  ", "a", "\u0301a\u0301\u0301-\u0301 b", "x\x00y", "ab-\u0301 cd"]
    got = word_lists(texts).to_pylist()
    assert got == [split_words(t) for t in texts]
    # A word keeps the marks right after its last letter, not those after punctuation.
    assert got[-1] == ["ab", "cd"]
    assert got[-2] == ["x\x00y"]  # NUL is neither space nor letter: inside a word it stays


def test_count_words_is_len_split_words():
    texts = random_texts(400, seed=2) + ["one\x0btwo"]  # a vertical tab separates words (RE2's \s misses it)
    assert count_words(pa.array(texts)).tolist() == [len(split_words(t)) for t in texts]
    assert count_words(pa.array(["one\x0btwo"]))[0] == 2


def test_word_counts_read_from_the_batch_words_count_as_split_words(monkeypatch):
    texts = pa.array(random_texts(300, seed=3) + ["文の ไทย 한 words"], pa.large_string())
    subset = texts.take(pa.array([300, 5, 17, 17, 250, 0]))  # what the chain leaves, in any order
    expected = [len(split_words(t)) for t in subset.to_pylist()]
    batch_cache.clear()
    assert words_module.word_counts(subset).tolist() == expected  # nothing cached: counted
    words_module.prime_words(texts)
    counted = []
    monkeypatch.setattr(words_module, "count_words", lambda t: counted.append(t) or count_words(t))
    assert words_module.word_counts(subset).tolist() == expected
    assert words_module.word_counts(texts).tolist() == [len(split_words(t)) for t in texts.to_pylist()]
    assert counted == []  # both from the cached words
    batch_cache.clear()


def test_words_of_a_sliced_chunked_column():
    texts = pa.chunked_array([["x y", "skip me"], ["a b c", "d"]]).slice(2, 2)
    assert BatchWords(texts).words.to_pylist() == ["a", "b", "c", "d"]


# ---------------------------------------------------------------- lines
def test_line_splits_and_strips_are_pythons():
    texts = random_texts(300, seed=3)
    arr = pa.array(texts, pa.large_string())
    assert ln.split(arr, "\n").lists.to_pylist() == [t.split("\n") for t in texts]
    assert ln.strip(arr).to_pylist() == [t.strip() for t in texts]
    assert ln.rstrip(arr).to_pylist() == [t.rstrip() for t in texts]
    assert ln.split(arr, r"\n{2,}", regex=True).lists.to_pylist() == [re.split(r"\n{2,}", t) for t in texts]
    # str.splitlines(), up to the empty pieces C4 skips anyway.
    pieces = ln.split(arr, SPLITLINES_RE2, regex=True).lists.to_pylist()
    assert [[p for p in ps if p] for ps in pieces] == [[p for p in t.splitlines() if p] for t in texts]


def test_duplicates_per_document():
    docs = [["a", "bb", "a", "a", "bb"], [], ["a", "a"], ["x", "bb", "bb"]]
    values = pa.array([v for d in docs for v in d])
    doc = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    count, chars = ln.duplicates(values, doc, len(docs))
    assert (
        list(zip(count.tolist(), chars.tolist(), strict=False))
        == [duplicates(d) for d in docs]
        == [(3, 4), (0, 0), (1, 1), (1, 2)]
    )


@pytest.mark.parametrize(
    "line, phrase, expected",
    [
        ("Please enable JAVASCRIPT.", "javascript", True),
        ("javaſcript", "javascript", False),  # long s: RE2's case folding would match, Python's lower() does not
        ("LOREM İPSUM", "lorem ipsum", False),  # 'İ'.lower() is 'i̇', two characters
        ("THİ", "thi", True),  # ... whose first one is an 'i'
        ("ΌΡΟΙ ΧΡΉΣΗΣ", "όροι χρήσης", True),  # a final capital sigma lowers to 'ς'
        ("WORK IN PROGRESS", "k in", True),
        ("Kelvin\u212a", "k", True),  # the Kelvin sign lowers to 'k'
        ("", "", True),
    ],
)
def test_contains_lower_is_python_lower(line, phrase, expected):
    assert (phrase in line.lower()) is expected
    assert ln.contains_lower(pa.array([line]), [phrase]).tolist() == [expected]


def test_contains_lower_on_random_lines():
    texts = random_texts(300, seed=4)
    phrases = ["ab", "ſ", "iz", "σ", "z a"]
    got = ln.contains_lower(pa.array(texts), phrases)
    assert got.tolist() == [any(p in t.lower() for p in phrases) for t in texts]


# ---------------------------------------------------------------- C4 sentences
def test_count_sentences_batch_hand_counted():
    lines = [
        "One. Two? Three! four",
        "It cost 3.5 million.",
        "Cut citation. ",
        "我们今天去。公园散步了。",
        "",
        "x.\u3000",
    ]
    assert count_sentences_batch(pa.array(lines)).tolist() == [4, 1, 1, 2, 1, 1]
    assert [count_sentences(x) for x in lines] == [4, 1, 1, 2, 1, 1]


def test_count_sentences_batch_on_random_lines():
    lines = [t.strip() for t in random_texts(500, seed=5)] + random_texts(200, seed=6)
    lines = [x for t in lines for x in t.splitlines()]  # lines hold no line break
    assert count_sentences_batch(pa.array(lines)).tolist() == [count_sentences(x) for x in lines]


# ---------------------------------------------------------------- n-grams
def reference_ngrams(words: list[str], n: int) -> tuple[int, int]:
    """The rule as written: (top n-gram chars x count, characters of words covered by repeated n-grams)."""
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return 0, 0
    gram, count = Counter(grams).most_common(1)[0]
    top = (sum(map(len, gram)) + n - 1) * count
    seen, covered = set(), set()
    for i, g in enumerate(grams):
        if g in seen:
            covered.update(range(i, i + n))
        seen.add(g)
    return top, sum(len(words[i]) for i in covered)


def test_ngram_chars_match_the_rule_as_written():
    rng = random.Random(7)
    vocab = ["a", "bb", "ccc", "dd", "e"]
    texts = [" ".join(rng.choice(vocab[: rng.randint(1, 5)]) for _ in range(rng.randint(0, 40))) for _ in range(300)]
    ns = {2, 3, 4, 5, 6, 10}
    top, dup = ngram_chars(BatchWords(texts), ns)
    for n in ns:
        expected = [reference_ngrams(t.split(), n) for t in texts]
        assert top[n].tolist() == [e[0] for e in expected], n
        assert dup[n].tolist() == [e[1] for e in expected], n


# ---------------------------------------------------------------- the per-batch cache
def test_gopher_filters_split_words_once_per_batch(monkeypatch):
    calls = []
    real = words_module.word_lists
    monkeypatch.setattr(words_module, "word_lists", lambda texts: calls.append(len(texts)) or real(texts))
    batch_cache.clear()
    texts = [" ".join(["The", "and", *(f"item{j}of{i}" for j in range(60))]) + "." for i in range(5)] + ["too short"]
    _, rejected = run_chain(build_filters(FiltersConfig()), table(texts), ChainStats())
    # Quality removed "too short"; repetition reused the words of the five others.
    assert rejected[0].column("reason").to_pylist() == ["gopher_quality:min_doc_words"]
    assert calls == [6]


def test_cache_hit_takes_the_rows_of_a_subset():
    batch_cache.clear()
    texts = pa.array(["a b", "c", "d e f"], pa.large_string())
    full = words_module.batch_words(texts)
    subset = words_module.batch_words(pa.array(["d e f", "a b"], pa.large_string()))
    assert subset is not full
    assert subset.lists.to_pylist() == [["d", "e", "f"], ["a", "b"]]
    # Other texts are a miss: their words are their own.
    assert words_module.batch_words(pa.array(["d e g"], pa.large_string())).lists.to_pylist() == [["d", "e", "g"]]


def test_filters_take_an_empty_batch():
    stages = build_filters(FiltersConfig())
    out = table(["x"]).slice(0, 0)
    for stage in stages:
        out = stage(out)
    assert len(out) == 0 and "c4_lines_removed_by" in out.column_names
