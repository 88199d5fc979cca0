"""Step 2a: host boilerplate in the signatures (``dedup/boilerplate/``).

For every document, which positions of its MinHash signature hold a value that
``boilerplate.min_docs`` or more documents of its host share (stages.dedup.
boilerplate): the signature checks of steps 2b and 4 leave those positions out,
and step 2c gives the documents with many of them content rows.  It runs
before step 2 (it needs only the signatures).

The documents of one host must meet in one task: one Ray Data shuffle groups
``(doc, group, text key, signature)`` rows by host (a host above
``max_host_docs`` documents is split into groups of about that many by a hash
of the document, after a cheap count of the documents per host), each group
marks its shared values, and a second shuffle brings the marks of each part
together: ``dedup/boilerplate/part-<unit>.parquet`` holds ``(doc, mask)`` for
the part's documents that have any boilerplate position (sorted by doc; a
document not listed has none).  With a single partition nothing is shuffled.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.dedup.context import ROW_BITS, Parts, DedupContext, part_of
from core.layout import part_file
from pipeline.dedup.shuffle import by_part, by_value
from pipeline.distribute import ray_data
from stages.dedup import boilerplate, minhash
from stages.dedup.hashing import fmix64

FOLDER = ("dedup", "boilerplate")
#: Documents per call of frequent_values (whole hosts): bounds its temporaries (~100 bytes per position).
_CHUNK_DOCS = 4096


def needed(ctx: DedupContext, bucket_rows: int) -> bool:
    m = ctx.dedup.minhash
    return m.enabled and m.verify != "off" and m.boilerplate.enabled and bucket_rows > 0


def signature_bytes(ctx: DedupContext) -> int:
    m = ctx.dedup.minhash
    return m.num_perm * np.dtype(minhash.signature_dtype(m.scheme)).itemsize


def find_boilerplate(ctx: DedupContext, bucket_rows: int) -> dict:
    """Step 2a (when :func:`needed`: an earlier run's marks are deleted either way); returns its part of the summary.

    Runs before step 2 (its marks decide which documents get step 2c's content rows).
    """
    cfg = ctx.dedup.minhash.boilerplate
    ctx.storage.delete_dir(*FOLDER)
    if not needed(ctx, bucket_rows):
        return {}
    docs = ctx.rows(ctx.files("dedup", "meta"))
    big = _big_hosts(ctx, cfg.max_host_docs) if docs > cfg.max_host_docs else {}
    where = {"parts": ctx.parts, "source": ctx.source, "width": signature_bytes(ctx), "big": big, "limit": cfg.max_host_docs}
    mark = {"min_docs": cfg.min_docs, "num_perm": ctx.dedup.minhash.num_perm, "dtype": _dtype(ctx)}
    p = ctx.partitions(docs * (1 + where["width"] // 16))  # rows carry one signature
    if p == 1:
        rows = pa.concat_tables([_part_rows(pa.table({"unit": [u], "part_no": [i]}), **where) for i, u in enumerate(ctx.units)])
        _write_masks(_mark(rows, **mark), ctx.parts)
    else:
        ds = _units(ctx).map_batches(_part_rows, fn_kwargs=where, batch_size=1, batch_format="pyarrow")
        ds = by_value(ds, "group", p, _mark, **mark)
        by_part(ds, "doc", min(len(ctx.units), p), _write_masks, parts=ctx.parts).materialize()
    return {"boilerplate_docs": ctx.rows(ctx.files(*FOLDER)), "boilerplate_split_hosts": len(big)}


def masks_of(parts: Parts, doc: np.ndarray, num_perm: int) -> np.ndarray:
    """(len(doc) x num_perm) bool: each document's boilerplate positions (none when step 2a did not run)."""
    storage = parts.storage()
    out = np.zeros((len(doc), num_perm), bool)
    part = part_of(doc)
    for p in np.unique(part):
        name = (*FOLDER, parts.file(p))
        if not storage.exists(*name):
            continue
        t = storage.read_parquet(*name)
        listed = t.column("doc").to_numpy()
        rows = np.flatnonzero(part == p)
        at = np.minimum(np.searchsorted(listed, doc[rows]), max(len(listed) - 1, 0))
        hit = (listed[at] == doc[rows]) if len(listed) else np.zeros(len(rows), bool)
        if hit.any():
            out[rows[hit]] = boilerplate.unpack(t.column("mask").combine_chunks(), num_perm)[at[hit]]
    return out


def _dtype(ctx: DedupContext) -> str:
    return np.dtype(minhash.signature_dtype(ctx.dedup.minhash.scheme)).str


def _units(ctx: DedupContext):
    items = [{"unit": u, "part_no": i} for i, u in enumerate(ctx.units)]
    return ray_data().from_items(items, override_num_blocks=len(items))


def _hosts_of_part(storage, source: str, unit: str) -> np.ndarray:
    """The host key of every document of an input part (its ``url`` column only)."""
    urls = pq.read_table(storage.path("documents", source, part_file(unit)), columns=["url"], filesystem=storage.fs)
    return boilerplate.host_keys(urls.column("url"))


def _big_hosts(ctx: DedupContext, limit: int) -> dict[int, int]:
    """Hosts with more than ``limit`` documents -> their number of documents (at most docs / limit entries)."""
    ds = _units(ctx).map_batches(_part_host_rows, fn_kwargs={"parts": ctx.parts, "source": ctx.source}, batch_size=1,
                                 batch_format="pyarrow")
    p = ctx.partitions(ctx.rows(ctx.files("dedup", "meta")))
    rows = by_value(ds, "host", p, _count_hosts, limit=limit).take_all()
    return {int(r["host"]): int(r["n"]) for r in rows}


def _part_host_rows(batch: pa.Table, parts: Parts, source: str) -> pa.Table:
    return pa.table({"host": pa.array(_hosts_of_part(parts.storage(), source, batch.column("unit")[0].as_py()), pa.uint64())})


def _count_hosts(group: pa.Table, limit: int) -> pa.Table:
    hosts, n = np.unique(group.column("host").to_numpy(), return_counts=True)
    big = (n > limit) & (hosts != 0)
    return pa.table({"host": pa.array(hosts[big], pa.uint64()), "n": pa.array(n[big], pa.int64())})


def _part_rows(batch: pa.Table, parts: Parts, source: str, width: int, big: dict[int, int], limit: int) -> pa.Table:
    """One part's documents that have a host: ``(doc, group,
    text, sig)``; group = host, or host + salt for a big host."""
    storage = parts.storage()
    unit, part_no = batch.column("unit")[0].as_py(), int(batch.column("part_no")[0].as_py())
    host = _hosts_of_part(storage, source, unit)
    meta = storage.read_parquet("dedup", "meta", parts.file(part_no))
    sig = storage.read_parquet("dedup", "signatures", parts.file(part_no)).column("sig").combine_chunks()
    doc = (np.int64(part_no) << ROW_BITS) + np.arange(len(host), dtype=np.int64)
    group = host.copy()
    for h, n in big.items():  # a big host: groups of about ``limit`` documents
        on = host == np.uint64(h)
        salt = fmix64(doc[on].astype(np.uint64)) % np.uint64(math.ceil(n / limit))
        group[on] = fmix64(np.uint64(h) ^ fmix64(salt + np.uint64(1)))
    text = np.ascontiguousarray(fixed_bytes(meta.column("text_hash").combine_chunks(), 16)[:, :8]).view("<u8").ravel()
    keep = np.flatnonzero(host != 0)
    return pa.table({
        "doc": pa.array(doc[keep]), "group": pa.array(group[keep], pa.uint64()), "text": pa.array(text[keep], pa.uint64()),
        "sig": sig.take(pa.array(keep)) if len(keep) else pa.array([], pa.binary(width)),
    })


def _mark(rows: pa.Table, min_docs: int, num_perm: int, dtype: str) -> pa.Table:
    """Rows of whole groups -> ``(doc, mask)`` for the documents with any boilerplate position."""
    rows = rows.take(pc.sort_indices(rows, [("group", "ascending"), ("doc", "ascending")]))
    group = rows.column("group").to_numpy()
    n = len(group)
    bounds = np.append(np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1]))), n) if n else np.zeros(1, np.int64)
    docs, masks = [np.zeros(0, np.int64)], [np.zeros((0, num_perm), bool)]
    lo = 0
    while lo < n:
        # whole groups, up to _CHUNK_DOCS documents (a larger group alone)
        hi = int(bounds[np.searchsorted(bounds, lo + _CHUNK_DOCS, side="right") - 1])
        if hi <= lo:
            hi = int(bounds[np.searchsorted(bounds, lo, side="right")])
        chunk = rows.slice(lo, hi - lo)
        sig = fixed_bytes(chunk.column("sig").combine_chunks(), num_perm * np.dtype(dtype).itemsize).view(dtype)
        mask = boilerplate.frequent_values(group[lo:hi], chunk.column("text").to_numpy(), sig, min_docs)
        has = mask.any(axis=1)
        docs.append(chunk.column("doc").to_numpy()[has])
        masks.append(mask[has])
        lo = hi
    return pa.table({"doc": pa.array(np.concatenate(docs), pa.int64()), "mask": boilerplate.pack(np.concatenate(masks))})


def fixed_bytes(col: pa.FixedSizeBinaryArray, width: int) -> np.ndarray:
    """The values of a fixed-size binary array as a (len x width) uint8 view."""
    if len(col) == 0:
        return np.zeros((0, width), np.uint8)
    return np.frombuffer(col.buffers()[1], np.uint8)[col.offset * width:(col.offset + len(col)) * width].reshape(-1, width)


def _write_masks(group: pa.Table, parts: Parts) -> pa.Table:
    """Store the masks of each part in dedup/boilerplate/part-<unit>.parquet, sorted by doc."""
    storage = parts.storage()
    doc = group.column("doc").to_numpy()
    part = part_of(doc)
    for p in np.unique(part):
        rows = group.filter(pa.array(part == p)).select(["doc", "mask"])
        storage.write_parquet(rows.take(pc.sort_indices(rows, [("doc", "ascending")])), *FOLDER, parts.file(p))
    return pa.table({"parts": [len(np.unique(part))]})
