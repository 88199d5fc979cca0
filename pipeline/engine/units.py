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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from core.storage import is_s3
from pipeline.engine import settings
from pipeline.engine.columns import PartList, UnitList
from pipeline.engine.markers import unit_fingerprint
from pipeline.inputs import input_kinds, unit_name
from pipeline.paths import public_path
from pipeline.phase import FINAL, INPUTS, MAP, PARTS, STATE, MapPhase, Phase, Rows, Step, Unit, fingerprint
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

    @cached_property
    def units(self) -> UnitList:
        """Its units (a unit's fingerprint is the step's and its name), as columns: the plan of a step over a
        snapshot's 90,000 parts holds their names and 8-byte fingerprints, not 90,000 units (issue 39)."""
        return UnitList.of(self.names, (unit_fingerprint(self.fingerprint, n) for n in self.names), None, self.folder)


def map_phase_units(ctx: RunContext, phase: MapPhase) -> UnitList:
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
        inputs = ctx.inputs

        def params(i: int) -> dict:
            f = inputs[i]  # where a worker opens it and how it is published: from the driver's cwd (MapWorker)
            return {"source": f, "kinds": kinds, **({"source_name": names[f]} if f in names else {})}

        fps = (fingerprint(f, components[names.get(f)], *mixed) for f in inputs)
        return UnitList.of((unit_name(f) for f in inputs), fps, params)
    source = _source(ctx, phase)
    parts = ctx.parts(source)
    names = part_sources(ctx)  # {} unless the run names sources
    components = {
        n: fingerprint(settings.map_phase(phase, config.for_source(n), s3)) for n in {names.get(p.name) for p in parts}
    }
    corpus = [fingerprint(sorted(p.fingerprint for p in parts))] if phase.corpus_wide(config) else []
    # one params dict per source, shared by its units (never changed): a dict per part was ~16 MB at 90,000 parts
    params = {n: {"source": source.name, **({"source_name": n} if names else {})} for n in components}
    fps = (fingerprint(p.fingerprint, components[names.get(p.name)], *corpus) for p in parts)
    shared = (lambda i: params[names.get(parts.names[i])]) if names else params.get(None)
    return UnitList.of(parts.names, fps, shared)


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
    parts = ctx.parts(_source(ctx, phase)).by_name() if any(reads_parts(s) for s in active) else PartList()
    done: dict[str, str] = {}
    out = []
    for step in active:
        inputs: dict = {"depends": [done[d] for d in step.depends if d in done]}
        if reads_parts(step):
            inputs["parts"] = Rows(zip(parts.names, parts.fingerprints, strict=True))
        if STATE in step.reads:
            inputs["state"] = run_state(ctx)
        fp = done[step.name] = fingerprint(settings.step(step, config, s3), inputs)
        if step.kind == MAP:
            names = step.units(config) if step.units is not None else parts.names
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
        listed = ctx.units_of(p)
        units = ((n, fp, c) for (n, fp), c in zip(_named(listed), ctx.current(p, listed), strict=True))
        parts = zip(ctx.parts(p).names, ctx.parts(p).fingerprints, strict=True) if p.writes_documents else ()
        state.append((p.name, fingerprint(Rows(units)), fingerprint(Rows(parts))))  # hashed a row at a time
        ctx.release(p.name)  # one phase's units and markers at a time: the driver stays flat in the number of parts
    return state


def _named(units: Sequence[Unit]) -> Iterable[tuple[str, str]]:
    """Each unit's name and fingerprint (a UnitList's from its columns: no unit made)."""
    if isinstance(units, UnitList):
        return zip(units.names, units.fingerprints, strict=True)
    return ((u.name, u.fingerprint) for u in units)


def units(ctx: RunContext, phase: Phase) -> Sequence[Unit]:
    """The phase's units: a map phase's, or its counted steps'."""
    if isinstance(phase, MapPhase):
        return map_phase_units(ctx, phase)
    counted = [plan.units for plan in ctx.step_plans(phase) if plan.step.counted]
    return counted[0] if len(counted) == 1 else [u for c in counted for u in c]


def parts(ctx: RunContext, phase: Phase) -> PartList:
    """The parts a phase has finished for the current inputs (what the next phase reads): its units with a
    current marker that published a documents part; for a phase of steps, its ``publishes_parts`` step's,
    once every unit of the phase is done (a corpus-wide result is all or nothing)."""
    if not phase.writes_documents:
        return PartList()
    if isinstance(phase, MapPhase):
        listed = ctx.units_of(phase)
    else:
        if not all(ctx.current(phase, ctx.units_of(phase))):
            return PartList()
        plan = next((p for p in ctx.step_plans(phase) if p.step.publishes_parts), None)
        if plan is None:
            return PartList()
        listed = plan.units
    markers = ctx.markers(phase)
    published = [markers.published_part(n) for n in listed.names]
    keep = [i for i, (p, c) in enumerate(zip(published, ctx.current(phase, listed), strict=True)) if p and c]
    return PartList((listed.names[i] for i in keep), listed.fingerprints.take(keep))
