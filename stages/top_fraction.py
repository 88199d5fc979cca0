"""The best fraction of each language by a score: exact, deterministic per-language cutoffs.

A top-fraction filter is a global decision: :func:`top_fraction_cutoffs`
computes one :class:`Cutoff` per language from the (language, score, id)
columns of all documents (never the texts), and the filter
(stages.classify.ClassifierFilterStage) applies them batch by batch.  Ranking
is by score (descending), then id (ascending, the same tie rule as dedup's
keep policy); a missing score ranks last.  pipeline/top_fraction.py computes
the same cutoffs over the parts of a run without the corpus in one process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NO_LANGUAGE = ""  # the group of documents whose language is null
#: A fraction for every language, or a function of the language (per-language settings).
Fraction = float | Callable[[str], float]


@dataclass(frozen=True)
class Cutoff:
    """The last kept document of a language: keep ``(score, id)`` ranked at or above it."""

    score: float  # -inf when the cutoff falls among documents without a score
    id: str
    kept: int
    total: int

    def to_dict(self) -> dict:
        return {
            "score": None if math.isinf(self.score) else self.score,
            "id": self.id,
            "kept": self.kept,
            "total": self.total,
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> Cutoff:
        score = -math.inf if d["score"] is None else float(d["score"])
        return cls(score, d["id"], int(d["kept"]), int(d["total"]))


def _rank_scores(score) -> pa.Array:
    """Scores as the float32 values the column holds (then float64), null and NaN as -inf (ranked last).

    Rounding to float32 first makes a cutoff computed from any float type
    compare exactly with a float32 score column.
    """
    arr = score.combine_chunks() if isinstance(score, pa.ChunkedArray) else pa.array(score, pa.float64())
    values = arr.cast(pa.float32()).to_numpy(zero_copy_only=False).astype(np.float64)
    values[np.isnan(values)] = -np.inf
    return pa.array(values, pa.float64())


def _languages(language) -> pa.Array:
    arr = language.combine_chunks() if isinstance(language, pa.ChunkedArray) else pa.array(language, pa.string())
    return pc.fill_null(arr.cast(pa.string()), NO_LANGUAGE)


def fraction_of(fraction: Fraction, language: str) -> float:
    return fraction(language) if callable(fraction) else fraction


def kept_count(fraction: float, total: int) -> int:
    """ceil(fraction x total), at least 1 and at most total;
    rounded first: 0.3 x 10 is 3, not 3.0000000000000004 (4)."""
    return min(total, max(1, math.ceil(round(fraction * total, 6))))


def top_fraction_cutoffs(language, score, ids, fraction: Fraction) -> dict[str, Cutoff]:
    """Per language, the cutoff that keeps its best ``ceil(fraction x n)`` documents.

    ``language``, ``score`` and ``ids`` are the columns of *all* documents
    (arrays or lists; never the texts); ``fraction`` is one number or a
    function of the language.  Documents rank by score, highest first, then by
    id, smallest first, so the cut is exact and deterministic even among equal
    scores; a null score ranks last.  A language with one document keeps it
    (any fraction > 0); a language with none has no entry.  Memory: the three
    columns plus a sort index (about 60 bytes a document with 45-character ids).
    """
    if not callable(fraction) and not 0 < fraction <= 1:
        raise ValueError(f"top_fraction: must be in (0, 1], got {fraction}")
    table = pa.table({"lang": _languages(language), "score": _rank_scores(score), "id": pa.array(ids, pa.string())})
    if len(table) == 0:
        return {}
    if table.column("id").null_count:
        raise ValueError("top_fraction_cutoffs: every document needs an id")
    order = pc.sort_indices(table, sort_keys=[("lang", "ascending"), ("score", "descending"), ("id", "ascending")])
    table = table.take(order)
    lang = table.column("lang").combine_chunks()
    starts = np.flatnonzero(np.r_[True, pc.not_equal(lang[1:], lang[:-1]).to_numpy(zero_copy_only=False)])
    sizes = np.diff(np.r_[starts, len(table)])
    names = lang.take(pa.array(starts)).to_pylist()
    keep = np.array(
        [kept_count(fraction_of(fraction, code), int(n)) for code, n in zip(names, sizes, strict=False)],
        dtype=np.int64,
    )
    last = starts + keep - 1
    langs, scores, ids_ = (table.column(c).take(pa.array(last)).to_pylist() for c in ("lang", "score", "id"))
    return {
        code: Cutoff(s, i, int(k), int(n)) for code, s, i, k, n in zip(langs, scores, ids_, keep, sizes, strict=False)
    }
