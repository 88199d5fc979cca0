"""The phase-2 driver: resume, then the steps in order, then the summary."""

from __future__ import annotations

import logging
import time

from pipeline.config import RunConfig
from pipeline.phase2 import components, decisions, edges, resume, signatures, verify, write
from pipeline.phase2.context import Phase2Context, timed
from pipeline.storage import Storage

log = logging.getLogger(__name__)


def run_phase2(config: RunConfig, storage: Storage, workers: int, progress: bool = True) -> dict:
    """Deduplicate every phase-1 part under the output root; returns the phase summary."""
    t_start = time.perf_counter()
    ctx = Phase2Context(config, storage, tuple(resume.input_parts(storage)), workers, progress)
    signature_fp, phase_fp = resume.fingerprints(ctx)
    finished = resume.finished_summary(storage, phase_fp)
    if finished is not None:
        log.warning("phase 2: already done for these %d parts and this config; skipping", len(ctx.units))
        return {**finished, "skipped": True}
    resume.clear_stale(storage, signature_fp)
    bands, rows = resume.write_manifest(ctx, signature_fp)
    summary = {"parts": len(ctx.units), "bands": bands, "rows": rows, "step_seconds": {}}
    if not ctx.units:
        summary.update({"in": 0, "kept": 0, "rejected": 0, "rejected_by_reason": {}})
        resume.mark_done(ctx, phase_fp, summary)
        return summary
    steps = summary["step_seconds"]

    with timed(steps, "signatures"):
        sig_stats = signatures.compute_signatures(ctx)
    failed = {s["unit"]: s["failed"] for s in sig_stats if "failed" in s}
    if failed:
        # Deduplication is global: without every part it would be wrong, so stop
        # here with no outputs and no completion marker (a rerun retries).
        log.error("phase 2: %d of %d parts could not be read; no output written", len(failed), len(ctx.units))
        summary.update({"failed_parts": failed, "seconds": round(time.perf_counter() - t_start, 2)})
        return summary
    summary.update(signatures.summarize(sig_stats))
    use_score = any(s.get("has_score") for s in sig_stats)  # any part with scores: keep the best-scored copy

    with timed(steps, "edges"):
        edge_set, info = edges.find_edges(ctx, sig_stats)
    summary.update(info)

    if verify.needed(ctx, edge_set):
        with timed(steps, "verify"):
            edge_set = verify.verify_edges(ctx, edge_set)
        summary["edges_verified"] = edge_set.rows

    summary["components_path"] = "local" if components.is_local(ctx, edge_set) else "distributed"
    if edge_set.rows:
        with timed(steps, "components"):
            found, info = components.find_components(ctx, edge_set)
        summary.update(info)
        with timed(steps, "decisions"):
            decisions.decide(ctx, found, use_score)

    with timed(steps, "write"):
        part_stats = write.write_outputs(ctx)
    summary.update({**write.summarize(part_stats), "use_score": use_score, "seconds": round(time.perf_counter() - t_start, 2)})
    resume.mark_done(ctx, phase_fp, summary)
    if not ctx.dedup.keep_intermediate:
        storage.delete_dir("dedup")
    return summary
