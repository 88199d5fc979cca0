"""What phase 2 can reuse from an earlier run, and what it must delete.

Deduplication is global: a change to any input part or to the config changes
every decision, so the outputs are reused or discarded as a whole.

* ``_done/deduped/_phase.json`` -- written last; records the fingerprint of
  the inputs and config, and the summary.  Same fingerprint: phase 2 is skipped.
* ``dedup/manifest.json`` -- the fingerprint of what step 1 depends on.  Same
  fingerprint: step 1's per-part outputs are kept and step 1 resumes part by
  part; the later steps always run again.
"""

from __future__ import annotations

import hashlib
import json

from pipeline.phase2.context import PHASE, SOURCE_PHASE, Phase2Context, part_file
from pipeline.storage import Storage
from stages.dedup import lsh

#: Outputs of steps 2-4: rebuilt on every run, since they depend on all parts.
REBUILT_STEPS = ("edges", "edges-verified", "components", "decisions")


def input_parts(storage: Storage) -> list[str]:
    """Units whose phase-1 part is complete (marker written), sorted: part number = position."""
    done = {n.removesuffix(".json") for n in storage.list("_done", SOURCE_PHASE, suffix=".json")}
    parts = {n.removeprefix("part-").removesuffix(".parquet") for n in storage.list("documents", SOURCE_PHASE, suffix=".parquet")}
    return sorted(done & parts)


def _fingerprint(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _part_sizes(storage: Storage, units: tuple[str, ...]) -> list[int]:
    infos = storage.fs.get_file_info([storage.path("documents", SOURCE_PHASE, part_file(u)) for u in units])
    return [i.size for i in infos]


def fingerprints(ctx: Phase2Context) -> tuple[str, str]:
    """(step 1's fingerprint, the whole phase's fingerprint) of these input parts and this config."""
    cfg = ctx.dedup
    signature_inputs = {"parts": list(zip(ctx.units, _part_sizes(ctx.storage, ctx.units))), "exact": cfg.exact.model_dump(),
                        "minhash": cfg.minhash.model_dump(), "keep": cfg.keep.score_column, "batch_docs": cfg.batch_docs}
    phase_inputs = {**signature_inputs, "components": cfg.components.model_dump(), "rejected_text": ctx.config.output.rejected_text}
    return _fingerprint(signature_inputs), _fingerprint(phase_inputs)


def finished_summary(storage: Storage, phase_fingerprint: str) -> dict | None:
    """The summary of a finished phase 2 with these inputs and config, if there is one."""
    if not storage.exists("_done", PHASE, "_phase.json"):
        return None
    previous = storage.read_json("_done", PHASE, "_phase.json")
    return previous["summary"] if previous.get("fingerprint") == phase_fingerprint else None


def clear_stale(storage: Storage, signature_fingerprint: str) -> None:
    """Delete the outputs this run will rewrite; keep step 1's outputs if they are still valid."""
    for folder in (("documents", PHASE), ("rejected", PHASE), ("_done", PHASE)):
        storage.delete_dir(*folder)
    if storage.exists("dedup", "manifest.json") and storage.read_json("dedup", "manifest.json").get("fingerprint") != signature_fingerprint:
        storage.delete_dir("dedup")
    for step in REBUILT_STEPS:
        storage.delete_dir("dedup", step)


def write_manifest(ctx: Phase2Context, signature_fingerprint: str) -> tuple[int, int]:
    """Record what step 1's outputs belong to; returns the LSH (bands, rows)."""
    bands, rows = lsh.bands_rows(ctx.dedup.minhash)
    ctx.storage.write_json({"fingerprint": signature_fingerprint, "parts": list(ctx.units), "bands": bands, "rows": rows},
                           "dedup", "manifest.json")
    return bands, rows


def mark_done(ctx: Phase2Context, phase_fingerprint: str, summary: dict) -> None:
    ctx.storage.write_json({"fingerprint": phase_fingerprint, "parts": list(ctx.units), "summary": summary}, "_done", PHASE, "_phase.json")
