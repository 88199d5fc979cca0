"""Step 2b: signature verification of the LSH candidate pairs (``dedup/edges-verified/``).

A band match is only a candidate: the pair is kept when the two full MinHash
signatures agree on at least ``verify_threshold`` of their values.  This is a
join of the edges with ``dedup/signatures/``: the edges are grouped by the part
of their ``src`` (each group reads those signature files once), then by the
part of their ``dst``.  Exact-key edges are kept as they are.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.phase2.context import Parts, Phase2Context, part_of, row_of
from pipeline.phase2.edges import EdgeSet
from pipeline.phase2.shuffle import by_part
from pipeline.phase2.signatures import signature_width
from stages.base import set_column
from stages.dedup import minhash
from stages.dedup.edges import EDGE_SCHEMA, signature_agreement


def needed(ctx: Phase2Context, edges: EdgeSet) -> bool:
    minhash_cfg = ctx.dedup.minhash
    return minhash_cfg.enabled and minhash_cfg.verify == "signature" and bool(edges.rows)


def verify_edges(ctx: Phase2Context, edges: EdgeSet) -> EdgeSet:
    """Step 2b; returns the verified edges."""
    width = signature_width(ctx.dedup.minhash)
    where = {"parts": ctx.parts, "width": width}
    check = {**where, "dtype": np.dtype(minhash.signature_dtype(ctx.dedup.minhash.scheme)).str,
             "threshold": ctx.dedup.minhash.verify_threshold}
    p = ctx.partitions(edges.rows * (1 + width // 16))  # rows carry one signature
    if p == 1:
        table = _verify_with_dst_signatures(_attach_src_signatures(ctx.read_local(edges.files), **where), **check)
        ctx.storage.write_parquet(table, "dedup", "edges-verified", "part-0.parquet")
    else:
        ds = by_part(ctx.read(edges.files), "src", p, _attach_src_signatures, **where)
        ds = by_part(ds, "dst", p, _verify_with_dst_signatures, **check)
        ds.write_parquet(ctx.storage.path("dedup", "edges-verified"), filesystem=ctx.storage.fs)
    files = ctx.files("dedup", "edges-verified")
    return EdgeSet(files, ctx.rows(files))


def _signatures_of(parts: Parts, doc: np.ndarray, width: int) -> np.ndarray:
    """(len(doc) x width) bytes: the stored signature of every doc, read part by part."""
    storage = parts.storage()
    out = np.zeros((len(doc), width), np.uint8)
    part = part_of(doc)
    for p in np.unique(part):
        rows = part == p
        sig = storage.read_parquet("dedup", "signatures", parts.file(p)).column("sig").combine_chunks()
        out[rows] = _fixed_bytes(sig, width)[row_of(doc[rows])]
    return out


def _fixed_bytes(col: pa.FixedSizeBinaryArray, width: int) -> np.ndarray:
    """The values of a fixed-size binary array as a (len x width) uint8 view."""
    return np.frombuffer(col.buffers()[1], np.uint8)[col.offset * width : (col.offset + len(col)) * width].reshape(-1, width)


def _attach_src_signatures(group: pa.Table, parts: Parts, width: int) -> pa.Table:
    """Add column ``sig_src``: the signature of each edge's ``src``."""
    sig = _signatures_of(parts, group.column("src").to_numpy(), width)
    return set_column(group, "sig_src", pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(sig), [None, pa.py_buffer(sig)]))


def _verify_with_dst_signatures(group: pa.Table, parts: Parts, width: int, dtype: str, threshold: float) -> pa.Table:
    """Keep exact-key edges, and LSH edges whose signatures agree on at least ``threshold`` of their values."""
    dst = _signatures_of(parts, group.column("dst").to_numpy(), width)
    src = _fixed_bytes(group.column("sig_src").combine_chunks(), width)
    agree = signature_agreement(src.view(dtype), dst.view(dtype))
    keep = ~group.column("lsh").to_numpy(zero_copy_only=False) | (agree >= threshold)
    return group.select(EDGE_SCHEMA.names).filter(pa.array(keep))
