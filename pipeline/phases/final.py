"""Phase ``final``: the text that will be tokenized, part by part after dedup.

Runs only on documents that survive dedup, so no work is spent on copies:
first the classifiers' filters (each a threshold, or the best fraction of each
language, on the ``<name>_score`` computed in phase 1), then PII redaction on
what is left.  ``documents/final`` holds exactly the text the shards are made of.
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
from stages.classify import ClassifierFilterStage
from stages.top_fraction import Cutoff


class FinalPhase(PartPhase):
    name = "final"
    label = "classifier filters and PII redaction: the text to tokenize"
    keep_worker = True  # the PII analyzer is built once per Ray worker process
    sections = ("classifiers", "pii")

    def enabled(self, config: RunConfig) -> bool:
        return bool(filtering(config)) or config.pii.enabled

    def settings(self, config: RunConfig) -> dict:
        return {"classifier_filters": {c.name: c.filter.model_dump(mode="json") for c in filtering(config)},
                "pii": config.pii.model_dump(mode="json") if config.pii.enabled else None}

    def units(self, ctx: RunContext) -> list[Unit]:
        units = super().units(ctx)
        if not by_fraction(ctx.config):
            return units
        # The cutoffs depend on every part: a change to any part redoes them all.
        corpus = fingerprint(sorted(u.fingerprint for u in units))
        return [Unit(u.name, fingerprint(u.fingerprint, corpus), u.params) for u in units]

    def prepare(self, ctx: RunContext, todo: list[Unit]) -> dict | None:
        """Per classifier with a top fraction, its per-language cutoffs, over every part (not only those to do)."""
        ranked = by_fraction(ctx.config)
        if not ranked:
            return None
        source = ctx.source(self).name
        parts = [Unit(p.name, p.fingerprint) for p in ctx.parts(ctx.source(self))]
        out = {}
        for c in ranked:
            def scan(boundary, column=c.score_column):
                return map_units(ctx.config, parts, ScanWorker, workers=ctx.workers(),
                                 extra={"source": source, "boundary": boundary, "column": column})

            out[c.name] = {lang: cut.to_dict() for lang, cut in top_fraction_over_parts(scan, c.filter.value_for).items()}
        return out

    def stages(self, config: RunConfig, prepared: dict | None = None) -> list[StageSpec]:
        specs = []
        for c in filtering(config):
            cutoffs = None
            if c.filter.top_fraction is not None and prepared is not None:
                cutoffs = {k: Cutoff.from_dict(v) for k, v in prepared.get(c.name, {}).items()}
            specs.append(StageSpec(ClassifierFilterStage, c, f"classifiers.{config.classifiers.index(c)}.filter", (cutoffs,)))
        if config.pii.enabled:  # after the filter: no PII work on documents it removes
            specs.append(StageSpec(PiiStage, config.pii, "pii"))
        return specs


def filtering(config: RunConfig) -> list:
    """The classifiers that filter, in their order."""
    return [c for c in config.classifiers if c.filter.active]


def by_fraction(config: RunConfig) -> list:
    """The classifiers whose filter keeps a top fraction (a decision over every part)."""
    return [c for c in config.classifiers if c.filter.top_fraction is not None]
