"""Phase ``final``: the text that will be tokenized, part by part after dedup.

Decontamination against the eval sets comes first (pipeline/eval_index.py; docs/decontam.md says why
here: after dedup, before PII redaction rewrites the text).  With named sources, each part's stages have
its source's own settings (pipeline/sources.py).

Runs only on documents that survive dedup, so no work is spent on copies:
first the classifiers' filters (each a threshold, or the best fraction of each
language, on the ``<name>_score`` computed in phase 1), then PII redaction on
what is left.  ``documents/final`` holds exactly the text the shards are made of.
"""

from __future__ import annotations

from dataclasses import asdict

from pipeline import eval_index
from pipeline.config import RunConfig
from pipeline.context import RunContext
from pipeline.distribute import map_units
from pipeline.engine.columns import UnitList
from pipeline.phase import MapPhase, Unit
from pipeline.plugins import ScoreRule, score_rules, user_stages
from pipeline.sources import overrides_shown
from pipeline.top_fraction import ScanWorker, top_fraction_over_parts
from stages.base import StageSpec
from stages.classify import ClassifierFilterStage
from stages.decontam import DecontamStage
from stages.pii import PiiStage
from stages.top_fraction import Cutoff


class FinalPhase(MapPhase):
    name = "final"
    label = "decontamination, classifier filters and PII redaction: the text to tokenize"
    keep_worker = True  # the PII analyzer is built once per Ray worker process
    sections = ("decontam", "classifiers", "stages", "pii")

    def enabled(self, config: RunConfig) -> bool:
        if config.decontam.enabled or any(self.enabled(config.for_source(s.name)) for s in config.sources):
            return True
        return bool(filtering(config)) or config.pii.enabled or bool(user_stages(config, "final"))

    def corpus_wide(self, config: RunConfig) -> bool:
        """A top fraction's cutoffs are decided over every part: a change to any part redoes them all."""
        return bool(by_fraction(config))

    def overrides(self, config: RunConfig) -> dict:
        """For the plan: each named source's own filter settings."""
        shown = {
            n: {k: v for k, v in keys.items() if ".filter." in f".{k}."} for n, keys in overrides_shown(config).items()
        }
        return {n: keys for n, keys in shown.items() if keys}

    def prepare(self, ctx: RunContext, todo: list[Unit]) -> eval_index.Prepared:
        """The eval index (built once here, shipped to every worker) and the stages' own global data."""
        index, self.index_stats = eval_index.build(ctx)
        return eval_index.Prepared(self.cutoffs(ctx, todo), index)

    def finish(self, summary: dict) -> dict:
        if getattr(self, "index_stats", None) is not None:  # built by this invocation (not when every part was done)
            summary["decontam_index"] = asdict(self.index_stats)
        return summary

    def cutoffs(self, ctx: RunContext, todo: list[Unit]) -> dict | None:
        """Per classifier with a top fraction, its per-language cutoffs, over every part (not only those to do)."""
        ranked = by_fraction(ctx.config)
        if not ranked:
            return None
        source = ctx.source(self).name
        read = ctx.parts(ctx.source(self))
        parts = UnitList.of(read.names, read.fingerprints)
        out = {}
        for c in ranked:

            def scan(boundary, column=c.score_column):
                return map_units(
                    ctx.config,
                    parts,
                    ScanWorker,
                    workers=ctx.workers(),
                    extra={"source": source, "boundary": boundary, "column": column},
                )

            out[c.name] = {
                lang: cut.to_dict() for lang, cut in top_fraction_over_parts(scan, c.filter.value_for).items()
            }
        return out

    def stages(self, config: RunConfig, prepared: dict | None = None) -> list[StageSpec]:
        index, prepared = eval_index.unpack(prepared)  # first, before anything rewrites the text
        specs = [StageSpec(DecontamStage, config.decontam, "decontam", (index,))] if config.decontam.enabled else []
        for c in filtering(config):
            cutoffs = None
            if c.filter.top_fraction is not None and prepared is not None:
                cutoffs = {k: Cutoff.from_dict(v) for k, v in prepared.get(c.name, {}).items()}
            specs.append(StageSpec(ClassifierFilterStage, c, _filter_section(config, c), (cutoffs,)))
        specs += user_stages(config, "final")  # the run's own stages, after the filters, before PII redaction
        if config.pii.enabled:  # after the filter: no PII work on documents it removes
            specs.append(StageSpec(PiiStage, config.pii, "pii"))
        return specs


def filtering(config: RunConfig) -> list:
    """The classifiers that filter, in their order, then the taggers whose declared score filters (``stages:``
    entries with a ``filter``: the same rule, on their score)."""
    return [c for c in config.classifiers if c.filter.active] + [r for _, r in score_rules(config)]


def by_fraction(config: RunConfig) -> list:
    """The classifiers and taggers whose filter keeps a top fraction (a decision over every part)."""
    return [c for c in filtering(config) if c.filter.top_fraction is not None]


def _filter_section(config: RunConfig, rule) -> str:
    """Where a filter's settings sit in the run config."""
    if isinstance(rule, ScoreRule):
        return f"stages.{next(i for i, r in score_rules(config) if r == rule)}.filter"
    return f"classifiers.{config.classifiers.index(rule)}.filter"
