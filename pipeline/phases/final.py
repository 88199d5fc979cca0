"""Phase ``final``: the text that will be tokenized, part by part after dedup.

Runs only on documents that survive dedup, so no work is spent on copies:
first the quality filter (a threshold, or the best fraction of each language,
on the ``quality_score`` computed in phase 1), then PII redaction on what is
left.  ``documents/final`` holds exactly the text the shards are made of.
"""

from __future__ import annotations

from pipeline.config import RunConfig
from pipeline.context import RunContext
from pipeline.distribute import map_units
from pipeline.part_phase import PartPhase
from pipeline.phase import Unit, fingerprint
from pipeline.top_fraction import ScanWorker, top_fraction_over_parts
from stages.base import StageSpec
from stages.pii import PiiStage
from stages.quality import Cutoff, QualityFilterStage


class FinalPhase(PartPhase):
    name = "final"
    label = "quality filter and PII redaction: the text to tokenize"
    keep_worker = True  # the PII analyzer is built once per Ray worker process
    sections = ("quality.filter", "pii")

    def enabled(self, config: RunConfig) -> bool:
        return config.quality.filter.active or config.pii.enabled

    def settings(self, config: RunConfig) -> dict:
        return {"quality_filter": config.quality.filter.model_dump(mode="json"),
                "pii": config.pii.model_dump(mode="json") if config.pii.enabled else None}

    def units(self, ctx: RunContext) -> list[Unit]:
        units = super().units(ctx)
        if ctx.config.quality.filter.top_fraction is None:
            return units
        # The cutoffs depend on every part: a change to any part redoes them all.
        corpus = fingerprint(sorted(u.fingerprint for u in units))
        return [Unit(u.name, fingerprint(u.fingerprint, corpus), u.params) for u in units]

    def prepare(self, ctx: RunContext, todo: list[Unit]) -> dict | None:
        """Per-language cutoffs of the top fraction, over every part (not only those to do)."""
        fraction = ctx.config.quality.filter.top_fraction
        if fraction is None:
            return None
        source = ctx.source(self).name
        parts = [Unit(p.name, p.fingerprint) for p in ctx.parts(ctx.source(self))]

        def scan(boundary):
            return map_units(ctx.config, parts, ScanWorker, workers=ctx.workers(), extra={"source": source, "boundary": boundary})

        return {lang: c.to_dict() for lang, c in top_fraction_over_parts(scan, fraction).items()}

    def stages(self, config: RunConfig, prepared: dict | None = None) -> list[StageSpec]:
        specs = []
        if config.quality.filter.active:
            cutoffs = {k: Cutoff.from_dict(v) for k, v in (prepared or {}).items()} if prepared is not None else None
            specs.append(StageSpec(QualityFilterStage, config.quality.filter, "quality.filter", (cutoffs,)))
        if config.pii.enabled:  # after the filter: no PII work on documents it removes
            specs.append(StageSpec(PiiStage, config.pii, "pii"))
        return specs
