"""Step 1: per phase-1 part, the LSH bucket rows and the documents' metadata.

One Ray task per part reads the texts (the only step that does) and writes,
under ``dedup/``, one file per part:

* ``buckets/`` -- one row ``(band, key, doc)`` per LSH band of each document,
  plus the exact-text (and URL) keys as extra "bands";
* ``meta/`` -- each document's id, text and URL hashes and score, row i = the
  part's row i;
* ``signatures/`` -- the MinHash signatures, row i = the part's row i.

Each part is a unit of the step with its own marker (``_done/deduped/signatures/<part>.json``, written by
the engine's UnitWork, holding the part's counts): a rerun with the same inputs and settings skips the part.
"""

from __future__ import annotations

import logging
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.layout import part_file
from core.storage import PartWriter
from pipeline.config import RunConfig
from pipeline.dedup.context import PHASE, ROW_BITS, DedupContext, run_storage
from pipeline.phase import Unit
from pipeline.result import UnitResult
from pipeline.units import UnitWork
from stages.dedup import exact, lsh, minhash
from stages.dedup.config import DedupConfig, MinHashConfig
from stages.source_name import SOURCE_NAME

log = logging.getLogger(__name__)

BUCKET_SCHEMA = pa.schema([("band", pa.int16()), ("key", pa.uint64()), ("doc", pa.int64())])
#: With ``verify: exact`` bucket rows carry their document's shingle hashes.
SHINGLES_FIELD = pa.field("shingles", pa.large_list(pa.uint64()))
META_SCHEMA = pa.schema(
    [
        ("doc", pa.int64()),
        ("id", pa.string()),
        ("text_hash", pa.binary(16)),
        ("url_hash", pa.binary(16)),
        ("score", pa.float64()),
    ]
)
#: With ``dedup.keep.source_priority``, meta rows carry their
#: source's rank (stages.dedup.keep: the lowest rank is kept).
PRIORITY_FIELD = pa.field("priority", pa.int16())


def meta_schema(dedup: DedupConfig) -> pa.Schema:
    return META_SCHEMA.append(PRIORITY_FIELD) if dedup.keep.source_priority else META_SCHEMA


def source_ranks(table: pa.Table, priority: list[str]) -> pa.Array:
    """Each document's rank in ``priority`` by its ``source_name`` (unlisted sources: after every listed one)."""
    names = table.column(SOURCE_NAME) if SOURCE_NAME in table.column_names else pa.nulls(len(table), pa.string())
    return pc.fill_null(pc.index_in(names, value_set=pa.array(priority, pa.string())), len(priority)).cast(pa.int16())


def signature_width(config: MinHashConfig) -> int:
    """Bytes of one stored signature."""
    return config.num_perm * np.dtype(minhash.signature_dtype(config.scheme)).itemsize


def compute_signatures(ctx: DedupContext, units: list[Unit]):
    """Step 1 for the parts ``units`` (``part_no``: each one's number), one Ray task each; yields each part's
    result (``failed`` set if it could not be read).  The engine gives the parts whose markers are not current."""
    return ctx.per_part("signatures", SignaturePart, units, typed=True, numbered=True, source=ctx.source)


def summarize(stats: list[dict]) -> dict:
    """Step 1's part of the phase summary."""
    return {
        "no_shingles": sum(s.get("no_shingles", 0) for s in stats),
        "bucket_rows": sum(s.get("bucket_rows", 0) for s in stats),
    }


class SignaturePart:
    """Everything step 1 does to one phase-1 part."""

    def __init__(self, config: RunConfig, source: str):
        self.dedup: DedupConfig = config.dedup
        self.storage = run_storage(config)
        self.source = source
        self.bands, self.rows = lsh.bands_rows(self.dedup.minhash)

    def process(self, unit: Unit) -> UnitResult:
        """Write the part's buckets, meta and signatures; returns its counts (in its completion marker)."""
        part_no = unit.params["part_no"]
        source = pq.ParquetFile(
            self.storage.path("documents", self.source, part_file(unit.name)), filesystem=self.storage.fs
        )
        score_col = self.dedup.keep.score_column
        if score_col not in source.schema_arrow.names:
            score_col = None
        columns = ["id", "text", "url"] + ([score_col] if score_col is not None else [])
        columns += (
            [SOURCE_NAME] if self.dedup.keep.source_priority and SOURCE_NAME in source.schema_arrow.names else []
        )
        stats = Counter({"no_shingles": 0, "bucket_rows": 0, "shingles": 0})
        row = 0
        with UnitWork.for_phase(self.storage, PHASE, unit) as work:
            writers = self._writers(work, unit.name)
            for w, schema in writers:  # an empty write first, so that a part without rows still gets its (empty) files
                w.write(schema.empty_table())
            for batch in source.iter_batches(batch_size=self.dedup.batch_docs, columns=columns):
                table = pa.Table.from_batches([batch])
                doc = (np.int64(part_no) << ROW_BITS) + np.arange(row, row + len(table), dtype=np.int64)
                row += len(table)
                stats.update(self._write_batch(table, doc, score_col, *(w for w, _ in writers)))
            totals = {"docs": row, "scored_parts": int(score_col is not None), **stats}
            return work.commit(UnitResult(unit.name, totals=totals))

    def _writers(self, work: UnitWork, unit: str) -> list[tuple[PartWriter, pa.Schema]]:
        """(writer, schema) for the part's buckets, meta and signatures."""
        bucket_schema = BUCKET_SCHEMA.append(SHINGLES_FIELD) if self.dedup.minhash.verify == "exact" else BUCKET_SCHEMA
        sig_schema = pa.schema([("sig", pa.binary(signature_width(self.dedup.minhash)))])
        return [
            (work.writer("dedup", folder, part_file(unit), schema=schema), schema)
            for folder, schema in (
                ("buckets", bucket_schema),
                ("meta", meta_schema(self.dedup)),
                ("signatures", sig_schema),
            )
        ]

    def _write_batch(
        self,
        table: pa.Table,
        doc: np.ndarray,
        score_col: str | None,
        bucket_out: PartWriter,
        meta_out: PartWriter,
        sig_out: PartWriter,
    ) -> dict:
        """Write one batch of documents; returns its counts."""
        buckets, meta, sig, counts = self._batch(table, doc, score_col)
        bucket_out.write(buckets)
        meta_out.write(meta)
        if sig is not None:
            width = sig.shape[1] * sig.itemsize
            sig_out.write(
                pa.table(
                    {
                        "sig": pa.FixedSizeBinaryArray.from_buffers(
                            pa.binary(width), len(sig), [None, pa.py_buffer(np.ascontiguousarray(sig))]
                        )
                    }
                )
            )
        return {"no_shingles": int((counts == 0).sum()), "bucket_rows": len(buckets), "shingles": int(counts.sum())}

    def _batch(
        self, table: pa.Table, doc: np.ndarray, score_col: str | None
    ) -> tuple[pa.Table, pa.Table, np.ndarray | None, np.ndarray]:
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
            has_url = pc.greater(pc.utf8_length(pc.fill_null(table.column("url"), "")), 0).to_numpy(
                zero_copy_only=False
            )
            rows.append(
                (exact.URL_BAND, exact.bucket_key(url_hash)[has_url], doc[has_url])
            )  # an empty URL matches nothing
        counts, shingles, sig = np.zeros(n, np.int64), None, None
        if cfg.minhash.enabled:
            sig, counts, shingles = minhash.signatures(
                table.column("text"), cfg.minhash, return_shingles=cfg.minhash.verify == "exact"
            )
            has = counts > 0  # a document without shingles has no LSH bucket (exact keys still apply)
            band = np.tile(np.arange(self.bands, dtype=np.int16), int(has.sum()))
            rows.append(
                (band, lsh.band_keys(sig[has], self.bands, self.rows).ravel(), np.repeat(doc[has], self.bands))
            )
        buckets = _bucket_table(rows)
        if shingles is not None:
            buckets = _with_shingles(buckets, doc, shingles)
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
        if cfg.keep.source_priority:
            meta = meta.append_column(PRIORITY_FIELD, source_ranks(table, cfg.keep.source_priority))
        return buckets, meta, sig, counts


def _bucket_table(rows: list[tuple[int | np.ndarray, np.ndarray, np.ndarray]]) -> pa.Table:
    """One table of bucket rows from (band, keys, docs) groups; a scalar band applies to its whole group."""
    return pa.table(
        {
            "band": pa.array(
                np.concatenate([np.broadcast_to(np.int16(b), len(d)) for b, _, d in rows] or [np.zeros(0, np.int16)])
            ),
            "key": pa.array(np.concatenate([k for _, k, _ in rows] or [np.zeros(0, np.uint64)]), pa.uint64()),
            "doc": pa.array(np.concatenate([d for _, _, d in rows] or [np.zeros(0, np.int64)]), pa.int64()),
        },
        schema=BUCKET_SCHEMA,
    )


def _with_shingles(buckets: pa.Table, doc: np.ndarray, shingles: pa.Array) -> pa.Table:
    # Exact-key rows need no verification: they carry an empty list.
    row_of = np.searchsorted(doc, buckets.column("doc").to_numpy())
    lsh_rows = buckets.column("band").to_numpy() >= 0
    lists = shingles.take(pa.array(row_of))
    empty = pa.array([[]], pa.large_list(pa.uint64())).take(pa.array(np.zeros(len(buckets), np.int64)))
    return buckets.append_column("shingles", pc.if_else(pa.array(lsh_rows), lists, empty))


def _fixed16(digests: np.ndarray) -> pa.Array:
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(digests), [None, pa.py_buffer(digests.tobytes())])
