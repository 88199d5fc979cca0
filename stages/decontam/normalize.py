"""Normalized words and word n-gram hashes of a whole batch of texts, in Arrow and numpy.

Eval items and documents go through the same function, so an n-gram of a
page matches an n-gram of an eval item exactly when their normalized words
are equal.  Normalization, in order:

1. Unicode NFKC: compatibility forms fold to plain letters (the ``ﬁ``
   ligature of PDF text, full-width Latin, superscript digits), so a
   page copied from a PDF or a CJK site still matches.  Accents are kept
   (NFKC composes, it does not strip): they tell words apart in the
   non-English eval sets.
2. Lower-case (Unicode simple case mapping, one code point to one: Turkish "İ" is
   "i"): "The Cell" in a heading is "the cell" in the item.
3. Invisible format characters inside words are removed (soft hyphen,
   zero-width joiners, word joiner, BOM: "contami\\u00adnation" is one word);
   a zero-width space separates words.
4. Punctuation, symbols, separators and control characters become spaces:
   eval files and web pages format the same sentence differently (quotes,
   dashes, "A)" labels, markdown), and "don't" is "don t" on both sides.
5. Whitespace collapsed: words are separated by exactly one ASCII space, none at the ends.

Digits are kept as they are (unlike dedup's normalization): a GSM8K or MATH
item is its numbers.

The normalized batch is one UTF-8 byte buffer with document offsets; an
n-gram is the byte span from its first word's start to its last word's end,
and its hash is the polynomial hash of those bytes (``poly_hash_spans``,
computed for every span of a batch from two prefix sums).  Equal normalized
n-grams have equal hashes whatever document they come from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.dedup.minhash import poly_hash_spans
from stages.dedup.normalize import string_buffers

# Removed without a trace: format characters written inside words.
_INVISIBLE = r"[\x{AD}\x{200C}\x{200D}\x{2060}\x{FEFF}]+"
# Become a space: punctuation, symbols, separators, controls, zero-width space.
_SPACES = r"[\p{P}\p{S}\p{Z}\p{Cc}\x{200B}]+"
SPACE = 32


def normalize(texts: pa.Array | pa.ChunkedArray) -> pa.LargeStringArray:
    """The normalized texts (module docstring), one per input; null is ""."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks else pa.array([], pa.large_string())
    arr = pc.fill_null(texts.cast(pa.large_string()), "")
    arr = pc.utf8_lower(pc.utf8_normalize(arr, "NFKC"))
    arr = pc.replace_substring_regex(arr, _INVISIBLE, "")
    # Every whitespace character is in _SPACES (\p{Z}, \p{Cc}), so each run of them is one space already:
    # only the ends are left to trim.
    return pc.utf8_trim(pc.replace_substring_regex(arr, _SPACES, " "), " ")


@dataclass(frozen=True)
class Words:
    """The words of a normalized batch: byte spans in ``data`` and the document of each."""

    data: np.ndarray  # uint8: the normalized texts back to back
    offsets: np.ndarray  # int64, one more than documents
    starts: np.ndarray  # int64: first byte of every word
    ends: np.ndarray  # int64: end byte of every word
    doc: np.ndarray  # int64: the document of every word
    counts: np.ndarray  # int64: words per document

    def text(self, start: int, end: int) -> bytes:
        return self.data[start:end].tobytes()


def words_of(texts: pa.Array | pa.ChunkedArray) -> Words:
    """Normalize a batch and find its words (normalized text has single inner spaces only)."""
    data, offsets = string_buffers(normalize(texts))
    offsets = offsets.astype(np.int64)
    nonempty = np.diff(offsets) > 0
    spaces = np.flatnonzero(data == SPACE)
    counts = np.where(nonempty, np.diff(np.searchsorted(spaces, offsets)) + 1, 0)
    starts = _marked(len(data), spaces + 1, offsets[:-1][nonempty])
    ends = _marked(len(data) + 1, spaces, offsets[1:][nonempty])
    doc = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return Words(data, offsets, starts, ends, doc, counts.astype(np.int64))


def _marked(size: int, *positions: np.ndarray) -> np.ndarray:
    """The sorted union of position arrays (a mask pass: cheaper than sorting them)."""
    mask = np.zeros(size, dtype=bool)
    for p in positions:
        mask[p] = True
    return np.flatnonzero(mask).astype(np.int64)


@dataclass(frozen=True)
class Ngrams:
    """Word n-grams of a batch (of several lengths at once): where each is and its hash."""

    hashes: np.ndarray  # uint64
    doc: np.ndarray  # int64: the document it is in
    starts: np.ndarray  # int64: byte span in Words.data
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.hashes)


def ngrams(words: Words, lengths: tuple[int, ...]) -> Ngrams:
    """Every window of ``n`` consecutive words within one document, for each ``n`` in ``lengths``."""
    starts, ends, docs = [], [], []
    total = len(words.starts)
    for n in lengths:
        if total < n:
            continue
        first = np.flatnonzero(words.doc[: total - n + 1] == words.doc[n - 1 :])  # not across documents
        starts.append(words.starts[first])
        ends.append(words.ends[first + n - 1])
        docs.append(words.doc[first])
    if not starts:
        empty = np.zeros(0, np.int64)
        return Ngrams(np.zeros(0, np.uint64), empty, empty, empty)
    start, end = np.concatenate(starts), np.concatenate(ends)
    return Ngrams(poly_hash_spans(words.data, start, end), np.concatenate(docs), start, end)
