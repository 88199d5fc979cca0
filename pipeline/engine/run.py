"""Run one phase: the units whose markers are not current, then its summary over all its units.

A map phase's units go to Ray workers (pipeline.distribute.map_units), each running the one worker loop
(pipeline/engine/worker.py); a phase of steps runs its steps (pipeline/engine/steps.py).  Either way the
phase's units return one typed result each (pipeline.result.UnitResult), which is also their marker, and the
summary is one fold over them.  A unit whose output cannot be written (``fatal``: a full disk) stops the
phase, and the run with it, with one line.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from core.memory import trim
from core.storage import OutputError
from pipeline.distribute import Progress, map_units
from pipeline.engine.columns import split
from pipeline.engine.steps import run_steps
from pipeline.engine.worker import MapWorker
from pipeline.phase import MapPhase, Phase, Unit
from pipeline.result import UnitResult, lost_to_errors, summarize

if TYPE_CHECKING:
    from pipeline.context import RunContext

log = logging.getLogger(__name__)


def run_phase(ctx: RunContext, phase: Phase) -> dict:
    """Do a phase's units that are not done; returns its summary over all its units."""
    t0 = time.perf_counter()
    ctx.focus(phase)
    units = ctx.units_of(phase)
    done, todo = split(units, ctx.current(phase, units))
    if done and _lost_parts(ctx, phase):  # a corpus-wide result is whole or redone: a part of it was deleted
        log.warning("phase %s: parts it published are gone: its units are redone", phase.name)
        done, todo = units[:0], units
    if done:
        log.info(
            "phase %s: %d of %d units (%s) already done (current markers); skipping them",
            phase.name,
            len(done),
            len(units),
            phase.unit_kind,
        )
    log.info("phase %s: started, %d of %d units (%s) to do", phase.name, len(todo), len(units), phase.unit_kind)
    failures: dict[str, dict[str, str]] = {}
    if not todo:
        new: Iterable[UnitResult] = ()
    elif isinstance(phase, MapPhase):
        new = _stop_at_output_fault(run_map(ctx, phase, todo), ctx.config.output.root)
    else:
        new = _stop_at_output_fault(run_steps(ctx, phase, failures), ctx.config.output.root)
    # One fold over the units done before (their markers read again, a batch at a time) and the new ones as they
    # finish: the driver keeps counts, never a result per unit (issue 39).
    summary = phase.finish(summarize(itertools.chain(ctx.results(phase, done), new)))
    ctx.forget(phase)
    trim()  # the phase's plan and what its steps freed go back to the system: the next phase starts from less
    summary.update({"units": len(units), "units_skipped": len(done), "seconds": round(time.perf_counter() - t0, 2)})
    if failures:
        summary["failed_steps"] = failures
    lost = lost_to_errors(summary)
    if lost:  # a failed phase, whatever its units say: the run fails (run.json, the exit status, the card's checks)
        summary["lost_to_errors"] = lost
        log.error("phase %s failed: %s", phase.name, lost)
    log.info("phase %s: %s", phase.name, phase.headline(summary))
    return summary


def _lost_parts(ctx: RunContext, phase: Phase) -> bool:
    """Whether a phase of steps published parts that are no longer current (a part file deleted)."""
    if isinstance(phase, MapPhase) or not phase.writes_documents:
        return False
    return not all(c for p in ctx.step_plans(phase) if p.step.publishes_parts for c in ctx.current(phase, p.units))


def run_map(ctx: RunContext, phase: MapPhase, todo: Sequence[Unit]) -> Iterator[UnitResult]:
    """A map phase's units to do on Ray workers (their ``prepare`` first, on the driver)."""
    try:
        prepared = phase.prepare(ctx, todo)
    except Exception as e:  # e.g. a part that cannot be read: every unit fails with the reason, no marker
        yield from (UnitResult.failure(u.name, f"{phase.name}: prepare: {type(e).__name__}: {e}") for u in todo)
        return
    progress = Progress(phase.name, len(todo), phase.unit_kind, ctx.progress, counts=("in", "kept"))
    try:
        yield from map_units(
            ctx.config,
            todo,
            MapWorker,
            workers=ctx.workers(),
            keep_worker=phase.keep_worker,
            extra={"phase": type(phase), "prepared": prepared, "cwd": os.getcwd()},
            progress=progress,
            typed=True,
            pool=phase.name if phase.own_workers else None,
        )
    finally:
        progress.close()


def _stop_at_output_fault(results: Iterable[UnitResult], root: str) -> Iterator[UnitResult]:
    """The phase's unit results, until one says the output cannot be written (``fatal``: a full disk...):
    then the phase stops (its units still running are cancelled) and the run with it, with one line."""
    for r in results:
        if r.fatal is not None:
            getattr(results, "close", lambda: None)()  # a generator: its finally blocks cancel what still runs
            raise OutputError.of(r.fatal, root)
        yield r
