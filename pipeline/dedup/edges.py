"""Step 2: bucket rows -> star edges (``dedup/edges/``).

Rows of one bucket ``(band, key)`` must meet in one task: a Ray Data shuffle
groups them by a hash of the bucket into partitions of about
``partition_rows`` rows, and each partition turns its buckets into star edges
(stages.dedup.edges).  With a single partition there is nothing to shuffle.
Documents removed for a repeated id (step 1b) leave the graph here: their
bucket rows are dropped before the stars are drawn.  The content rows of
step 2c (``dedup/buckets-content/``) join step 1's rows.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from core.storage import Storage
from core.tables import read_tables
from pipeline.dedup import ids
from pipeline.dedup.content import FOLDER as CONTENT_FOLDER
from pipeline.dedup.context import DedupContext, Parts
from pipeline.dedup.shuffle import group_apply
from stages.dedup.edges import edges_table, star_edges
from stages.dedup.hashing import fmix64

#: Bytes of a bucket row without shingles, to weigh rows that carry them.
_BUCKET_ROW_BYTES = 18


@dataclass(frozen=True)
class EdgeSet:
    """The edge files a step wrote, and their row count."""

    files: list[str]
    rows: int


def find_edges(ctx: DedupContext, signature_stats: list[dict]) -> tuple[EdgeSet, dict]:
    """Step 2; returns the edges and its part of the summary."""
    from pipeline.dedup import earlier  # (it imports verify, which imports this module)

    # documents removed for a repeated id (1b) or as copies of an earlier run's (2d) are in no cluster: the tasks
    # read them (the driver holds no document)
    excluded = Excluded(ctx.parts, tuple(ctx.files(*ids.FOLDER) + ctx.files(*earlier.FOLDER)), uuid.uuid4().hex)
    task = {"threshold": ctx.dedup.minhash.verify_threshold, "excluded": excluded}
    # step 1's rows, and step 2c's content rows (same buckets)
    content = ctx.files(*CONTENT_FOLDER)
    buckets = ctx.files("dedup", "buckets") + content
    content_rows = ctx.counts["content_bucket_rows"] if "content_bucket_rows" in ctx.counts else ctx.rows(content)
    bucket_rows = sum(s.get("bucket_rows", 0) for s in signature_stats) + content_rows
    p = ctx.partitions(int(bucket_rows * _row_weight(ctx, signature_stats)))
    if bucket_rows and p == 1:  # one partition: no shuffle needed, one task
        ctx.in_task(_edges_here, ctx.storage, buckets, task)
    elif bucket_rows:
        (
            group_apply(ctx.read(buckets, p), p, _edges_task, task, partition=_bucket_partition).write_parquet(
                ctx.storage.path("dedup", "edges"), filesystem=ctx.storage.fs
            )
        )
    files = ctx.files("dedup", "edges")
    edges = EdgeSet(files, ctx.rows(files))
    return edges, {"bucket_partitions": p, "edges": edges.rows}


def _edges_here(storage: Storage, buckets: list[str], task: dict) -> None:
    storage.write_parquet(_edges_task(read_tables(storage, buckets), **task), "dedup", "edges", "part-0.parquet")


def _row_weight(ctx: DedupContext, signature_stats: list[dict]) -> float:
    """Size of an average bucket row relative to one without shingles."""
    weight = 1.0
    if ctx.dedup.minhash.verify == "exact":  # rows then carry their document's shingle hashes: 8 bytes each
        docs = sum(s.get("docs", 0) for s in signature_stats)
        weight += 8 * sum(s.get("shingles", 0) for s in signature_stats) / max(1, docs) / _BUCKET_ROW_BYTES
    return weight


def _bucket_partition(batch: pa.Table, partitions: int) -> pa.Table:
    """Add column ``p``: a hash of the bucket ``(band, key)`` modulo ``partitions``."""
    mixed = batch.column("key").to_numpy() ^ batch.column("band").to_numpy().astype(np.uint64)
    p = (fmix64(mixed) % np.uint64(partitions)).astype(np.int32)
    return batch.append_column("p", pa.array(p))


@dataclass(frozen=True)
class Excluded:
    """The files of the documents that leave the graph before its edges: small and picklable."""

    parts: Parts
    files: tuple[str, ...]
    run: str  # this step's run: a worker's cached documents are never an earlier run's of the same files

    def docs(self) -> np.ndarray:
        """Their doc keys, sorted (read once per process)."""
        return _excluded_docs(self)


@functools.lru_cache(maxsize=1)
def _excluded_docs(excluded: Excluded) -> np.ndarray:
    if not excluded.files:
        return np.zeros(0, np.int64)
    return np.sort(
        read_tables(excluded.parts.storage(), list(excluded.files), columns=["doc"]).column("doc").to_numpy()
    )


def _edges_task(group: pa.Table, threshold: float, excluded: Excluded) -> pa.Table:
    """Star edges of every bucket in ``group`` (which holds whole buckets), without the ``excluded`` docs."""
    excluded = excluded.docs()
    if len(excluded):
        doc = group.column("doc").to_numpy()
        at = np.minimum(np.searchsorted(excluded, doc), len(excluded) - 1)
        group = group.filter(pa.array(excluded[at] != doc))
    shingles = group.column("shingles").combine_chunks() if "shingles" in group.column_names else None
    return edges_table(
        *star_edges(
            group.column("band").to_numpy(),
            group.column("key").to_numpy(),
            group.column("doc").to_numpy(),
            shingles,
            threshold,
        )
    )
