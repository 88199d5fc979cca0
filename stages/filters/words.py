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
import unicodedata
from functools import lru_cache

import icu
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _char_class(pred) -> str:
    """A regex character class body covering every code point where ``pred`` holds."""
    ranges, start = [], None
    for cp in range(0x110000):
        if pred(chr(cp)):
            if start is None:
                start = cp
        elif start is not None:
            ranges.append((start, cp - 1))
            start = None
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


# Combining marks are not \w in Python, yet end many words in Indic scripts
# ("में" ends in two marks); a word may end in any run of them.
_MARKS = _char_class(lambda ch: unicodedata.category(ch)[0] == "M")
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
_NO_SPACE_RE2 = "[" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in _NO_SPACE_RANGES) + "]"

#: Languages (lid.176 codes) whose words are not separated by spaces: rules
#: calibrated on space-separated words (mean word length) do not apply.
NO_SPACE_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo", "wuu", "yue"})


@lru_cache(maxsize=1)
def _word_breaker() -> icu.BreakIterator:
    # The root locale selects ICU's dictionary engines by script (zh/ja/th/lo/km/my).
    return icu.BreakIterator.createWordInstance(icu.Locale.getRoot())


def _segment(token: str) -> list[str]:
    breaker = _word_breaker()
    breaker.setText(token)
    words, start = [], breaker.first()
    for end in breaker:
        words.extend(WORD_RE.findall(token[start:end]))
        start = end
    return words


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


class BatchWords:
    """The words of every document of a batch, flattened into Arrow/numpy arrays.

    ``words`` holds all words document after document; ``doc`` gives each
    word's document, ``counts`` the words per document, ``lengths`` each
    word's characters.  Filters compute per-document statistics from these
    with a few array operations instead of a Python loop per word.
    """

    def __init__(self, texts: list[str | None]):
        per_doc = [split_words(t) if t else [] for t in texts]
        self.n_docs = len(per_doc)
        self.counts = np.fromiter((len(w) for w in per_doc), dtype=np.int64, count=self.n_docs)
        self.words = pa.array([w for ws in per_doc for w in ws], pa.large_string())
        self.doc = np.repeat(np.arange(self.n_docs), self.counts)
        self.lengths = pc.utf8_length(self.words).to_numpy(zero_copy_only=False).astype(np.int64)

    def per_doc_sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.doc, weights=values, minlength=self.n_docs)

    def ids(self) -> np.ndarray:
        """A small integer per distinct word (equal words, equal ids)."""
        return pc.dictionary_encode(self.words).indices.to_numpy(zero_copy_only=False).astype(np.uint64)


# WORD_RE in RE2 syntax, for counting words of a whole batch in Arrow.
_RE2_SPACE = r"\s\pZ\x{85}\x{1c}-\x{1f}"
WORD_RE2 = rf"[\pL\pN](?:[^{_RE2_SPACE}]*[\pL\pN])?\pM*"


def count_words(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Words per document, as ``len(split_words(text))``, counted in Arrow where no segmentation is needed."""
    counts = pc.count_substring_regex(texts, WORD_RE2).to_numpy(zero_copy_only=False).astype(np.int64)
    needs_icu = pc.match_substring_regex(texts, _NO_SPACE_RE2).to_numpy(zero_copy_only=False)
    for i in np.flatnonzero(needs_icu):
        counts[i] = len(split_words(texts[int(i)].as_py()))
    return counts
