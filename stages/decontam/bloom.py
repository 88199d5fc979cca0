"""A Bloom filter over 64-bit hashes, in numpy: built once, then shipped to workers (it pickles as one array).

``m`` bits (a multiple of 64) and ``k`` probe positions per key by double
hashing (Kirsch and Mitzenmacher 2006: ``(h1 + i * h2) mod m``, with ``h2``
an odd remix of the key).  For ``n`` keys and a target false-positive rate
``p``: ``m = -n ln p / (ln 2)^2`` (38.3 bits a key at 1e-8) rounded up to 64,
``k = round(m / n * ln 2)``; the rate it then has, ``(1 - exp(-k n / m))^k``,
is reported (``fpr``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stages.dedup.hashing import fmix64

U64 = np.uint64
_SALT = U64(0x5BD1E9955BD1E995)
_MAX_HASHES = 32
_SLAB_BITS = 1 << 28  # bits set at a time while building: 256 MB of bools


@dataclass(frozen=True)
class BloomFilter:
    bits: np.ndarray  # uint64 words, m / 64 of them
    k: int
    n: int  # keys added

    @property
    def m(self) -> int:
        return len(self.bits) * 64

    @property
    def fpr(self) -> float:
        """The expected false-positive rate per lookup of a key not added."""
        return (1 - math.exp(-self.k * self.n / self.m)) ** self.k if self.n else 0.0

    @staticmethod
    def build(keys: np.ndarray, fpr: float) -> BloomFilter:
        n = max(len(keys), 1)
        m = 64 * max(1, math.ceil(-n * math.log(fpr) / math.log(2) ** 2 / 64))
        k = min(max(1, round(m / n * math.log(2))), _MAX_HASHES)
        keys = np.asarray(keys, U64)
        h2 = _second(keys)
        slabs = []
        for lo in range(0, m, _SLAB_BITS):  # set bits as bytes (a scatter), a slab at a time, then pack them
            slab = np.zeros(min(_SLAB_BITS, m - lo), bool)
            for i in range(k):
                probe = _probe(keys, h2, i, m)
                slab[(probe[(probe >= U64(lo)) & (probe < U64(lo + len(slab)))] - U64(lo)).astype(np.int64)] = True
            slabs.append(np.packbits(slab, bitorder="little"))
        return BloomFilter(np.concatenate(slabs).view(U64), k, len(keys))

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """A bool per key: maybe added (true) or surely not (false)."""
        keys = np.asarray(keys, U64)
        alive, h1, h2 = np.arange(len(keys)), keys, _second(keys)
        for i in range(self.k):  # each probe drops about half the keys not added: test only the survivors
            probe = _probe(h1, h2, i, self.m)
            hit = ((self.bits[probe >> U64(6)] >> (probe & U64(63))) & U64(1)).astype(bool)
            alive, h1, h2 = alive[hit], h1[hit], h2[hit]
            if not len(alive):
                break
        out = np.zeros(len(keys), bool)
        out[alive] = True
        return out


def _second(keys: np.ndarray) -> np.ndarray:
    """The double-hashing step of every key: an odd remix of it."""
    return fmix64(keys ^ _SALT) | U64(1)


def _probe(h1: np.ndarray, h2: np.ndarray, i: int, m: int) -> np.ndarray:
    """The ``i``-th probe position of every key (uint64 arithmetic wraps, as intended)."""
    return (h1 + U64(i) * h2) % U64(m)
