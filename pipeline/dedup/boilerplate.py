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
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.layout import part_file
from core.tables import READ_THREADS
from pipeline.dedup.context import MAX_READ_BLOCKS, ROW_BITS, DedupContext, Parts, each_part, part_of
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
    docs = ctx.docs()
    big = _big_hosts(ctx, cfg.max_host_docs) if docs > cfg.max_host_docs else {}
    where = {
        "parts": ctx.parts,
        "source": ctx.source,
        "width": signature_bytes(ctx),
        "big": big,
        "limit": cfg.max_host_docs,
    }
    mark = {"min_docs": cfg.min_docs, "num_perm": ctx.dedup.minhash.num_perm, "dtype": _dtype(ctx)}
    p = ctx.partitions(docs * (1 + where["width"] // 16))  # rows carry one signature
    if p == 1:
        marked = ctx.in_task(_mark_here, where, mark)
    else:
        ds = _units(ctx, p).map_batches(_part_rows, fn_kwargs=where, batch_size=None, batch_format="pyarrow")
        ds = by_value(ds, "group", p, _mark, **mark)
        written = by_part(ds, "doc", min(len(ctx.units), p), _write_masks, parts=ctx.parts).take_all()
        marked = sum(int(r["docs"]) for r in written)
    return {"boilerplate_docs": marked, "boilerplate_split_hosts": len(big)}


def _mark_here(where: dict, mark: dict) -> int:
    """The single-partition path, in one task: every part's rows, marked and written; returns the documents marked."""
    units = pa.table({"unit": list(where["parts"].units), "part_no": np.arange(where["parts"].count)})
    return int(_write_masks(_mark(_part_rows(units, **where), **mark), where["parts"]).column("docs")[0].as_py())


def masks_of(parts: Parts, doc: np.ndarray, num_perm: int) -> np.ndarray:
    """(len(doc) x num_perm) bool: each document's boilerplate positions (none when step 2a did not run)."""
    storage = parts.storage()
    out = np.zeros((len(doc), num_perm), bool)

    def fill(p: int, rows: np.ndarray) -> None:
        name = (*FOLDER, parts.file(p))
        if not storage.exists(*name):
            return
        t = storage.read_parquet(*name)
        listed = t.column("doc").to_numpy()
        at = np.minimum(np.searchsorted(listed, doc[rows]), max(len(listed) - 1, 0))
        hit = (listed[at] == doc[rows]) if len(listed) else np.zeros(len(rows), bool)
        if hit.any():
            out[rows[hit]] = boilerplate.unpack(t.column("mask").combine_chunks(), num_perm)[at[hit]]

    each_part(doc, fill)
    return out


def _dtype(ctx: DedupContext) -> str:
    return np.dtype(minhash.signature_dtype(ctx.dedup.minhash.scheme)).str


def _units(ctx: DedupContext, partitions: int):
    """The parts as a Ray Dataset of rows ``(unit, part_no)``, in as many blocks as :meth:`DedupContext.read`
    makes: a task reads a block's parts (one block per part made the shuffle quadratic, issue 39)."""
    blocks = max(1, min(len(ctx.units), max(partitions, min(2 * ctx.workers, MAX_READ_BLOCKS))))
    items = [{"unit": u, "part_no": i} for i, u in enumerate(ctx.units)]
    return ray_data().from_items(items, override_num_blocks=blocks)


def _per_part(batch: pa.Table, read) -> pa.Table:
    """``read(unit, part_no)`` for every part of the batch, by READ_THREADS threads, concatenated in order."""
    units, numbers = batch.column("unit").to_pylist(), batch.column("part_no").to_pylist()
    with ThreadPoolExecutor(READ_THREADS) as pool:
        return pa.concat_tables(pool.map(read, units, numbers))


def _hosts_of_part(storage, source: str, unit: str) -> np.ndarray:
    """The host key of every document of an input part (its ``url`` column only)."""
    urls = pq.read_table(storage.path("documents", source, part_file(unit)), columns=["url"], filesystem=storage.fs)
    return boilerplate.host_keys(urls.column("url"))


def _big_hosts(ctx: DedupContext, limit: int) -> dict[int, int]:
    """Hosts with more than ``limit`` documents -> their number of documents (at most docs / limit entries)."""
    p = ctx.partitions(ctx.docs())
    where = {"parts": ctx.parts, "source": ctx.source}
    if p == 1:
        return ctx.in_task(_big_hosts_here, where, limit)
    ds = _units(ctx, p).map_batches(_part_host_rows, fn_kwargs=where, batch_size=None, batch_format="pyarrow")
    rows = by_value(ds, "host", p, _count_hosts, limit=limit).take_all()
    return {int(r["host"]): int(r["n"]) for r in rows}


def _big_hosts_here(where: dict, limit: int) -> dict[int, int]:
    """The single-partition path of :func:`_big_hosts`, in one task."""
    units = pa.table({"unit": list(where["parts"].units), "part_no": np.arange(where["parts"].count)})
    counted = _count_hosts(_part_host_rows(units, **where), limit)
    return {
        int(h): int(n)
        for h, n in zip(counted.column("host").to_pylist(), counted.column("n").to_pylist(), strict=True)
    }


def _part_host_rows(batch: pa.Table, parts: Parts, source: str) -> pa.Table:
    """The host key of every document of the batch's parts."""
    storage = parts.storage()
    return _per_part(
        batch, lambda unit, _: pa.table({"host": pa.array(_hosts_of_part(storage, source, unit), pa.uint64())})
    )


def _count_hosts(group: pa.Table, limit: int) -> pa.Table:
    hosts, n = np.unique(group.column("host").to_numpy(), return_counts=True)
    big = (n > limit) & (hosts != 0)
    return pa.table({"host": pa.array(hosts[big], pa.uint64()), "n": pa.array(n[big], pa.int64())})


def _part_rows(batch: pa.Table, parts: Parts, source: str, width: int, big: dict[int, int], limit: int) -> pa.Table:
    """The documents of the batch's parts that have a host: ``(doc, group, text, sig)``."""
    storage = parts.storage()
    return _per_part(batch, lambda unit, no: _one_part_rows(storage, parts, source, unit, no, width, big, limit))


def _one_part_rows(
    storage, parts: Parts, source: str, unit: str, part_no: int, width: int, big: dict[int, int], limit: int
) -> pa.Table:
    """One part's documents that have a host: ``(doc, group, text, sig)``; group = host, or host + salt for a big
    host."""
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
    return pa.table(
        {
            "doc": pa.array(doc[keep], pa.int64()),
            "group": pa.array(group[keep], pa.uint64()),
            "text": pa.array(text[keep], pa.uint64()),
            "sig": sig.take(pa.array(keep, pa.int64())) if len(keep) else pa.array([], pa.binary(width)),
        }
    )


def _mark(rows: pa.Table, min_docs: int, num_perm: int, dtype: str) -> pa.Table:
    """Rows of whole groups -> ``(doc, mask)`` for the documents with any boilerplate position."""
    rows = rows.take(pc.sort_indices(rows, [("group", "ascending"), ("doc", "ascending")]))
    group = rows.column("group").to_numpy()
    n = len(group)
    bounds = (
        np.append(np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1]))), n) if n else np.zeros(1, np.int64)
    )
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
    return pa.table(
        {"doc": pa.array(np.concatenate(docs), pa.int64()), "mask": boilerplate.pack(np.concatenate(masks))}
    )


def fixed_bytes(col: pa.FixedSizeBinaryArray, width: int) -> np.ndarray:
    """The values of a fixed-size binary array as a (len x width) uint8 view."""
    if len(col) == 0:
        return np.zeros((0, width), np.uint8)
    return np.frombuffer(col.buffers()[1], np.uint8)[col.offset * width : (col.offset + len(col)) * width].reshape(
        -1, width
    )


def _write_masks(group: pa.Table, parts: Parts) -> pa.Table:
    """Store the masks of each part in dedup/boilerplate/part-<unit>.parquet, sorted by doc; returns the parts and
    documents written."""
    storage = parts.storage()
    doc = group.column("doc").to_numpy()
    part = part_of(doc)
    order = np.argsort(doc, kind="stable")  # by part, then doc: each part's rows are one slice
    group, part = group.take(pa.array(order)).select(["doc", "mask"]), part[order]
    starts = np.flatnonzero(np.concatenate(([True], part[1:] != part[:-1]))) if len(part) else np.zeros(0, np.int64)
    ends = np.append(starts[1:], len(part))
    with ThreadPoolExecutor(READ_THREADS) as pool:
        list(
            pool.map(
                lambda a, b: storage.write_parquet(group.slice(a, b - a), *FOLDER, parts.file(part[a])), starts, ends
            )
        )
    return pa.table({"parts": [len(starts)], "docs": [len(group)]})
