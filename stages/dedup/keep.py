"""The keep rule: one document per duplicate cluster, and every removed one a copy of it.

Default: the smallest ``id`` (a stable, arbitrary but reproducible choice;
equal ids: the smallest document key).  When the documents carry a quality
score (``KeepConfig.score_column``), the highest score wins and ties go to the
smallest id; a missing score ranks below every real one.  With a ``priority`` column (the rank of the
document's named source in ``dedup.keep.source_priority``), the lowest rank wins first.

A connected component can chain documents that are not copies of each other
(A is like B, B is like C).  With a ``same`` check, a member is removed only
if it passes the check against the document kept in its stead; the members
that fail stay in play, and the best of them is kept next, in rounds, until
every member is decided (:func:`choose_keepers`).  Every removed member names
its kept document in ``details`` and the reason says how it relates to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EXACT = "exact_duplicate"
URL = "url_duplicate"
NEAR = "duplicate"
#: A copy of a document an earlier run kept (``dedup.against``,
#: pipeline/dedup/earlier.py): earlier documents always win.
EARLIER = "duplicate_earlier"

#: Rounds of "keep the best open member, remove the open members that pass against it"
#: per component; members still open after them are kept (a component of that many
#: distinct documents is not a duplicate cluster).
MAX_ROUNDS = 64

#: same(rows_a, rows_b) -> bool per pair, rows of the sorted member table.
SameCheck = Callable[[pa.Table, np.ndarray, np.ndarray], np.ndarray]


def choose_keepers(members: pa.Table, use_score: bool, same: SameCheck | None = None) -> pa.Table:
    """Decide every member of every cluster in ``members``.

    ``members`` has columns ``doc`` (int64), ``comp`` (the cluster label),
    ``id``, ``text_hash`` (binary 16), ``url_hash`` (binary 16 or null) and,
    with ``use_score``, ``score``; it holds whole clusters (any number of them).
    ``same(table, a, b)`` checks pairs of rows of the (sorted) table; without it
    every member of a component is a copy of its best one.
    Returns ``doc, reason, details, cluster_size``: reason null for a kept one.
    """
    if len(members) == 0:
        return pa.table(
            {
                "doc": pa.array([], pa.int64()),
                "reason": pa.array([], pa.string()),
                "details": pa.array([], pa.string()),
                "cluster_size": pa.array([], pa.int32()),
            }
        )
    keys = [("comp", "ascending", "at_end")] + (
        [("priority", "ascending", "at_end")] if "priority" in members.column_names else []
    )
    keys += [("score", "descending", "at_end")] if use_score else []
    keys += [("id", "ascending", "at_end"), ("doc", "ascending", "at_end")]
    members = members.take(pc.sort_indices(members, sort_keys=keys))
    comp = members.column("comp").to_numpy()
    same_text = _same_rows(members.column("text_hash"))
    same_url = _same_rows(members.column("url_hash"))

    def check(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if same is None:
            return np.ones(len(a), dtype=bool)
        ok = same_text(a, b) | same_url(a, b)
        if not ok.all():
            todo = np.flatnonzero(~ok)
            ok[todo] = same(members, a[todo], b[todo])
        return ok

    keeper = assign_keepers(comp, check)
    is_kept = keeper == np.arange(len(comp))
    reason = np.where(
        is_kept,
        None,
        np.where(
            same_text(np.arange(len(comp)), keeper), EXACT, np.where(same_url(np.arange(len(comp)), keeper), URL, NEAR)
        ),
    )
    size = np.bincount(keeper, minlength=len(comp))[keeper]
    return pa.table(
        {
            "doc": members.column("doc"),
            "reason": pa.array(reason.tolist(), pa.string()),
            "details": _details(members.column("id").take(pa.array(keeper)).to_pylist(), size, is_kept),
            "cluster_size": pa.array(size, pa.int32()),
        }
    )


def assign_keepers(
    comp: np.ndarray, check: Callable[[np.ndarray, np.ndarray], np.ndarray], max_rounds: int = MAX_ROUNDS
) -> np.ndarray:
    """Row of each row's kept document, rows sorted by (comp, priority).

    Each round, in every component, the first open row is kept and the open
    rows that pass ``check`` against it are removed under it.
    """
    n = len(comp)
    keeper = np.arange(n)
    open_rows = np.arange(n)
    for _ in range(max_rounds):
        if len(open_rows) == 0:
            break
        c = comp[open_rows]
        first = np.concatenate(([True], c[1:] != c[:-1]))
        head = open_rows[np.maximum.accumulate(np.where(first, np.arange(len(c)), 0))]
        todo = open_rows[~first]
        passed = check(todo, head[~first]) if len(todo) else np.zeros(0, bool)
        keeper[todo[passed]] = head[~first][passed]
        open_rows = todo[~passed]
    return keeper  # rows still open after max_rounds keep themselves


def _details(kept_ids: list, size: np.ndarray, is_kept: np.ndarray) -> pa.Array:
    """``{"kept_id": ..., "cluster_size": n}`` per removed member
    (json.dumps: any character in an id stays valid JSON)."""
    return pa.array(
        [
            None if k else json.dumps({"kept_id": i, "cluster_size": int(s)})
            for i, s, k in zip(kept_ids, size.tolist(), is_kept.tolist(), strict=False)
        ],
        pa.string(),
    )


def _same_rows(col: pa.ChunkedArray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A check: row a equals row b in this binary(16) column (nulls equal nothing)."""
    col = col.combine_chunks()
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    if not valid.any():
        return lambda a, b: np.zeros(len(a), dtype=bool)
    values = np.frombuffer(col.cast(pa.binary(16)).buffers()[1], dtype=np.uint8)[
        col.offset * 16 : (col.offset + len(col)) * 16
    ]
    values = values.reshape(-1, 16)
    return lambda a, b: (values[a] == values[b]).all(axis=1) & valid[a] & valid[b]
