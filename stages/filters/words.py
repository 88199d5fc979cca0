"""Language-aware word splitting for the heuristic filters.

A *word* is a whitespace-separated token with its leading and trailing
punctuation and symbols removed; a token with no letter, digit or mark left
(``-``, ``|``, ``...``, ``#``) is not a word.  This is the reading of "word"
in Gopher (Rae et al. 2021, App. A1) and FineWeb; DataTrove instead counts the
punctuation tokens of a spaCy tokenizer as words, which lowers the
alphabetic-word ratio of ordinary edited prose (see docs/filters.md).

Scripts written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) are
segmented into words with ICU's dictionary-based word break iterator, whatever
the document's language label, so a Chinese quotation inside an English page
is split too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.filters.batch_cache import cached, prime, shared
from stages.filters.charclasses import MARK_RANGES, py_class, re2_class
from stages.filters.codepoints import NO_SPACE, CodePoints, class_table
from stages.filters.rules import text_array

# Combining marks are not \w in Python, yet end many words in Indic scripts
# ("में" ends in two marks); a word may end in any run of them.
_MARKS = py_class(MARK_RANGES)
WORD_RE = re.compile(rf"[^\W_](?:\S*[^\W_])?[{_MARKS}]*")

# Scripts written without spaces between words, as code point ranges.
_NO_SPACE_RANGES = [
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3005, 0x3005), (0x3007, 0x3007),  # ideographic iteration mark and zero
    (0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F),  # kana
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F),  # Han
]  # fmt: skip
NO_SPACE_RE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _NO_SPACE_RANGES) + "]")
NO_SPACE_RE2 = f"[{re2_class(_NO_SPACE_RANGES)}]"

#: Languages (lid.176 codes) whose words are not separated by spaces: rules
#: calibrated on space-separated words (mean word length) do not apply.
NO_SPACE_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo", "wuu", "yue"})


@lru_cache(maxsize=1)
def _word_breaker():
    """ICU's word breaker, imported at the first text that needs it: ICU maps ~10 MB into every process that
    imports it, and only scripts written without spaces are segmented by it."""
    import icu

    # The root locale selects ICU's dictionary engines by script (zh/ja/th/lo/km/my).
    return icu.BreakIterator.createWordInstance(icu.Locale.getRoot())


@lru_cache(maxsize=4096)
def _segment(token: str) -> tuple[str, ...]:
    # Memoised: the Gopher filters, C4 and FineWeb segment the same tokens of a batch.
    breaker = _word_breaker()
    breaker.setText(token)
    words, start = [], breaker.first()
    for end in breaker:
        words.extend(WORD_RE.findall(token[start:end]))
        start = end
    return tuple(words)


def split_words(text: str) -> list[str]:
    """The words of ``text`` in order (see the module docstring)."""
    if not NO_SPACE_RE.search(text):
        return WORD_RE.findall(text)
    words: list[str] = []
    for token in text.split():
        if NO_SPACE_RE.search(token):
            words.extend(_segment(token))
        else:
            words.extend(WORD_RE.findall(token))
    return words


def count_line_words(line: str) -> int:
    """Words in one line as C4 counts them: whitespace tokens, segmented where the script has no spaces."""
    if not NO_SPACE_RE.search(line):
        return len(line.split())
    return sum(len(_segment(t)) if NO_SPACE_RE.search(t) else 1 for t in line.split())


def longest_token(line: str) -> int:
    """Length of the longest word-like token (C4's max_word_length), segmented where needed."""
    tokens = line.split()
    if NO_SPACE_RE.search(line):
        tokens = [w for t in tokens for w in (_segment(t) if NO_SPACE_RE.search(t) else [t])]
    return max(map(len, tokens), default=0)


WORD_LISTS = pa.list_(pa.large_string())
_CLASSES = class_table(_NO_SPACE_RANGES)


def word_lists(texts: pa.Array | pa.ChunkedArray) -> pa.ListArray:
    """The words of each text (``split_words``), as one Arrow list per document.

    The words of the whole batch are found at once from its code points
    (:mod:`stages.filters.codepoints`); only documents with characters of
    scripts without spaces go through Python, for ICU.
    """
    texts = text_array(texts)
    chars = CodePoints(texts, _CLASSES)
    start, end = chars.word_spans()
    counts = np.bincount(chars.doc_of(start), minlength=len(texts))
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    lists = pa.ListArray.from_arrays(offsets, chars.strings(start, end))
    segmented = chars.docs_with(NO_SPACE)
    if len(segmented) == 0:
        return lists
    python = pa.array([split_words(t) for t in texts.take(pa.array(segmented)).to_pylist()], WORD_LISTS)
    # The documents in order, each segmented one in place of its code-point words: one copy of the words.
    pieces, at = [], 0
    for k, doc in enumerate(segmented.tolist()):
        pieces += [lists.slice(at, doc - at), python.slice(k, 1)]
        at = doc + 1
    return pa.concat_arrays([*pieces, lists.slice(at)])


class BatchWords:
    """The words of every document of a batch, flattened into Arrow/numpy arrays.

    ``words`` holds all words document after document; ``doc`` gives each
    word's document, ``counts`` the words per document, ``lengths`` each
    word's characters.  Filters compute per-document statistics from these
    with a few array operations instead of a Python loop per word.
    """

    def __init__(self, texts: Sequence[str | None] | pa.Array | pa.ChunkedArray):
        self._set(word_lists(texts))

    @classmethod
    def from_lists(cls, lists: pa.ListArray) -> BatchWords:
        self = cls.__new__(cls)
        self._set(lists)
        return self

    def _set(self, lists: pa.ListArray) -> None:
        self.lists = lists
        self.n_docs = len(lists)
        self.counts = lists.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        self.words = lists.flatten()
        self.doc = np.repeat(np.arange(self.n_docs), self.counts)
        self.lengths = pc.utf8_length(self.words).to_numpy(zero_copy_only=False).astype(np.int64)
        self._ids: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> BatchWords:
        """The words of the documents ``rows`` (for a batch that lost some documents)."""
        return BatchWords.from_lists(self.lists.take(pa.array(rows)))

    def per_doc_sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.doc, weights=values, minlength=self.n_docs)

    def ids(self) -> np.ndarray:
        """A small integer per distinct word (equal words, equal ids)."""
        if self._ids is None:
            self._ids = pc.dictionary_encode(self.words).indices.to_numpy(zero_copy_only=False).astype(np.uint64)
        return self._ids


def batch_words(texts: pa.Array) -> BatchWords:
    """The words of a batch's texts, split once for all the filters of the batch."""
    return shared(texts, "words", BatchWords)


def prime_words(texts: pa.Array) -> None:
    """Split the whole batch into words once, before filters take parts of it (see batch_cache.prime)."""
    prime(texts, "words", BatchWords)


def word_counts(texts: pa.Array) -> np.ndarray:
    """:func:`count_words`, read from the words a filter before in the chain split (the batch cache) when
    it had all of these texts: FineWeb's filter after Gopher's then counts nothing again."""
    found = cached(texts, "words")
    if found is None:
        return count_words(texts)
    words, rows = found
    return words.counts if rows is None else words.counts[rows]


def count_words(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Words per document, as ``len(split_words(text))``: counted from code points where no segmentation is needed."""
    texts = text_array(texts)
    chars = CodePoints(texts, _CLASSES)
    counts = chars.word_counts().astype(np.int64)
    for i in chars.docs_with(NO_SPACE):
        counts[i] = len(split_words(texts[int(i)].as_py()))
    return counts
