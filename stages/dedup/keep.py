"""The keep rule: one document per duplicate cluster.

Default: the smallest ``id`` (a stable, arbitrary but reproducible choice).
When the documents carry a quality score (``KeepConfig.score_column``), the
highest score wins and ties go to the smallest id; a missing score ranks
below every real one.  Every other member is removed with the kept id in its
details, and the reason says how it relates to the kept document.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EXACT = "exact_duplicate"
URL = "url_duplicate"
NEAR = "duplicate"


def choose_keepers(members: pa.Table, use_score: bool) -> pa.Table:
    """Decide every member of every cluster in ``members``.

    ``members`` has columns ``doc`` (int64), ``comp`` (the cluster label),
    ``id``, ``text_hash`` (binary 16), ``url_hash`` (binary 16 or null) and,
    with ``use_score``, ``score``; it holds whole clusters (any number of them).
    Returns ``doc, reason, details, cluster_size``: reason null for the kept one.
    """
    if len(members) == 0:
        return pa.table({"doc": pa.array([], pa.int64()), "reason": pa.array([], pa.string()),
                         "details": pa.array([], pa.string()), "cluster_size": pa.array([], pa.int32())})
    keys = [("comp", "ascending", "at_end")] + ([("score", "descending", "at_end")] if use_score else []) + [("id", "ascending", "at_end")]
    members = members.take(pc.sort_indices(members, sort_keys=keys))
    comp = members.column("comp").to_numpy()
    first = np.flatnonzero(np.concatenate(([True], comp[1:] != comp[:-1])))
    sizes = np.diff(np.concatenate((first, [len(comp)])))
    keeper = np.repeat(first, sizes)  # row of each member's kept document
    is_kept = np.arange(len(comp)) == keeper
    same_text = _equal_rows(members.column("text_hash"), keeper)
    same_url = _equal_rows(members.column("url_hash"), keeper)
    reason = np.where(is_kept, None, np.where(same_text, EXACT, np.where(same_url, URL, NEAR)))
    size = np.repeat(sizes, sizes)
    return pa.table({
        "doc": members.column("doc"),
        "reason": pa.array(reason.tolist(), pa.string()),
        "details": _details(members.column("id").take(keeper), size, is_kept),
        "cluster_size": pa.array(size, pa.int32()),
    })


def _details(kept_ids: pa.ChunkedArray, size: np.ndarray, is_kept: np.ndarray) -> pa.Array:
    """``{"kept_id": ..., "cluster_size": n}`` per removed member (JSON built column-wise)."""
    esc = pc.replace_substring(pc.replace_substring(kept_ids, "\\", "\\\\"), '"', '\\"')
    text = pc.binary_join_element_wise('{"kept_id": "', esc, '", "cluster_size": ', pa.array(size).cast(pa.string()), "}", "")
    return pc.if_else(pa.array(is_kept), pa.scalar(None, pa.string()), text).combine_chunks()


def _equal_rows(col: pa.ChunkedArray, other_row: np.ndarray) -> np.ndarray:
    """Row i equals row other_row[i] (nulls equal nothing)."""
    col = col.combine_chunks()
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    if not valid.any():
        return np.zeros(len(col), dtype=bool)
    values = np.frombuffer(col.cast(pa.binary(16)).buffers()[1], dtype=np.uint8)[col.offset * 16:(col.offset + len(col)) * 16]
    values = values.reshape(-1, 16)
    equal = (values == values[other_row]).all(axis=1)
    return equal & valid & valid[other_row]
