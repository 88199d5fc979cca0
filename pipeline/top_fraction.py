"""Exact per-language top-fraction cutoffs over every part, without the corpus in one process.

``stages.top_fraction.top_fraction_cutoffs`` needs the (language, score, id)
columns of every document in one process: ~60 bytes a document, 60 GB for a
billion.  Here the same cutoffs come from two passes of small aggregates, one
Ray task per part each:

1. a histogram of the float32 scores per language (2^16 bins over [0, 1], plus
   one bin below for missing scores): the driver finds, per language, the bin
   where the kept count ``ceil(fraction x n)`` is reached;
2. the (score, id) of the documents in that boundary bin only; the driver
   ranks them (score descending, id ascending, as the filter does) and takes
   the last kept one.

The result equals ``top_fraction_cutoffs`` on all the documents (tested); its
memory is the histograms plus the boundary bins (~n / 65536 documents per
language unless many documents share a score).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pyarrow as pa

from core.layout import part_file
from core.storage import Storage
from pipeline.config import RunConfig, s3_options
from pipeline.phase import Unit
from stages.top_fraction import Cutoff, Fraction, _languages, _rank_scores, fraction_of, kept_count

BINS = 1 << 16  # bins over [0, 1]; bin 0 holds the missing scores (-inf)


def bins_of(score: np.ndarray) -> np.ndarray:
    """The bin of each rank score: 0 for -inf, else 1 + floor(score x BINS) clipped to [1, BINS]."""
    b = np.zeros(len(score), dtype=np.int64)
    ok = np.isfinite(score)
    b[ok] = 1 + np.clip(np.floor(score[ok] * BINS), 0, BINS - 1).astype(np.int64)
    return b


class ScanWorker:
    """Reads the language, score (and id) columns of one part; pass 1 or pass 2."""

    def __init__(self, config: RunConfig, source: str, column: str, boundary: dict | None = None):
        self.storage = Storage(config.output.root, s3_options(config))
        self.source, self.column = source, column
        self.boundary = boundary  # pass 2: language -> boundary bin

    def process(self, unit: Unit) -> dict:
        columns = ["language", self.column] + (["id"] if self.boundary is not None else [])
        table = self.storage.read_parquet("documents", self.source, part_file(unit.name), columns=columns)
        lang = _languages(table.column("language")).to_numpy(zero_copy_only=False)
        score = _rank_scores(table.column(self.column)).to_numpy()
        bins = bins_of(score)
        if self.boundary is None:
            return {"unit": unit.name, "histograms": _histograms(lang, bins)}
        want = np.array([self.boundary.get(code, -1) for code in lang], dtype=np.int64)
        hit = np.flatnonzero(bins == want)
        ids = table.column("id").cast(pa.string()).take(pa.array(hit)).to_pylist()
        return {
            "unit": unit.name,
            "rows": [
                [lang[i], None if math.isinf(score[i]) else float(score[i]), d] for i, d in zip(hit, ids, strict=False)
            ],
        }


def _histograms(lang: np.ndarray, bins: np.ndarray) -> dict[str, list[list[int]]]:
    """Sparse per-language histograms: {language: [[bin, count], ...]}."""
    out = {}
    for code in np.unique(lang):
        b, n = np.unique(bins[lang == code], return_counts=True)
        out[str(code)] = [[int(x), int(y)] for x, y in zip(b, n, strict=False)]
    return out


def boundaries(histograms: list[dict], fraction: Fraction) -> tuple[dict[str, int], dict[str, tuple[int, int, int]]]:
    """Per language: the boundary bin, and (kept, total, kept above the boundary bin)."""
    counts: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(BINS + 1, dtype=np.int64))
    for h in histograms:
        for lang, pairs in h.items():
            for b, n in pairs:
                counts[lang][b] += n
    bins, kept = {}, {}
    for lang, c in counts.items():
        total = int(c.sum())
        k = kept_count(fraction_of(fraction, lang), total)
        from_top = np.cumsum(c[::-1])  # documents in the highest bins
        b = BINS - int(np.searchsorted(from_top, k))  # the bin where k is reached
        bins[lang] = b
        kept[lang] = (k, total, int(c[b + 1 :].sum()))
    return bins, kept


def cutoffs_from(boundary_rows: list[list], kept: dict[str, tuple[int, int, int]]) -> dict[str, Cutoff]:
    """Rank each language's boundary-bin documents and take its last kept one."""
    by_lang: dict[str, list] = defaultdict(list)
    for lang, score, doc_id in boundary_rows:
        by_lang[lang].append((-math.inf if score is None else score, doc_id))
    out = {}
    for lang, (k, total, above) in kept.items():
        rows = sorted(by_lang[lang], key=lambda r: (-r[0], r[1]))
        score, doc_id = rows[k - above - 1]
        out[lang] = Cutoff(score, doc_id, k, total)
    return out


def top_fraction_over_parts(map_parts, fraction: Fraction) -> dict[str, Cutoff]:
    """The cutoffs, given ``map_parts(boundary)``: runs ScanWorker over every part, yields its stats."""
    bins, kept = boundaries([s["histograms"] for s in _all_read(map_parts(None))], fraction)
    if not bins:
        return {}
    return cutoffs_from([r for s in _all_read(map_parts(bins)) for r in s["rows"]], kept)


def _all_read(stats) -> list[dict]:
    """Every part's stats; the cutoffs are global, so one unreadable part stops them."""
    stats = list(stats)
    failed = [s for s in stats if "failed" in s]
    if failed:
        raise RuntimeError(f"top fraction: {len(failed)} parts could not be read: {failed[0]['failed']}")
    return stats
