"""What the dedup steps can reuse from an earlier run, and what it must delete.

Deduplication is global: a change to any input part or to the config changes
every decision, so the outputs are reused or discarded as a whole.

* ``_done/deduped/_corpus.json`` -- the phase's one unit of work, written
  last: the fingerprint of the input parts and the settings, and the summary.
  The runner skips the phase when it is current.
* ``dedup/manifest.json`` -- the fingerprint of what step 1 depends on.  Same
  fingerprint: step 1's per-part outputs are kept and step 1 resumes part by
  part; the later steps always run again.
"""

from __future__ import annotations

from pipeline.phase import Part, fingerprint
from pipeline.dedup.context import PHASE, DedupContext
from pipeline.dedup.index import FOLDER as INDEX
from core.storage import Storage
from stages.dedup import lsh
from stages.dedup.config import DedupConfig

#: Outputs of steps 2-4: rebuilt on every run, since they depend on all parts.
REBUILT_STEPS = ("boilerplate", "buckets-content", "earlier-duplicates", "edges", "edges-verified", "components", "decisions")


def signature_settings(dedup: DedupConfig) -> dict:
    """The settings step 1's outputs depend on."""
    out = {"exact": dedup.exact.model_dump(), "minhash": dedup.minhash.model_dump(), "keep": dedup.keep.score_column,
           "batch_docs": dedup.batch_docs}
    return out | ({"source_priority": dedup.keep.source_priority} if dedup.keep.source_priority else {})


def corpus_settings(dedup: DedupConfig, rejected_text: bool) -> dict:
    """The settings the phase's outputs depend on."""
    out = {**signature_settings(dedup), "components": dedup.components.model_dump(), "rejected_text": rejected_text}
    return out | ({"against": dedup.against} if dedup.against else {})


def signature_fingerprint(parts: list[Part], dedup: DedupConfig) -> str:
    return fingerprint([(p.name, p.fingerprint) for p in parts], signature_settings(dedup))


def clear_stale(storage: Storage, signature_fp: str) -> None:
    """Delete the outputs this run will rewrite; keep step 1's outputs if they are still valid."""
    for folder in (("documents", PHASE), ("rejected", PHASE), ("_done", PHASE), (INDEX,)):
        storage.delete_dir(*folder)
    if storage.exists("dedup", "manifest.json") and storage.read_json("dedup", "manifest.json").get("fingerprint") != signature_fp:
        storage.delete_dir("dedup")
    for step in REBUILT_STEPS:
        storage.delete_dir("dedup", step)


def write_manifest(ctx: DedupContext, signature_fp: str) -> tuple[int, int]:
    """Record what step 1's outputs belong to; returns the LSH (bands, rows)."""
    bands, rows = lsh.bands_rows(ctx.dedup.minhash)
    ctx.storage.write_json({"fingerprint": signature_fp, "parts": list(ctx.units), "bands": bands, "rows": rows},
                           "dedup", "manifest.json")
    return bands, rows
