"""Step 2b: signature verification of the LSH candidate pairs (``dedup/edges-verified/``).

A band match is only a candidate: the pair is kept when the two full MinHash
signatures agree on at least ``verify_threshold`` of the positions that are
not host boilerplate (step 2a, stages.dedup.boilerplate), or on at least
``boilerplate.identical_threshold`` of all positions.  This is a join of the
edges with ``dedup/signatures/`` and ``dedup/boilerplate/``: the edges are
grouped by the part of their ``src`` (each group reads those files once),
then by the part of their ``dst``.  Exact-key edges are kept as they are.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from core.tables import read_tables
from pipeline.dedup.boilerplate import fixed_bytes, masks_of
from pipeline.dedup.context import DedupContext, Parts, each_part, row_of
from pipeline.dedup.edges import EdgeSet
from pipeline.dedup.shuffle import by_part
from pipeline.dedup.signatures import signature_width
from stages.base import set_column
from stages.dedup import boilerplate, minhash
from stages.dedup.config import MinHashConfig
from stages.dedup.edges import EDGE_SCHEMA


def needed(ctx: DedupContext, edges: EdgeSet) -> bool:
    minhash_cfg = ctx.dedup.minhash
    return minhash_cfg.enabled and minhash_cfg.verify == "signature" and bool(edges.rows)


def check_settings(config: MinHashConfig) -> dict:
    """What a task needs to run :func:`duplicates` (picklable)."""
    return {
        "num_perm": config.num_perm,
        "dtype": np.dtype(minhash.signature_dtype(config.scheme)).str,
        "threshold": config.verify_threshold,
        "identical": config.boilerplate.identical_threshold,
    }


def duplicates(
    sig_a: np.ndarray, sig_b: np.ndarray, mask_a: np.ndarray, mask_b: np.ndarray, check: dict
) -> np.ndarray:
    """Row-wise: the pair passes the signature check (signatures as (n x width) bytes)."""
    dtype = check["dtype"]
    return boilerplate.is_duplicate(
        sig_a.view(dtype), sig_b.view(dtype), mask_a, mask_b, check["threshold"], check["identical"]
    )


def verify_edges(ctx: DedupContext, edges: EdgeSet) -> EdgeSet:
    """Step 2b; returns the verified edges."""
    width = signature_width(ctx.dedup.minhash)
    where = {"parts": ctx.parts, "width": width, "num_perm": ctx.dedup.minhash.num_perm}
    p = ctx.partitions(edges.rows * (1 + width // 16))  # rows carry one signature
    if p == 1:
        ctx.in_task(_verify_here, edges.files, where, check_settings(ctx.dedup.minhash))
    else:
        ds = by_part(ctx.read(edges.files, p), "src", p, attach_signatures, **where)
        ds = by_part(ds, "dst", p, _verify_with_dst_signatures, **where, check=check_settings(ctx.dedup.minhash))
        ds.write_parquet(ctx.storage.path("dedup", "edges-verified"), filesystem=ctx.storage.fs)
    files = ctx.files("dedup", "edges-verified")
    return EdgeSet(files, ctx.rows(files))


def _verify_here(files: list[str], where: dict, check: dict) -> None:
    """The single-partition path, in one task."""
    storage = where["parts"].storage()
    table = _verify_with_dst_signatures(attach_signatures(read_tables(storage, files), **where), **where, check=check)
    storage.write_parquet(table, "dedup", "edges-verified", "part-0.parquet")


def signatures_of(parts: Parts, doc: np.ndarray, width: int) -> np.ndarray:
    """(len(doc) x width) bytes: the stored signature of every doc, read part by part."""
    storage = parts.storage()
    out = np.zeros((len(doc), width), np.uint8)

    def fill(p: int, rows: np.ndarray) -> None:
        sig = storage.read_parquet("dedup", "signatures", parts.file(p)).column("sig").combine_chunks()
        out[rows] = fixed_bytes(sig, width)[row_of(doc[rows])]

    each_part(doc, fill)
    return out


def binary_column(values: np.ndarray) -> pa.FixedSizeBinaryArray:
    """Rows of a (n x width) uint8 array as a fixed-size binary column (the inverse of fixed_bytes)."""
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(values.shape[1]), len(values), [None, pa.py_buffer(np.ascontiguousarray(values))]
    )


def attach_signatures(
    group: pa.Table, parts: Parts, width: int, num_perm: int, doc_column: str = "src", suffix: str = "_src"
) -> pa.Table:
    """Add columns ``sig<suffix>`` and ``mask<suffix>``: the signature and boilerplate positions of each row's
    document in ``doc_column`` (a group holds whole parts: each part's files are read once)."""
    doc = group.column(doc_column).to_numpy()
    group = set_column(group, "sig" + suffix, binary_column(signatures_of(parts, doc, width)))
    return set_column(group, "mask" + suffix, binary_column(np.packbits(masks_of(parts, doc, num_perm), axis=1)))


def _verify_with_dst_signatures(group: pa.Table, parts: Parts, width: int, num_perm: int, check: dict) -> pa.Table:
    """Keep exact-key edges, and LSH edges that pass the signature check."""
    dst = group.column("dst").to_numpy()
    sig_src = fixed_bytes(group.column("sig_src").combine_chunks(), width)
    mask_src = np.unpackbits(
        fixed_bytes(group.column("mask_src").combine_chunks(), (num_perm + 7) // 8), axis=1, count=num_perm
    ).astype(bool)
    same = duplicates(sig_src, signatures_of(parts, dst, width), mask_src, masks_of(parts, dst, num_perm), check)
    keep = ~group.column("lsh").to_numpy(zero_copy_only=False) | same
    return group.select(EDGE_SCHEMA.names).filter(pa.array(keep))
