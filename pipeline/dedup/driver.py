"""The phase-2 driver: resume, then the steps in order, then the summary and the corpus marker."""

from __future__ import annotations

import logging
import time
from collections import Counter

from pipeline.config import RunConfig
from pipeline.phase import Part, Unit, fingerprint
from pipeline.dedup import boilerplate, components, content, decisions, earlier, edges, ids, resume, signatures, verify, write
from pipeline.dedup import index as dedup_index
from pipeline.dedup import paragraphs  # 
from pipeline.dedup.context import PHASE, DedupContext, timed
from core.storage import Storage
from core.layout import marker_path
from pipeline.result import UnitResult, summarize
from pipeline.units import UnitWork

log = logging.getLogger(__name__)

#: The phase's one unit of work: the whole corpus (its marker is _done/deduped/_corpus.json).
CORPUS = "_corpus"


def corpus_unit(parts: list[Part], config: RunConfig) -> Unit:
    """The unit that deduplicates ``parts``: its fingerprint covers every part and the settings."""
    parts = sorted(parts, key=lambda p: p.name)
    settings = resume.corpus_settings(config.dedup, config.output.rejected_text)
    settings.update(paragraphs.settings(config))  # paragraph dedup and the rules it re-applies ({} when off)
    if config.dedup.enabled and config.dedup.against:  # each earlier run's root and index identity ({} when none)
        settings["against_indexes"] = dedup_index.identities(config)
    return Unit(CORPUS, fingerprint([(p.name, p.fingerprint) for p in parts], settings),
                {"parts": [p.name for p in parts], "signature_fingerprint": resume.signature_fingerprint(parts, config.dedup)})


def run_dedup(config: RunConfig, storage: Storage, workers: int, progress: bool = True, source: str = "extracted") -> dict:
    """Deduplicate every finished part of ``source`` under the output root; returns the summary.

    The library entry point (the runner goes through pipeline.phases.deduped):
    a part is finished when it has a marker; its fingerprint is the marker's.
    Skipped, with the earlier summary and ``skipped: True``, when the corpus
    marker is current.
    """
    corpus = corpus_unit(finished_parts(storage, source), config)
    if storage.exists(*marker_path(PHASE, CORPUS)):
        marker = storage.read_json(*marker_path(PHASE, CORPUS))
        if marker.get("fingerprint") == corpus.fingerprint:
            log.warning("phase deduped: already done for these %d parts and this config; skipping", len(corpus.params["parts"]))
            return {**summarize([UnitResult.from_json(marker)]), "skipped": True}
    ctx = DedupContext(config, storage, tuple(corpus.params["parts"]), workers, progress, source)
    return deduplicate(ctx, corpus, corpus.params["signature_fingerprint"])


def finished_parts(storage: Storage, phase: str) -> list[Part]:
    """Parts of ``phase`` with a marker and a documents file, fingerprinted by their marker."""
    names = {n.removesuffix(".json") for n in storage.list("_done", phase, suffix=".json") if "/" not in n}
    files = {n.removeprefix("part-").removesuffix(".parquet") for n in storage.list("documents", phase, suffix=".parquet")}
    parts = []
    for name in sorted(names & files):
        marker = storage.read_json("_done", phase, f"{name}.json")
        parts.append(Part(name, marker.get("fingerprint") or fingerprint(marker)))
    return parts


def deduplicate(ctx: DedupContext, corpus: Unit, signature_fp: str) -> dict:
    """Deduplicate the parts in ``ctx``; returns the summary (``failed_parts`` set if a part failed).

    On success the corpus marker is written last, with the summary.
    """
    t_start = time.perf_counter()
    resume.clear_stale(ctx.storage, signature_fp)
    bands, rows = resume.write_manifest(ctx, signature_fp)
    summary = {"parts": len(ctx.units), "bands": bands, "rows": rows, "step_seconds": {}}
    if not ctx.units:
        summary.update({"in": 0, "kept": 0, "rejected": 0, "rejected_by_reason": {}})
        return _done(ctx, corpus, summary)
    steps = summary["step_seconds"]

    with timed(steps, "signatures"):
        sig_stats = signatures.compute_signatures(ctx, signature_fp)
    failed = {s["unit"]: s["failed"] for s in sig_stats if "failed" in s}
    if failed:
        # Deduplication is global: without every part it would be wrong, so stop
        # here with no outputs and no completion marker (a rerun retries).
        log.error("phase deduped: %d of %d parts could not be read; no output written", len(failed), len(ctx.units))
        return {**summary, "failed_parts": failed, "seconds": round(time.perf_counter() - t_start, 2)}
    summary.update(signatures.summarize(sig_stats))
    use_score = any(s.get("has_score") for s in sig_stats)  # any part with scores: keep the best-scored copy

    with timed(steps, "ids"):
        summary.update(ids.find_duplicate_ids(ctx))

    # host boilerplate (2a) first: the content rows of 2c join the LSH buckets of step 2
    with timed(steps, "boilerplate"):
        summary.update(boilerplate.find_boilerplate(ctx, summary["bucket_rows"]))
    with timed(steps, "content"):
        summary.update(content.content_buckets(ctx))
    if earlier.needed(ctx):  # documents an earlier run kept (dedup.against): removed before the graph
        with timed(steps, "earlier"):
            summary.update(earlier.find_earlier(ctx))

    with timed(steps, "edges"):
        edge_set, info = edges.find_edges(ctx, sig_stats)
    summary.update(info)

    if verify.needed(ctx, edge_set):
        with timed(steps, "verify"):
            edge_set = verify.verify_edges(ctx, edge_set)
        summary["edges_verified"] = edge_set.rows

    summary["components_path"] = "local" if components.is_local(ctx, edge_set) else "distributed"
    found = None
    if edge_set.rows:
        with timed(steps, "components"):
            found, info = components.find_components(ctx, edge_set)
        summary.update(info)
    if found is not None or summary["duplicate_ids"] or summary.get("duplicate_earlier"):
        with timed(steps, "decisions"):
            summary.update(decisions.decide(ctx, found, use_score))

    para = None
    if ctx.dedup.paragraphs.enabled:  # paragraph dedup, after document dedup (docs/dedup.md)
        with timed(steps, "paragraphs"):
            para = paragraphs.find_repeated(ctx)

    with timed(steps, "write"):
        part_stats = write.write_outputs(ctx, corpus.fingerprint)
    failed = {r.unit: r.failed for r in part_stats if r.failed is not None}
    summary["seconds"] = round(time.perf_counter() - t_start, 2)
    if failed:  # no corpus marker: the next run redoes the phase
        log.error("phase deduped: %d of %d parts could not be written", len(failed), len(ctx.units))
        return {**summary, "failed_parts": failed}
    summary.update({**write.summarize(part_stats), "use_score": use_score})
    if para is not None:  # 
        summary["paragraphs"] = paragraphs.summarize_parts(para, [r.totals for r in part_stats])
    summary = _done(ctx, corpus, summary)
    if not ctx.dedup.keep_intermediate:
        ctx.storage.delete_dir("dedup")
    return summary


def corpus_result(summary: dict, unit: str = CORPUS) -> UnitResult:
    """The corpus unit's result from the driver's summary: its documents in, kept and removed, the rest as totals."""
    rest = {k: v for k, v in summary.items() if k not in ("in", "kept", "rejected", "rejected_by_reason", "failed_parts")}
    return UnitResult(unit, docs_in=summary.get("in", 0), kept=summary.get("kept", 0), rejected=summary.get("rejected", 0),
                      by_reason=Counter(summary.get("rejected_by_reason") or {}), totals=rest)


def _done(ctx: DedupContext, corpus: Unit, summary: dict) -> dict:
    """Write the index's settings file and the corpus marker (the phase's completion), holding the summary; returns the summary."""
    # the index of what this run kept is complete once its settings file is written (pipeline/dedup/index.py)
    dedup_index.write_settings(ctx.storage, ctx.dedup, corpus.fingerprint, list(ctx.units), summary["kept"])
    summary["index_bytes"] = sum(ctx.storage.fs.get_file_info(f).size for f in ctx.files(dedup_index.FOLDER))
    result = corpus_result(summary)
    result.outputs["part_names"] = list(ctx.units)
    UnitWork(ctx.storage, corpus, marker_path(PHASE, CORPUS)).commit(result)
    return summary
