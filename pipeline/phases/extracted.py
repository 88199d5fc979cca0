"""Phase ``extracted``: each input WARC file -> decoded HTML -> text -> filtered Parquet.

The unit is the input file, as in Common Crawl itself: ~90,000 files of ~1 GB
are more parallelism than any cluster has, a file-sized unit makes parts,
markers and retries line up, keeps HTML out of Ray's object store (it never
leaves the actor that parsed it), and makes output bytes independent of the
number of workers.  An actor pool runs the units (models load once per actor);
inside, the file streams through the stages as Arrow batches.
"""

from __future__ import annotations

import os
import time
from collections import Counter

from pipeline.config import ConfigError, RunConfig, s3_options
from pipeline.context import RunContext
from pipeline.distribute import Progress, map_units
from pipeline.inputs import unit_name
from pipeline.phase import Phase, Unit, fingerprint, register
from core.storage import Storage, is_s3, open_input
from pipeline.units import UnitWork
from stages.base import ChainStats, run_chain
from stages.charset import DecodeStage
from stages.extract import ExtractStage
from stages.filters import text_filter_specs, url_filter_specs
from stages.langid import LangIdStage
from stages.quality import QualityScoreStage
from stages.warc import SNIFF_BYTES, ReadStats, WarcReader, check_warc

#: Rejection reasons that mean "our code failed on this record", not "the record is bad":
#: their rate is reported, so an upgrade that breaks 30% of pages is visible.
ERROR_REASONS = ("extract_error", "stage_error")
#: Above this share of responses, the summary's errors are logged as a warning.
ERROR_WARN_SHARE = 0.01

#: Columns of the reader's rows and of the extracted text (until the reader and extractor declare theirs).
_READ_COLUMNS = ("id", "url", "warc_date", "source", "payload", "http_charset", "content_type", "http_status", "text")
#: Which stage adds a column other stages may need (for the chain check's message).
_PROVIDERS = {"language": "language ID (langid.enabled)", "language_score": "language ID (langid.enabled)"}


def chain_spec(config: RunConfig) -> list[tuple[type, object]]:
    """(stage class, its config) of the phase-1 stages after the reader, in order."""
    spec = [*url_filter_specs(config.filters), (DecodeStage, config.charset), (ExtractStage, config.extract)]
    if config.langid.enabled:
        spec.append((LangIdStage, config.langid))
    spec += text_filter_specs(config.filters)
    if config.quality.enabled:  # scored here, so that dedup keeps the best-scored copy of a cluster
        spec.append((QualityScoreStage, config.quality))
    return spec


def build_chain(config: RunConfig) -> list:
    """The phase-1 stages, built (models loaded) and checked for what each needs."""
    spec = chain_spec(config)
    check_chain([cls for cls, _ in spec])
    return [cls(cfg) for cls, cfg in spec]


def check_chain(stages: list) -> None:
    """Every column a stage ``requires`` must be added (``provides``) by a stage before it.

    Works on stage classes (at planning time, nothing built) or instances.
    """
    have: set[str] = set(_READ_COLUMNS)
    for i, stage in enumerate(stages):
        for col in getattr(stage, "needs", ()):
            if col in have:
                continue
            later = [s.name for s in stages[i + 1:] if col in getattr(s, "adds", ())]
            where = f"{later[0]} adds it after {stage.name}" if later else f"no stage before it adds it ({_PROVIDERS.get(col, 'no such stage')} is off)"
            raise ConfigError(f"config error: {stage.name} needs the '{col}' column, but {where}: "
                              f"turn that stage on or turn {stage.name} off")
        have.update(getattr(stage, "adds", ()))


class FileWorker:
    """Everything phase 1 does to one input file; built once per actor (models load once)."""

    def __init__(self, config: RunConfig):
        self.config = config
        self.s3 = s3_options(config)
        self.storage = Storage(config.output.root, self.s3)
        self.reader = WarcReader(config.warc)
        self.stages = build_chain(config)

    def close(self) -> None:
        """Release what the stages hold outside this process (the extraction helper)."""
        for stage in self.stages:
            close = getattr(stage, "close", None)
            if callable(close):
                close()

    def process(self, unit: Unit) -> dict:
        source = unit.params["source"]
        t0 = time.perf_counter()
        read, chain = ReadStats(), ChainStats()
        responses = 0
        with UnitWork.for_phase(self.storage, ExtractedPhase.name, unit) as work:
            kept, rejected = work.documents(), work.rejected()
            with open_input(_worker_uri(source), self.s3) as raw:
                check_warc(raw.read(SNIFF_BYTES), source)  # a remote input's content is first seen here
                raw.seek(0)
                for batch in self.reader.iter_batches(raw, source, read):
                    responses += len(batch)
                    kept_rows, rejected_rows = run_chain(self.stages, batch, chain, keep_rejected_text=self.config.output.rejected_text)
                    kept.write(kept_rows)
                    for r in rejected_rows:
                        rejected.write(r)
            stats = {"source": source, "responses": responses, "seconds": round(time.perf_counter() - t0, 3),
                     **read.to_dict(), **chain.to_dict()}
            return work.commit(stats, docs_in=responses)


def file_identity(path: str | None) -> list | None:
    """Size and modification time of a model file: replacing the file redoes what it scored."""
    if path is None or not os.path.isfile(path):
        return None
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def _worker_uri(uri: str) -> str:
    # Workers may not share the driver's working directory.
    return uri if is_s3(uri) else os.path.abspath(uri)


class ExtractedPhase(Phase):
    name = "extracted"
    unit_kind = "file"

    def settings(self, config: RunConfig) -> dict:
        out = {k: getattr(config, k).model_dump(mode="json") for k in ("warc", "charset", "extract", "langid", "filters")}
        if config.quality.enabled:  # the scoring half only: the filter runs after dedup
            out["quality"] = {**config.quality.model_dump(mode="json", exclude={"filter"}), "model_file": file_identity(config.quality.model)}
        return out | {"rejected_text": config.output.rejected_text}

    def check(self, config: RunConfig) -> None:
        check_chain([cls for cls, _ in chain_spec(config)])  # on the driver, before any worker starts

    def units(self, ctx: RunContext) -> list[Unit]:
        settings = fingerprint(self.settings(ctx.config))
        return [Unit(unit_name(f), fingerprint(f, settings), {"source": f}) for f in ctx.inputs]

    def run(self, ctx: RunContext, todo: list[Unit]):
        progress = Progress(self.name, len(todo), self.unit_kind, ctx.progress, counts=("responses", "kept"))
        try:
            yield from map_units(ctx.config, todo, FileWorker, workers=ctx.workers(), keep_worker=True, progress=progress)
        finally:
            progress.close()

    def summarize(self, stats: list[dict]) -> dict:
        total: Counter = Counter()
        by_type: Counter = Counter()
        reasons: Counter = Counter()
        seconds: Counter = Counter()
        counters: Counter = Counter()
        failed = {}
        for s in stats:
            if "failed" in s:
                failed[s.get("source", s["unit"])] = s["failed"]
                continue
            total.update({k: s[k] for k in ("responses", "kept", "rejected", "malformed_records")})
            by_type.update(s["records_by_type"])
            reasons.update(s["rejected_by_reason"])
            seconds.update(s["stage_seconds"])
            counters.update(s.get("stage_counters", {}))
        return {
            "files": len(stats),
            "files_failed": failed,
            **{k: total[k] for k in ("responses", "kept", "rejected", "malformed_records")},
            "records_by_type": dict(sorted(by_type.items())),
            "rejected_by_reason": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
            "errors": _error_rates(reasons, total["responses"]),
            "stage_seconds": {k: round(v, 2) for k, v in seconds.items()},
            "stage_counters": dict(sorted(counters.items())),
        }

    def headline(self, summary: dict) -> dict:
        return {k: summary[k] for k in ("files", "responses", "kept", "rejected", "malformed_records") if k in summary}


def _error_rates(reasons: Counter, responses: int) -> dict:
    """Per-record errors of our own code: count and share of responses, by reason."""
    out = {r: {"count": reasons[r], "share": round(reasons[r] / responses, 4)} for r in ERROR_REASONS if reasons.get(r)}
    if any(v["share"] > ERROR_WARN_SHARE for v in out.values()):
        import logging

        logging.getLogger(__name__).warning("phase extracted: per-record errors above %.0f%% of responses: %s "
                                            "(the first traceback of each kind is in the worker logs)", ERROR_WARN_SHARE * 100, out)
    return out


register(ExtractedPhase)
