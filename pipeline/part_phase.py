"""A phase that maps each part of the phase before it to a part of its own.

Most phases after deduplication are this: read a part in Arrow batches, run a
chain of stages (stages.base.run_chain: rejected rows leave with a reason),
write the kept and the rejected documents, mark the part done.  A subclass
only says which stages::

    class FinalPhase(PartPhase):
        name = "final"
        keep_worker = True     # stages hold models: built once per Ray worker process, kept

        def stages(self, config, prepared=None):
            return [StageSpec(PiiStage, config.pii, "pii")]

``prepare(ctx)`` may compute something global on the driver first (for
example per-language score cutoffs from two columns of every part); it is
passed to every worker.  The units' fingerprints cover the parts they read
and ``settings(config)``, so a changed input part or setting redoes exactly
the parts it affects.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import RunConfig, s3_options
from pipeline.context import RunContext
from pipeline.distribute import Progress, map_units
from pipeline.phase import Phase, Unit, fingerprint
from core.storage import Storage
from core.layout import DOCUMENTS, part_file
from pipeline.result import UnitResult
from pipeline.sources import StageCache
from pipeline.units import UnitWork
from stages.base import ChainStats, run_chain


class PartPhase(Phase):
    unit_kind = "part"
    #: True when the stages hold models: the worker is built once per Ray worker process and kept.
    keep_worker: ClassVar[bool] = False
    #: Rows per Arrow batch read from a part.
    batch_rows: ClassVar[int] = 2048

    def prepare(self, ctx: RunContext, todo: list[Unit]) -> Any:
        """Something global the workers need (JSON-able), computed on the driver before the units run."""
        return None

    def units(self, ctx: RunContext) -> list[Unit]:
        source = ctx.source(self)
        if source is None:
            raise ValueError(f"phase {self.name} reads documents, but no phase before it writes any")
        settings = fingerprint(self.settings(ctx.config))
        return [Unit(p.name, fingerprint(p.fingerprint, settings), {"source": source.name}) for p in ctx.parts(source)]

    def run(self, ctx: RunContext, todo: list[Unit]):
        try:
            prepared = self.prepare(ctx, todo)
        except Exception as e:  # e.g. a part that cannot be read: every unit fails with the reason, no marker
            yield from (UnitResult.failure(u.name, f"{self.name}: prepare: {type(e).__name__}: {e}") for u in todo)
            return
        extra = {"phase": type(self), "prepared": prepared}
        progress = Progress(self.name, len(todo), self.unit_kind, ctx.progress, counts=("in", "kept"))
        try:
            yield from map_units(ctx.config, todo, PartWorker, workers=ctx.workers(), keep_worker=self.keep_worker, extra=extra,
                                 progress=progress, typed=True, pool=self.name if self.own_workers else None)
        finally:
            progress.close()


class PartWorker:
    """Runs a PartPhase's stages over one part at a time (built once per actor or task)."""

    def __init__(self, config: RunConfig, phase: type[PartPhase], prepared: Any):
        self.config = config
        self.phase = phase()
        self.storage = Storage(config.output.root, s3_options(config))
        self.prepared = prepared
        self.built = StageCache()  # named sources with equal settings share a stage (a model loads once)
        self.stages = [self.built.build(spec) for spec in self.phase.stages(config, prepared)] if not config.sources else []
        self._by_source: dict[str, list] = {}

    def stages_for(self, name: str | None) -> list:
        """The stages of a part of a named source (its own settings, pipeline/sources.py), or the run's."""
        if not self.config.sources:
            return self.stages
        if name not in self._by_source:
            self._by_source[name] = [self.built.build(s) for s in self.phase.stages(self.config.for_source(name), self.prepared)]
        return self._by_source[name]

    def process(self, unit: Unit) -> UnitResult:
        t0 = time.perf_counter()
        source = pq.ParquetFile(self.storage.path(DOCUMENTS, unit.params["source"], part_file(unit.name)),
                                filesystem=self.storage.fs)
        chain = ChainStats()
        n_in = 0
        with UnitWork.for_phase(self.storage, self.phase.name, unit) as work:
            kept, rejected = work.documents(), work.rejected()
            batches = (pa.Table.from_batches([b]) for b in source.iter_batches(batch_size=self.phase.batch_rows))
            for batch in _at_least_one(batches, source.schema_arrow):
                n_in += len(batch)
                kept_rows, rejected_rows = run_chain(self.stages_for(unit.params.get("source_name")), batch, chain,
                                                     keep_rejected_text=self.config.output.rejected_text)
                kept.write(kept_rows)
                for r in rejected_rows:
                    rejected.write(r)
            return work.commit(UnitResult(unit.name, stages=chain, totals={"parts": 1}, seconds=time.perf_counter() - t0), docs_in=n_in)


def _at_least_one(batches, schema: pa.Schema):
    """The batches, or one empty batch: an empty part still gets its (empty) output with the full schema."""
    empty = True
    for b in batches:
        empty = False
        yield b
    if empty:
        yield schema.empty_table()
