"""Bucket rows -> edges of the duplicate graph, without quadratic blow-up.

Rows are ``(band, key, doc)``; documents sharing a ``(band, key)`` bucket are
candidates.  Each bucket of k members gives k-1 edges, every member linked to
the bucket's smallest doc (a star): the connected components are the same
as with all k(k-1)/2 pairs.

Optional verification: when the rows also carry each document's shingle
hashes (sorted, unique), an edge is kept only if the exact Jaccard similarity
of the two shingle sets reaches the threshold.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: ``lsh``: the pair met only in LSH buckets (a candidate to verify); false when an
#: exact key (same text, same URL) links it too.
EDGE_SCHEMA = pa.schema([("src", pa.int64()), ("dst", pa.int64()), ("lsh", pa.bool_())])


def star_edges(
    band: np.ndarray,
    key: np.ndarray,
    doc: np.ndarray,
    shingles: pa.ListArray | None = None,
    threshold: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, lsh) with src > dst: every bucket member to its bucket's minimum doc, de-duplicated.

    Bands < 0 are exact keys (stages.dedup.exact): their edges have ``lsh`` false.
    """
    if len(doc) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool)
    order = np.lexsort((doc, key, band))
    band, key, doc = band[order], key[order], doc[order]
    new = np.concatenate(([True], (band[1:] != band[:-1]) | (key[1:] != key[:-1])))
    head = np.maximum.accumulate(np.where(new, np.arange(len(doc)), 0))
    linked = np.flatnonzero(doc != doc[head])  # a head, or a doc listed twice in a bucket, links nothing
    if shingles is not None and len(linked):
        shingles = shingles.take(pa.array(order))
        linked = linked[jaccard(shingles.take(pa.array(linked)), shingles.take(pa.array(head[linked]))) >= threshold]
    return unique_edges(doc[linked], doc[head[linked]], band[linked] >= 0)


def jaccard(a: pa.ListArray, b: pa.ListArray) -> np.ndarray:
    """Exact Jaccard similarity of row i of ``a`` and row i of ``b`` (lists of unique values)."""
    len_a = pc.list_value_length(a).to_numpy(zero_copy_only=False).astype(np.int64)
    len_b = pc.list_value_length(b).to_numpy(zero_copy_only=False).astype(np.int64)
    pair = np.concatenate((np.repeat(np.arange(len(a)), len_a), np.repeat(np.arange(len(b)), len_b)))
    values = np.concatenate((pc.list_flatten(a).to_numpy(), pc.list_flatten(b).to_numpy()))
    order = np.lexsort((values, pair))
    pair, values = pair[order], values[order]
    # Within one set values are unique, so an equal neighbour is a value of both sets.
    both = (pair[1:] == pair[:-1]) & (values[1:] == values[:-1])
    inter = np.bincount(pair[1:][both], minlength=len(a))
    union = len_a + len_b - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 1.0)


def unique_edges(src: np.ndarray, dst: np.ndarray, lsh: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop repeated (src, dst) pairs (often found by several bands); a pair is LSH-only if all its finds are."""
    if len(src) == 0:
        return src.astype(np.int64), dst.astype(np.int64), lsh.astype(bool)
    order = np.lexsort((lsh, dst, src))  # per pair, a non-LSH find (False) sorts first
    src, dst, lsh = src[order], dst[order], lsh[order]
    first = np.concatenate(([True], (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])))
    return src[first], dst[first], lsh[first]


def edges_table(src: np.ndarray, dst: np.ndarray, lsh: np.ndarray) -> pa.Table:
    return pa.table(
        {"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64()), "lsh": pa.array(lsh, pa.bool_())},
        schema=EDGE_SCHEMA,
    )


def signature_agreement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise share of equal values of two (pairs x num_perm) signature arrays: the MinHash Jaccard estimate."""
    return (a == b).mean(axis=1) if len(a) else np.zeros(0)
