"""The shuffles' kind (core/shuffle.py): with ``ray.shuffle: auto`` a shuffle of many partitions is a hash shuffle,
whose aggregator actors hold its pieces, not a sort shuffle, whose (blocks) x (partitions) pieces the driver owns
(issue 39: 163 -> 444 MB at 44 partitions, 261 MB hashed); either gives the same groups."""

from __future__ import annotations

import pyarrow as pa
import pytest
from ray.data.context import ShuffleStrategy

from core.shuffle import MODE_KEY, SORT_MAX_PARTITIONS, group_apply
from pipeline.distribute import ray_data

pytestmark = pytest.mark.ray


def _sums(group: pa.Table) -> pa.Table:
    """One row per key of the group (a group holds every row of its keys)."""
    keys = sorted(set(group.column("k").to_pylist()))
    values = group.column("v").to_pylist()
    totals = {k: sum(v for kk, v in zip(group.column("k").to_pylist(), values, strict=True) if kk == k) for k in keys}
    return pa.table({"k": keys, "total": [totals[k] for k in keys]})


def _grouped(mode: str, partitions: int) -> tuple[dict, ShuffleStrategy]:
    rd = ray_data()
    rd.DataContext.get_current().set_config(MODE_KEY, mode)
    try:
        ds = rd.from_items([{"k": i % 97, "v": i} for i in range(3000)], override_num_blocks=partitions)
        out = group_apply(ds, partitions, _sums, {}, column="k")
        rows = out.take_all()
        return {r["k"]: r["total"] for r in rows}, ds.context.shuffle_strategy
    finally:
        rd.DataContext.get_current().set_config(MODE_KEY, "auto")


def test_auto_hashes_a_shuffle_of_many_partitions_and_sorts_a_small_one(ray_local):
    expected = {k: sum(i for i in range(3000) if i % 97 == k) for k in range(97)}
    many = SORT_MAX_PARTITIONS + 1
    hashed, strategy = _grouped("auto", many)
    assert strategy == ShuffleStrategy.HASH_SHUFFLE and hashed == expected and len(hashed) == 97
    small, strategy = _grouped("auto", 4)
    assert strategy == ShuffleStrategy.SORT_SHUFFLE_PULL_BASED and small == expected
    sorted_many, strategy = _grouped("sort", many)  # the run chose sort: sort, whatever the partitions
    assert strategy == ShuffleStrategy.SORT_SHUFFLE_PULL_BASED and sorted_many == expected
