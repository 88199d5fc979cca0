"""MurmurHash3's finalizers over numpy arrays (uint64 / uint32 arithmetic wraps, as intended)."""

from __future__ import annotations

import numpy as np

from core.hashing import fmix64  # noqa: F401  (the stages' hashes and the shuffle's partitions share it)

U64 = np.uint64
U32 = np.uint32


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer (datasketch pre-mixes affine32 input with it)."""
    h = h ^ (h >> U32(16))
    h = h * U32(0x85EBCA6B)
    h = h ^ (h >> U32(13))
    h = h * U32(0xC2B2AE35)
    return h ^ (h >> U32(16))
