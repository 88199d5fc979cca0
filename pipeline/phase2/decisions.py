"""Step 4: keep decisions (``dedup/decisions/``, one file per part with removals).

Cluster members get their id, hashes and score from ``dedup/meta/`` (members
grouped by part, so that a task reads each meta file once); then the members of
each cluster meet in one task, which applies the keep rule
(stages.dedup.keep); the decisions are regrouped by part and written.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.phase2.components import Components
from pipeline.phase2.context import Parts, Phase2Context, part_file, part_of, row_of
from pipeline.phase2.shuffle import by_part, by_value
from pipeline.storage import Storage
from stages.dedup import keep

DECISION_SCHEMA = pa.schema(
    [("doc", pa.int64()), ("reason", pa.string()), ("details", pa.string()), ("cluster_size", pa.int32())]
)


def decide(ctx: Phase2Context, found: Components, use_score: bool) -> None:
    """Step 4: in this process when the components are in memory, else as three Ray Data shuffles."""
    if found.members is not None:
        _write_decisions(_decide(_attach_meta(found.members, ctx.parts), use_score), ctx.parts)
        return
    files = ctx.files("dedup", "components")
    members = ctx.rows(files)
    p_parts = min(len(ctx.units), ctx.partitions(members))
    p_comp = ctx.partitions(members)
    ds = by_part(ctx.read(files), "doc", p_parts, _attach_meta, parts=ctx.parts)
    ds = by_value(ds, "comp", p_comp, _decide, use_score=use_score)
    ds = by_part(ds, "doc", p_parts, _write_decisions, parts=ctx.parts)
    ds.materialize()


def read_decisions(storage: Storage, unit: str) -> pa.Table:
    """The decisions of one part (no file: no removals, an empty table)."""
    name = ("dedup", "decisions", part_file(unit))
    return storage.read_parquet(*name) if storage.exists(*name) else DECISION_SCHEMA.empty_table()


def _attach_meta(group: pa.Table, parts: Parts) -> pa.Table:
    """Members of one partition (grouped by part) + their id, hashes, score from meta/."""
    storage = parts.storage()
    doc = group.column("doc").to_numpy()
    part = part_of(doc)
    out = []
    for p in np.unique(part):
        rows = part == p
        meta = storage.read_parquet("dedup", "meta", parts.file(p))
        picked = meta.take(pa.array(row_of(doc[rows])))  # meta row i is the part's row i
        out.append(picked.append_column("comp", group.column("comp").filter(pa.array(rows))))
    return pa.concat_tables(out)


def _decide(group: pa.Table, use_score: bool) -> pa.Table:
    """Keep decisions for whole clusters (a group holds every member of its clusters)."""
    # The distributed fixed point repeats each component's root: one row per doc.
    doc = group.column("doc").to_numpy()
    _, first = np.unique(doc, return_index=True)
    return keep.choose_keepers(group.take(pa.array(np.sort(first))), use_score).cast(DECISION_SCHEMA)


def _write_decisions(group: pa.Table, parts: Parts) -> pa.Table:
    """Store the decisions of each part in dedup/decisions/part-<unit>.parquet (one file per part)."""
    storage = parts.storage()
    part = part_of(group.column("doc").to_numpy())
    for p in np.unique(part):
        rows = group.filter(pa.array(part == p)).select(DECISION_SCHEMA.names)
        storage.write_parquet(rows.cast(DECISION_SCHEMA), "dedup", "decisions", parts.file(p))
    return pa.table({"parts": [len(np.unique(part))]})
