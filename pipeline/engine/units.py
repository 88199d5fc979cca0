"""Every unit of every phase and its fingerprint, computed by the engine from the phases' declarations.

- a map phase (``MapPhase``): a unit per input file (``reads = INPUTS``; with named sources, each file's
  source) or per part of the phase it reads (``PARTS``); its fingerprint covers what it reads (the file's
  URI, the part's fingerprint, every part when the phase is ``corpus_wide``) and the settings of every
  component it runs with its source's effective config (pipeline.engine.settings.map_phase);
- a phase of steps: each step the config enables gets a fingerprint (its own settings, the parts it reads,
  the fingerprints of the steps it depends on, the state of the run) and its units one each (the step's
  and the unit's name); the phase's units are its ``counted`` steps' units.

Listing units never starts Ray (``--dry-run`` is instant).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.storage import is_s3
from pipeline.engine import settings
from pipeline.engine.markers import unit_fingerprint
from pipeline.inputs import input_kinds, unit_name
from pipeline.paths import public_path
from pipeline.phase import FINAL, INPUTS, MAP, PARTS, STATE, MapPhase, Part, Phase, Step, Unit, fingerprint
from pipeline.readers import reader_for
from pipeline.sources import input_sources, part_sources

if TYPE_CHECKING:
    from pipeline.context import RunContext


@dataclass(frozen=True)
class StepPlan:
    """One step of a phase as this run does it: its fingerprint and its units' names (none for a SHUFFLE step)."""

    step: Step
    fingerprint: str
    names: tuple[str, ...]
    #: where its units' markers are (None: the phase's own folder)
    folder: str | None = None

    @property
    def units(self) -> tuple[Unit, ...]:
        """Its units, made when asked for (a unit's fingerprint is the step's and its name): the plan of a step over
        a snapshot's 90,000 parts holds their names, not 90,000 units for the whole of the phase (issue 39)."""
        return tuple(Unit(n, unit_fingerprint(self.fingerprint, n), {}, self.folder) for n in self.names)


def map_phase_units(ctx: RunContext, phase: MapPhase) -> list[Unit]:
    config, s3 = ctx.config, ctx.s3
    if phase.reads == INPUTS:
        names = input_sources(config, ctx.inputs)  # {} unless the run names sources
        own = {f: r.name for f in ctx.inputs if (r := reader_for(config, f)) is not None}  # the run's own readers'
        kinds = [*input_kinds([f for f in ctx.inputs if f not in own]), *dict.fromkeys(own.values())]
        components = {
            n: fingerprint(settings.map_phase(phase, config.for_source(n), s3), *([n] if n else []))
            for n in {names.get(f) for f in ctx.inputs}
        }
        mixed = [kinds] if len(kinds) > 1 else []  # another kind's columns are in every part: its own are redone
        return [
            Unit(
                unit_name(f),
                fingerprint(f, components[names.get(f)], *mixed),
                {
                    "source": f,  # where a worker opens it and how it is published: from the driver's cwd (MapWorker)
                    "kinds": kinds,
                    **({"source_name": names[f]} if f in names else {}),
                },
            )
            for f in ctx.inputs
        ]
    source = _source(ctx, phase)
    parts = ctx.parts(source)
    names = part_sources(ctx)  # {} unless the run names sources
    components = {
        n: fingerprint(settings.map_phase(phase, config.for_source(n), s3)) for n in {names.get(p.name) for p in parts}
    }
    corpus = [fingerprint(sorted(p.fingerprint for p in parts))] if phase.corpus_wide(config) else []
    # one params dict per source, shared by its units (never changed): a dict per part was ~16 MB at 90,000 parts
    params = {n: {"source": source.name, **({"source_name": n} if names else {})} for n in components}
    return [
        Unit(p.name, fingerprint(p.fingerprint, components[names.get(p.name)], *corpus), params[names.get(p.name)])
        for p in parts
    ]


def published_input(uri: str, cwd: str | None = None) -> str:
    """An input file as every published column names it (``source``), as the card does: a path inside the working
    directory (the driver's: ``cwd``) relative to it, any other local path by its name, an ``s3://`` URI as it is;
    never the folders of the machine that ran the job."""
    return public_path(uri, cwd or os.getcwd())


def input_path(uri: str, cwd: str | None = None) -> str:
    """Where a worker opens an input: a local one's absolute path on the driver (``cwd``: its working directory,
    which workers do not share; the input keeps its name as given, for the source column and the unit's name)."""
    return uri if is_s3(uri) else os.path.normpath(os.path.join(cwd or os.getcwd(), os.path.expanduser(uri)))


def _source(ctx: RunContext, phase: Phase) -> Phase:
    source = ctx.source(phase)
    if source is None:
        raise ValueError(f"phase {phase.name} reads documents, but no phase before it writes any")
    return source


def reads_parts(step: Step) -> bool:
    return PARTS in step.reads or (step.kind == MAP and step.units is None)


def step_plans(ctx: RunContext, phase: Phase) -> list[StepPlan]:
    """The steps the config enables, in order, each with its fingerprint and units."""
    config, s3 = ctx.config, ctx.s3
    active = [s for s in phase.steps(config) if s.when(config)]
    parts = sorted(ctx.parts(_source(ctx, phase)), key=lambda p: p.name) if any(reads_parts(s) for s in active) else []
    done: dict[str, str] = {}
    out = []
    for step in active:
        inputs: dict = {"depends": [done[d] for d in step.depends if d in done]}
        if reads_parts(step):
            inputs["parts"] = [(p.name, p.fingerprint) for p in parts]
        if STATE in step.reads:
            inputs["state"] = run_state(ctx)
        fp = done[step.name] = fingerprint(settings.step(step, config, s3), inputs)
        if step.kind == MAP:
            names = step.units(config) if step.units is not None else [p.name for p in parts]
        else:
            names = [step.unit] if step.kind == FINAL else []
        folder = None if step.top else step.name  # where its markers are
        out.append(StepPlan(step, fp, tuple(names), folder))
    return out


def run_state(ctx: RunContext) -> list:
    """What every phase the card reports on has done: its units (fingerprint, marker current or not) and parts."""
    state = []
    for p in ctx.phases:
        if not p.reported:
            continue
        units = [(u.name, u.fingerprint, ctx.marker(p, u) is not None) for u in ctx.units_of(p)]
        parts = [(pt.name, pt.fingerprint) for pt in ctx.parts(p)] if p.writes_documents else []
        state.append((p.name, fingerprint(units), fingerprint(parts)))  # a phase's digest: one phase's lists at a time
        ctx.release(p.name)  # one phase's units and markers at a time: the driver stays flat in the number of parts
    return state


def units(ctx: RunContext, phase: Phase) -> list[Unit]:
    """The phase's units: a map phase's, or its counted steps'."""
    if isinstance(phase, MapPhase):
        return map_phase_units(ctx, phase)
    return [u for plan in ctx.step_plans(phase) if plan.step.counted for u in plan.units]


def parts(ctx: RunContext, phase: Phase) -> list[Part]:
    """The parts a phase has finished for the current inputs (what the next phase reads): its units with a
    current marker that published a documents part; for a phase of steps, its ``publishes_parts`` step's,
    once every unit of the phase is done (a corpus-wide result is all or nothing)."""
    if not phase.writes_documents:
        return []
    if isinstance(phase, MapPhase):
        listed = ctx.units_of(phase)
        markers = ctx.markers(phase)
    else:
        if any(ctx.marker(phase, u) is None for u in ctx.units_of(phase)):
            return []
        plan = next((p for p in ctx.step_plans(phase) if p.step.publishes_parts), None)
        if plan is None:
            return []
        listed = list(plan.units)
        markers = ctx.markers(phase)
    out = []
    for unit in listed:
        marker = markers.get(unit.name)
        if marker is not None and marker.documents_part and ctx.marker(phase, unit) is not None:
            out.append(Part(unit.name, unit.fingerprint))
    return out
