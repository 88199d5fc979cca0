"""Step 4: keep decisions (``dedup/decisions/``, one file per part with removals).

Cluster members get their id, hashes and score from ``dedup/meta/`` (and, to
check each removed member against its kept document, their signatures and
boilerplate positions; members grouped by part, so that a task reads each
part's files once); then the members of each cluster meet in one task, which
applies the keep rule (stages.dedup.keep).  The repeated ids of step 1b join
them, and the decisions are regrouped by part and written.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from core.layout import part_file
from core.storage import Storage
from core.tables import READ_THREADS, read_tables
from pipeline.dedup import earlier, ids
from pipeline.dedup.boilerplate import fixed_bytes, masks_of
from pipeline.dedup.components import Components
from pipeline.dedup.context import DedupContext, Parts, each_part, part_groups, row_of
from pipeline.dedup.shuffle import by_part, by_value
from pipeline.dedup.signatures import signature_width
from pipeline.dedup.verify import binary_column, check_settings, duplicates, signatures_of
from stages.dedup import keep

DECISION_SCHEMA = pa.schema(
    [("doc", pa.int64()), ("reason", pa.string()), ("details", pa.string()), ("cluster_size", pa.int32())]
)


def decide(ctx: DedupContext, found: Components | None, use_score: bool) -> dict:
    """Step 4: in one Ray task when the members fit one partition, else as Ray Data shuffles.

    Returns its part of the summary: the largest cluster.
    """
    m = ctx.dedup.minhash
    check = check_settings(m) if m.enabled and m.verify != "off" and m.verify_kept else None
    attach = {"parts": ctx.parts, "width": signature_width(m) if check else 0, "num_perm": m.num_perm}
    repeated = ctx.files(*ids.FOLDER) + ctx.files(*earlier.FOLDER)  # decided before the graph: steps 1b and 2d
    files = ctx.files("dedup", "components") if found is not None else []
    members = found.rows if found is not None else 0
    p_comp = ctx.partitions(members * (1 + attach["width"] // 16))
    if p_comp == 1:
        return ctx.in_task(_decide_here, files, repeated, attach, use_score, check)
    p_parts = min(len(ctx.units), p_comp)  # the members leave _attach_meta with their signatures: as many groups
    ds = by_part(ctx.read(files, p_comp), "doc", p_parts, _attach_meta, **attach)
    ds = by_value(ds, "comp", p_comp, _decide, use_score=use_score, check=check)
    if repeated:
        ds = ds.union(
            ctx.read(repeated).map_batches(
                lambda t: t.select(DECISION_SCHEMA.names).cast(DECISION_SCHEMA), batch_format="pyarrow"
            )
        )
    ds = by_part(ds, "doc", p_parts, _write_decisions, parts=ctx.parts)
    return _summary([pa.Table.from_pylist(ds.take_all(), schema=_STATS_SCHEMA)])


def _decide_here(files: list[str], repeated: list[str], attach: dict, use_score: bool, check: dict | None) -> dict:
    """The single-partition path, in one task: every member (and every repeated id) at once."""
    storage = attach["parts"].storage()
    tables = [read_tables(storage, repeated).select(DECISION_SCHEMA.names).cast(DECISION_SCHEMA)] if repeated else []
    if files:
        tables.append(_decide(_attach_meta(read_tables(storage, files), **attach), use_score, check))
    decided = pa.concat_tables(tables) if tables else DECISION_SCHEMA.empty_table()
    return _summary([_write_decisions(decided, attach["parts"])])


def read_decisions(storage: Storage, unit: str) -> pa.Table:
    """The decisions of one part (no file: no removals, an empty table)."""
    name = ("dedup", "decisions", part_file(unit))
    return storage.read_parquet(*name) if storage.exists(*name) else DECISION_SCHEMA.empty_table()


_STATS_SCHEMA = pa.schema([("parts", pa.int64()), ("largest_cluster", pa.int64())])


def _summary(stats: list[pa.Table]) -> dict:
    t = pa.concat_tables(stats)
    sizes = t.column("largest_cluster").to_numpy() if len(t) else np.zeros(0, np.int64)
    return {"largest_cluster": int(sizes.max()) if len(sizes) else 0}


def _attach_meta(group: pa.Table, parts: Parts, width: int, num_perm: int) -> pa.Table:
    """Members of one partition (grouped by part) + their id, hashes,
    score from meta/ (+ signature and mask with ``width``)."""
    storage = parts.storage()
    doc = group.column("doc").to_numpy()
    comp = group.column("comp")

    def picked(p: int, rows: np.ndarray) -> pa.Table:
        meta = storage.read_parquet("dedup", "meta", parts.file(p))
        take = meta.take(pa.array(row_of(doc[rows])))  # meta row i is the part's row i
        return take.append_column("comp", comp.take(pa.array(rows)))

    table = pa.concat_tables(each_part(doc, picked)) if len(doc) else None
    if table is None:  # no member: the schema of one
        return pa.table({"doc": pa.array([], pa.int64()), "comp": pa.array([], pa.int64())})
    if width:
        doc = table.column("doc").to_numpy()
        sig = signatures_of(parts, doc, width)
        mask = np.packbits(masks_of(parts, doc, num_perm), axis=1)
        table = table.append_column("sig", binary_column(sig)).append_column("mask", binary_column(mask))
    return table


def _decide(group: pa.Table, use_score: bool, check: dict | None) -> pa.Table:
    """Keep decisions for whole clusters (a group holds every member of its clusters)."""
    # The distributed fixed point repeats each component's root: one row per doc.
    doc = group.column("doc").to_numpy()
    _, first = np.unique(doc, return_index=True)
    members = group.take(pa.array(np.sort(first)))
    same = _signature_check(check) if check is not None else None
    return keep.choose_keepers(members, use_score, same).cast(DECISION_SCHEMA)


def _signature_check(check: dict) -> keep.SameCheck:
    """The pair check of step 2b, between rows of a member table that carries ``sig`` and ``mask``."""
    num_perm = check["num_perm"]
    width = num_perm * np.dtype(check["dtype"]).itemsize

    unpacked = {}  # the member table of the last call, its signatures and masks (the rounds reuse them)

    def same(members: pa.Table, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if unpacked.get("table") is not members:
            unpacked.update(
                table=members,
                sig=fixed_bytes(members.column("sig").combine_chunks(), width),
                mask=np.unpackbits(
                    fixed_bytes(members.column("mask").combine_chunks(), (num_perm + 7) // 8), axis=1, count=num_perm
                ).astype(bool),
            )
        sig, mask = unpacked["sig"], unpacked["mask"]
        return duplicates(sig[a], sig[b], mask[a], mask[b], check)

    return same


def _write_decisions(group: pa.Table, parts: Parts) -> pa.Table:
    """Store the decisions of each part in dedup/decisions/part-<unit>.parquet (one file per part)."""
    storage = parts.storage()
    group = group.select(DECISION_SCHEMA.names).cast(DECISION_SCHEMA)
    groups = part_groups(group.column("doc").to_numpy())
    with ThreadPoolExecutor(READ_THREADS) as pool:
        list(
            pool.map(
                lambda g: storage.write_parquet(group.take(pa.array(g[1])), "dedup", "decisions", parts.file(g[0])),
                groups,
            )
        )
    sizes = group.column("cluster_size").to_numpy() if len(group) else np.zeros(0, np.int32)
    return pa.table(
        {"parts": [len(groups)], "largest_cluster": [int(sizes.max()) if len(sizes) else 0]}, schema=_STATS_SCHEMA
    )
