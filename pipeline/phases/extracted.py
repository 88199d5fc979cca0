"""Phase ``extracted``: each input file -> documents -> language ID, filters, classifier scores -> Parquet.

The unit is the input file, as in Common Crawl itself: ~90,000 files of ~1 GB
are more parallelism than any cluster has, a file-sized unit makes parts,
markers and retries line up, keeps HTML out of Ray's object store (it never
leaves the worker that parsed it), and makes output bytes independent of the
number of workers.  A worker process keeps its models for the phase; inside,
the file streams through the stages as Arrow batches.

Which source reads a file is told by its content (stages.sources.sniff): a WARC's
responses are decoded and their main text extracted (stages.sources.warc); JSON
lines and Parquet documents are text already (stages.sources.documents).  Then
every document meets the same stages: language ID, the heuristic filters and
the classifiers' scores.
"""

from __future__ import annotations

import logging
import os
import time

from core.storage import Storage, is_s3, open_input
from pipeline.config import RunConfig, s3_options
from pipeline.context import RunContext
from pipeline.distribute import Progress, map_units
from pipeline.inputs import unit_name
from pipeline.phase import Phase, Unit, fingerprint
from pipeline.result import UnitResult
from pipeline.sources import StageCache, input_sources, overrides_shown, stages_in_order
from pipeline.units import UnitWork
from stages.base import ChainStats, StageSpec, run_chain
from stages.filters import text_filter_specs
from stages.langid import LangIdStage
from stages.classify import ClassifyStage
from stages.sources import check_input, sniff_stream
from stages.source_name import SourceNameStage, SourceTag
from stages.sources.kinds import SOURCES, source_of

log = logging.getLogger(__name__)

#: Rejection reasons that mean "our code failed on this record", not "the record is bad":
#: their rate is reported, so an upgrade that breaks 30% of pages is visible.
ERROR_REASONS = ("extract_error", "stage_error")
#: Above this share of the documents read, the summary's errors are logged as a warning.
ERROR_WARN_SHARE = 0.01


def filter_section(cls: type) -> str:
    """Where a text filter's settings sit in the run config."""
    return f"filters.{cls.name}"


def common_stages(config: RunConfig) -> list[StageSpec]:
    """The stages every document meets once it is text, whatever its source, in order."""
    specs = [StageSpec(LangIdStage, config.langid, "langid")] if config.langid.enabled else []
    specs += [StageSpec(cls, cfg, filter_section(cls)) for cls, cfg in text_filter_specs(config.filters)]
    if config.classifiers:  # scored here, so that dedup keeps the best-scored copy of a cluster
        specs.append(StageSpec(ClassifyStage, config.classifiers, "classifiers"))
    return specs


class FileWorker:
    """Everything phase 1 does to one input file; built once per worker process (models load once)."""

    def __init__(self, config: RunConfig, phase: type["ExtractedPhase"] | None = None):
        self.config = config
        self.s3 = s3_options(config)
        self.storage = Storage(config.output.root, self.s3)
        self.phase = (phase or ExtractedPhase)()
        self.built = StageCache()  # named sources with equal settings share a stage (its model loads once)
        # the stages the plan shows, built now (models load once per worker); a named source's when first met
        self.common = [self.built.build(spec) for spec in self.phase.stages(config)] if not config.sources else []
        self._chains: dict[tuple, tuple] = {}  # (source kind, named source) -> (reader, its stages + the common ones)

    def close(self) -> None:
        """Release what the stages hold outside this process (the extraction helper)."""
        for stage in self.built.stages():
            close = getattr(stage, "close", None)
            if callable(close):
                close()

    def chain(self, kind: str, name: str | None = None) -> tuple:
        """The reader of a source kind and the stages of its rows, with a named source's own settings."""
        if (kind, name) not in self._chains:
            cls = source_of(kind)
            config = self.config.for_source(name)
            specs = [*cls.stages(config), *self.phase.stages(config)]  # the phase's stages with the source's settings
            self._chains[(kind, name)] = (cls.from_run(config), [self.built.build(s) for s in specs])
        return self._chains[(kind, name)]

    def process(self, unit: Unit) -> UnitResult:
        uri = unit.params["source"]
        t0 = time.perf_counter()
        chain = ChainStats()
        rows = 0
        with UnitWork.for_phase(self.storage, self.phase.name, unit) as work:
            kept, rejected = work.documents(), work.rejected()
            with open_input(unit.params.get("path", uri), self.s3) as raw:
                kind = check_input(sniff_stream(raw, uri), uri)  # a remote input's content is first seen here
                source, stages = self.chain(kind, unit.params.get("source_name"))
                read = source.new_stats()
                for batch in source.read(raw, uri, read):
                    rows += len(batch)
                    kept_rows, rejected_rows = run_chain(stages, batch, chain, keep_rejected_text=self.config.output.rejected_text)
                    kept.write(kept_rows)
                    for r in rejected_rows:
                        rejected.write(r)
            totals = {"files": 1, "files_by_kind": {kind: 1}, **source.totals(read)}
            return work.commit(UnitResult(unit.name, stages=chain, totals=totals, outputs={"source": uri, "kind": kind, **_named(unit)},
                                          seconds=time.perf_counter() - t0), docs_in=rows)


def file_identity(path: str | None) -> list | None:
    """Size and modification time of a model file: replacing the file redoes what it scored."""
    if path is None or not os.path.isfile(path):
        return None
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def _named(unit: Unit) -> dict:
    """The unit's named source, when the run names sources."""
    return {"source_name": unit.params["source_name"]} if "source_name" in unit.params else {}


def _path(uri: str) -> str:
    """Where a worker opens an input: a local one's absolute path on the driver (workers do not share its working
    directory; the input keeps its name as given, for the source column and the unit's name)."""
    return uri if is_s3(uri) else os.path.abspath(uri)


class ExtractedPhase(Phase):
    name = "extracted"
    label = "documents read, extracted and filtered"
    unit_kind = "file"
    sections = ("warc", "documents", "charset", "extract", "langid", "filters", "classifiers", "sources")
    headline_keys = ("files", "rows", "kept", "rejected", "malformed_records")
    # No workers of its own (own_workers): with Arrow on the system allocator (core/arrow_allocator.py), what
    # extraction and language ID leave in a worker is small (e2e corpus: the later phases' worker peaks at
    # 311-316 MB PSS against 298-311 after a worker of phase 1's own), and the run saves a second worker's start.

    def settings(self, config: RunConfig) -> dict:
        out = {k: getattr(config, k).model_dump(mode="json") for k in ("warc", "charset", "extract", "langid", "filters")}
        if config.documents != type(config.documents)():  # only when set: WARC runs keep their fingerprints
            out["documents"] = config.documents.model_dump(mode="json")
        if config.classifiers:  # the scoring half only: the filters run after dedup
            out["classifiers"] = [{**c.model_dump(mode="json", exclude={"filter"}), "model_file": file_identity(c.model)}
                                  for c in config.classifiers]
        return out | {"rejected_text": config.output.rejected_text}

    def stages(self, config: RunConfig, prepared=None) -> list[StageSpec]:
        """The plan puts each source kind's own stages first; with named sources, every stage one of them runs
        (a named source's effective config gives its own: its name recorded first)."""
        if config.sources:
            return stages_in_order([self.stages(config.for_source(s.name)) for s in config.sources])
        tag = [StageSpec(SourceNameStage, SourceTag(name=config.source_name), "sources")] if config.source_name else []
        return [*tag, *common_stages(config)]

    def overrides(self, config: RunConfig) -> dict:
        """For the plan: each named source and the settings it overrides."""
        return overrides_shown(config)

    def units(self, ctx: RunContext) -> list[Unit]:
        names = input_sources(ctx.config, ctx.inputs)  # {} unless the run names sources
        settings = {n: fingerprint(self.settings(ctx.config.for_source(n)), *([n] if n else [])) for n in {names.get(f) for f in ctx.inputs}}
        return [Unit(unit_name(f), fingerprint(f, settings[names.get(f)]),
                     {"source": f, "path": _path(f), **({"source_name": names[f]} if f in names else {})})
                for f in ctx.inputs]

    def run(self, ctx: RunContext, todo: list[Unit]):
        progress = Progress(self.name, len(todo), self.unit_kind, ctx.progress, counts=("in", "kept"))
        try:
            yield from map_units(ctx.config, todo, FileWorker, workers=ctx.workers(), keep_worker=True, extra={"phase": type(self)},
                                 progress=progress, typed=True, pool=self.name if self.own_workers else None)
        finally:
            progress.close()

    def finish(self, summary: dict) -> dict:
        return {**summary, "errors": error_rates(summary["rejected_by_reason"], summary.get("rows", 0))}


def error_rates(reasons: dict, rows: int) -> dict:
    """Per-record errors of our own code: count and share of the rows read, by reason."""
    out = {r: {"count": reasons[r], "share": round(reasons[r] / rows, 4)} for r in ERROR_REASONS if reasons.get(r) and rows}
    if any(v["share"] > ERROR_WARN_SHARE for v in out.values()):
        log.warning("phase extracted: per-record errors above %.0f%% of the documents read: %s "
                    "(the first traceback of each kind is in the worker logs)", ERROR_WARN_SHARE * 100, out)
    return out


__all__ = ["ExtractedPhase", "FileWorker", "SOURCES", "common_stages"]
