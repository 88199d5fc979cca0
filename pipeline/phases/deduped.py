"""Phase ``deduped``: exact and MinHash-LSH deduplication of the whole corpus on Ray.

Deduplication is global, so the phase has one unit, the corpus, whose
fingerprint covers every input part; its steps (pipeline.dedup) resume on
their own (signatures part by part).  Each output part is marked done like any
other part, so the next phase reads it the usual way.
"""

from __future__ import annotations

from pipeline.config import RunConfig
from pipeline.context import RunContext
from pipeline.phase import Part, Phase, StepInfo, Unit
from pipeline.dedup import paragraphs
from pipeline.dedup.context import STAGE
from pipeline.dedup.ids import REASON as DUPLICATE_ID
from pipeline.dedup.earlier import REASON as DUPLICATE_EARLIER
from pipeline.dedup.context import DedupContext
from pipeline.dedup.driver import corpus_result, corpus_unit, deduplicate
from pipeline.dedup.resume import corpus_settings
from pipeline.dedup.write import part_unit
from pipeline.result import UnitResult
from stages.base import StageInfo, StageSpec
from stages.filters import text_filter_specs
from stages.dedup.keep import EXACT, NEAR, URL


class DedupedPhase(Phase):
    name = "deduped"
    label = "exact and near duplicates removed"
    unit_kind = "corpus"
    sections = ("dedup",)
    #: columns a kept document gets (pipeline/dedup/write.py, paragraphs.py)
    adds = ("dup_cluster_size", "para_dedup_removed", "para_dedup_chars_removed")

    def enabled(self, config: RunConfig) -> bool:
        return config.dedup.enabled

    def settings(self, config: RunConfig) -> dict:
        return corpus_settings(config.dedup, config.output.rejected_text)

    def declared_stages(self, config: RunConfig) -> list[StageInfo]:
        """The stages its removals name: document dedup, and paragraph dedup's filter rules on the rewritten texts."""
        if config.dedup.against:  # dedup.against: also copies of what earlier runs kept
            out = [StageInfo(STAGE, "exact and near duplicates removed (within the run and of earlier runs' documents)",
                             ("text",), (), (EXACT, URL, NEAR, DUPLICATE_ID, DUPLICATE_EARLIER))]
        else:
            out = [StageInfo(STAGE, "exact and near duplicates removed", ("text",), (), (EXACT, URL, NEAR, DUPLICATE_ID))]
        if config.dedup.paragraphs.enabled:
            rules = [r for cls, cfg in text_filter_specs(config.filters) for r in StageSpec(cls, cfg).info().reasons]
            out.append(StageInfo(paragraphs.STAGE, "repeated paragraphs removed; documents too short after it",
                                 ("text",), ("para_dedup_removed", "para_dedup_chars_removed"), (paragraphs.EMPTY, *rules)))
        return out

    def steps(self, config: RunConfig) -> list[StepInfo]:
        return [StepInfo(name, label) for name, label, on in STEPS if on(config.dedup)]

    def units(self, ctx: RunContext) -> list[Unit]:
        return [corpus_unit(ctx.parts(ctx.source(self)), ctx.config)]

    def run(self, ctx: RunContext, todo: list[Unit]):
        for corpus in todo:
            source = ctx.source(self)
            p2 = DedupContext(ctx.config, ctx.storage, tuple(corpus.params["parts"]), ctx.workers(), ctx.progress,
                               source.name if source else "extracted")
            summary = deduplicate(p2, corpus, corpus.params["signature_fingerprint"])
            if "failed_parts" in summary:
                failed = summary["failed_parts"]
                yield UnitResult.failure(corpus.name, f"{len(failed)} parts failed: " +
                                         "; ".join(f"{k}: {v}" for k, v in list(failed.items())[:5]))
            else:
                result = corpus_result(summary, corpus.name)
                result.fingerprint = corpus.fingerprint
                yield result

    def parts(self, ctx: RunContext) -> list[Part]:
        """Every part of the corpus, once the corpus is done (each part's marker must be current too)."""
        (corpus,) = ctx.units_of(self)
        if ctx.marker(self, corpus) is None:
            return []
        markers = ctx.markers(self)
        out = []
        for name in corpus.params["parts"]:
            fp = part_unit(corpus.fingerprint, name).fingerprint
            marker = markers.get(name)
            if marker is not None and marker.fingerprint == fp and marker.outputs.get("documents_part"):
                out.append(Part(name, fp))
        return out


#: The steps of the phase (pipeline/dedup/driver.py), in order: name, label, whether the config runs it.
STEPS = (
    ("signatures", "MinHash signatures, LSH band keys and exact hashes, part by part", lambda d: True),
    ("ids", "documents with the same id across parts", lambda d: True),
    ("boilerplate", "signature values a host's pages share (host boilerplate)", lambda d: d.minhash.enabled and d.minhash.boilerplate.enabled),
    ("content", "content candidates of pages with a long host block", lambda d: d.minhash.enabled and d.minhash.boilerplate.enabled),
    ("earlier", "documents an earlier run kept (dedup.against): exact hash or LSH key + signature check", lambda d: bool(d.against)),
    ("edges", "candidate pairs from shared band keys and exact hashes (shuffle by key)", lambda d: True),
    ("verify", "candidate pairs checked against their signatures", lambda d: d.minhash.enabled and d.minhash.verify != "off"),
    ("components", "connected components of the duplicate graph", lambda d: True),
    ("decisions", "one document kept per cluster, the others removed", lambda d: True),
    ("paragraphs", "repeated paragraphs or lines found across the corpus (shuffle by hash)", lambda d: d.paragraphs.enabled),
    ("write", "kept and removed documents written, part by part", lambda d: True),
)
