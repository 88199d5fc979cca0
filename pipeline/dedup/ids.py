"""Step 1b: repeated document ids (``dedup/id-duplicates/``).

The ``id`` (the WARC-Record-ID) must be unique in the deduplicated output, but
two input files can hold the same record (a file listed twice under two
names, a crawler that re-used ids).  Of the documents with one id the first
in document order (parts sorted by name, then rows) is kept; every other one
is removed with reason ``duplicate_id`` and details naming the kept copy's
part.  The removed ones leave the duplicate graph before its edges are drawn
(step 2), so that no cluster keeps or chains through them.

The documents with one id meet in one task: one Ray Data shuffle of
``(doc, id)`` rows from ``dedup/meta/`` by a hash of the id (no shuffle for a
single partition).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.storage import Storage
from core.tables import read_tables
from pipeline.dedup.context import DedupContext, Parts, part_of
from pipeline.dedup.shuffle import by_value
from stages.base import set_column
from stages.dedup.minhash import poly_hash_spans
from stages.dedup.normalize import string_buffers

FOLDER = ("dedup", "id-duplicates")
REASON = "duplicate_id"
#: Bytes of a (doc, id) row, to size the shuffle partitions (a WARC-Record-ID is ~47 characters).
_ROW_WEIGHT = 4


def find_duplicate_ids(ctx: DedupContext) -> dict:
    """Step 1b; returns its part of the summary (``duplicate_ids``: documents removed for a repeated id)."""
    ctx.storage.delete_dir(*FOLDER)
    meta = ctx.files("dedup", "meta")
    p = ctx.partitions(ctx.docs() * _ROW_WEIGHT)
    if p == 1:
        ctx.in_task(_repeats_here, ctx.storage, meta, ctx.parts)
    else:
        ds = ctx.read(meta, p).select_columns(["doc", "id"]).map_batches(_with_id_hash, batch_format="pyarrow")
        ds = by_value(ds, "h", p, _repeats, parts=ctx.parts)
        ds.write_parquet(ctx.storage.path(*FOLDER), filesystem=ctx.storage.fs)
    return {"duplicate_ids": ctx.rows(ctx.files(*FOLDER))}


def _repeats_here(storage: Storage, meta: list[str], parts: Parts) -> None:
    """The single-partition path, in one task: every (doc, id) row at once."""
    repeated = _repeats(read_tables(storage, meta, columns=["doc", "id"]), parts)
    if len(repeated):
        storage.write_parquet(repeated, *FOLDER, "part-0.parquet")


def excluded_docs(ctx: DedupContext) -> np.ndarray:
    """The sorted doc keys removed for a repeated id (empty when there are none)."""
    files = ctx.files(*FOLDER)
    if not files:
        return np.zeros(0, np.int64)
    return np.sort(ctx.read_local(files).column("doc").to_numpy())


def _with_id_hash(batch: pa.Table) -> pa.Table:
    ids = pc.fill_null(batch.column("id"), "").cast(pa.large_string())
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    data, offsets = string_buffers(ids)
    return set_column(batch, "h", pa.array(poly_hash_spans(data, offsets[:-1], offsets[1:]), pa.uint64()))


def _repeats(group: pa.Table, parts: Parts) -> pa.Table:
    """Decisions for the documents whose id an earlier document has (a group holds every document of its ids)."""
    group = group.filter(pc.is_valid(group.column("id")))
    group = group.take(pc.sort_indices(group, [("id", "ascending"), ("doc", "ascending")]))
    ids = group.column("id").combine_chunks()
    doc = group.column("doc").to_numpy()
    n = len(doc)
    differs = (
        pc.not_equal(ids.slice(1), ids.slice(0, max(n - 1, 0))).to_numpy(zero_copy_only=False)
        if n > 1
        else np.zeros(0, bool)
    )
    first = np.concatenate((np.ones(min(n, 1), bool), differs))
    run = np.cumsum(first) - 1
    head = np.flatnonzero(first)[run]
    size = np.bincount(run)[run] if n else np.zeros(0, np.int64)
    gone = np.flatnonzero(~first)
    kept_ids = ids.take(pa.array(head[gone], pa.int64())).to_pylist()
    details = [
        json.dumps({"kept_id": i, "kept_part": parts.units[int(p)], "copies": int(c)})
        for i, p, c in zip(kept_ids, part_of(doc[head[gone]]).tolist(), size[gone].tolist(), strict=False)
    ]
    return pa.table(
        {
            "doc": pa.array(doc[gone], pa.int64()),
            "reason": pa.array([REASON] * len(gone), pa.string()),
            "details": pa.array(details, pa.string()),
            "cluster_size": pa.array(size[gone], pa.int32()),
        }
    )
