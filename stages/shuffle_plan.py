"""A seeded global shuffle plan: sample id -> (group, sort key).

The shards phase spreads samples over ``groups`` groups and writes each group
(sorted by key) as one shard folder, one worker per group.  Both numbers come
from a hash of (seed, id) alone, so:

* every source part's samples are spread uniformly over every group, and
  shards are not ordered by source;
* the plan does not depend on the number of workers, on how the input is
  partitioned or on the order rows arrive in: the same ids and seed give the
  same groups and the same order inside them, hence byte-identical shards;
* memory is bounded by a group (the corpus divided by ``groups``), never the
  corpus: a worker needs only its group's rows (ids hashed part by part).

The 128-bit xxh3 of ``seed:id`` gives two independent 64-bit halves: the low
one picks the group (Lemire's multiply-shift, uniform for any group count),
the high one is the order inside the group.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash
from pydantic import BaseModel, ConfigDict, Field


class ShuffleConfig(BaseModel):
    """The global shuffle (``shards.shuffle:``)."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(
        0, ge=0, le=2**63 - 1, description="seed of the shuffle: another seed gives another order and grouping"
    )
    groups: int = Field(
        16,
        ge=1,
        le=1 << 16,
        description="shuffle groups = shard folders, each written by one worker "
        "from its own samples (memory per worker ~ corpus / groups; "
        "2.6 billion documents in 65,536 groups is ~40,000 a group); "
        "fixed by config so the output does not depend on the worker count",
    )


def _hash128(ids, seed: int) -> np.ndarray:
    """xxh3-128 of ``seed:id`` for every id, as a (n, 2) uint64 array (low, high)."""
    prefix = f"{seed}:".encode()
    values = ids.to_pylist() if isinstance(ids, (pa.Array, pa.ChunkedArray)) else list(ids)
    if any(v is None for v in values):
        raise ValueError("shuffle plan: a sample id is null")
    digest = b"".join(xxhash.xxh3_128_digest(prefix + v.encode("utf-8")) for v in values)
    # The digest is big-endian: bytes 0-7 are the high half.
    return np.frombuffer(digest, ">u8").reshape(-1, 2)[:, ::-1].astype(np.uint64)


def plan(ids, seed: int, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(group, key) for every id: group in [0, groups), key orders samples inside a group."""
    h = _hash128(ids, seed)
    low, high = h[:, 0], h[:, 1]
    # (low * groups) >> 64 without 128-bit integers: split low into 32-bit halves.
    g = np.uint64(groups)
    hi32, lo32 = low >> np.uint64(32), low & np.uint64(0xFFFFFFFF)
    group = (hi32 * g + ((lo32 * g) >> np.uint64(32))) >> np.uint64(32)
    return group.astype(np.int64), high


def group_order(keys: np.ndarray, ids) -> np.ndarray:
    """The permutation that sorts one group's samples by key (ties, e.g. repeated ids, by id)."""
    id_arr = np.asarray(ids.to_pylist() if isinstance(ids, (pa.Array, pa.ChunkedArray)) else list(ids), dtype=object)
    return np.lexsort((id_arr.astype(str), keys))
