"""Host boilerplate in MinHash signatures, and the pair check that leaves it out.

Pages of one site often carry a long block in the article area (a legal
disclaimer, a privacy notice, an author bio) beside a short distinct body.
By text two such pages are similar (a block of 60% of the words gives a 5-gram
Jaccard of ~0.43), so a signature check alone calls them duplicates, and
connected components then chain the whole site into one cluster.

The block shows in the signatures: at position k, every page whose minimum
comes from the block has the same value, the block's minimum.  A value that
``min_docs`` or more documents of one host share at one position (exact copies
counted once) is *host boilerplate* there (:func:`frequent_values`).

:func:`similarity` is the MinHash estimate of the Jaccard of two documents
without their host boilerplate: a position counts only when the minimum of the
union (the smaller of the two values) is not boilerplate for the document it
comes from, and the estimate is the share of counted positions where the two
agree.  Two pages that share only the block then score ~0, two copies of a
body keep their score whatever block or template surrounds them.
:func:`is_duplicate` adds one exception: a pair whose full signatures agree on
``identical_threshold`` or more is a duplicate anyway (several copies of one
page on its own site share their whole text, so all of it counts as
boilerplate there).  The signatures themselves are unchanged (datasketch's).

The check only sees pairs that LSH makes candidates, and a body republished
under two different blocks (or a block on one side and another template on
the other) often never is: with a block of half the words on each side the
full-text Jaccard is ~0.33, so it shares no band of 25 x 5.
:func:`content_signatures` gives such a document a second MinHash, over its
shingles without the host boilerplate, which phase 2 bands into the same LSH
buckets: the text around the shingles that hold the document's boilerplate
values (:func:`boilerplate_shingles`) is left out, so two copies of one body
get close signatures whatever surrounds them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.dedup import minhash
from stages.dedup.config import MinHashConfig
from stages.dedup.hashing import fmix64
from stages.dedup.minhash import poly_hash_spans
from stages.dedup.normalize import normalize_batch, string_buffers

U64 = np.uint64

#: Fewer positions than num_perm / this without boilerplate: the content estimate is
#: too coarse to trust (the pair is then a duplicate only by ``identical_threshold``).
MIN_CONTENT_SHARE = 16

#: A flagged boilerplate shingle (one holding a boilerplate value) is expected every
#: ``block / flagged`` shingles of a block; gaps up to this many times that are filled
#: (a geometric gap is longer with probability ~e^-4).
GAP_FACTOR = 4
#: Bounds of the filled gap, in shingles (the upper one keeps a short body between two blocks).
MAX_GAP = 64
#: A content signature needs at least this many shingles left (fewer: no content bands).
MIN_CONTENT_SHINGLES = 16

# scheme://user@HOST:port/...  (the host, without userinfo and port)
_HOST = r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?(?:[^@/?#]*@)?(?P<h>[^/?#:]*)"


def url_hosts(urls: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each URL's host, lowercased, without a leading ``www.`` (``""`` when there is none)."""
    if isinstance(urls, pa.ChunkedArray):
        urls = urls.combine_chunks() if urls.num_chunks else pa.array([], pa.string())
    host = pc.extract_regex(pc.fill_null(urls.cast(pa.string()), ""), _HOST).field("h")
    return pc.replace_substring_regex(pc.utf8_lower(pc.fill_null(host, "")), r"^www[0-9]*\.", "")


def host_keys(urls: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit key per URL's host; 0 for a URL without a host."""
    hosts = url_hosts(urls).cast(pa.large_string())
    data, offsets = string_buffers(hosts)
    keys = poly_hash_spans(data, offsets[:-1], offsets[1:])
    keys[offsets[1:] == offsets[:-1]] = 0
    return keys


def frequent_values(group: np.ndarray, text: np.ndarray, sig: np.ndarray, min_docs: int) -> np.ndarray:
    """(docs x num_perm) bool: the value at each position is shared by ``min_docs`` or more documents of the group.

    ``group`` keys the documents of one host (0: no host, never boilerplate),
    ``text`` keys their texts (equal texts count once).  Any number of groups
    at once: one sort over (group, position, value, text).
    """
    n, perm = sig.shape
    if n == 0:
        return np.zeros((0, perm), bool)
    seeds = fmix64(np.arange(1, perm + 1, dtype=U64) * U64(0x9E3779B97F4A7C15))
    # a 64-bit key per (group, position, value): collisions have probability ~ n^2 * perm^2 / 2^64
    key = fmix64(fmix64(group.astype(U64)[:, None] ^ seeds[None, :]) ^ sig.astype(U64)).ravel()
    txt = np.repeat(text.astype(U64), perm)
    order = np.lexsort((txt, key))
    key, txt = key[order], txt[order]
    new_key = np.concatenate(([True], key[1:] != key[:-1]))
    new_text = new_key | np.concatenate(([True], txt[1:] != txt[:-1]))
    run = np.cumsum(new_key) - 1
    texts_per_key = np.bincount(run, weights=new_text)
    out = np.empty(n * perm, bool)
    out[order] = texts_per_key[run] >= min_docs
    out = out.reshape(n, perm)
    out[group == 0] = False
    return out


def similarity(
    sig_a: np.ndarray, sig_b: np.ndarray, mask_a: np.ndarray, mask_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise (agreement of the full signatures, agreement without host boilerplate).

    The second is 0 for a pair with fewer than num_perm / MIN_CONTENT_SHARE
    positions left.  With no boilerplate (all masks false) both are equal.
    """
    if len(sig_a) == 0:
        return np.zeros(0), np.zeros(0)
    agree = sig_a == sig_b
    # the position's union minimum is a's value when a's is smaller, b's when larger; equal: either
    boiler = np.where(agree, mask_a | mask_b, np.where(sig_a < sig_b, mask_a, mask_b))
    counted = (~boiler).sum(axis=1)
    content = (agree & ~boiler).sum(axis=1) / np.maximum(counted, 1)
    content[counted < max(1, sig_a.shape[1] // MIN_CONTENT_SHARE)] = 0.0
    return agree.mean(axis=1), content


def is_duplicate(
    sig_a: np.ndarray,
    sig_b: np.ndarray,
    mask_a: np.ndarray,
    mask_b: np.ndarray,
    threshold: float,
    identical_threshold: float,
) -> np.ndarray:
    """Row-wise: the pair's content agreement reaches ``threshold``, or its full agreement ``identical_threshold``."""
    full, content = similarity(sig_a, sig_b, mask_a, mask_b)
    return (content >= threshold) | (full >= identical_threshold)


def pack(mask: np.ndarray) -> pa.FixedSizeBinaryArray:
    """(docs x num_perm) bool -> one fixed-size binary value of num_perm / 8 bytes per document."""
    bits = np.packbits(mask, axis=1) if mask.size else np.zeros((len(mask), (mask.shape[1] + 7) // 8), np.uint8)
    width = bits.shape[1]
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), len(bits), [None, pa.py_buffer(np.ascontiguousarray(bits))]
    )


def unpack(col: pa.FixedSizeBinaryArray, num_perm: int) -> np.ndarray:
    """The inverse of :func:`pack`."""
    width = (num_perm + 7) // 8
    if len(col) == 0:
        return np.zeros((0, num_perm), bool)
    raw = np.frombuffer(col.buffers()[1], np.uint8)[col.offset * width : (col.offset + len(col)) * width].reshape(
        -1, width
    )
    return np.unpackbits(raw, axis=1, count=num_perm).astype(bool)


def boilerplate_shingles(
    hashes: np.ndarray, counts: np.ndarray, sig: np.ndarray, mask: np.ndarray, config: MinHashConfig
) -> np.ndarray:
    """Per shingle (in document order, ``counts`` per document): part of the document's host boilerplate.

    A shingle is *flagged* when it holds the document's signature value at a
    boilerplate position (its permuted hash is that minimum).  Those are a
    random sample of the block's shingles (about one per boilerplate
    position), so the block is their span: flagged shingles, the ``ngram - 1``
    shingles on each side (they share words with them) and the gaps between
    two flagged shingles of a document up to ``GAP_FACTOR`` times the expected
    gap (block shingles ~ shingles x masked share, over the flagged ones;
    between ``ngram`` and ``MAX_GAP``).  One pass per permutation, as the
    signature itself.
    """
    n = len(counts)
    total = int(counts.sum())
    doc = np.repeat(np.arange(n), counts)
    flagged = np.zeros(total, bool)
    if total == 0 or not mask.any():
        return flagged
    a, b = minhash.permutations(config.num_perm, config.seed, config.scheme)
    hv = minhash.prepared_hashes(hashes, config.scheme)
    buf = np.empty(total, hv.dtype)
    for k in np.flatnonzero(mask.any(axis=0)):
        on = mask[doc, k]
        flagged |= on & (minhash.permute(hv, a[k], b[k], config.scheme, buf) == sig[doc, k].astype(hv.dtype))
    first = np.concatenate(([0], np.cumsum(counts)))
    f = np.flatnonzero(flagged)
    if len(f) == 0:
        return flagged
    fd = doc[f]
    per_doc = np.bincount(fd, minlength=n)
    expected = counts * mask.sum(axis=1) / config.num_perm / np.maximum(per_doc, 1)
    gap = np.clip(np.ceil(GAP_FACTOR * expected), config.ngram, MAX_GAP)
    edge = config.ngram - 1
    diff = np.zeros(total + 1, np.int64)
    np.add.at(diff, np.maximum(f - edge, first[fd]), 1)
    np.add.at(diff, np.minimum(f + edge + 1, first[fd + 1]), -1)
    bridge = (fd[1:] == fd[:-1]) & (f[1:] - f[:-1] <= gap[fd[1:]])
    np.add.at(diff, f[:-1][bridge], 1)
    np.add.at(diff, f[1:][bridge], -1)
    return np.cumsum(diff[:-1]) > 0


def content_signatures(
    texts: pa.Array | pa.ChunkedArray, sig: np.ndarray, mask: np.ndarray, config: MinHashConfig
) -> tuple[np.ndarray, np.ndarray]:
    """MinHash signatures of the texts without their host boilerplate, and the shingles each keeps.

    ``sig`` and ``mask`` are the texts' signatures and boilerplate positions.
    A document left with fewer than ``MIN_CONTENT_SHINGLES`` shingles gets
    the empty signature (and a count below that: the caller bands nothing
    for it).
    """
    data, offsets = normalize_batch(texts, config.normalize)
    counts, hashes = minhash.shingle_hashes(data, offsets, config)
    keep = ~boilerplate_shingles(hashes, counts, sig, mask, config)
    doc = np.repeat(np.arange(len(counts)), counts)
    left = np.bincount(doc[keep], minlength=len(counts))
    return minhash.minhash_from_hashes(hashes[keep], left, config), left
