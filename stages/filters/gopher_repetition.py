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

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from stages.filters import lines as ln
from stages.filters.rules import above, empty_rule, ratio, reject, texts_of
from stages.filters.words import BatchWords, batch_words, prime_words

TABLE_A1 = "Gopher (Rae et al. 2021, Table A1)"


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
        description=f"{TABLE_A1}: top n-gram character fraction, n -> maximum (up to 100: overlapping repeats of one "
        "n-gram can cover more characters than the text has; FineWeb-2 sets limits above 1)",
    )
    dup_n_grams: dict[int, float] = Field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10},
        description=f"{TABLE_A1}: duplicate n-gram character fraction, n -> maximum",
    )

    @field_validator("top_n_grams")
    @classmethod
    def _top_n(cls, v: dict[int, float]) -> dict[int, float]:
        return _n_grams(v, TOP_N, "top_n_grams", TOP_MAX)

    @field_validator("dup_n_grams")
    @classmethod
    def _dup_n(cls, v: dict[int, float]) -> dict[int, float]:
        return _n_grams(v, DUP_N, "dup_n_grams", 1)


#: The n of Gopher's n-gram rules (Table A1): top 2-4 grams, duplicate 5-10 grams (each one reason).
TOP_N = range(2, 5)
DUP_N = range(5, 11)
#: The top n-gram's characters times its count can exceed the text's ("a a a a": 2-gram "a a" x 3 = 9 > 7).
TOP_MAX = 100


def _n_grams(v: dict[int, float], allowed: range, field: str, most: float) -> dict[int, float]:
    bad = sorted(k for k in v if k not in allowed)
    if bad:
        raise ValueError(
            f"n = {bad} not allowed: Gopher's {field} rules are for n = {allowed.start}..{allowed.stop - 1}"
        )
    if any(not 0 <= x <= most for x in v.values()):
        raise ValueError(f"each maximum is a fraction of characters, from 0 to {most}")
    return v


def duplicates(parts: list[str]) -> tuple[int, int]:
    """(count, characters) of the parts that repeat an earlier part: one document's, as the rule reads.

    The filter computes the same for a whole batch with :func:`stages.filters.lines.duplicates`.
    """
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

    An n-gram can occur twice only where the (n-1)-gram it starts with does, so
    level n hashes and counts only the positions whose (n-1)-gram repeats in
    its document (in real text a few percent of the words by n = 5); every
    other n-gram occurs once.  A document whose n-grams all occur once has its
    first n-gram as its top one, once (Counter.most_common's tie rule).
    """
    top: dict[int, np.ndarray] = {}
    dup: dict[int, np.ndarray] = {}
    ids = words.ids() if len(words.words) else np.zeros(0, np.uint64)
    total, doc = len(ids), words.doc
    cum_len = np.concatenate([[0], np.cumsum(words.lengths)])
    doc_key = _mix(doc.astype(np.uint64) + _M1)
    doc_start = np.cumsum(words.counts) - words.counts
    pos = np.arange(total)  # where the n-grams that may repeat start
    h = np.zeros(total, dtype=np.uint64)  # their hashes
    with np.errstate(over="ignore"):
        for n in range(1, max(ns, default=0) + 1):
            last = pos + n - 1
            inside = last < total
            inside[inside] = doc[last[inside]] == doc[pos[inside]]  # n-grams inside one document
            pos, h = pos[inside], h[inside]
            h = _mix(h * _M1 + ids[pos + n - 1] + np.uint64(1))
            if n == 1 and 1 not in ns:
                continue  # bigrams are all counted: no need to count words first
            is_first, codes = ln.firsts(h ^ doc_key[pos])
            counts = np.bincount(codes)[codes]
            if n in ns:
                chars = cum_len[pos + n] - cum_len[pos] + (n - 1)  # words and the spaces between them
                once = np.zeros(words.n_docs)  # where every n-gram occurs once: the first one
                full = np.flatnonzero(words.counts >= n)
                once[full] = cum_len[doc_start[full] + n] - cum_len[doc_start[full]] + (n - 1)
                top[n] = _top_chars(counts, is_first, doc[pos], chars, once)
                dup[n] = _covered_chars(pos[~is_first], n, words)
            repeats = counts >= 2
            pos, h = pos[repeats], h[repeats]
    return top, dup


def _top_chars(counts, is_first, gram_doc, gram_chars, once) -> np.ndarray:
    """Characters of the most frequent n-gram times its count; ties go to the earliest (as Counter.most_common).

    ``once``: per document, the answer when no n-gram occurs twice (its first n-gram's characters).
    """
    out = once.copy()
    repeated = np.flatnonzero(counts >= 2)
    if len(repeated) == 0:
        return out
    r_doc, r_counts = gram_doc[repeated], counts[repeated]
    # n-grams come document after document: the maximum of each run of equal gram_doc.
    starts = np.flatnonzero(np.r_[True, r_doc[1:] != r_doc[:-1]])
    best = np.zeros(len(out), dtype=np.int64)
    best[r_doc[starts]] = np.maximum.reduceat(r_counts, starts)
    # Positions in order, so the first first-occurrence reaching the maximum is the earliest n-gram.
    cand = repeated[is_first[repeated] & (r_counts == best[r_doc])]
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


def _lines(texts: pa.Array) -> ln.Parts:
    """``re.split(r"\\n+", text)``: the pieces of ``text.split("\\n")`` without the empty ones inside."""
    parts = ln.newline_parts(texts)
    pos = parts.position()
    keep = (ln.lengths(parts.values) > 0) | (pos == 0) | (pos == parts.counts[parts.doc] - 1)
    return ln.Parts(ln.group(parts.values.filter(keep), parts.doc[keep], parts.n_docs))


def _repeats(parts: ln.Parts) -> np.ndarray:
    """Per document: (parts, parts repeating an earlier one, their characters), as columns."""
    count, chars = ln.duplicates(parts.values, parts.doc, parts.n_docs)
    return np.column_stack([parts.counts, count, chars]).astype(np.float64)


class GopherRepetitionFilter:
    name = "gopher_repetition"
    label = "Gopher repetition rules"
    needs = ("text",)
    reasons = (
        "gopher_repetition:empty_text",
        "gopher_repetition:dup_para_frac",
        "gopher_repetition:dup_para_char_frac",
        "gopher_repetition:dup_line_frac",
        "gopher_repetition:dup_line_char_frac",
        "gopher_repetition:top_2_gram",
        "gopher_repetition:top_3_gram",
        "gopher_repetition:top_4_gram",
        "gopher_repetition:dup_5_gram",
        "gopher_repetition:dup_6_gram",
        "gopher_repetition:dup_7_gram",
        "gopher_repetition:dup_8_gram",
        "gopher_repetition:dup_9_gram",
        "gopher_repetition:dup_10_gram",
    )
    derives = (prime_words, ln.prime_newline_parts)  # what it reads through the batch cache

    def __init__(self, config: GopherRepetitionConfig | None = None):
        self.config = config or GopherRepetitionConfig()

    def __call__(self, batch: pa.Table) -> pa.Table:
        c = self.config
        texts = texts_of(batch)
        chars = ln.lengths(texts).astype(np.float64)
        para = _repeats(ln.split(ln.strip(texts), r"\n{2,}", regex=True))  # re.split(r"\n{2,}", text.strip())
        line = _repeats(_lines(texts))  # re.split(r"\n+", text)

        name = self.name
        rules = [empty_rule(name, texts)]
        rules += above(f"{name}:dup_para_frac", ratio(para[:, 1], para[:, 0]), c.dup_para_frac)
        rules += above(f"{name}:dup_para_char_frac", ratio(para[:, 2], chars), c.dup_para_char_frac)
        rules += above(f"{name}:dup_line_frac", ratio(line[:, 1], line[:, 0]), c.dup_line_frac)
        rules += above(f"{name}:dup_line_char_frac", ratio(line[:, 2], chars), c.dup_line_char_frac)

        ns = set(c.top_n_grams) | set(c.dup_n_grams)
        if ns:
            top, dup = ngram_chars(batch_words(texts), ns)
            for k, limit in sorted(c.top_n_grams.items()):
                rules += above(f"{name}:top_{k}_gram", ratio(top[k], chars), limit)
            for k, limit in sorted(c.dup_n_grams.items()):
                rules += above(f"{name}:dup_{k}_gram", ratio(dup[k], chars), limit)
        return reject(batch, rules)
