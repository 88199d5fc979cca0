"""Phase ``extracted``: each input file -> documents -> language ID, filters, classifier scores -> Parquet.

A map phase over the input files (``reads = INPUTS``): the unit is the input file, as in Common Crawl
itself: ~90,000 files of ~1 GB are more parallelism than any cluster has, a file-sized unit makes parts,
markers and retries line up, keeps HTML out of Ray's object store (it never leaves the worker that parsed
it), and makes output bytes independent of the number of workers.  The engine's worker (pipeline/engine/
worker.py) keeps its models for the phase; inside, the file streams through the stages as Arrow batches.

Which source reads a file is told by its content (stages.sources.sniff): a WARC's responses are decoded and
their main text extracted (stages.sources.warc); JSON lines and Parquet documents are text already
(stages.sources.documents).  Then every document meets the same stages: language ID, the heuristic filters
and the classifiers' scores.
"""

from __future__ import annotations

import logging

from pipeline.config import RunConfig
from pipeline.phase import INPUTS, MapPhase
from pipeline.plugins import user_stages
from pipeline.sources import overrides_shown, stages_in_order
from stages.base import StageSpec
from stages.classify import ClassifyStage
from stages.filters import text_filter_specs
from stages.langid import LangIdStage
from stages.source_name import SourceNameStage, SourceTag

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
    specs += user_stages(config, "extracted")  # the run's own stages, after the built-in filters
    if config.classifiers:  # scored here, so that dedup keeps the best-scored copy of a cluster
        specs.append(StageSpec(ClassifyStage, config.classifiers, "classifiers"))
    return specs


class ExtractedPhase(MapPhase):
    name = "extracted"
    label = "documents read, extracted and filtered"
    unit_kind = "file"
    reads = INPUTS
    keep_worker = True  # language ID, the classifiers and the extraction helper load once per worker process
    sections = (
        "warc",
        "documents",
        "charset",
        "extract",
        "langid",
        "filters",
        "classifiers",
        "sources",
        "readers",
        "stages",
    )
    headline_keys = ("files", "rows", "kept", "rejected", "malformed_records")
    # No workers of its own (own_workers): with Arrow on the system allocator (core/arrow_allocator.py), what
    # extraction and language ID leave in a worker is small (e2e corpus: the later phases' worker peaks at
    # 311-316 MB PSS against 298-311 after a worker of phase 1's own), and the run saves a second worker's start.

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

    def finish(self, summary: dict) -> dict:
        return {**summary, "errors": error_rates(summary["rejected_by_reason"], summary.get("rows", 0))}


def error_rates(reasons: dict, rows: int) -> dict:
    """Per-record errors of our own code: count and share of the rows read, by reason."""
    out = {
        r: {"count": reasons[r], "share": round(reasons[r] / rows, 4)}
        for r in ERROR_REASONS
        if reasons.get(r) and rows
    }
    if any(v["share"] > ERROR_WARN_SHARE for v in out.values()):
        log.warning(
            "phase extracted: per-record errors above %.0f%% of the documents read: %s "
            "(the first traceback of each kind is in the worker logs)",
            ERROR_WARN_SHARE * 100,
            out,
        )
    return out


__all__ = ["ExtractedPhase", "common_stages"]
