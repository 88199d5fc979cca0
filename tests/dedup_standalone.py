"""The deduped phase run on its own, over the parts an earlier phase finished: the tests' and benchmarks' entry.

A run goes through the runner (``curate run``, ``--phases``); tests and benchmarks write phase-1 parts
themselves (or reuse a run's) and deduplicate them again with other settings, which the runner would refuse
(its ``--phases`` needs the source phase run for the same inputs and settings).  Moved here from
pipeline/phases/deduped.py (issue 40): nothing in the product reaches it.
"""

from __future__ import annotations

from core.storage import Storage
from pipeline.config import RunConfig
from pipeline.context import RunContext
from pipeline.dedup.context import SOURCE_PHASE
from pipeline.engine.run import run_phase
from pipeline.phase import Part, Phase, Unit, fingerprint
from pipeline.phases.deduped import DedupedPhase


class FinishedParts(Phase):
    """The parts an earlier run of phase ``name`` finished (a marker and a documents file each), as a phase
    reads them when it runs on its own (:func:`run_dedup`)."""

    def __init__(self, name: str):
        self.name = name


def finished_parts(storage: Storage, phase: str) -> list[Part]:
    """Parts of ``phase`` with a marker and a documents file, fingerprinted by their marker."""
    names = {n.removesuffix(".json") for n in storage.list("_done", phase, suffix=".json") if "/" not in n}
    files = {
        n.removeprefix("part-").removesuffix(".parquet") for n in storage.list("documents", phase, suffix=".parquet")
    }
    parts = []
    for name in sorted(names & files):
        marker = storage.read_json("_done", phase, f"{name}.json")
        parts.append(Part(name, marker.get("fingerprint") or fingerprint(marker)))
    return parts


def standalone(
    config: RunConfig, storage: Storage, workers: int | None = None, progress: bool = True, source: str = SOURCE_PHASE
) -> RunContext:
    """A run of the deduped phase alone, over every part of ``source`` that has a marker."""
    ctx = RunContext(config, storage, [], [FinishedParts(source), DedupedPhase()], progress=progress, _workers=workers)
    ctx.use_parts(source, finished_parts(storage, source))
    return ctx


def corpus_unit(config: RunConfig, storage: Storage, source: str = SOURCE_PHASE) -> Unit:
    """The unit that deduplicates every finished part of ``source``: its fingerprint covers the parts and settings."""
    ctx = standalone(config, storage, source=source)
    (unit,) = ctx.units_of(ctx.phases[-1])
    return unit


def run_dedup(
    config: RunConfig, storage: Storage, workers: int, progress: bool = True, source: str = SOURCE_PHASE
) -> dict:
    """Deduplicate every finished part of ``source`` under the output root; returns the phase summary.

    A part is finished when it has a marker; its
    fingerprint is the marker's.  Skipped, with the earlier summary and ``skipped: True``, when the corpus marker
    is current; ``failed_parts`` names the parts that failed (then nothing is published).
    """
    ctx = standalone(config, storage, workers, progress, source)
    summary = run_phase(ctx, ctx.phases[-1])
    if summary["units"] and summary["units_skipped"] == summary["units"]:
        summary["skipped"] = True
    if summary.get("failed_steps"):
        summary["failed_parts"] = {u: e for errors in summary["failed_steps"].values() for u, e in errors.items()}
    return summary
