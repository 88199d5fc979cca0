"""Hash-partition shuffles on Ray Data: group rows by a hash of a column, then run a function per group.

Each shuffle adds a partition column ``p`` (a MurmurHash3 finalizer of the
key, modulo the number of partitions: the same key always lands in the same
partition, whatever the number of workers) and lets Ray Data's
``groupby("p")`` bring the rows of one partition together: one ``map_groups``
call then sees every row with the same key (a bucket, a part, a cluster, a
shard group).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from core.hashing import fmix64


def with_partition(batch: pa.Table, column: str, partitions: int, shift: int = 0) -> pa.Table:
    """Add (or replace) column ``p``: a hash of ``column >> shift`` modulo ``partitions``."""
    values = batch.column(column).to_numpy().astype(np.uint64)
    if shift:
        values = values >> np.uint64(shift)
    p = (fmix64(values) % np.uint64(partitions)).astype(np.int32)
    column = pa.array(p)
    idx = batch.schema.get_field_index("p")
    return batch.set_column(idx, "p", column) if idx >= 0 else batch.append_column("p", column)


def group_apply(ds, partitions: int, fn, fn_kwargs: dict, partition=with_partition, **partition_kwargs):
    """``fn(group, **fn_kwargs)`` over ``partitions`` groups of
    ``ds``, split by ``partition(batch, partitions=...)``."""
    return (
        ds.map_batches(partition, fn_kwargs={**partition_kwargs, "partitions": partitions}, batch_format="pyarrow")
        .groupby("p", num_partitions=partitions)
        .map_groups(fn, fn_kwargs=fn_kwargs, batch_format="pyarrow")
    )
