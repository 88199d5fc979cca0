"""LSH banding: bands x rows for a Jaccard threshold, and one bucket key per band.

Band ``i`` is the signature slice ``[i*rows, (i+1)*rows)``, as in datasketch's
``MinHashLSH.hashranges``.  Two documents are candidates when some band has
identical values; we store a 64-bit hash of the band's values instead of the
values (8 bytes instead of ``4*rows``): a false bucket match between two
different bands has probability 2**-64 per pair.
"""

from __future__ import annotations

import functools

import numpy as np

from stages.dedup.config import MinHashConfig
from stages.dedup.hashing import fmix64

U64 = np.uint64


@functools.lru_cache(maxsize=64)
def _optimal(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> tuple[int, int]:
    """datasketch's ``_optimal_param``: the (bands, rows) with the least weighted sum of the false positive and
    false negative probability masses, the first in its order (bands, then rows) on a tie.

    Its integrals without scipy (datasketch.lsh imports scipy.integrate: ~0.25 s and ~10 MB in each process
    that plans LSH): the integrand 1 - (1 - s^r)^b is a polynomial of degree r*b <= num_perm, which a
    Gauss-Legendre rule of num_perm // 2 + 1 nodes integrates exactly (tests/stages/dedup/test_dedup_graph.py
    compares)."""
    pairs = np.array([(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)], dtype=np.float64)
    x, w = np.polynomial.legendre.leggauss(num_perm // 2 + 1)

    def mass(lo: float, hi: float) -> np.ndarray:  # integral of P(candidate | s) over [lo, hi], per pair
        s = (hi - lo) / 2 * x + (hi + lo) / 2
        p = 1.0 - (1.0 - s[None, :] ** pairs[:, 1:2]) ** pairs[:, 0:1]
        return (hi - lo) / 2 * (p @ w)

    fp = mass(0.0, threshold)
    fn = (1.0 - threshold) - mass(threshold, 1.0)
    b, r = pairs[int(np.argmin(fp * fp_weight + fn * fn_weight))]
    return int(b), int(r)


def bands_rows(config: MinHashConfig) -> tuple[int, int]:
    """(bands, rows): the config's override, else datasketch's optimum for the threshold."""
    if config.bands is not None:
        return config.bands, config.rows
    return _optimal(config.threshold, config.num_perm, config.false_positive_weight, config.false_negative_weight)


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    """Probability that a pair with this Jaccard similarity shares a bucket: 1 - (1 - s^r)^b."""
    return 1.0 - (1.0 - similarity**rows) ** bands


def band_keys(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """A (docs x bands) array of uint64 bucket keys.

    Each band's values are folded in one at a time (multiply-xor with a full
    avalanche), seeded by the band number so equal values in different bands
    still give different keys.
    """
    n = sig.shape[0]
    out = np.empty((n, bands), dtype=U64)
    values = sig.astype(U64, copy=False)
    for i in range(bands):
        h = np.full(n, (i + 1) * 0x9E3779B97F4A7C15 % (1 << 64), dtype=U64)
        for j in range(i * rows, (i + 1) * rows):
            h = fmix64(h ^ values[:, j])
        out[:, i] = h
    return out
