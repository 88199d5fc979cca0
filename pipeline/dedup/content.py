"""Step 2c: LSH bucket rows of the documents' content without host boilerplate (``dedup/buckets-content/``).

A body republished under another site's long block (or with a block on one
side only) can have a full-text Jaccard far below the LSH threshold: the two
blocks count against it, so the pair is never a candidate and no check can
find it.  For every document with at least ``boilerplate.content_min_share``
of its signature positions host boilerplate (step 2a), one Ray task per part
re-reads its text, computes a MinHash over its shingles without the host
boilerplate (stages.dedup.boilerplate.content_signatures) and writes its LSH
band keys as extra bucket rows ``(band, key, doc)`` (a band whose key equals
the document's own is left out).  Step 2 reads them with ``dedup/buckets/``,
so they meet the ordinary rows of every other document in the same buckets;
the pairs they find are LSH candidates like the others (step 2b checks them
without the boilerplate).  Only documents listed in ``dedup/boilerplate/``
with enough positions are read again, so the cost is bounded by them; the
rows depend on the data and settings only (not on the number of workers).
Like steps 2-4 the folder is rebuilt on every run.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.layout import part_file
from pipeline.config import RunConfig
from pipeline.dedup import boilerplate as step2a
from pipeline.dedup.context import DedupContext, row_of, run_storage
from pipeline.dedup.signatures import BUCKET_SCHEMA, signature_width
from pipeline.phase import Unit
from stages.dedup import boilerplate, lsh, minhash

FOLDER = ("dedup", "buckets-content")


def needed(ctx: DedupContext) -> bool:
    m = ctx.dedup.minhash
    return m.enabled and m.verify == "signature" and m.boilerplate.enabled and m.boilerplate.content_candidates


def min_positions(ctx_or_config) -> int:
    """Boilerplate positions a document needs for content rows."""
    m = ctx_or_config.dedup.minhash
    return max(1, int(np.ceil(m.boilerplate.content_min_share * m.num_perm)))


def content_buckets(ctx: DedupContext) -> dict:
    """Step 2c (after step 2a); returns its part of the summary."""
    ctx.storage.delete_dir(*FOLDER)
    if not needed(ctx):
        return {}
    listed = {
        n.removeprefix("part-").removesuffix(".parquet") for n in ctx.storage.list(*step2a.FOLDER, suffix=".parquet")
    }
    units = [Unit(u, "") for u in ctx.units if u in listed]
    docs = rows = 0
    failed = {}
    # counts added up as parts finish
    for s in ctx.per_part("content", ContentPart, units, numbered=True, source=ctx.source):
        if "failed" in s:
            failed[s["unit"]] = s["failed"]
        else:
            docs, rows = docs + s["docs"], rows + s["rows"]
    if failed:  # the parts were read in step 1: a failure here is not a bad input, stop the phase
        raise RuntimeError(f"content candidates failed for {len(failed)} parts: {failed}")
    ctx.counts["content_bucket_rows"] = rows  # step 2 sizes its shuffle with them
    return {"content_docs": docs, "content_bucket_rows": rows}


class ContentPart:
    """Step 2c for one part: content band keys of its documents with enough boilerplate positions."""

    def __init__(self, config: RunConfig, source: str):
        self.config = config
        self.minhash = config.dedup.minhash
        self.storage = run_storage(config)
        self.source = source
        self.bands, self.rows = lsh.bands_rows(self.minhash)
        self.batch_docs = config.dedup.batch_docs

    def process(self, unit: Unit) -> dict:
        m = self.minhash
        name = part_file(unit.name)
        listed = self.storage.read_parquet(*step2a.FOLDER, name)
        mask = boilerplate.unpack(listed.column("mask").combine_chunks(), m.num_perm)
        enough = mask.sum(axis=1) >= min_positions(self.config)
        doc = listed.column("doc").to_numpy()[enough]  # sorted
        mask = mask[enough]
        out = [BUCKET_SCHEMA.empty_table()]
        if len(doc):
            sig = step2a.fixed_bytes(
                self.storage.read_parquet("dedup", "signatures", name).column("sig").combine_chunks(),
                signature_width(m),
            ).view(minhash.signature_dtype(m.scheme))
            rows = row_of(doc)
            source = pq.ParquetFile(self.storage.path("documents", self.source, name), filesystem=self.storage.fs)
            start = 0
            for batch in source.iter_batches(batch_size=self.batch_docs, columns=["text"]):
                lo, hi = np.searchsorted(rows, [start, start + batch.num_rows])
                if hi > lo:
                    texts = batch.column("text").take(pa.array(rows[lo:hi] - start))
                    out.append(self._rows(texts, sig[rows[lo:hi]], mask[lo:hi], doc[lo:hi]))
                start += batch.num_rows
        table = pa.concat_tables(out)
        self.storage.write_parquet(table, *FOLDER, name)
        return {"unit": unit.name, "docs": int(len(doc)), "rows": len(table)}

    def _rows(self, texts: pa.Array, sig: np.ndarray, mask: np.ndarray, doc: np.ndarray) -> pa.Table:
        """Bucket rows of the content signatures that differ from the documents' own band keys."""
        content, left = boilerplate.content_signatures(texts, sig, mask, self.minhash)
        keys = lsh.band_keys(content, self.bands, self.rows)
        new = (keys != lsh.band_keys(sig, self.bands, self.rows)) & (left >= boilerplate.MIN_CONTENT_SHINGLES)[:, None]
        d, band = np.nonzero(new)
        return pa.table(
            {
                "band": pa.array(band.astype(np.int16)),
                "key": pa.array(keys[d, band], pa.uint64()),
                "doc": pa.array(doc[d], pa.int64()),
            },
            schema=BUCKET_SCHEMA,
        )
