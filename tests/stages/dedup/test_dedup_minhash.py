"""MinHash signatures: normalization, shingling, hashing, and equality with datasketch."""

from __future__ import annotations

import itertools

import datasketch
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from stages.dedup.config import MinHashConfig, NormalizeConfig
from stages.dedup.minhash import (
    char_shingle_spans,
    datasketch_hashfunc,
    poly_hash64,
    poly_hash_spans,
    shingle_sets,
    signatures,
    word_shingle_spans,
)
from stages.dedup.normalize import normalize_batch, normalize_one

TEXTS = [
    "Hello,  World! The 2021 quick brown fox jumps over the lazy dog.",
    "",
    "short text",
    "  Ünïcödé — “quoted” text\u00a0with nbsp, 1,234.5 numbers\n\nand\ttabs and more words here",
    "Один два три четыре пять шесть семь",
    "日本語のテキストには空白がありません。でも文字のシングルは使えます。",
    "a b c d e f g h i j k l m n o p",
]


def reference_shingles(text: str, config: MinHashConfig) -> list[bytes]:
    """The shingles the docstring of stages.dedup.minhash promises, built the slow way."""
    norm = normalize_one(text, config.normalize)
    n = config.ngram
    if config.shingle == "word":
        units = norm.split(" ") if norm else []
        grams = [" ".join(units[i : i + n]) for i in range(len(units) - n + 1)]
        short = [" ".join(units)] if units else []
    else:
        grams = [norm[i : i + n] for i in range(len(norm) - n + 1)]
        short = [norm] if norm else []
    return [s.encode() for s in (grams if grams else short)]


@pytest.mark.parametrize(
    "scheme,hash_,shingle,ngram",
    [
        (scheme, hash_, shingle, ngram)
        for scheme, hash_ in itertools.product(("affine32", "affine64", "legacy"), ("poly", "sha1"))
        for shingle, ngram in (("word", 5), ("word", 1), ("char", 4))
    ],
)
def test_signatures_equal_datasketch(scheme, hash_, shingle, ngram):
    config = MinHashConfig(scheme=scheme, hash=hash_, shingle=shingle, ngram=ngram, num_perm=64, seed=7)
    sig, counts, _ = signatures(pa.array(TEXTS), config)
    for i, text in enumerate(TEXTS):
        shingles = reference_shingles(text, config)
        m = datasketch.MinHash(num_perm=64, seed=7, scheme=scheme, hashfunc=datasketch_hashfunc(config))
        m.update_batch(shingles)
        assert counts[i] == len(shingles)
        assert sig[i].tolist() == m.hashvalues.tolist(), (i, text)


def test_sha1_matches_datasketch_default_hashfunc():
    # hash="sha1" needs no hashfunc argument at all: datasketch's own default
    config = MinHashConfig(hash="sha1", num_perm=128)
    sig, _, _ = signatures(pa.array([TEXTS[0]]), config)
    m = datasketch.MinHash(num_perm=128)
    m.update_batch(reference_shingles(TEXTS[0], config))
    assert sig[0].tolist() == m.hashvalues.tolist()


def test_slicing_does_not_change_signatures():
    config = MinHashConfig(num_perm=32)
    texts = pa.array([t * 3 for t in TEXTS] * 5)
    whole, _, _ = signatures(texts, config)
    sliced, _, _ = signatures(texts, config, max_bytes=100)
    assert np.array_equal(whole, sliced)


def test_poly_hash_spans_equal_scalar_reference():
    data = np.frombuffer("abc déf xyz".encode(), dtype=np.uint8)
    starts = np.array([0, 4, 0, 3, 0])
    ends = np.array([3, 8, 12, 4, 0])
    got = poly_hash_spans(data, starts, ends)
    assert got.tolist() == [poly_hash64(data[s:e].tobytes()) for s, e in zip(starts, ends, strict=False)]
    # equal bytes at different positions hash equal; different bytes differ
    twice = np.frombuffer(b"ab ab", dtype=np.uint8)
    h = poly_hash_spans(twice, np.array([0, 3, 0]), np.array([2, 5, 1]))
    assert h[0] == h[1] != h[2]


def test_normalization_hand_computed():
    cfg = NormalizeConfig()
    assert normalize_one("Hello,  World! It's 10:30 on 1,234.5", cfg) == "hello world it s 0 0 on 0"
    assert normalize_one("  a\u00a0b\u2003c \n", cfg) == "a b c"
    assert normalize_one("Élan — vital", NormalizeConfig(strip_accents=True)) == "elan vital"
    assert normalize_one("Élan — vital", cfg) == "élan vital"
    raw = NormalizeConfig(lowercase=False, punctuation=False, digits=False)
    assert normalize_one(" Keep, THE 42 ", raw) == "Keep, THE 42"
    assert normalize_one(" \n\t ", cfg) == ""


def test_normalize_batch_documents_stay_apart():
    data, off = normalize_batch(pa.array(["  a  b ", "\n\n", "c \t d  ", None]), NormalizeConfig())
    assert [data[off[i] : off[i + 1]].tobytes() for i in range(4)] == [b"a b", b"", b"c d", b""]


def test_word_shingle_spans_hand_computed():
    data = np.frombuffer(b"a bb ccc" + b"x" + b"p q", dtype=np.uint8)
    offsets = np.array([0, 8, 9, 12])  # "a bb ccc", "x", "p q"
    counts, starts, ends = word_shingle_spans(data, offsets, 2)
    assert counts.tolist() == [2, 1, 1]
    spans = [data[s:e].tobytes() for s, e in zip(starts, ends, strict=False)]
    assert spans == [b"a bb", b"bb ccc", b"x", b"p q"]


def test_char_shingle_spans_count_characters_not_bytes():
    text = "日本語だ"
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    counts, starts, ends = char_shingle_spans(data, np.array([0, len(data)]), 3)
    assert counts.tolist() == [2]
    assert [data[s:e].tobytes().decode() for s, e in zip(starts, ends, strict=False)] == ["日本語", "本語だ"]


def test_empty_document_has_datasketch_initial_signature():
    sig, counts, _ = signatures(pa.array(["", None]), MinHashConfig(num_perm=8))
    assert counts.tolist() == [0, 0]
    assert sig.tolist() == [[2**32 - 1] * 8] * 2


def test_shingle_sets_sorted_unique_per_document():
    hashes = np.array([5, 3, 5, 9, 1, 1], dtype=np.uint64)
    sets = shingle_sets(hashes, np.array([3, 0, 3]))
    assert sets.to_pylist() == [[3, 5], [], [1, 9]]


def test_estimate_tracks_true_jaccard():
    rng = np.random.default_rng(0)
    # letters only: normalization maps every number to "0"
    words = ["".join(w) for w in itertools.product("abcdefghij", repeat=4)][:5000]
    base = list(rng.choice(words, 400))
    edited = base[:300] + list(rng.choice(words, 100))
    cfg = MinHashConfig(num_perm=256, ngram=1)
    sig, _, _ = signatures(pa.array([" ".join(base), " ".join(edited)]), cfg)
    a, b = set(base), set(edited)
    true = len(a & b) / len(a | b)
    estimate = float((sig[0] == sig[1]).mean())
    assert abs(estimate - true) < 0.1  # 3 standard deviations at 256 permutations


def test_signatures_can_be_queried_with_datasketch_lsh():
    base = " ".join(["".join(w) for w in itertools.product("abcdef", repeat=3)][:200])
    near = base.replace("aab aac", "zzz yyy")
    other = " ".join(reversed(base.split()))
    config = MinHashConfig(num_perm=128)
    sig, _, _ = signatures(pa.array([base, near, other]), config)
    lsh = datasketch.MinHashLSH(threshold=0.5, num_perm=128)
    for key, values in zip(("base", "near", "other"), sig, strict=False):
        lsh.insert(key, datasketch.LeanMinHash(seed=config.seed, hashvalues=values, scheme=config.scheme))
    query = datasketch.MinHash(num_perm=128, hashfunc=datasketch_hashfunc(config))
    query.update_batch(reference_shingles(base, config))
    assert sorted(lsh.query(query)) == ["base", "near"]


def _assert_equal_datasketch(texts: list[str], config: MinHashConfig, max_bytes: int = 1 << 19) -> None:
    sig, counts, _ = signatures(pa.array(texts, pa.large_string()), config, max_bytes=max_bytes)
    for i, text in enumerate(texts):
        shingles = reference_shingles(text, config)
        m = datasketch.MinHash(num_perm=config.num_perm, seed=config.seed, scheme=config.scheme,
                               hashfunc=datasketch_hashfunc(config))  # fmt: skip
        m.update_batch(shingles)
        assert counts[i] == len(shingles), (i, text)
        assert sig[i].tolist() == m.hashvalues.tolist(), (i, text)


@pytest.mark.parametrize("ngram", [1, 2, 5])
def test_ascii_char_path_short_and_empty_documents(ngram):
    # An all-ASCII batch takes the contiguous-slice path of shingle: char: documents shorter
    # than ngram (one whole-text shingle each), empty ones, and ones of exactly ngram characters.
    texts = ["ab", "", "abcde", "x", "Hello, world! Hello again.", "", "abcd", "q r", "no more text here", "z"]
    config = MinHashConfig(shingle="char", ngram=ngram, num_perm=32, seed=3)
    _assert_equal_datasketch(texts, config)
    _assert_equal_datasketch(texts, config, max_bytes=7)  # the same through slices of a few documents


@pytest.mark.parametrize("texts", [["abc", "", "a", "hello world", "xy"], ["日本", "", "é", "naïve café", "ab"]])
def test_char_poly_hashes_equal_hashed_spans(texts):
    from stages.dedup.minhash import char_poly_hashes

    data, offsets = normalize_batch(pa.array(texts), NormalizeConfig())
    for n in (1, 2, 3, 4, 6):
        counts, hashes = char_poly_hashes(data, offsets, n)
        c2, starts, ends = char_shingle_spans(data, offsets, n)
        assert counts.tolist() == c2.tolist()
        assert hashes.tolist() == poly_hash_spans(data, starts, ends).tolist()


_WORDS = st.sampled_from(["a", "bb", "Ünï", "日本語", "x-y", "10,5", "—", "ccc", "the", "Ωmega", "é"])


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(st.lists(_WORDS, max_size=12).map(" ".join), min_size=1, max_size=6),
    shingle=st.sampled_from(["word", "char"]),
    ngram=st.integers(1, 6),
    max_bytes=st.sampled_from([1, 16, 1 << 19]),
)
def test_signatures_equal_datasketch_any_batch(docs, shingle, ngram, max_bytes):
    # Any mix of short, empty, ASCII and multi-byte documents, whole or in slices.
    _assert_equal_datasketch(docs, MinHashConfig(shingle=shingle, ngram=ngram, num_perm=16, seed=5), max_bytes)


@pytest.mark.parametrize("scheme", ["affine32", "affine64", "legacy"])
@pytest.mark.parametrize("seed", [0, 1, 7, 2**32 - 1])
@pytest.mark.parametrize("num_perm", [2, 128, 256])
def test_permutations_are_datasketchs_without_importing_it(scheme, seed, num_perm):
    from stages.dedup.minhash import permutations

    a, b = permutations(num_perm, seed, scheme)
    want_a, want_b = (
        np.asarray(p) for p in datasketch.MinHash(num_perm=num_perm, seed=seed, scheme=scheme).permutations
    )
    assert a.dtype == want_a.dtype and b.dtype == want_b.dtype
    assert np.array_equal(a, want_a) and np.array_equal(b, want_b)


def test_signatures_need_neither_datasketch_nor_scipy():
    """Importing datasketch imports scipy: ~0.25 s and ~40 MB in every process that computes signatures."""
    import subprocess
    import sys

    code = (
        "import sys, pyarrow as pa\n"
        "from stages.dedup.config import MinHashConfig\n"
        "from stages.dedup.lsh import bands_rows\n"
        "from stages.dedup.minhash import permutations\n"
        "permutations(128, 1, 'affine32'); bands_rows(MinHashConfig())\n"
        "print(sorted(m for m in ('datasketch', 'scipy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
