"""The run as every phase sees it: config, inputs, output storage, Ray, and what is done.

Units, fingerprints, markers and parts are the engine's (pipeline/engine), cached here for the run.
Planning never starts Ray (``--dry-run`` is instant): Ray starts the first time a phase asks for
:meth:`RunContext.workers`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from core.storage import S3Options, Storage
from pipeline.config import RunConfig, s3_options
from pipeline.engine import markers as marker_store, units as engine_units
from pipeline.engine.columns import MarkerMap, NameSet, PartList, UnitList
from pipeline.phase import Part, Phase, Unit
from pipeline.plan import Plan
from pipeline.result import UnitResult
from pipeline.units import PUBLISHED_SEP


@dataclass
class RunContext:
    config: RunConfig
    storage: Storage
    #: the input files, as columns (pipeline.engine.columns.Paths)
    inputs: Sequence[str]
    #: the enabled phases of this run, in order (whether or not this invocation runs them)
    phases: list[Phase]
    #: the run's plan: every phase, enabled or not, what each reads, runs and writes (pipeline.plan)
    plan: Plan | None = None
    progress: bool = True
    address: str | None = None
    #: each phase planned and run in a task beside the driver (pipeline.engine.run); False: in this process (its
    #: map units still on Ray workers), e.g. for a test that watches what a phase's steps do
    beside: bool = True
    _workers: int | None = None
    _units: dict[str, Sequence[Unit]] = field(default_factory=dict)
    _steps: dict[str, list] = field(default_factory=dict)
    _markers: dict[tuple, MarkerMap] = field(default_factory=dict)
    _parts: dict[str, PartList] = field(default_factory=dict)
    _listed: dict[tuple[str, ...], NameSet] = field(default_factory=dict)
    #: the phase running (its plan is kept; so is the one it reads until its parts are known); None: keep all
    _running: str | None = None
    #: phases whose parts were given (``use_parts``), not computed: never dropped
    _given: set[str] = field(default_factory=set)
    #: this run as its tasks see it (``detached``), put in Ray's object store once per running phase
    _shipped: dict[str | None, object] = field(default_factory=dict)

    @property
    def s3(self) -> S3Options:
        return s3_options(self.config)

    def workers(self) -> int:
        """Parallel workers per phase (``ray.workers``, else the cluster's CPUs); starts Ray."""
        if self._workers is None:
            from pipeline.distribute import cluster_cpus, init_ray

            init_ray(
                self.config.ray.num_cpus,
                self.address or self.config.ray.address,
                self.config.ray.shuffle,
                self.config.ray.metrics,
            )
            self._workers = self.config.ray.workers or cluster_cpus()
        return self._workers

    def detached(self, running: Phase | None = None) -> RunContext:
        """This run as a task of it sees it (the card, a step run in a task): the same config, inputs, phases and
        plan, and the parts given to it, none of what this process read since (computed there again) but the plan
        of ``running`` (its steps, the parts it reads: what the driver planned, not planned twice); Ray started,
        its workers counted."""
        source = self.source(running) if running is not None else None
        parts = {p for p in (*self._given, *([source.name] if source is not None else [])) if p in self._parts}
        plans = self._steps.get(running.name) if running is not None else None
        return RunContext(
            self.config,
            self.storage,
            self.inputs,
            self.phases,
            self.plan,
            progress=self.progress,  # no terminal there: a log line at an interval (distribute.Progress)
            address=self.address,
            _workers=self.workers(),
            _steps={running.name: plans} if plans is not None else {},
            _parts={p: self._parts[p] for p in parts},
            _given=set(self._given),
        )

    def shipped(self, running: Phase | None = None):
        """:meth:`detached`, put in Ray's object store once for every task that asks (a task given the reference gets
        the context): once for the run for the phases' tasks, once for the running phase's steps when they are sent
        its plan.  The inputs (~2.5 MB at 90,000) are written there once, not with each task, and the driver's share
        of the store's pages stays one copy (issue 39)."""
        self.workers()  # Ray started as a run starts it (before ``import ray``: its auth mode is read then)
        import ray

        key = running.name if running is not None else None
        if key not in self._shipped:
            self._shipped[key] = ray.put(self.detached(running))
        return self._shipped[key]

    def source(self, phase: Phase) -> Phase | None:
        """The phase whose documents ``phase`` reads: the nearest earlier one that writes documents."""
        before = self.phases[: self.phases.index(phase)]
        copies = getattr(phase, "copies", None)  # an export reads the phase it names (pipeline/exports.py)
        return next((p for p in reversed(before) if (p.name == copies if copies else p.writes_documents)), None)

    def units_of(self, phase: Phase) -> Sequence[Unit]:
        """The phase's units (a map phase's, or its counted steps'), with the fingerprints the engine gives them."""
        if phase.name not in self._units:
            self._units[phase.name] = engine_units.units(self, phase)
        return self._units[phase.name]

    def step_plans(self, phase: Phase) -> list:
        """A phase of steps: each step the config enables, its fingerprint and units (pipeline.engine.units)."""
        if phase.name not in self._steps:
            self._steps[phase.name] = engine_units.step_plans(self, phase)
        return self._steps[phase.name]

    def markers(self, phase: Phase, step: str | None = None) -> MarkerMap:
        """Every marker under ``_done/<phase>/`` (or its step's folder) by unit name, read once (what says whether
        a unit is current, not its counts: :meth:`results`)."""
        if (phase.name, step) not in self._markers:
            self._markers[(phase.name, step)] = marker_store.read(self.storage, phase.name, step, self.exists)
            self._listed.clear()  # the listings served these markers (a name per file): listed again if asked
        return self._markers[(phase.name, step)]

    def marker(self, phase: Phase, unit: Unit) -> marker_store.Marker | None:
        """The unit's marker if it is current: same fingerprint, and every file it says its unit published is there
        (a marker is trusted only while what it describes exists: a deleted part or ``shards/`` is redone)."""
        markers = self.markers(phase, unit.step)
        return markers[unit.name] if markers.is_current(unit.name, unit.fingerprint) else None

    def current(self, phase: Phase, units: Sequence[Unit]) -> list[bool]:
        """Whether each of ``units`` has a current marker (:meth:`marker`), without making a unit each."""
        if isinstance(units, UnitList):
            markers = self.markers(phase, units.step)
            return [markers.is_current(n, fp) for n, fp in zip(units.names, units.fingerprints, strict=True)]
        return [self.marker(phase, u) is not None for u in units]

    def results(self, phase: Phase, units: Iterable[Unit]) -> Iterator[UnitResult]:
        """The results in the current markers of ``units``, read again from the output a batch at a time: what a
        summary or the card adds up, never held by the driver all at once (issue 39)."""
        by_step: dict[str | None, dict[str, str]] = {}
        if isinstance(units, UnitList):  # its columns: no unit nor marker made per unit
            markers = self.markers(phase, units.step)
            by_step[units.step] = {
                n: fp for n, fp in zip(units.names, units.fingerprints, strict=True) if markers.is_current(n, fp)
            }
        else:
            for u in units:
                if self.marker(phase, u) is not None:
                    by_step.setdefault(u.step, {})[u.name] = u.fingerprint
        for step, wanted in by_step.items():
            yield from marker_store.results(self.storage, phase.name, step, wanted)

    def exists(self, path: str) -> bool:
        """Whether a file under the output root exists, by one listing per output folder, kept for the run (S3: one
        paginated request per folder, not one per file): ``documents/final/``, ``shards/mds/``, ``card/``..."""
        parts = tuple(path.split(PUBLISHED_SEP))
        if len(parts) == 1:
            return self.storage.exists(*parts)
        folder = parts[:2] if len(parts) > 2 else parts[:1]
        if folder not in self._listed:
            self._listed[folder] = NameSet(self.storage.names(*folder))
        return PUBLISHED_SEP.join(parts[len(folder) :]) in self._listed[folder]

    def parts(self, phase: Phase | None) -> PartList:
        """The finished parts of ``phase`` for the current inputs (none before the first phase)."""
        if phase is None:
            return PartList()
        if phase.name not in self._parts:
            self._parts[phase.name] = engine_units.parts(self, phase)
            # The parts are what the later phases need; the units and markers they came from are computed and read
            # again if asked for, not kept for the rest of the run (issue 39: the driver flat in the number of parts).
            if phase.name != self._running:
                self._units.pop(phase.name, None)
                self._steps.pop(phase.name, None)
            self.drop_markers(phase.name)
        return self._parts[phase.name]

    def use_parts(self, phase: str, parts: Iterable[Part]) -> None:
        """Take ``parts`` as the finished parts of ``phase`` (a phase run on its own, on what an earlier run left)."""
        self._parts[phase] = PartList.of(parts)
        self._given.add(phase)
        self._shipped.clear()  # what a task is given changed

    def focus(self, phase: Phase) -> None:
        """Keep the plan (units, steps, markers, parts) of ``phase`` and of the phase it reads only: a phase the run
        is done with is planned again if asked for (the card), so that the driver holds one or two phases' units,
        never every phase's (issue 39: its memory flat in the number of parts)."""
        source = self.source(phase)
        self._running = phase.name
        self._drop_shipped()
        keep = {phase.name, *([source.name] if source is not None else [])}
        for name in {*self._units, *self._steps, *self._parts, *(k[0] for k in self._markers)} - keep:
            self.release(name)

    def release(self, phase: str) -> None:
        """Forget the plan of ``phase`` (computed again if asked for), unless it is the running phase's."""
        if phase == self._running:
            return
        self._units.pop(phase, None)
        self._steps.pop(phase, None)
        if phase not in self._given:
            self._parts.pop(phase, None)
        self.drop_markers(phase)

    def drop_markers(self, phase: str) -> None:
        """Forget the markers read for ``phase`` (they are read again if asked for): the driver keeps no result per
        unit longer than the step that needs it."""
        for key in [k for k in self._markers if k[0] == phase]:
            del self._markers[key]

    def forget(self, phase: Phase) -> None:
        """Drop what was cached about ``phase`` (it just ran: its markers changed)."""
        self.drop_markers(phase.name)
        self._parts.pop(phase.name, None)
        self._listed.clear()  # it wrote and deleted files
        self._drop_shipped()

    def _drop_shipped(self) -> None:
        """Forget the contexts put with a phase's plan (a step's task's); the run as a phase's task sees it (no
        phase's plan in it: ``shipped()``) is the same for every phase, put once for the run."""
        self._shipped = {k: v for k, v in self._shipped.items() if k is None}
