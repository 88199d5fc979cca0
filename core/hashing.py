"""A stable 64-bit mix for hash partitioning (the same key lands in the same partition on every worker)."""

from __future__ import annotations

import numpy as np

U64 = np.uint64


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: a bijection in which every input bit flips about half the output bits."""
    h = h ^ (h >> U64(33))
    h = h * U64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> U64(33))
    h = h * U64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> U64(33))
