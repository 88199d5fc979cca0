"""The one worker loop of every map phase: a unit's rows, in Arrow batches, through its stages to its sinks.

Built once per Ray worker process when the phase's stages hold models (``keep_worker``), it reads a unit
as the phase declares (``reads``):

- an input file (INPUTS): its content tells its source kind (stages.sources.sniff: a WARC's responses are
  decoded and their main text extracted; JSON lines and Parquet documents are text already), whose reader
  and own stages come before the phase's;
- a part of the phase it reads (PARTS): its Parquet batches;

then every batch goes through the stages (stages.base.run_chain: a rejected row leaves with its stage and
reason) to the phase's sinks (pipeline.phase.Sink: by default the kept rows to ``documents/<phase>``, the
rejected to ``rejected/<phase>``), committed with the unit's marker by pipeline.units.UnitWork ("documents
in = kept + rejected" checked).  With named sources,
each unit's stages have its source's settings (pipeline/sources.py); stages with equal settings are built
once and shared (a model loads once).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.layout import DOCUMENTS, part_file
from core.storage import Storage, open_input
from pipeline.config import RunConfig, s3_options
from pipeline.engine.schema import conform, inputs_schema, parts_schema
from pipeline.engine.units import input_path, published_input
from pipeline.phase import INPUTS, MapPhase, Unit
from pipeline.readers import reader_for, readers
from pipeline.result import UnitResult
from pipeline.sources import StageCache
from pipeline.units import UnitWork
from stages.base import ChainStats, run_chain, set_column
from stages.sources import check_input, sniff_stream
from stages.sources.kinds import source_of

#: The column naming a document's input file: published as pipeline.engine.units.published_input gives it.
SOURCE = "source"


class MapWorker:
    """Runs a map phase's units (built once per worker process when the phase keeps its workers)."""

    def __init__(self, config: RunConfig, phase: type[MapPhase], prepared: Any = None, cwd: str | None = None):
        self.config = config
        self.cwd = cwd  # the driver's working directory: where its relative input paths are
        self.s3 = s3_options(config)
        self.storage = Storage(config.output.root, self.s3)
        self.phase = phase()
        self.prepared = prepared
        self.built = StageCache()  # named sources with equal settings share a stage (a model loads once)
        self._chains: dict[tuple, tuple] = {}  # (source kind, named source) -> (reader, stages)
        self.readers = {r.name: r for r in readers(config)}  # the run's own readers (pipeline/readers.py)
        self._schemas: dict[tuple, pa.Schema] = {}
        if not config.sources:  # the stages the plan shows, built now: models load once per worker, before any unit
            for spec in self.phase.stages(config, prepared):
                self.built.build(spec)

    def close(self) -> None:
        """Release what the stages hold outside this process (the extraction helper)."""
        for stage in self.built.stages():
            close = getattr(stage, "close", None)
            if callable(close):
                close()

    def chain(self, kind: str | None, name: str | None) -> tuple:
        """The reader of a source kind (None: a part) and the stages of its rows, with a named source's settings."""
        if (kind, name) not in self._chains:
            config = self.config.for_source(name)
            specs = self.phase.stages(config, self.prepared)
            reader = None
            if kind is not None:
                cls = self.readers.get(kind) or source_of(kind)
                specs, reader = [*cls.stages(config), *specs], cls.from_run(config)
            self._chains[(kind, name)] = (reader, [self.built.build(s) for s in specs])
        return self._chains[(kind, name)]

    def schema(self, key: tuple, compute) -> pa.Schema:
        """The schema of every part of the phase (pipeline/engine/schema.py), computed once per worker and input."""
        if key not in self._schemas:
            self._schemas[key] = compute()
        return self._schemas[key]

    def process(self, unit: Unit) -> UnitResult:
        t0 = time.perf_counter()
        chain = ChainStats()
        rows = 0
        keep_text = self.config.output.rejected_text
        with UnitWork.for_phase(self.storage, self.phase.name, unit) as work:
            sinks = [s.open(work, self.config) for s in self.phase.sinks(self.config) if s.open is not None]
            read = _InputRead if self.phase.reads == INPUTS else _PartRead
            with read(self, unit) as (batches, stages, described, schema):
                for batch in batches:
                    rows += len(batch)
                    kept_rows, rejected_rows = run_chain(stages, batch, chain, keep_rejected_text=keep_text)
                    kept_rows = conform(kept_rows, schema)  # every part of the phase has one schema
                    for sink in sinks:
                        sink.write(kept_rows, rejected_rows)
            totals, outputs = described()
            for sink in sinks:  # what a sink counts of its own (an export: the rows it wrote)
                totals.update(getattr(sink, "totals", dict)())
            result = UnitResult(
                unit.name, stages=chain, totals=totals, outputs=outputs, seconds=time.perf_counter() - t0
            )
            if not self.phase.writes_documents:  # its sinks take every row (an export): in = kept
                result.docs_in = result.kept = rows
            return work.commit(result, docs_in=rows)


class _InputRead:
    """An input file's batches through its source kind's reader; what the run records of its reading."""

    def __init__(self, worker: MapWorker, unit: Unit):
        self.worker, self.unit = worker, unit
        self.uri = unit.params["source"]
        self.public = published_input(self.uri, worker.cwd)  # the input as published (pipeline.engine.units)

    def __enter__(self):
        self.raw = open_input(input_path(self.uri, self.worker.cwd), self.worker.s3).__enter__()
        try:
            # a reader of the run's own takes the files its suffixes name; else (a remote input's content is first
            # seen here) the content tells
            own = reader_for(self.worker.config, self.uri)
            self.kind = own.name if own is not None else check_input(sniff_stream(self.raw, self.uri), self.uri)
            source, stages = self.worker.chain(self.kind, self.unit.params.get("source_name"))
            self.source, self.stats = source, source.new_stats()
        except BaseException:
            self.raw.__exit__(None, None, None)
            raise
        kinds = tuple(dict.fromkeys([*self.unit.params.get("kinds", ()), self.kind]))  # a remote one's name may lie
        worker = self.worker
        schema = worker.schema(("inputs", kinds), lambda: inputs_schema(worker.phase, worker.config, kinds))
        batches = _published_source(source.read(self.raw, self.uri, self.stats), self.public)
        return batches, stages, self.described, schema

    def __exit__(self, *exc) -> bool:
        self.raw.__exit__(*exc)
        return False

    def described(self) -> tuple[dict, dict]:
        named = {"source_name": self.unit.params["source_name"]} if "source_name" in self.unit.params else {}
        totals = {"files": 1, "files_by_kind": {self.kind: 1}, **self.source.totals(self.stats)}
        return totals, {"source": self.public, "kind": self.kind, **named}


def _published_source(batches: Iterator[pa.Table], public: str) -> Iterator[pa.Table]:
    """The reader's batches with the ``source`` column as published (the reader keeps the URI for its ids)."""
    for batch in batches:
        if SOURCE in batch.column_names:
            batch = set_column(batch, SOURCE, pa.array(np.full(len(batch), public, dtype=object), pa.string()))
        yield batch


class _PartRead:
    """A part's batches (one empty batch for an empty part: its output still gets the full schema)."""

    def __init__(self, worker: MapWorker, unit: Unit):
        self.worker, self.unit = worker, unit

    def __enter__(self):
        storage = self.worker.storage
        source = pq.ParquetFile(
            storage.path(DOCUMENTS, self.unit.params["source"], part_file(self.unit.name)), filesystem=storage.fs
        )
        _, stages = self.worker.chain(None, self.unit.params.get("source_name"))
        batches = (pa.Table.from_batches([b]) for b in source.iter_batches(batch_size=self.worker.phase.batch_rows))
        part, worker = source.schema_arrow, self.worker
        schema = worker.schema(
            ("parts", part), lambda: parts_schema(worker.phase, worker.config, part, worker.prepared)
        )
        return _at_least_one(batches, part), stages, lambda: ({"parts": 1}, {}), schema

    def __exit__(self, *exc) -> bool:
        return False


def _at_least_one(batches, schema: pa.Schema) -> Iterator[pa.Table]:
    empty = True
    for b in batches:
        empty = False
        yield b
    if empty:
        yield schema.empty_table()
