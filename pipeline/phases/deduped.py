"""Phase ``deduped``: exact and MinHash-LSH deduplication of the whole corpus on Ray.

Deduplication is global, so the phase has one unit, the corpus, whose
fingerprint covers every input part; its steps (pipeline.phase2) resume on
their own (signatures part by part).  Each output part is marked done like any
other part, so the next phase reads it the usual way.
"""

from __future__ import annotations

from pipeline.config import RunConfig
from pipeline.context import RunContext
from pipeline.phase import Part, Phase, Unit, register
from pipeline.phase2.context import Phase2Context
from pipeline.phase2.driver import corpus_unit, deduplicate
from pipeline.phase2.resume import corpus_settings
from pipeline.phase2.write import part_unit


class DedupedPhase(Phase):
    name = "deduped"
    unit_kind = "corpus"

    def enabled(self, config: RunConfig) -> bool:
        return config.dedup.enabled

    def settings(self, config: RunConfig) -> dict:
        return corpus_settings(config.dedup, config.output.rejected_text)

    def units(self, ctx: RunContext) -> list[Unit]:
        return [corpus_unit(ctx.parts(ctx.source(self)), ctx.config)]

    def run(self, ctx: RunContext, todo: list[Unit]):
        for corpus in todo:
            source = ctx.source(self)
            p2 = Phase2Context(ctx.config, ctx.storage, tuple(corpus.params["parts"]), ctx.workers(), ctx.progress,
                               source.name if source else "extracted")
            summary = deduplicate(p2, corpus, corpus.params["signature_fingerprint"])
            if "failed_parts" in summary:
                yield {"unit": corpus.name, "failed": f"{len(summary['failed_parts'])} parts failed", **summary}
            else:
                yield {"unit": corpus.name, **summary}

    def summarize(self, stats: list[dict]) -> dict:
        (corpus,) = stats
        hidden = ("unit", "fingerprint", "failed", "part_names")
        return {k: v for k, v in corpus.items() if k not in hidden}

    def parts(self, ctx: RunContext) -> list[Part]:
        """Every part of the corpus, once the corpus is done (each part's marker must be current too)."""
        (corpus,) = ctx.units_of(self)
        if ctx.marker(self, corpus) is None:
            return []
        markers = ctx.markers(self)
        out = []
        for name in corpus.params["parts"]:
            fp = part_unit(corpus.fingerprint, name).fingerprint
            if markers.get(name, {}).get("fingerprint") == fp and markers[name].get("documents_part"):
                out.append(Part(name, fp))
        return out


register(DedupedPhase)
