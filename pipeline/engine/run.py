"""Run one phase: the units whose markers are not current, then its summary over all its units.

The phase is planned and run in one task beside the driver (pipeline/engine/beside.py), which tells the driver
what it found to do, then what it did; the driver holds no list of the phase's units (issue 39).  A map phase's
units go to Ray workers (pipeline.distribute.map_units), each running the one worker loop
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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.storage import OutputError
from pipeline.distribute import Progress, map_units, show_worker_lines
from pipeline.engine import beside
from pipeline.engine.columns import split
from pipeline.engine.steps import run_steps
from pipeline.engine.worker import MapWorker
from pipeline.phase import MapPhase, Phase, Unit
from pipeline.result import UnitResult, lost_to_errors, summarize

if TYPE_CHECKING:
    from pipeline.context import RunContext

log = logging.getLogger(__name__)


def run_phase(ctx: RunContext, phase: Phase) -> dict:
    """Do a phase's units that are not done; returns its summary over all its units.

    The phase runs in one task beside the driver (pipeline/engine/beside.py), which plans it (its units, their
    markers, the parts it reads: tens of MB at a snapshot's 90,000 parts) and folds its units' results; what it held
    is freed when the phase ends.  The driver keeps the run's inputs and each phase's summary: flat in the number
    of parts (issue 39)."""
    t0 = time.perf_counter()
    ctx.focus(phase)
    planned, ran = None, None
    run = beside.stream if ctx.beside else _here
    for item in run(_phase_task, ctx, phase.name, name=phase.name):
        if isinstance(item, _Planned):
            planned = item
            _log_planned(phase, item)
        else:
            ran = item
    show_worker_lines()  # the task's last lines, before the driver's
    ctx.forget(phase)
    assert planned is not None and ran is not None  # the task yields both, or raises
    summary = ran.summary
    summary.update(
        {"units": planned.units, "units_skipped": planned.done, "seconds": round(time.perf_counter() - t0, 2)}
    )
    if ran.failures:
        summary["failed_steps"] = ran.failures
    lost = lost_to_errors(summary)
    if lost:  # a failed phase, whatever its units say: the run fails (run.json, the exit status, the card's checks)
        summary["lost_to_errors"] = lost
        log.error("phase %s failed: %s", phase.name, lost)
    log.info("phase %s: %s", phase.name, phase.headline(summary))
    return summary


def _here(fn, ctx: RunContext, *args, name: str) -> Iterator:
    return fn(ctx, *args)


@dataclass(frozen=True)
class _Planned:
    """What a phase's task found: its units, and how many of them were done before (a current marker)."""

    units: int
    done: int


@dataclass(frozen=True)
class _Ran:
    """What a phase's task did: the fold of its units' results, and its other steps' failures (step: unit: error)."""

    summary: dict
    failures: dict


def _log_planned(phase: Phase, planned: _Planned) -> None:
    if planned.done:
        log.info(
            "phase %s: %d of %d units (%s) already done (current markers); skipping them",
            phase.name,
            planned.done,
            planned.units,
            phase.unit_kind,
        )
    todo = planned.units - planned.done
    log.info("phase %s: started, %d of %d units (%s) to do", phase.name, todo, planned.units, phase.unit_kind)


def _phase_task(ctx: RunContext, name: str) -> Iterator[_Planned | _Ran]:
    """The phase ``name`` planned and run in its task: what it found to do, then what it did."""
    phase = next(p for p in ctx.phases if p.name == name)  # (the phases are copies here: found by name)
    ctx.focus(phase)
    units = ctx.units_of(phase)
    done, todo = split(units, ctx.current(phase, units))
    if done and _lost_parts(ctx, phase):  # a corpus-wide result is whole or redone: a part of it was deleted
        log.warning("phase %s: parts it published are gone: its units are redone", phase.name)
        done, todo = units[:0], units
    yield _Planned(len(units), len(done))
    failures: dict[str, dict[str, str]] = {}
    if not todo:
        new: Iterable[UnitResult] = ()
    elif isinstance(phase, MapPhase):
        new = _stop_at_output_fault(run_map(ctx, phase, todo), ctx.config.output.root)
    else:
        new = _stop_at_output_fault(run_steps(ctx, phase, failures), ctx.config.output.root)
    # One fold over the units done before (their markers read again, a batch at a time) and the new ones as they
    # finish: counts, never a result per unit (issue 39).
    yield _Ran(phase.finish(summarize(itertools.chain(ctx.results(phase, done), new))), failures)


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
