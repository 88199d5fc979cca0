"""Step 2d on Ray Data: the joins of pipeline/dedup/earlier.py as shuffles, for keys that do not fit one process.

The in-process path holds every key of this run and of the earlier indexes
(8 bytes each, ~27 per document: ~0.4 GB for 1M + 1M documents, 400 GB for a
billion each).  Here no process holds more than one partition:

1. **rows**: one row ``(key, low, kind, side, id)`` per LSH key and per text
   hash, read by tasks from this run's bucket and meta files and from the
   earlier index files (``side`` EARLIER: ``id`` is an earlier ref; CURRENT:
   a document of this run; a text hash is ``key`` + ``low``, its two halves);
2. **join**: a shuffle by ``(kind, key, low)``; each group pairs every
   CURRENT row with the EARLIER rows of the same value: candidate pairs
   ``(doc, ref, exact)``;
3. **check**: the LSH pairs get this run's signature and mask (grouped by
   the part of ``doc``), then the earlier one's (grouped by the index file of
   ``ref``), and keep the pairs that pass step 2b's check;

and only the pairs that passed reach the driver (and the check runs there when
they are few).  The copies of copies (``near_through_copy``) are a join in
rounds over this run's keys, read once and kept in Ray's object store: the
keys of the documents found in the last round (carrying their earlier ref)
against the keys of the documents not found yet; the found documents are
copies, not the corpus, so their keys are sent to every task (a broadcast
join) unless they are more than a partition.  Same pairs as the in-process
path, so the same decisions and bytes (tests/pipeline/dedup/test_dedup_against.py runs both).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from core.hashing import fmix64
from core.shuffle import group_apply
from core.storage import S3Options, Storage
from pipeline.dedup import index as dedup_index
from pipeline.dedup.boilerplate import fixed_bytes
from pipeline.dedup.context import DedupContext
from pipeline.dedup.earlier import FILE_BITS, MAX_ROUNDS, expand, first_per_doc, member, read_signatures, ref_of
from pipeline.dedup.shuffle import by_part
from pipeline.dedup.signatures import signature_width
from pipeline.dedup.verify import attach_signatures, check_settings, duplicates
from pipeline.distribute import ray_data
from stages.dedup import lsh

LSH, HASH = 0, 1  # kind of a row's value
EARLIER, CURRENT = 0, 1  # side: an earlier document (or a found one, standing for its earlier match), this run's
ROW_SCHEMA = pa.schema(
    [("key", pa.uint64()), ("low", pa.uint64()), ("kind", pa.int8()), ("side", pa.int8()), ("id", pa.int64())]
)
PAIR_SCHEMA = pa.schema([("doc", pa.int64()), ("ref", pa.int64()), ("exact", pa.bool_())])


@dataclass(frozen=True)
class IndexFiles:
    """Where a task finds one earlier run's index: small and picklable."""

    root: str
    s3: S3Options
    files: tuple[str, ...]
    number: int  # the run's place in ``dedup.against``

    def read(self, file_no: int, columns: list[str]) -> pa.Table:
        return Storage(self.root, self.s3).read_parquet(dedup_index.FOLDER, self.files[file_no], columns=columns)


def find(ctx: DedupContext, indexes: list[IndexFiles], excluded: np.ndarray, partitions: int) -> dict:
    """The found pairs as the in-process path gives them: ``{"doc", "ref", "exact"}`` lists of arrays,
    ``through`` (the documents found through a copy in this run) and ``near_docs``."""
    m = ctx.dedup.minhash
    earlier = ray_data().from_items(
        [{"run": r, "file": f} for r, ix in enumerate(indexes) for f in range(len(ix.files))]
    )
    earlier = earlier.map_batches(
        _index_rows, fn_kwargs={"indexes": indexes, "near": m.enabled}, batch_size=1, batch_format="pyarrow"
    )
    current = ctx.read(ctx.files("dedup", "meta"), partitions).map_batches(
        _hash_rows, fn_kwargs={"excluded": excluded}, batch_format="pyarrow"
    )
    if m.enabled:  # this run's keys, read once: the rounds below go over them again
        mine = _bucket_rows(ctx, excluded, partitions).materialize()
        current = current.union(mine)
    pairs = _checked(
        ctx, indexes, group_apply(earlier.union(current), partitions, _join_group, {}, partition=_value_partition)
    )
    # as in the in-process path, a document matched exactly has no near pairs
    exact_docs = np.unique(pairs["doc"][pairs["exact"]])
    keep = pairs["exact"] | ~member(pairs["doc"], exact_docs)
    doc, ref, exact = pairs["doc"][keep], pairs["ref"][keep], pairs["exact"][keep]
    found = {
        "doc": [doc],
        "ref": [ref],
        "exact": [exact],
        "through": np.zeros(0, np.int64),
        "near_docs": len(np.unique(doc[~exact])),
    }
    if not m.enabled:
        return found
    new_doc, new_ref = first_per_doc(doc, ref)
    done, through = new_doc, []
    for _ in range(MAX_ROUNDS):
        step = _checked(ctx, indexes, _through_candidates(ctx, mine, new_doc, new_ref, done, partitions))
        if len(step["doc"]) == 0:
            break
        new_doc, new_ref = first_per_doc(step["doc"], step["ref"])
        through.append(new_doc)
        found["doc"].append(new_doc)
        found["ref"].append(new_ref)
        found["exact"].append(np.zeros(len(new_doc), bool))
        done = np.union1d(done, new_doc)
    found["through"] = np.concatenate(through) if through else np.zeros(0, np.int64)
    return found


def _through_candidates(
    ctx: DedupContext, mine, new_doc: np.ndarray, new_ref: np.ndarray, done: np.ndarray, partitions: int
):
    """Pairs (doc, ref) of a document not ``done`` sharing an LSH key with a newly found one (``ref``: the found
    one's earlier match), from ``mine`` (this run's key rows).  The found documents' keys are few (copies, not
    the corpus): they go to every task (a broadcast join, no shuffle), unless they are more than a partition."""
    seeds = mine.map_batches(_as_seeds, fn_kwargs={"only": new_doc, "refs": new_ref}, batch_format="pyarrow")
    if len(new_doc) * (lsh.bands_rows(ctx.dedup.minhash)[0] + 1) > ctx.dedup.partition_rows:
        probes = mine.map_batches(_without, fn_kwargs={"skip": done}, batch_format="pyarrow")
        return group_apply(seeds.union(probes), partitions, _join_group, {}, partition=_value_partition)
    seeds = _collect(seeds, ROW_SCHEMA)
    key, ref = seeds.column("key").to_numpy(), seeds.column("id").to_numpy()
    order = np.argsort(key, kind="stable")
    return mine.map_batches(
        _probe, fn_kwargs={"skip": done, "seed_key": key[order], "seed_ref": ref[order]}, batch_format="pyarrow"
    )


def _as_seeds(batch: pa.Table, only: np.ndarray, refs: np.ndarray) -> pa.Table:
    """The key rows of the documents in ``only``, each standing for its earlier match (side EARLIER)."""
    doc = batch.column("id").to_numpy()
    pick = member(doc, only)
    key = batch.column("key").to_numpy()[pick]
    return _rows(key, np.zeros(len(key), np.uint64), LSH, EARLIER, refs[np.searchsorted(only, doc[pick])])


def _without(batch: pa.Table, skip: np.ndarray) -> pa.Table:
    return batch.filter(pa.array(~member(batch.column("id").to_numpy(), skip)))


def _probe(batch: pa.Table, skip: np.ndarray, seed_key: np.ndarray, seed_ref: np.ndarray) -> pa.Table:
    """The pairs of :func:`_through_candidates` from one block of key rows."""
    doc = batch.column("id").to_numpy()
    pick = ~member(doc, skip)
    key, doc = batch.column("key").to_numpy()[pick], doc[pick]
    lo, hi = np.searchsorted(seed_key, key, "left"), np.searchsorted(seed_key, key, "right")
    d, r = expand(doc, lo, hi, seed_ref)
    if len(d) == 0:
        return PAIR_SCHEMA.empty_table()
    pairs = np.unique(np.stack([d, r], axis=1), axis=0)
    return pa.table(
        [pa.array(pairs[:, 0]), pa.array(pairs[:, 1]), pa.array(np.zeros(len(pairs), bool))], schema=PAIR_SCHEMA
    )


def _collect(ds, schema: pa.Schema) -> pa.Table:
    """The rows of ``ds`` in this process (only pairs and found documents' keys come here: few)."""
    import ray

    tables = [t for t in ray.get(ds.to_arrow_refs()) if len(t)]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _checked(ctx: DedupContext, indexes: list[IndexFiles], pairs) -> dict:
    """The candidate pairs (a dataset of PAIR_SCHEMA rows, each pair once) that pass step 2b's check, as arrays:
    in this process when their signatures fit a task, else grouped by this run's part, then by earlier file."""
    m = ctx.dedup.minhash
    pairs = pairs.materialize()
    width = signature_width(m) if m.enabled and m.verify != "off" else 0
    where = {"parts": ctx.parts, "width": width, "num_perm": m.num_perm}
    check = {"width": width, "num_perm": m.num_perm, "indexes": indexes, "check": check_settings(m)}
    p = ctx.partitions(pairs.count() * (1 + width // 16))
    if not width:
        table = _collect(pairs, PAIR_SCHEMA)
    elif p == 1:
        table = _collect(pairs, PAIR_SCHEMA)
        table = (
            _check_against_earlier(attach_signatures(table, **where, doc_column="doc", suffix=""), **check)
            if len(table)
            else table
        )
    else:
        ds = by_part(pairs, "doc", p, attach_signatures, **where, doc_column="doc", suffix="")
        table = _collect(group_apply(ds, p, _check_against_earlier, check, column="ref", shift=FILE_BITS), PAIR_SCHEMA)
    table = table.select(PAIR_SCHEMA.names).cast(PAIR_SCHEMA) if len(table) else PAIR_SCHEMA.empty_table()
    return {k: table.column(k).to_numpy(zero_copy_only=False) for k in PAIR_SCHEMA.names}


# --- rows ----------------------------------------------------------------------------------------------


def _rows(key, low, kind: int, side: int, ids) -> pa.Table:
    n = len(key)
    return pa.table(
        [
            pa.array(key, pa.uint64()),
            pa.array(low, pa.uint64()),
            pa.array(np.full(n, kind, np.int8)),
            pa.array(np.full(n, side, np.int8)),
            pa.array(ids, pa.int64()),
        ],
        schema=ROW_SCHEMA,
    )


def _halves(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A (n x 16) text hash as two uint64 columns."""
    h = np.ascontiguousarray(hashes)
    return h[:, :8].copy().view("<u8").ravel(), h[:, 8:].copy().view("<u8").ravel()


def _index_rows(batch: pa.Table, indexes: list[IndexFiles], near: bool) -> pa.Table:
    """The rows of one earlier index file: its text hashes and (``near``) its LSH keys."""
    out = []
    for run, file_no in zip(batch.column("run").to_pylist(), batch.column("file").to_pylist(), strict=False):
        index = indexes[run]
        t = index.read(file_no, ["text_hash", "keys"] if near else ["text_hash"])
        refs = ref_of(index.number, file_no, np.arange(len(t)))
        key, low = _halves(fixed_bytes(t.column("text_hash").combine_chunks(), 16))
        out.append(_rows(key, low, HASH, EARLIER, refs))
        if near:
            keys = t.column("keys").combine_chunks()
            lengths = np.diff(keys.offsets.to_numpy())
            flat = keys.flatten().to_numpy().astype(np.uint64)
            out.append(_rows(flat, np.zeros(len(flat), np.uint64), LSH, EARLIER, np.repeat(refs, lengths)))
    return pa.concat_tables(out) if out else ROW_SCHEMA.empty_table()


def _hash_rows(batch: pa.Table, excluded: np.ndarray) -> pa.Table:
    """This run's text hashes (meta rows), without the documents already removed."""
    doc = batch.column("doc").to_numpy()
    keep = ~member(doc, excluded)
    key, low = _halves(fixed_bytes(batch.column("text_hash").combine_chunks(), 16)[keep])
    return _rows(key, low, HASH, CURRENT, doc[keep])


def _bucket_rows(ctx: DedupContext, skip: np.ndarray, partitions: int):
    """This run's LSH keys (band and content rows) of the documents not in ``skip`` (side CURRENT)."""
    files = ctx.files("dedup", "buckets") + ctx.files("dedup", "buckets-content")
    return ctx.read(files, partitions).map_batches(_key_rows, fn_kwargs={"skip": skip}, batch_format="pyarrow")


def _key_rows(batch: pa.Table, skip: np.ndarray) -> pa.Table:
    doc = batch.column("doc").to_numpy()
    pick = (batch.column("band").to_numpy() >= 0) & ~member(doc, skip)  # LSH rows (exact keys have negative bands)
    key = batch.column("key").to_numpy()[pick].astype(np.uint64)
    return _rows(key, np.zeros(len(key), np.uint64), LSH, CURRENT, doc[pick])


# --- join and check ------------------------------------------------------------------------------------


def _value(batch: pa.Table) -> np.ndarray:
    """One 64-bit value per ``(kind, key, low)`` (equal values are checked column by column after the join)."""
    key, low = batch.column("key").to_numpy(), batch.column("low").to_numpy()
    kind = batch.column("kind").to_numpy().astype(np.uint64)
    return key ^ fmix64(low ^ (kind * np.uint64(0x9E3779B97F4A7C15)))


def _value_partition(batch: pa.Table, partitions: int) -> pa.Table:
    p = (fmix64(_value(batch)) % np.uint64(partitions)).astype(np.int32)
    return batch.append_column("p", pa.array(p))


def _join_group(group: pa.Table) -> pa.Table:
    """Every (this run's doc, earlier ref) of equal value in one partition, once."""
    value = _value(group)
    side = group.column("side").to_numpy()
    cols = {k: group.column(k).to_numpy() for k in ("key", "low", "kind", "id")}
    e, c = np.flatnonzero(side == EARLIER), np.flatnonzero(side == CURRENT)
    e = e[np.argsort(value[e], kind="stable")]
    lo, hi = np.searchsorted(value[e], value[c], "left"), np.searchsorted(value[e], value[c], "right")
    at_c, at_e = expand(c, lo, hi, e)
    same = np.ones(len(at_c), bool)
    for k in ("key", "low", "kind"):
        same &= cols[k][at_c] == cols[k][at_e]
    at_c, at_e = at_c[same], at_e[same]
    if len(at_c) == 0:
        return PAIR_SCHEMA.empty_table()
    pairs = np.unique(
        np.stack([cols["id"][at_c], cols["id"][at_e], cols["kind"][at_c].astype(np.int64)], axis=1), axis=0
    )
    return pa.table([pa.array(pairs[:, 0]), pa.array(pairs[:, 1]), pa.array(pairs[:, 2] == HASH)], schema=PAIR_SCHEMA)


def _check_against_earlier(
    group: pa.Table, width: int, num_perm: int, indexes: list[IndexFiles], check: dict
) -> pa.Table:
    """Keep the exact pairs, and the LSH pairs whose two signatures pass step 2b's check (a group holds whole
    earlier index files)."""
    ref = group.column("ref").to_numpy()
    sig_b, mask_b = read_signatures(lambda run, file_no, cols: indexes[run].read(file_no, cols), ref, width, num_perm)
    sig_a = fixed_bytes(group.column("sig").combine_chunks(), width)
    mask_a = np.unpackbits(
        fixed_bytes(group.column("mask").combine_chunks(), (num_perm + 7) // 8), axis=1, count=num_perm
    ).astype(bool)
    keep = group.column("exact").to_numpy(zero_copy_only=False) | duplicates(sig_a, sig_b, mask_a, mask_b, check)
    return group.select(PAIR_SCHEMA.names).filter(pa.array(keep))
