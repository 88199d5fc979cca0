"""Step 5: the outputs, one Ray task per part.

``documents/deduped/part-<unit>.parquet`` gets the phase-1 rows minus the
removed ones, in their original order, with a ``dup_cluster_size`` column;
``rejected/deduped/part-<unit>.parquet`` gets the removed ones.  The part's
completion marker ``_done/deduped/<unit>.json`` carries its counts
(kept + rejected = input, checked).
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.layout import part_file
from pipeline.config import RunConfig
from pipeline.dedup import index as dedup_index
from pipeline.dedup.context import PHASE, STAGE, DedupContext, row_of, run_storage
from pipeline.dedup.decisions import read_decisions
from pipeline.dedup.paragraphs import STAGE as PARAGRAPH_STAGE, PartEdits  #
from pipeline.phase import Unit
from pipeline.result import UnitResult, summarize as summarize_results
from pipeline.units import UnitWork
from stages.base import DETAILS, REASON, set_column, split_rejected, to_rejected


def write_outputs(ctx: DedupContext, units: list[Unit]):
    """Step 5 for the parts ``units`` (the engine's, with their fingerprints); yields each part's result (``failed``
    set where writing failed)."""
    return ctx.per_part("write", PartWriterWorker, units, typed=True, source=ctx.source)


def summarize(total: UnitResult) -> dict:
    """Step 5's part of the phase summary: the counts over all parts (``total``: their sum)."""
    summary = summarize_results([total])
    return {k: summary[k] for k in ("in", "kept", "rejected", "rejected_by_reason")}


class PartWriterWorker:
    """Step 5 for one part, in a Ray task."""

    def __init__(self, config: RunConfig, source: str):
        self.config = config
        self.storage = run_storage(config)
        self.source = source
        self.rejected_text = config.output.rejected_text

    def process(self, unit: Unit) -> dict:
        # paragraph dedup: the part's texts lose their repeated pieces (pipeline/dedup/paragraphs.py)
        edits = PartEdits(self.config, self.storage, unit.name) if self.config.dedup.paragraphs.enabled else None
        dedup = self.config.dedup

        def index(
            kept_rows: np.ndarray,
        ) -> dict:  # the part's kept documents in the dedup index (pipeline/dedup/index.py)
            return {"index_bytes": dedup_index.write_part(self.storage, dedup, unit.name, kept_rows)}

        return write_part(
            self.storage, self.source, unit, read_decisions(self.storage, unit.name), self.rejected_text, edits, index
        )


def write_part(
    storage,
    source_phase: str,
    unit: Unit,
    decided: pa.Table,
    rejected_text: bool,
    edits: PartEdits | None = None,
    index=None,
) -> UnitResult:
    """Copy an input part to documents/deduped minus its removed rows, which go to rejected/deduped.

    ``index(kept_rows)``, when given, is called with the sorted row numbers of the kept documents before the
    part's marker is written; its dict joins the part's totals.
    """
    t0 = time.perf_counter()
    decisions = _PartDecisions(decided)
    source = pq.ParquetFile(storage.path("documents", source_phase, part_file(unit.name)), filesystem=storage.fs)
    reasons = Counter()
    n_in = 0
    kept_rows = []
    with UnitWork.for_phase(storage, PHASE, unit) as work:
        kept, rejected = work.documents(), work.rejected()
        for batch in source.iter_batches(batch_size=4096):
            table = pa.Table.from_batches([batch])
            if index is not None:  # each row's number, to know which ones were kept (dropped before writing)
                table = table.append_column(_ROW, pa.array(np.arange(n_in, n_in + len(table), dtype=np.int64)))
            if edits is not None:  # rewrite first: rows are still numbered as in the input
                table = edits.apply(table, start=n_in)
            table, removed = decisions.apply(table, start=n_in)
            if removed is not None:
                rejected.write(to_rejected(removed, STAGE, rejected_text))
                reasons.update(removed.column(REASON).to_pylist())
            if edits is not None:  # documents left empty or failing a filter rule after the rewrite
                table, refused = split_rejected(table, PARAGRAPH_STAGE, rejected_text)
                if refused is not None:
                    rejected.write(refused)
                    reasons.update(refused.column(REASON).to_pylist())
            if index is not None:
                kept_rows.append(table.column(_ROW).to_numpy())
                table = table.drop_columns([_ROW])
            kept.write(table)
            n_in += len(batch)
        if n_in == 0:  # an empty part still gets its (empty) output
            empty = set_column(source.schema_arrow.empty_table(), "dup_cluster_size", pa.array([], pa.int32()))
            kept.write(edits.empty(empty) if edits is not None else empty)  #
        paragraph_stats = {"paragraphs": dict(edits.stats)} if edits is not None else {}  #
        if index is not None:
            paragraph_stats.update(index(np.concatenate(kept_rows) if kept_rows else np.zeros(0, np.int64)))
        return work.commit(
            UnitResult(unit.name, by_reason=reasons, totals=paragraph_stats, seconds=time.perf_counter() - t0),
            docs_in=n_in,
        )


#: A temporary column: each row's number in the input part.
_ROW = "__dedup_row"


class _PartDecisions:
    """One part's decisions, sorted by row, applied to its rows batch by batch."""

    def __init__(self, decided: pa.Table):
        rows = row_of(decided.column("doc").to_numpy())
        order = np.argsort(rows)
        self.rows = rows[order]
        self.reason = decided.column("reason").take(pa.array(order))
        self.details = decided.column("details").take(pa.array(order))
        self.size = decided.column("cluster_size").take(pa.array(order))

    def apply(self, table: pa.Table, start: int) -> tuple[pa.Table, pa.Table | None]:
        """(kept rows + ``dup_cluster_size``, removed rows + ``reason``/``details`` or None) of rows ``start...``."""
        n = len(table)
        lo, hi = np.searchsorted(self.rows, [start, start + n])
        local = pa.array(self.rows[lo:hi] - start)
        reason = _scatter(n, local, self.reason.slice(lo, hi - lo), pa.string())
        table = set_column(
            table, "dup_cluster_size", pc.fill_null(_scatter(n, local, self.size.slice(lo, hi - lo), pa.int32()), 1)
        )
        removed = pc.is_valid(reason)
        kept = table.filter(pc.invert(removed))
        if not pc.any(removed).as_py():
            return kept, None
        rej = set_column(table.filter(removed), REASON, reason.filter(removed))
        rej = set_column(
            rej, DETAILS, _scatter(n, local, self.details.slice(lo, hi - lo), pa.string()).filter(removed)
        )
        return kept, rej


def _scatter(n: int, rows: pa.Array, values: pa.Array | pa.ChunkedArray, type: pa.DataType) -> pa.Array:
    """An array of n nulls with ``values`` placed at ``rows``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    out = np.full(n, -1, dtype=np.int64)
    out[rows.to_numpy()] = np.arange(len(rows))
    idx = pa.array(out, mask=out < 0)
    return values.cast(type).take(idx)
