"""Gopher repetition filter (Rae et al. 2021, App. A1.1.2 and Table A1).

Documents with many repeated lines, paragraphs or n-grams are removed:

- duplicate line / paragraph fraction: repeats of an earlier line (paragraph)
  over all lines (paragraphs), and their characters over the document's;
- top n-gram character fraction, n = 2..4: characters of the most frequent
  word n-gram times its count, over the document's characters (as in DataTrove,
  an n-gram seen once counts: a text of a few words fails this rule);
- duplicate n-gram character fraction, n = 5..10: characters of the words
  covered by a repeated n-gram, each character counted once however many
  repeated n-grams overlap it, over the document's characters.

Conventions follow DataTrove's implementation where the paper is silent:
paragraphs are separated by 2+ newlines, lines by 1+; the first occurrence is
not a duplicate; an n-gram's characters are its words' characters (plus the
n-1 joining spaces for the top n-gram).  The n-gram statistics are computed
for the whole batch at once from hashed word ids (see :func:`ngram_chars`).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from stages.filters.rules import above, empty_rule, ratio, reject, texts_of
from stages.filters.words import BatchWords

TABLE_A1 = "Gopher (Rae et al. 2021, Table A1)"
_PARAGRAPH = re.compile(r"\n{2,}")
_LINE = re.compile(r"\n+")


class GopherRepetitionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description=f"{TABLE_A1}: run the Gopher repetition rules")
    dup_line_frac: float | None = Field(0.30, ge=0, le=1, description=f"{TABLE_A1}: duplicate line fraction")
    dup_para_frac: float | None = Field(0.30, ge=0, le=1, description=f"{TABLE_A1}: duplicate paragraph fraction")
    dup_line_char_frac: float | None = Field(
        0.20, ge=0, le=1, description=f"{TABLE_A1}: duplicate line character fraction"
    )
    dup_para_char_frac: float | None = Field(
        0.20, ge=0, le=1, description=f"{TABLE_A1}: duplicate paragraph character fraction"
    )
    top_n_grams: dict[int, float] = Field(
        default_factory=lambda: {2: 0.20, 3: 0.18, 4: 0.16},
        description=f"{TABLE_A1}: top n-gram character fraction, n -> maximum",
    )
    dup_n_grams: dict[int, float] = Field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10},
        description=f"{TABLE_A1}: duplicate n-gram character fraction, n -> maximum",
    )


def duplicates(parts: list[str]) -> tuple[int, int]:
    """(count, characters) of the parts that repeat an earlier part."""
    seen: set[str] = set()
    count = chars = 0
    for p in parts:
        if p in seen:
            count += 1
            chars += len(p)
        else:
            seen.add(p)
    return count, chars


_M1, _M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9)


def _mix(h: np.ndarray) -> np.ndarray:
    """A splitmix64-style finaliser: makes the rolling hash non-linear."""
    h = h ^ (h >> np.uint64(31))
    h = h * _M2
    return h ^ (h >> np.uint64(29))


def ngram_chars(words: BatchWords, ns: set[int]) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """For each n: per document, the top n-gram's characters and the duplicate n-grams' characters.

    Each n-gram is a 64-bit hash of its word ids and its document (collisions:
    about one in 10^9 batches of a million words).  Arrow's hash-based
    dictionary encoding numbers the distinct n-grams in order of first
    occurrence, which gives counts, first occurrences and repeats in O(N).
    """
    ids = words.ids() if len(words.words) else np.zeros(0, np.uint64)
    total = len(ids)
    cum_len = np.concatenate([[0], np.cumsum(words.lengths)])
    doc = words.doc
    doc_key = _mix(doc.astype(np.uint64) + _M1)
    top: dict[int, np.ndarray] = {}
    dup: dict[int, np.ndarray] = {}
    h = np.zeros(total, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for n in range(1, max(ns, default=0) + 1):
            m = total - n + 1  # n-grams starting at 0..m-1
            if m <= 0:
                for k in ns:
                    if k >= n:
                        top[k] = dup[k] = np.zeros(words.n_docs)
                break
            h = _mix(h[:m] * _M1 + ids[n - 1 :] + np.uint64(1))
            if n not in ns:
                continue
            start = np.flatnonzero(doc[:m] == doc[n - 1 :])  # n-grams inside one document
            key = h[start] ^ doc_key[start]
            codes = pa.array(key).dictionary_encode().indices.to_numpy(zero_copy_only=False)
            first_seen = np.maximum.accumulate(codes) if len(codes) else codes
            is_first = np.ones(len(codes), dtype=bool)
            is_first[1:] = codes[1:] > first_seen[:-1]
            gram_chars = cum_len[start + n] - cum_len[start]
            top[n] = _top_chars(codes, is_first, doc[start], gram_chars + (n - 1), words.n_docs)
            dup[n] = _covered_chars(start[~is_first], n, words)
    return top, dup


def _top_chars(codes, is_first, gram_doc, gram_chars, n_docs) -> np.ndarray:
    """Characters of the most frequent n-gram times its count; ties go to the earliest (as Counter.most_common)."""
    out = np.zeros(n_docs)
    if len(codes) == 0:
        return out
    counts = np.bincount(codes)[codes]
    # n-grams come document after document: the maximum of each run of equal gram_doc.
    starts = np.flatnonzero(np.r_[True, gram_doc[1:] != gram_doc[:-1]])
    best = np.zeros(n_docs, dtype=np.int64)
    best[gram_doc[starts]] = np.maximum.reduceat(counts, starts)
    # Positions in order, so the first first-occurrence reaching the maximum is the earliest n-gram.
    cand = np.flatnonzero(is_first & (counts == best[gram_doc]))
    docs, first = np.unique(gram_doc[cand], return_index=True)
    pick = cand[first]
    out[docs] = gram_chars[pick] * counts[pick]
    return out


def _covered_chars(dup_starts: np.ndarray, n: int, words: BatchWords) -> np.ndarray:
    """Characters of the words covered by at least one repeated n-gram, per document."""
    total = len(words.lengths)
    depth = np.cumsum(np.bincount(dup_starts, minlength=total + 1) - np.bincount(dup_starts + n, minlength=total + 1))[
        :total
    ]
    covered = depth > 0
    return np.bincount(words.doc[covered], weights=words.lengths[covered], minlength=words.n_docs)


class GopherRepetitionFilter:
    name = "gopher_repetition"

    def __init__(self, config: GopherRepetitionConfig | None = None):
        self.config = config or GopherRepetitionConfig()

    def __call__(self, batch: pa.Table) -> pa.Table:
        c, n = self.config, len(batch)
        texts = texts_of(batch)
        docs = texts.to_pylist()
        chars = np.array([len(t) for t in docs], dtype=np.float64)

        para = np.zeros((n, 3))  # parts, duplicate parts, duplicate characters
        line = np.zeros((n, 3))
        for i, t in enumerate(docs):
            paragraphs = _PARAGRAPH.split(t.strip())
            para[i] = (len(paragraphs), *duplicates(paragraphs))
            lines = _LINE.split(t)
            line[i] = (len(lines), *duplicates(lines))

        name = self.name
        rules = [empty_rule(name, texts)]
        rules += above(f"{name}:dup_para_frac", ratio(para[:, 1], para[:, 0]), c.dup_para_frac)
        rules += above(f"{name}:dup_para_char_frac", ratio(para[:, 2], chars), c.dup_para_char_frac)
        rules += above(f"{name}:dup_line_frac", ratio(line[:, 1], line[:, 0]), c.dup_line_frac)
        rules += above(f"{name}:dup_line_char_frac", ratio(line[:, 2], chars), c.dup_line_char_frac)

        ns = set(c.top_n_grams) | set(c.dup_n_grams)
        if ns:
            top, dup = ngram_chars(BatchWords(docs), ns)
            for k, limit in sorted(c.top_n_grams.items()):
                rules += above(f"{name}:top_{k}_gram", ratio(top[k], chars), limit)
            for k, limit in sorted(c.dup_n_grams.items()):
                rules += above(f"{name}:dup_{k}_gram", ratio(dup[k], chars), limit)
        return reject(batch, rules)
