"""Phase 2: global deduplication of phase 1's kept documents on Ray.

Steps (intermediates under ``dedup/``, each a set of Parquet files):

1. ``buckets/``, ``meta/`` -- per phase-1 part, in parallel (Ray Data over
   the list of parts): MinHash signatures -> one row ``(band, key, doc)`` per
   LSH band, plus the exact-text (and URL) keys as extra "bands"; and each
   document's id, text hash and score.  ``doc`` = part number << 32 | row.
2. ``edges/`` -- a Ray Data shuffle groups the bucket rows by a hash of
   ``(band, key)`` into partitions of ``partition_rows``; each partition turns
   its buckets into star edges (stages.dedup.edges).
3. ``components/`` -- connected components: scipy in one process when the
   edge set is small, else large-star/small-star over Ray Data.
4. ``decisions/`` -- cluster members get their id/hash/score from ``meta/``
   (grouped by part), then a shuffle by cluster applies the keep rule.
5. ``documents/deduped/`` and ``rejected/deduped/`` -- per part: the
   phase-1 rows minus the removed ones, in their original order, plus a
   completion marker with the part's counts (kept + rejected = input).

Only step 1 reads the texts; no step holds the corpus, all signatures or all
edges in one process (except step 3's local path, below its edge limit).  A
finished phase 2 records its inputs in ``_done/deduped/_phase.json`` and is
skipped on rerun when they (and the config) are unchanged; step 1 resumes
part by part.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import sys
import time
import traceback
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from pipeline.config import RunConfig
from pipeline.storage import PartWriter, S3Options, Storage
from stages.base import DETAILS, REASON, REJECTED_SCHEMA, set_column, to_rejected
from stages.dedup import components, edges, exact, keep, lsh, minhash
from stages.dedup.config import DedupConfig
from stages.dedup.hashing import fmix64

log = logging.getLogger(__name__)

PHASE = "deduped"
SOURCE_PHASE = "extracted"
STAGE = "dedup"
ROW_BITS = 32
ROW_MASK = (1 << ROW_BITS) - 1

BUCKET_SCHEMA = pa.schema([("band", pa.int16()), ("key", pa.uint64()), ("doc", pa.int64())])
META_SCHEMA = pa.schema(
    [("doc", pa.int64()), ("id", pa.string()), ("text_hash", pa.binary(16)), ("url_hash", pa.binary(16)), ("score", pa.float64())]
)
DECISION_SCHEMA = pa.schema(
    [("doc", pa.int64()), ("reason", pa.string()), ("details", pa.string()), ("cluster_size", pa.int32())]
)


def _storage(config: RunConfig) -> Storage:
    s = config.storage
    return Storage(config.output.root, S3Options(s.endpoint_url, s.region, s.anonymous))


def input_parts(storage: Storage) -> list[str]:
    """Units whose phase-1 part is complete (marker written), sorted: part number = position."""
    done = {n.removesuffix(".json") for n in storage.list("_done", SOURCE_PHASE, suffix=".json")}
    parts = {n.removeprefix("part-").removesuffix(".parquet") for n in storage.list("documents", SOURCE_PHASE, suffix=".parquet")}
    return sorted(done & parts)


def _fingerprint(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _part_sizes(storage: Storage, units: list[str]) -> list[int]:
    infos = storage.fs.get_file_info([storage.path("documents", SOURCE_PHASE, f"part-{u}.parquet") for u in units])
    return [i.size for i in infos]


# --- step 1: signatures and bucket rows, one task per phase-1 part -------------------


class SignaturePart:
    """Everything step 1 does to one phase-1 part."""

    def __init__(self, config: RunConfig):
        self.config = config
        self.dedup: DedupConfig = config.dedup
        self.storage = _storage(config)
        self.bands, self.rows = lsh.bands_rows(self.dedup.minhash)

    def process(self, unit: str, part_no: int) -> dict:
        stats_path = ("dedup", "stats", f"part-{unit}.json")
        if self.storage.exists(*stats_path):  # done by an interrupted earlier run
            return {**self.storage.read_json(*stats_path), "resumed": True}
        source = pq.ParquetFile(self.storage.path("documents", SOURCE_PHASE, f"part-{unit}.parquet"), filesystem=self.storage.fs)
        score_col = self.dedup.keep.score_column
        has_score = score_col in source.schema_arrow.names
        cols = ["id", "text", "url"] + ([score_col] if has_score else [])
        bucket_schema = BUCKET_SCHEMA
        if self.dedup.minhash.verify == "exact":
            bucket_schema = bucket_schema.append(pa.field("shingles", pa.large_list(pa.uint64())))
        bucket_out = PartWriter(self.storage, "dedup", "buckets", f"part-{unit}.parquet", schema=bucket_schema)
        meta_out = PartWriter(self.storage, "dedup", "meta", f"part-{unit}.parquet", schema=META_SCHEMA)
        sig_schema = pa.schema([("sig", pa.binary(signature_width(self.dedup.minhash)))])
        sig_out = PartWriter(self.storage, "dedup", "signatures", f"part-{unit}.parquet", schema=sig_schema)
        writers = (bucket_out, meta_out, sig_out)
        stats = Counter({"no_shingles": 0, "bucket_rows": 0, "shingles": 0})
        row = 0
        try:
            for w in writers:  # an empty write first, so that a part without rows still gets its (empty) files
                w.write(w._schema.empty_table())
            for batch in source.iter_batches(batch_size=self.dedup.batch_docs, columns=cols):
                table = pa.Table.from_batches([batch])
                doc = (np.int64(part_no) << ROW_BITS) + np.arange(row, row + len(table), dtype=np.int64)
                row += len(table)
                buckets, meta, sig, counts = self._batch(table, doc, score_col if has_score else None)
                bucket_out.write(buckets)
                meta_out.write(meta)
                if sig is not None:
                    width = sig.shape[1] * sig.itemsize
                    sig_out.write(pa.table({"sig": pa.FixedSizeBinaryArray.from_buffers(
                        pa.binary(width), len(sig), [None, pa.py_buffer(np.ascontiguousarray(sig))])}))
                stats.update({"no_shingles": int((counts == 0).sum()), "bucket_rows": len(buckets), "shingles": int(counts.sum())})
            for w in writers:
                w.close()
        except Exception:
            for w in writers:
                w.abort()
            raise
        result = {"unit": unit, "docs": row, "has_score": has_score, **stats}
        self.storage.write_json(result, *stats_path)
        return {**result, "resumed": False}

    def _batch(self, table: pa.Table, doc: np.ndarray, score_col: str | None) -> tuple[pa.Table, pa.Table, np.ndarray | None, np.ndarray]:
        """Bucket rows (band, key, doc), meta rows, signatures and shingle counts of one batch of documents."""
        cfg = self.dedup
        n = len(table)
        rows: list[tuple[int | np.ndarray, np.ndarray, np.ndarray]] = []  # (band, key, doc)
        text_hash = exact.text_hashes(table.column("text"), cfg.exact.normalize)  # also decides the reason
        if cfg.exact.enabled:
            rows.append((exact.TEXT_BAND, exact.bucket_key(text_hash), doc))
        url_hash = None
        if cfg.exact.urls:
            url_hash = exact.url_hashes(table.column("url"))
            has_url = pc.greater(pc.utf8_length(pc.fill_null(table.column("url"), "")), 0).to_numpy(zero_copy_only=False)
            rows.append((exact.URL_BAND, exact.bucket_key(url_hash)[has_url], doc[has_url]))  # an empty URL matches nothing
        counts, shingles, sig = np.zeros(n, np.int64), None, None
        if cfg.minhash.enabled:
            sig, counts, shingles = minhash.signatures(table.column("text"), cfg.minhash, return_shingles=cfg.minhash.verify == "exact")
            has = counts > 0  # a document without shingles has no LSH bucket (exact keys still apply)
            band = np.tile(np.arange(self.bands, dtype=np.int16), int(has.sum()))
            rows.append((band, lsh.band_keys(sig[has], self.bands, self.rows).ravel(), np.repeat(doc[has], self.bands)))
        buckets = pa.table(
            {
                "band": pa.array(np.concatenate([np.broadcast_to(np.int16(b), len(d)) for b, _, d in rows] or [np.zeros(0, np.int16)])),
                "key": pa.array(np.concatenate([k for _, k, _ in rows] or [np.zeros(0, np.uint64)]), pa.uint64()),
                "doc": pa.array(np.concatenate([d for _, _, d in rows] or [np.zeros(0, np.int64)]), pa.int64()),
            },
            schema=BUCKET_SCHEMA,
        )
        if shingles is not None:
            buckets = self._with_shingles(buckets, doc, shingles)
        meta = pa.table(
            {
                "doc": pa.array(doc, pa.int64()),
                "id": table.column("id").cast(pa.string()),
                "text_hash": _fixed16(text_hash),
                "url_hash": _fixed16(url_hash) if url_hash is not None else pa.nulls(n, pa.binary(16)),
                "score": table.column(score_col).cast(pa.float64()) if score_col else pa.nulls(n, pa.float64()),
            },
            schema=META_SCHEMA,
        )
        return buckets, meta, sig, counts

    @staticmethod
    def _with_shingles(buckets: pa.Table, doc: np.ndarray, shingles: pa.Array) -> pa.Table:
        # Exact-key rows need no verification: they carry an empty list.
        row_of = np.searchsorted(doc, buckets.column("doc").to_numpy())
        lsh_rows = buckets.column("band").to_numpy() >= 0
        lists = shingles.take(pa.array(row_of))
        empty = pa.array([[]], pa.large_list(pa.uint64())).take(pa.array(np.zeros(len(buckets), np.int64)))
        return buckets.append_column("shingles", pc.if_else(pa.array(lsh_rows), lists, empty))


def signature_width(config) -> int:
    """Bytes of one stored signature."""
    return config.num_perm * np.dtype(minhash.signature_dtype(config.scheme)).itemsize


def _fixed16(digests: np.ndarray) -> pa.Array:
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(digests), [None, pa.py_buffer(digests.tobytes())])


def _signature_task(batch: pa.Table, config: dict) -> pa.Table:
    worker = SignaturePart(RunConfig.model_validate(config))
    out = []
    for unit, part_no in zip(batch.column("unit").to_pylist(), batch.column("part_no").to_pylist()):
        try:
            out.append(worker.process(unit, part_no))
        except Exception as e:  # reported by the driver, which stops phase 2 cleanly
            log.error("phase 2: part %s: %s", unit, traceback.format_exc(limit=3))
            out.append({"unit": unit, "failed": f"{type(e).__name__}: {e}"})
    return pa.table({"stats": [json.dumps(o) for o in out]})


# --- step 2: bucket rows -> edges ------------------------------------------------------


def _with_partition(batch: pa.Table, column: str, partitions: int, shift: int = 0) -> pa.Table:
    """Add (or replace) column ``p``: a hash of ``column >> shift`` modulo ``partitions``."""
    values = batch.column(column).to_numpy().astype(np.uint64)
    if shift:
        values = values >> np.uint64(shift)
    p = (fmix64(values) % np.uint64(partitions)).astype(np.int32)
    return set_column(batch, "p", pa.array(p))


def _bucket_partition(batch: pa.Table, partitions: int) -> pa.Table:
    mixed = batch.column("key").to_numpy() ^ batch.column("band").to_numpy().astype(np.uint64)
    p = (fmix64(mixed) % np.uint64(partitions)).astype(np.int32)
    return batch.append_column("p", pa.array(p))


def _edges_task(group: pa.Table, threshold: float) -> pa.Table:
    shingles = group.column("shingles").combine_chunks() if "shingles" in group.column_names else None
    return edges.edges_table(*edges.star_edges(
        group.column("band").to_numpy(), group.column("key").to_numpy(), group.column("doc").to_numpy(), shingles, threshold
    ))


def _signatures_of(storage: Storage, units: list[str], doc: np.ndarray, width: int) -> np.ndarray:
    """(len(doc) x width) bytes: the stored signature of every doc, read part by part."""
    out = np.zeros((len(doc), width), np.uint8)
    part = doc >> ROW_BITS
    for p in np.unique(part):
        rows = part == p
        sig = storage.read_parquet("dedup", "signatures", f"part-{units[int(p)]}.parquet").column("sig").combine_chunks()
        values = np.frombuffer(sig.buffers()[1], np.uint8)[sig.offset * width : (sig.offset + len(sig)) * width]
        out[rows] = values.reshape(-1, width)[doc[rows] & ROW_MASK]
    return out


def _attach_src_signatures(group: pa.Table, root: str, s3: dict, units: list[str], width: int) -> pa.Table:
    storage = Storage(root, S3Options(**s3))
    sig = _signatures_of(storage, units, group.column("src").to_numpy(), width)
    return set_column(group, "sig_src", pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(sig), [None, pa.py_buffer(sig)]))


def _verify_with_dst_signatures(group: pa.Table, root: str, s3: dict, units: list[str], width: int, dtype: str,
                                threshold: float) -> pa.Table:
    """Keep exact-key edges, and LSH edges whose signatures agree on at least ``threshold`` of their values."""
    storage = Storage(root, S3Options(**s3))
    dst = _signatures_of(storage, units, group.column("dst").to_numpy(), width)
    col = group.column("sig_src").combine_chunks()
    src = np.frombuffer(col.buffers()[1], np.uint8)[col.offset * width : (col.offset + len(col)) * width].reshape(-1, width)
    agree = edges.signature_agreement(src.view(dtype), dst.view(dtype))
    keep = ~group.column("lsh").to_numpy(zero_copy_only=False) | (agree >= threshold)
    return group.select(edges.EDGE_SCHEMA.names).filter(pa.array(keep))


# --- step 4: decisions -----------------------------------------------------------------


def _attach_meta(group: pa.Table, root: str, s3: dict, units: list[str]) -> pa.Table:
    """Members of one partition (grouped by part) + their id, hashes, score from meta/."""
    storage = Storage(root, S3Options(**s3))
    doc = group.column("doc").to_numpy()
    part = doc >> ROW_BITS
    out = []
    for p in np.unique(part):
        rows = part == p
        meta = storage.read_parquet("dedup", "meta", f"part-{units[int(p)]}.parquet")
        picked = meta.take(pa.array(doc[rows] & ROW_MASK))  # meta row i is the part's row i
        out.append(picked.append_column("comp", group.column("comp").filter(pa.array(rows))))
    return pa.concat_tables(out)


def _decide(group: pa.Table, use_score: bool) -> pa.Table:
    """Keep decisions for whole clusters (a group holds every member of its clusters)."""
    # The distributed fixed point repeats each component's root: one row per doc.
    doc = group.column("doc").to_numpy()
    _, first = np.unique(doc, return_index=True)
    return keep.choose_keepers(group.take(pa.array(np.sort(first))), use_score).cast(DECISION_SCHEMA)


def _write_decisions(group: pa.Table, root: str, s3: dict, units: list[str]) -> pa.Table:
    """Store the decisions of each part in dedup/decisions/part-<unit>.parquet (one file per part)."""
    storage = Storage(root, S3Options(**s3))
    doc = group.column("doc").to_numpy()
    part = doc >> ROW_BITS
    for p in np.unique(part):
        rows = group.filter(pa.array(part == p)).select(DECISION_SCHEMA.names)
        storage.write_parquet(rows.cast(DECISION_SCHEMA), "dedup", "decisions", f"part-{units[int(p)]}.parquet")
    return pa.table({"parts": [len(np.unique(part))]})


# --- step 5: the outputs, one task per part --------------------------------------------


def _write_task(batch: pa.Table, config: dict) -> pa.Table:
    cfg = RunConfig.model_validate(config)
    storage = _storage(cfg)
    out = []
    for unit in batch.column("unit").to_pylist():
        name = ("dedup", "decisions", f"part-{unit}.parquet")
        decided = storage.read_parquet(*name) if storage.exists(*name) else DECISION_SCHEMA.empty_table()
        out.append(json.dumps(write_part(storage, unit, decided, cfg.output.rejected_text)))
    return pa.table({"stats": out})


def write_part(storage: Storage, unit: str, decided: pa.Table, rejected_text: bool) -> dict:
    """Copy a phase-1 part to documents/deduped minus its removed rows, which go to rejected/deduped."""
    t0 = time.perf_counter()
    rows = decided.column("doc").to_numpy() & ROW_MASK
    order = np.argsort(rows)
    rows = rows[order]
    reason = decided.column("reason").take(pa.array(order))
    details = decided.column("details").take(pa.array(order))
    size = decided.column("cluster_size").take(pa.array(order))
    source = pq.ParquetFile(storage.path("documents", SOURCE_PHASE, f"part-{unit}.parquet"), filesystem=storage.fs)
    kept = PartWriter(storage, "documents", PHASE, f"part-{unit}.parquet")
    rejected = PartWriter(storage, "rejected", PHASE, f"part-{unit}.parquet", schema=REJECTED_SCHEMA)
    reasons = Counter()
    n_in = start = 0
    try:
        for batch in source.iter_batches(batch_size=4096):
            table = pa.Table.from_batches([batch])
            lo, hi = np.searchsorted(rows, [start, start + len(table)])
            local = pa.array(rows[lo:hi] - start)
            row_reason = _scatter(len(table), local, reason.slice(lo, hi - lo), pa.string())
            row_size = pc.fill_null(_scatter(len(table), local, size.slice(lo, hi - lo), pa.int32()), 1)
            table = set_column(table, "dup_cluster_size", row_size)
            removed = pc.is_valid(row_reason)
            if pc.any(removed).as_py():
                rej = table.filter(removed)
                rej = set_column(rej, REASON, row_reason.filter(removed))
                rej = set_column(rej, DETAILS, _scatter(len(table), local, details.slice(lo, hi - lo), pa.string()).filter(removed))
                rejected.write(to_rejected(rej, STAGE, rejected_text))
                reasons.update(rej.column(REASON).to_pylist())
            kept.write(table.filter(pc.invert(removed)))
            n_in += len(table)
            start += len(table)
        if n_in == 0:  # an empty part still gets its (empty) output
            kept.write(set_column(source.schema_arrow.empty_table(), "dup_cluster_size", pa.array([], pa.int32())))
        kept.close()
        rejected.close()
    except Exception:
        kept.abort()
        rejected.abort()
        raise
    stats = {"unit": unit, "in": n_in, "kept": kept.rows, "rejected": rejected.rows,
             "rejected_by_reason": dict(sorted(reasons.items())), "seconds": round(time.perf_counter() - t0, 3)}
    if n_in != kept.rows + rejected.rows:
        raise RuntimeError(f"{unit}: {n_in} in != {kept.rows} kept + {rejected.rows} rejected")
    storage.write_json(stats, "_done", PHASE, f"{unit}.json")
    return stats


def _scatter(n: int, rows: pa.Array, values: pa.Array | pa.ChunkedArray, type: pa.DataType) -> pa.Array:
    """An array of n nulls with ``values`` placed at ``rows``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    out = np.full(n, -1, dtype=np.int64)
    out[rows.to_numpy()] = np.arange(len(rows))
    idx = pa.array(out, mask=out < 0)
    return values.cast(type).take(idx)


# --- the driver ------------------------------------------------------------------------


def _partitions(rows: int, target: int) -> int:
    return max(1, math.ceil(rows / target))


def _files(storage: Storage, *parts: str) -> list[str]:
    return [storage.path(*parts, n) for n in storage.list(*parts, suffix=".parquet")]


def _rows(storage: Storage, files: list[str]) -> int:
    return sum(pq.ParquetFile(f, filesystem=storage.fs).metadata.num_rows for f in files)


def _read(storage: Storage, files: list[str]):
    import ray

    return ray.data.read_parquet(files, filesystem=storage.fs)


def run_phase2(config: RunConfig, storage: Storage, workers: int, progress: bool = True) -> dict:
    """Deduplicate every phase-1 part under the output root; returns the phase summary."""
    import ray

    cfg = config.dedup
    t_start = time.perf_counter()
    units = input_parts(storage)
    sizes = _part_sizes(storage, units)
    signature_inputs = {"parts": list(zip(units, sizes)), "exact": cfg.exact.model_dump(), "minhash": cfg.minhash.model_dump(),
                        "keep": cfg.keep.score_column, "batch_docs": cfg.batch_docs}
    phase_inputs = {**signature_inputs, "components": cfg.components.model_dump(), "rejected_text": config.output.rejected_text}
    fingerprint = _fingerprint(phase_inputs)
    if storage.exists("_done", PHASE, "_phase.json"):
        previous = storage.read_json("_done", PHASE, "_phase.json")
        if previous.get("fingerprint") == fingerprint:
            log.warning("phase 2: already done for these %d parts and this config; skipping", len(units))
            return {**previous["summary"], "skipped": True}
    # Outputs of another input set or config are stale as a whole (dedup is global).
    for folder in (("documents", PHASE), ("rejected", PHASE), ("_done", PHASE)):
        storage.delete_dir(*folder)
    sig_fp = _fingerprint(signature_inputs)
    if storage.exists("dedup", "manifest.json") and storage.read_json("dedup", "manifest.json").get("fingerprint") != sig_fp:
        storage.delete_dir("dedup")
    for step in ("edges", "edges-verified", "components", "decisions"):
        storage.delete_dir("dedup", step)
    bands, rows = lsh.bands_rows(cfg.minhash)
    storage.write_json({"fingerprint": sig_fp, "parts": units, "bands": bands, "rows": rows}, "dedup", "manifest.json")
    summary = {"parts": len(units), "bands": bands, "rows": rows, "step_seconds": {}}
    if not units:
        summary.update({"in": 0, "kept": 0, "rejected": 0, "rejected_by_reason": {}})
        storage.write_json({"fingerprint": fingerprint, "parts": units, "summary": summary}, "_done", PHASE, "_phase.json")
        return summary
    config_json = config.model_dump(mode="json")
    s3 = {"endpoint_url": config.storage.endpoint_url, "region": config.storage.region, "anonymous": config.storage.anonymous}
    steps = summary["step_seconds"]

    # 1. signatures
    with _timed(steps, "signatures"):
        items = [{"unit": u, "part_no": i} for i, u in enumerate(units)]
        ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            _signature_task, fn_kwargs={"config": config_json}, batch_size=1, batch_format="pyarrow",
            compute=ray.data.TaskPoolStrategy(size=max(1, min(workers, len(items)))), num_cpus=1,
        )
        bar = tqdm(total=len(items), desc="phase 2: signatures", unit="part", disable=not progress, file=sys.stderr)
        sig_stats = []
        for row in ds.iter_rows():
            sig_stats.append(json.loads(row["stats"]))
            bar.update(1)
        bar.close()
    failed = {s["unit"]: s["failed"] for s in sig_stats if "failed" in s}
    if failed:
        # Deduplication is global: without every part it would be wrong, so stop
        # here with no outputs and no completion marker (a rerun retries).
        log.error("phase 2: %d of %d parts could not be read; no output written", len(failed), len(units))
        summary.update({"failed_parts": failed, "seconds": round(time.perf_counter() - t_start, 2)})
        return summary
    use_score = any(s.get("has_score") for s in sig_stats)
    summary["no_shingles"] = sum(s.get("no_shingles", 0) for s in sig_stats)
    bucket_rows = sum(s.get("bucket_rows", 0) for s in sig_stats)
    summary["bucket_rows"] = bucket_rows

    # 2. edges
    with _timed(steps, "edges"):
        weight = 1.0
        if cfg.minhash.verify == "exact":  # rows then carry their document's shingle hashes: 8 bytes each vs ~18 bytes a row
            docs = sum(s.get("docs", 0) for s in sig_stats)
            weight += 8 * sum(s.get("shingles", 0) for s in sig_stats) / max(1, docs) / 18
        p = _partitions(int(bucket_rows * weight), cfg.partition_rows)
        summary["bucket_partitions"] = p
        if bucket_rows and p == 1:  # one partition: no shuffle needed
            table = _edges_task(_read_local(storage, _files(storage, "dedup", "buckets")), cfg.minhash.verify_threshold)
            storage.write_parquet(table, "dedup", "edges", "part-0.parquet")
        elif bucket_rows:
            (_read(storage, _files(storage, "dedup", "buckets"))
             .map_batches(_bucket_partition, fn_kwargs={"partitions": p}, batch_format="pyarrow")
             .groupby("p", num_partitions=p)
             .map_groups(_edges_task, fn_kwargs={"threshold": cfg.minhash.verify_threshold}, batch_format="pyarrow")
             .write_parquet(storage.path("dedup", "edges"), filesystem=storage.fs))
        edge_files = _files(storage, "dedup", "edges")
        n_edges = _rows(storage, edge_files)
        summary["edges"] = n_edges

    # 2b. signature verification of the LSH candidate pairs: a join of the edges with dedup/signatures/
    if cfg.minhash.enabled and cfg.minhash.verify == "signature" and n_edges:
        with _timed(steps, "verify"):
            width = signature_width(cfg.minhash)
            args = {"root": config.output.root, "s3": s3, "units": units, "width": width}
            check = {**args, "dtype": np.dtype(minhash.signature_dtype(cfg.minhash.scheme)).str,
                     "threshold": cfg.minhash.verify_threshold}
            p = _partitions(n_edges * (1 + width // 16), cfg.partition_rows)  # rows carry one signature
            if p == 1:
                table = _verify_with_dst_signatures(_attach_src_signatures(_read_local(storage, edge_files), **args), **check)
                storage.write_parquet(table, "dedup", "edges-verified", "part-0.parquet")
            else:
                (_read(storage, edge_files)
                 .map_batches(_with_partition, fn_kwargs={"column": "src", "partitions": p, "shift": ROW_BITS}, batch_format="pyarrow")
                 .groupby("p", num_partitions=p)
                 .map_groups(_attach_src_signatures, fn_kwargs=args, batch_format="pyarrow")
                 .map_batches(_with_partition, fn_kwargs={"column": "dst", "partitions": p, "shift": ROW_BITS}, batch_format="pyarrow")
                 .groupby("p", num_partitions=p)
                 .map_groups(_verify_with_dst_signatures, fn_kwargs=check, batch_format="pyarrow")
                 .write_parquet(storage.path("dedup", "edges-verified"), filesystem=storage.fs))
            edge_files = _files(storage, "dedup", "edges-verified")
            n_edges = _rows(storage, edge_files)
            summary["edges_verified"] = n_edges

    # 3. connected components, 4. keep decisions (one file per part with removals)
    local = n_edges <= cfg.components.local_max_edges
    summary["components_path"] = "local" if local else "distributed"
    if n_edges and local:
        with _timed(steps, "components"):
            e = _read_local(storage, edge_files)
            nodes, labels = components.local_components(e.column("src").to_numpy(), e.column("dst").to_numpy())
            members = pa.table({"doc": nodes, "comp": labels}, schema=components.COMPONENT_SCHEMA)
            storage.write_parquet(members, "dedup", "components", "part-0.parquet")
        with _timed(steps, "decisions"):
            decisions = _decide(_attach_meta(members, config.output.root, s3, units), use_score)
            _write_decisions(decisions, config.output.root, s3, units)
    elif n_edges:
        with _timed(steps, "components"):
            cc, rounds = components.distributed_components(
                _read(storage, edge_files), _partitions(2 * n_edges, cfg.partition_rows), cfg.components.max_rounds)
            summary["components_rounds"] = rounds
            cc.write_parquet(storage.path("dedup", "components"), filesystem=storage.fs)
        with _timed(steps, "decisions"):
            comp_files = _files(storage, "dedup", "components")
            n_members = _rows(storage, comp_files)
            p_parts = min(len(units), _partitions(n_members, cfg.partition_rows))
            p_comp = _partitions(n_members, cfg.partition_rows)
            where = {"root": config.output.root, "s3": s3, "units": units}
            (_read(storage, comp_files)
             .map_batches(_with_partition, fn_kwargs={"column": "doc", "partitions": p_parts, "shift": ROW_BITS}, batch_format="pyarrow")
             .groupby("p", num_partitions=p_parts)
             .map_groups(_attach_meta, fn_kwargs=where, batch_format="pyarrow")
             .map_batches(_with_partition, fn_kwargs={"column": "comp", "partitions": p_comp}, batch_format="pyarrow")
             .groupby("p", num_partitions=p_comp)
             .map_groups(_decide, fn_kwargs={"use_score": use_score}, batch_format="pyarrow")
             .map_batches(_with_partition, fn_kwargs={"column": "doc", "partitions": p_parts, "shift": ROW_BITS}, batch_format="pyarrow")
             .groupby("p", num_partitions=p_parts)
             .map_groups(_write_decisions, fn_kwargs=where, batch_format="pyarrow")
             .materialize())

    # 5. outputs per part
    with _timed(steps, "write"):
        items = [{"unit": u} for u in units]
        ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            _write_task, fn_kwargs={"config": config_json}, batch_size=1, batch_format="pyarrow",
            compute=ray.data.TaskPoolStrategy(size=max(1, min(workers, len(items)))), num_cpus=1,
        )
        part_stats = [json.loads(r["stats"]) for r in ds.iter_rows()]

    totals = Counter()
    reasons = Counter()
    for s in part_stats:
        totals.update({k: s[k] for k in ("in", "kept", "rejected")})
        reasons.update(s["rejected_by_reason"])
    summary.update({**dict(totals), "rejected_by_reason": dict(sorted(reasons.items())),
                    "use_score": use_score, "seconds": round(time.perf_counter() - t_start, 2)})
    storage.write_json({"fingerprint": fingerprint, "parts": units, "summary": summary}, "_done", PHASE, "_phase.json")
    if not cfg.keep_intermediate:
        storage.delete_dir("dedup")
    return summary


def _read_local(storage: Storage, files: list[str]) -> pa.Table:
    return pa.concat_tables([pq.read_table(f, filesystem=storage.fs) for f in files])


@contextlib.contextmanager
def _timed(out: dict, name: str):
    t0 = time.perf_counter()
    yield
    out[name] = round(time.perf_counter() - t0, 2)
