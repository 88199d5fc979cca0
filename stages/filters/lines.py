"""Lines and paragraphs of a whole batch, split in Arrow, and the repeats among them.

The line rules of Gopher, C4 and FineWeb are written per document in Python
(``text.split("\\n")``, ``line.strip()``, "repeats an earlier line").  Here the
pieces of every document of a batch are one flat Arrow array with each piece's
document, so a rule is a few array operations over the batch.  Stripping uses
exactly the characters ``str.strip()`` removes (``charclasses.WHITESPACE``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.filters.batch_cache import prime, shared
from stages.filters.charclasses import WHITESPACE, re2_chars


class Parts:
    """The pieces (lines, paragraphs) of each document: ``values[i]`` is a piece of document ``doc[i]``."""

    def __init__(self, lists: pa.ListArray):
        self.lists = lists
        self.n_docs = len(lists)
        self.counts = lists.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        self.values = lists.flatten()
        self.doc = np.repeat(np.arange(self.n_docs), self.counts)

    def take(self, rows: np.ndarray) -> Parts:
        return Parts(self.lists.take(pa.array(rows)))

    def position(self) -> np.ndarray:
        """Each piece's index within its document."""
        starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        return np.arange(len(self.doc)) - starts[self.doc]

    def per_doc(self, values: np.ndarray) -> np.ndarray:
        """Sum of ``values`` (one per piece, bools count 1) over each document's pieces."""
        return np.bincount(self.doc, weights=np.asarray(values, dtype=np.float64), minlength=self.n_docs)


def group(values: pa.Array, doc: np.ndarray, n_docs: int) -> pa.ListArray:
    """Values in document order (``doc`` nondecreasing) as one list per document."""
    offsets = np.concatenate([[0], np.cumsum(np.bincount(doc, minlength=n_docs))]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def split(texts: pa.Array, pattern: str, regex: bool = False) -> Parts:
    """``text.split(pattern)`` (or ``re.split``) of every text."""
    return Parts((pc.split_pattern_regex if regex else pc.split_pattern)(texts, pattern))


def _newline_split(texts: pa.Array) -> Parts:
    return split(texts, "\n")


def newline_parts(texts: pa.Array) -> Parts:
    """``text.split("\\n")`` of every text, shared by the filters of a batch."""
    return shared(texts, "newline_parts", _newline_split)


def prime_newline_parts(texts: pa.Array) -> None:
    """Split the whole batch once, before filters take parts of it (see batch_cache.prime)."""
    prime(texts, "newline_parts", _newline_split)


def strip(values: pa.Array) -> pa.Array:
    """``str.strip()`` of every value."""
    return pc.utf8_trim(values, WHITESPACE)


def rstrip(values: pa.Array) -> pa.Array:
    """``str.rstrip()`` of every value."""
    return pc.utf8_rtrim(values, WHITESPACE)


def lengths(values: pa.Array) -> np.ndarray:
    """``len(value)`` (code points) of every value."""
    return pc.utf8_length(values).to_numpy(zero_copy_only=False).astype(np.int64)


def first_occurrences(values: pa.Array, doc: np.ndarray) -> np.ndarray:
    """True where a value is the first of its document equal to it; later equal ones are repeats."""
    if len(values) == 0:
        return np.zeros(0, dtype=bool)
    codes = pc.dictionary_encode(values).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return firsts(doc.astype(np.int64) * (int(codes.max()) + 1) + codes)[0]


def firsts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(True where a key is seen for the first time, a number per distinct key) in O(n).

    Arrow's hash-based dictionary encoding numbers distinct keys in order of
    first appearance: a key is new exactly when its number exceeds every number before it.
    """
    codes = pc.dictionary_encode(pa.array(keys)).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    first = np.ones(len(codes), dtype=bool)
    if len(codes) > 1:
        first[1:] = codes[1:] > np.maximum.accumulate(codes)[:-1]
    return first, codes


def duplicates(values: pa.Array, doc: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Per document: (count, characters) of the values that repeat an earlier one of the document."""
    repeat = ~first_occurrences(values, doc)
    count = np.bincount(doc[repeat], minlength=n_docs)
    chars = np.bincount(doc[repeat], weights=lengths(values.filter(pa.array(repeat))), minlength=n_docs)
    return count, chars


def contains_lower(values: pa.Array, phrases: Sequence[str], where: np.ndarray | None = None) -> np.ndarray:
    """Per value: whether any phrase occurs in ``value.lower()`` (Python's lower-casing), where ``where``.

    RE2 picks the candidates: at each character of a phrase it accepts any
    character whose lower case contains it ('A' and 'a' for 'a', the Kelvin
    sign for 'k'), and every value with a character that lowers to two ('İ');
    Python confirms the candidates, so the answer is Python's exactly.
    """
    out = np.zeros(len(values), dtype=bool)
    where = np.ones(len(values), dtype=bool) if where is None else where
    if not phrases or not where.any():
        return out
    sel = where & pc.match_substring_regex(values, _candidates_re2(tuple(phrases))).to_numpy(zero_copy_only=False)
    idx = np.flatnonzero(sel)
    lowered = (v.lower() for v in values.take(pa.array(idx)).to_pylist())
    out[idx] = [any(p in v for p in phrases) for v in lowered]
    return out


@lru_cache(maxsize=64)
def _candidates_re2(phrases: tuple[str, ...]) -> str:
    upper, expanding = _lowers_to()
    alternatives = ["".join(f"[{re2_chars(ch + upper.get(ch, ''))}]" for ch in p) for p in phrases]
    return "|".join([*alternatives, f"[{re2_chars(expanding)}]"])


@lru_cache(maxsize=1)
def _lowers_to() -> tuple[dict[str, str], str]:
    """(for each character, the characters whose ``lower()`` contains it; those whose ``lower()`` is longer)."""
    upper: dict[str, str] = {}
    expanding = ""
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        low = ch.lower()
        if low != ch:
            for x in set(low):
                upper[x] = upper.get(x, "") + ch
            if len(low) > 1:
                expanding += ch
    # str.lower() writes a final capital sigma as 'ς' (the only context rule it applies).
    upper["ς"] = upper.get("ς", "") + "Σ"
    return upper, expanding
