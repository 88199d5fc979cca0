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


#: The run's choice of shuffle, as Ray Data's context of a dataset carries it (pipeline.distribute.ray_data).
MODE_KEY = "curate.shuffle"
#: Partitions a sort shuffle takes at most when the run lets the engine choose (``ray.shuffle: auto``).
SORT_MAX_PARTITIONS = 16


def grouped(ds, key, partitions: int):
    """``ds.groupby(key, num_partitions=partitions)`` by the run's shuffle: with ``auto``, a sort shuffle up to
    SORT_MAX_PARTITIONS partitions, a hash shuffle beyond.

    Ray Data's sort shuffle is pull-based: the driver owns every piece its map tasks cut, (input blocks) x
    (partitions) of them, and a piece under Ray's inline limit (100 KB) is held in the driver's own heap.  Its
    blocks are at least its partitions here, and the partitions grow with the documents: at 90,000 parts (5.2M
    candidate pairs, 44 partitions) the signature check took the driver from 163 to 444 MB, 261 MB with the hash
    shuffle, whose aggregator actors hold the pieces (issue 39).  Below the bound the sort shuffle's smaller
    fixed cost wins (0.35 s vs 3-4 s a shuffle, measured).  Every shuffle of a dataset (its context) then uses
    the hash shuffle: a sort planned before it still sorts.
    """
    context = ds.context
    if partitions > SORT_MAX_PARTITIONS and context.get_config(MODE_KEY, "sort") == "auto":
        from ray.data.context import ShuffleStrategy

        context.shuffle_strategy = ShuffleStrategy.HASH_SHUFFLE
    return ds.groupby(key, num_partitions=partitions)


def group_apply(ds, partitions: int, fn, fn_kwargs: dict, partition=with_partition, **partition_kwargs):
    """``fn(group, **fn_kwargs)`` over ``partitions`` groups of
    ``ds``, split by ``partition(batch, partitions=...)``."""
    ds = ds.map_batches(partition, fn_kwargs={**partition_kwargs, "partitions": partitions}, batch_format="pyarrow")
    return grouped(ds, "p", partitions).map_groups(fn, fn_kwargs=fn_kwargs, batch_format="pyarrow")
