"""Run a plan's phases in order, each resumed by its markers and reported the same way.

The runner knows no phase by name: it is handed the phases (``pipeline.phases.DEFAULT_PHASES``
unless told otherwise), builds the run's plan from the config (pipeline.plan: what each phase
reads, runs and writes; every column checked), and has the engine run each selected phase
(pipeline.engine.run: the units whose marker is not current, then the phase's summary, one fold over its
units' results), recorded with the plan in ``run.json`` (pipeline.record).  A phase with failed units does not stop the
run: later phases work on the parts that are finished, and the run ends with
the failures listed (the CLI exits 1; a rerun retries them).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence

from core.faults import output_fault
from core.memory import limit_arenas, trim
from core.storage import OutputError, Storage, resolve
from pipeline.config import ConfigError, RunConfig, s3_options
from pipeline.context import RunContext
from pipeline.engine.columns import Paths
from pipeline.engine.run import run_phase
from pipeline.inputs import expand_inputs, without_output
from pipeline.lock import Holder, OutputLock
from pipeline.phase import Phase
from pipeline.phases import DEFAULT_PHASES
from pipeline.plan import build_plan
from pipeline.preflight import preflight
from pipeline.record import RunRecord

log = logging.getLogger(__name__)


def init_ray(config: RunConfig, address: str | None = None) -> None:
    """Start (or join) Ray as a run of ``config`` would."""
    from pipeline.distribute import init_ray as start

    start(config.ray.num_cpus, address or config.ray.address, config.ray.shuffle)


def plan_context(
    config: RunConfig,
    address: str | None = None,
    progress: bool = True,
    phases: Sequence[type[Phase] | Phase] = DEFAULT_PHASES,
) -> RunContext:
    """The run's plan, inputs and output, every check that can be made before work done (the columns
    every stage needs, pipeline.preflight): nothing started, nothing left written."""
    limit_arenas()  # its threads read tens of thousands of small files: few arenas keep less (core/memory.py)
    s3 = s3_options(config)
    inputs = Paths(without_output(expand_inputs(config.inputs, config.inputs_base, s3), config.output.root))
    preflight(config, inputs)
    trim()  # what listing and sniffing the inputs freed goes back before Ray starts (90,000 inputs: ~5 MB)
    plan, enabled = build_plan(config, phases)
    for p in enabled:
        p.check(config)
    return RunContext(config, Storage(config.output.root, s3), inputs, enabled, plan, progress, address)


def select(ctx: RunContext, names: list[str] | None) -> list[Phase]:
    """The phases to run: all enabled ones, or those named (in run order)."""
    if not names:
        return list(ctx.phases)
    known = [p.name for p in ctx.plan.phases]
    enabled = {p.name for p in ctx.phases}
    for n in names:
        if n not in known:
            raise ConfigError(f"config error: --phases: unknown phase {n!r} (phases: {', '.join(known)})")
        if n not in enabled:
            raise ConfigError(f"config error: --phases: phase {n!r} is disabled by the config (enable it to run it)")
    return [p for p in ctx.phases if p.name in names]


def _check_source(ctx: RunContext, phase: Phase, chosen: list[Phase]) -> None:
    """A phase run without the phase it reads needs that phase's output: none is an error
    (it would silently read nothing), part of it a warning."""
    source = ctx.source(phase)
    if source is None or source in chosen:
        return
    units = ctx.units_of(source)
    done = sum(ctx.marker(source, u) is not None for u in units)
    ctx.release(source.name)  # the phase's task plans it again: the driver keeps no list of units
    if done == 0:
        raise ConfigError(
            f"config error: --phases: phase {phase.name!r} reads the documents of phase {source.name!r}, "
            f"which has not run for these inputs and settings: add {source.name!r} to --phases "
            f"(or run without --phases)"
        )
    if done < len(units):
        log.warning(
            "phase %s reads phase %s, of which only %d of %d units are done", phase.name, source.name, done, len(units)
        )


def status(ctx: RunContext, phases: list[Phase]) -> list[dict]:
    """What a run would do now: per enabled phase, its units, those already done and those to do."""
    out = []
    pending: set[str] = set()  # phases with work to do: what comes after them is known only once they ran
    for phase in ctx.phases:
        source = ctx.source(phase)
        row = {
            "phase": phase.name,
            "reads": source.name if source else "inputs",
            "unit": phase.unit_kind,
            "selected": phase in phases,
            "waits_for": next(
                (p for p in reversed([q.name for q in ctx.phases[: ctx.phases.index(phase)]]) if p in pending), None
            ),
        }
        units = ctx.units_of(phase)
        done = [u.name for u in units if ctx.marker(phase, u) is not None]
        row.update({"units": len(units), "done": len(done), "todo": len(units) - len(done)})
        if row["todo"] or row["waits_for"]:
            pending.add(phase.name)
        out.append(row)
    return out


def run(
    config: RunConfig,
    address: str | None = None,
    progress: bool = True,
    phases: list[str] | None = None,
    command: list[str] | None = None,
    pipeline: Sequence[type[Phase] | Phase] = DEFAULT_PHASES,
) -> dict:
    """Run ``pipeline``'s phases (or the named ones); returns (and writes) the run record ``run.json``."""
    ctx = plan_context(config, address, progress, pipeline)
    selected = select(ctx, phases)
    for phase in selected:
        _check_source(ctx, phase, selected)
    log.info("%d input files, phases %s, output %s", len(ctx.inputs), [p.name for p in selected], ctx.storage.root_uri)
    with OutputLock(ctx.storage, Holder.me(config.name, command)):  # a second run on this output refuses
        return _run_locked(ctx, config, selected, command)


def _run_locked(ctx: RunContext, config: RunConfig, selected: list[Phase], command: list[str] | None) -> dict:
    record = RunRecord(ctx.storage, config, ctx.inputs, [p.name for p in selected], command, ctx.plan)
    try:
        record.start()  # (a full disk may refuse even this first write)
        for phase in selected:
            record.phase_done(phase.name, run_phase(ctx, phase))
    except BaseException as e:  # the record says where the run stopped, then the error goes on
        fault = output_fault(e, resolve(config.output.root)[1]) if not isinstance(e, OutputError) else None
        error = OutputError.of(fault, config.output.root) if fault is not None else e
        try:
            record.finish(
                error=str(error)
                if isinstance(error, (OutputError, ConfigError))
                else "".join(traceback.format_exception_only(type(error), error)).strip()
            )
        except OSError as failed:  # the disk that stopped the run may refuse the record too: the error still goes on
            log.error("run.json could not record the error: %s", failed)
        if error is not e:
            raise error from e
        raise
    return record.finish()
