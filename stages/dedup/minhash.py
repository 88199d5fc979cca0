"""MinHash signatures of a whole batch at once, compatible with datasketch.

Pipeline per batch: normalized bytes (normalize.py) -> shingle spans (byte
ranges of word or character n-grams) -> one hash per shingle -> datasketch's
permutation scheme -> the minimum per document and permutation.  Character
n-grams with the ``poly`` hash skip the spans: their hashes come straight from
prefix sums at character boundaries (:func:`char_poly_hashes`).

Compatibility: for a document whose normalized text is ``t``, with
``shingles = [" ".join(w[i:i+n]) for i ...]`` (``w = t.split(" ")``; a
document shorter than ``n`` words is one shingle, an empty one has none)::

    m = datasketch.MinHash(num_perm, seed=seed, scheme=scheme, hashfunc=HASHFUNCS[(hash, scheme)])
    m.update_batch([s.encode() for s in shingles])
    m.hashvalues == signatures(...)[i]

``hash="sha1"`` is datasketch's default hash function itself (so its default
``MinHash(num_perm, seed, scheme)`` matches); ``hash="poly"`` is a polynomial
hash over the shingle bytes finished with MurmurHash3's fmix64, computed for
all shingles of a batch with two prefix sums instead of one call per shingle.
The permutations are taken from datasketch itself.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from stages.dedup.config import MinHashConfig
from stages.dedup.hashing import fmix32 as _fmix32, fmix64 as _fmix64
from stages.dedup.normalize import normalize_batch

U64 = np.uint64
_MERSENNE = U64((1 << 61) - 1)
_MAX32 = U64((1 << 32) - 1)

# Polynomial hash h(s) = sum_j (s_j + 1) * Q**j mod 2**64, then fmix64.
# Q is odd, hence invertible mod 2**64 (P = Q**-1), which lets the hash of any
# byte range come from prefix sums: h(s[l:r]) = P**l * (T[r] - T[l]) with
# T[k] = sum_{i<k} (s_i + 1) * Q**i.
_Q = 0x9E3779B97F4A7C15
_P = pow(_Q, -1, 1 << 64)


def poly_hash64(data: bytes) -> int:
    """The ``poly`` shingle hash of one byte string (the scalar reference)."""
    h, q = 0, 1
    for c in data:
        h = (h + (c + 1) * q) & 0xFFFFFFFFFFFFFFFF
        q = (q * _Q) & 0xFFFFFFFFFFFFFFFF
    return int(_fmix64(np.array([h], dtype=U64))[0])


def poly_hash32(data: bytes) -> int:
    """32-bit ``poly`` hash: the low half of :func:`poly_hash64`."""
    return poly_hash64(data) & 0xFFFFFFFF


def sha1_hash32(data: bytes) -> int:
    from datasketch.hashfunc import sha1_hash32 as f

    return f(data)


def sha1_hash64(data: bytes) -> int:
    from datasketch.hashfunc import sha1_hash64 as f

    return f(data)


def datasketch_hashfunc(config: MinHashConfig):
    """The ``hashfunc`` that makes ``datasketch.MinHash`` reproduce our signatures."""
    wide = config.scheme == "affine64"
    if config.hash == "sha1":
        return sha1_hash64 if wide else sha1_hash32
    return poly_hash64 if wide else poly_hash32


class _Powers:
    """Q**i and P**i mod 2**64 for i < n, grown on demand and reused."""

    def __init__(self):
        self.q = np.ones(1, U64)
        self.p = np.ones(1, U64)

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.q) < n:
            size = max(n, 2 * len(self.q))
            self.q, self.p = (self._table(base, size) for base in (_Q, _P))
        return self.q[:n], self.p[:n]

    @staticmethod
    def _table(base: int, size: int) -> np.ndarray:
        t = np.full(size, base, dtype=U64)
        t[0] = 1
        return np.cumprod(t, dtype=U64)  # uint64 products wrap modulo 2**64, as wanted


_POWERS = _Powers()


def _poly_prefix(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T, P**i) for ``data``: T[k] = sum_{i<k} (data_i + 1) * Q**i mod 2**64."""
    q, p = _POWERS.get(len(data) + 1)
    prefix = np.zeros(len(data) + 1, U64)
    terms = data.astype(U64)
    terms += U64(1)
    terms *= q[: len(data)]
    np.cumsum(terms, dtype=U64, out=prefix[1:])
    return prefix, p


def poly_hash_spans(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``poly_hash64`` of every byte range ``data[starts[i]:ends[i]]`` at once."""
    prefix, p = _poly_prefix(data)
    return _fmix64((prefix[ends] - prefix[starts]) * p[starts])


def sha1_hash_spans(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int) -> np.ndarray:
    """datasketch's sha1_hash32/64 of every byte range (one hashlib call each)."""
    raw = data.tobytes()
    n = width // 8
    digests = b"".join(
        [hashlib.sha1(raw[s:e]).digest()[:n] for s, e in zip(starts.tolist(), ends.tolist(), strict=False)]
    )
    return np.frombuffer(digests, dtype="<u4" if width == 32 else "<u8").astype(U64)


def _count_shingles(units: np.ndarray, n: int) -> np.ndarray:
    """Shingles per document: units - n + 1, one for a short non-empty text, none for empty."""
    return np.where(units >= n, units - n + 1, np.minimum(units, 1))


@dataclass(frozen=True)
class _Layout:
    """Where a batch's shingles start, over the global unit (word or character) positions.

    A shingle of ``n`` units starts at every position of a document with at
    least ``n`` units but the last ``n - 1`` (``regular`` marks them); a short
    non-empty document (fewer units) is one shingle of its whole text.  Masking
    positions beats building per-shingle indices: a few passes over a bool array.
    """

    counts: np.ndarray  # shingles per document
    regular: np.ndarray  # bool per unit position: a shingle of n units starts there
    short_docs: np.ndarray  # documents with 0 < units < n
    first_unit: np.ndarray  # global index of each document's first unit (one more: the total)

    @staticmethod
    def of(units: np.ndarray, n: int) -> _Layout:
        first_unit = np.zeros(len(units) + 1, np.int64)
        np.cumsum(units, out=first_unit[1:])
        regular = np.ones(int(first_unit[-1]), dtype=bool)
        end = first_unit[1:]
        for k in range(1, n):  # the last n - 1 positions of each document start no full shingle
            regular[(end - k)[units >= k]] = False
        short_docs = np.flatnonzero((units > 0) & (units < n))
        return _Layout(_count_shingles(units, n), regular, short_docs, first_unit)

    def place(self, regular_values: np.ndarray, short_values: np.ndarray) -> np.ndarray:
        """One value per shingle in document order: the regular ones, each short document's inserted in its place."""
        if not len(self.short_docs):
            return regular_values
        # a short document's shingle goes after the regular shingles of the documents before it
        regular_before = np.cumsum(self.counts)[self.short_docs] - 1 - np.arange(len(self.short_docs))
        return np.insert(regular_values, regular_before, short_values)

    def spans(self, unit_starts: np.ndarray, unit_ends: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Byte (starts, ends) of every shingle, given each unit's first byte and end byte."""
        last = np.concatenate((unit_ends[n - 1 :], np.zeros(n - 1, unit_ends.dtype)))[: len(unit_ends)]
        lo, hi = self.first_unit[self.short_docs], self.first_unit[self.short_docs + 1] - 1
        return (self.place(unit_starts[self.regular], unit_starts[lo]), self.place(last[self.regular], unit_ends[hi]))


def _positions(size: int, *marks: np.ndarray) -> np.ndarray:
    """The sorted union of position arrays (a mask pass, cheaper than sorting)."""
    mask = np.zeros(size, dtype=bool)
    for m in marks:
        mask[m] = True
    return np.flatnonzero(mask)


def _word_units(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(words per document, first byte of every word, end byte of every word) of normalized text."""
    lengths = np.diff(offsets)
    nonempty = lengths > 0
    spaces = np.flatnonzero(data == 32)
    # Normalized text has single inner spaces only: words start after a space or at a doc start.
    word_starts = _positions(len(data), spaces + 1, offsets[:-1][nonempty])
    word_ends = _positions(len(data) + 1, spaces, offsets[1:][nonempty])
    spaces_per_doc = np.diff(np.searchsorted(spaces, offsets))
    return np.where(nonempty, spaces_per_doc + 1, 0), word_starts, word_ends


def word_shingle_spans(data: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Byte spans of word n-grams; returns (shingles per doc, starts, ends)."""
    words, word_starts, word_ends = _word_units(data, offsets)
    layout = _Layout.of(words, n)
    return (layout.counts, *layout.spans(word_starts, word_ends, n))


def _char_starts(data: np.ndarray) -> np.ndarray:
    """The first byte of every UTF-8 character (every byte of ASCII text)."""
    return np.flatnonzero((data & 0xC0) != 0x80)


def char_shingle_spans(data: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Byte spans of character n-grams (characters, not bytes, of UTF-8 text)."""
    char_starts = _char_starts(data)
    chars = np.diff(np.searchsorted(char_starts, offsets))
    layout = _Layout.of(chars, n)
    # A character ends where the next one starts (the buffer's documents are contiguous).
    char_ends = np.concatenate((char_starts[1:], [len(data)]))
    return (layout.counts, *layout.spans(char_starts, char_ends, n))


def char_poly_hashes(data: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``poly`` hashes of character n-grams straight from the prefix sums at character boundaries.

    The shingle starting at character u ends where character u + n starts, so the
    prefix sums at every boundary, read twice as slices n apart, give every
    window's hash without a gather per shingle (the hot path of ``shingle: char``);
    ASCII text needs no boundary gather at all: every byte is a character.
    """
    prefix, p = _poly_prefix(data)
    if _is_ascii(data):
        bounds_prefix, start_powers, chars = prefix, p[: len(data)], np.diff(offsets)
    else:
        char_starts = _char_starts(data)
        bounds_prefix = prefix[np.append(char_starts, len(data))]
        start_powers = p[char_starts]
        chars = np.diff(np.searchsorted(char_starts, offsets))
    layout = _Layout.of(chars, n)
    size = len(start_powers)
    windows = np.empty(size, U64)  # T at the window's end; past the buffer padded (masked out below)
    full = max(size - n + 1, 0)
    windows[:full] = bounds_prefix[n : n + full]
    windows[full:] = bounds_prefix[size]
    windows -= bounds_prefix[:size]
    windows *= start_powers
    lo, hi = layout.first_unit[layout.short_docs], layout.first_unit[layout.short_docs + 1]
    short = (bounds_prefix[hi] - bounds_prefix[lo]) * start_powers[lo]
    return layout.counts, _fmix64(layout.place(windows[layout.regular], short))


@functools.lru_cache(maxsize=16)
def permutations(num_perm: int, seed: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's permutation parameters (a, b) for these settings: the draws of its
    ``MinHash._init_permutations``, made here because importing datasketch imports scipy (~0.25 s and ~40 MB
    in every process that computes signatures);
    tests/stages/dedup/test_dedup_minhash.py compares them with datasketch's."""
    gen = np.random.RandomState(seed)
    if scheme == "legacy":  # a in [1, p), b in [0, p), drawn in turn, p = 2^61 - 1
        prime = np.uint64((1 << 61) - 1)
        ab = np.array(
            [
                (gen.randint(1, prime, dtype=np.uint64), gen.randint(0, prime, dtype=np.uint64))
                for _ in range(num_perm)
            ],
            dtype=np.uint64,
        ).T
        return ab[0], ab[1]
    width, dtype = (32, np.uint32) if scheme == "affine32" else (64, np.uint64)
    a = gen.randint(0, 1 << (width - 1), num_perm, dtype=dtype) * dtype(2) + dtype(1)  # odd: a bijection mod 2^width
    b = gen.randint(0, 1 << width, num_perm, dtype=dtype)
    return a, b


def signature_dtype(scheme: str):
    return np.uint32 if scheme == "affine32" else np.uint64


def empty_value(scheme: str) -> int:
    """The value of every permutation for a document without shingles (datasketch's initial state)."""
    return (1 << 64) - 1 if scheme == "affine64" else (1 << 32) - 1


def minhash_from_hashes(hashes: np.ndarray, counts: np.ndarray, config: MinHashConfig) -> np.ndarray:
    """Signatures (docs x num_perm) from shingle hashes grouped by document."""
    a, b = permutations(config.num_perm, config.seed, config.scheme)
    dtype = signature_dtype(config.scheme)
    out = np.full((config.num_perm, len(counts)), empty_value(config.scheme), dtype=dtype)
    has = counts > 0
    if not has.any():
        return out.T
    seg = np.concatenate(([0], np.cumsum(counts[has])))[:-1]
    hv = prepared_hashes(hashes, config.scheme)
    buf = np.empty(len(hv), dtype=hv.dtype)
    # One permutation at a time over every shingle of the batch: long vectors,
    # no (shingles x num_perm) matrix, and reduceat does the per-document min.
    for k in range(config.num_perm):
        out[k, has] = np.minimum.reduceat(permute(hv, a[k], b[k], config.scheme, buf), seg)
    return out.T


def prepared_hashes(hashes: np.ndarray, scheme: str) -> np.ndarray:
    """Shingle hashes as the permutations of ``scheme`` take them."""
    if scheme == "affine32":
        return _fmix32((hashes & _MAX32).astype(np.uint32))
    if scheme == "affine64":
        return _fmix64(hashes)
    return hashes & _MAX32


def permute(hv: np.ndarray, a, b, scheme: str, out: np.ndarray) -> np.ndarray:
    """One permutation ``(a, b)`` of prepared hashes, written to
    ``out`` (the values a signature takes its minimum of)."""
    np.multiply(hv, np.asarray(a).astype(hv.dtype), out=out)
    out += np.asarray(b).astype(hv.dtype)
    if scheme == "legacy":
        np.remainder(out, _MERSENNE, out=out)
        out &= _MAX32
    return out


def shingle_hashes(data: np.ndarray, offsets: np.ndarray, config: MinHashConfig) -> tuple[np.ndarray, np.ndarray]:
    """(shingles per document, one 64-bit hash per shingle) of normalized texts."""
    if config.shingle == "char" and config.hash == "poly":
        return char_poly_hashes(data, offsets, config.ngram)
    spans = word_shingle_spans if config.shingle == "word" else char_shingle_spans
    counts, starts, ends = spans(data, offsets, config.ngram)
    if config.hash == "poly":
        return counts, poly_hash_spans(data, starts, ends)
    return counts, sha1_hash_spans(data, starts, ends, 64 if config.scheme == "affine64" else 32)


def _is_ascii(data: np.ndarray) -> bool:
    return not len(data) or int(data.max()) < 0x80


def signatures(
    texts: pa.Array | pa.ChunkedArray, config: MinHashConfig, max_bytes: int = 1 << 19, return_shingles: bool = False
) -> tuple[np.ndarray, np.ndarray, pa.LargeListArray | None]:
    """MinHash signatures of a batch of texts.

    Returns (docs x num_perm signatures, shingles per doc, and with
    ``return_shingles`` each document's sorted unique shingle hashes).  Works
    in slices of at most ``max_bytes`` of normalized text so that the per-byte
    temporaries stay in cache whatever the batch size.
    """
    data, offsets = normalize_batch(texts, config.normalize)
    n = len(offsets) - 1
    sig = np.empty((n, config.num_perm), dtype=signature_dtype(config.scheme))
    counts = np.zeros(n, dtype=np.int64)
    sets = []
    i = 0
    while i < n:
        j = int(np.searchsorted(offsets, offsets[i] + max_bytes, side="right")) - 1
        j = min(max(j, i + 1), n)
        lo = int(offsets[i])
        c, h = shingle_hashes(data[lo : offsets[j]], offsets[i : j + 1] - lo, config)
        sig[i:j] = minhash_from_hashes(h, c, config)
        counts[i:j] = c
        if return_shingles:
            sets.append(shingle_sets(h, c))
        i = j
    if not return_shingles:
        return sig, counts, None
    return sig, counts, pa.concat_arrays(sets) if sets else pa.array([], pa.large_list(pa.uint64()))


def shingle_sets(hashes: np.ndarray, counts: np.ndarray) -> pa.LargeListArray:
    """Each document's shingle hashes, sorted and de-duplicated, as a list array."""
    doc = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((hashes, doc))
    doc, hashes = doc[order], hashes[order]
    first = np.concatenate(([True], (doc[1:] != doc[:-1]) | (hashes[1:] != hashes[:-1])))
    doc, hashes = doc[first], hashes[first]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(doc, minlength=len(counts)))))
    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(hashes, pa.uint64()))
