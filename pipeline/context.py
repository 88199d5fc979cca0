"""The run as every phase sees it: config, inputs, output storage, Ray, and what is done.

Planning never starts Ray (``--dry-run`` is instant): Ray starts the first time
a phase asks for :meth:`RunContext.workers`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pipeline.config import RunConfig, s3_options
from core.layout import DONE
from pipeline.phase import Part, Phase, Unit
from pipeline.plan import Plan
from pipeline.result import UnitResult
from core.storage import S3Options, Storage


@dataclass
class RunContext:
    config: RunConfig
    storage: Storage
    inputs: list[str]
    #: the enabled phases of this run, in order (whether or not this invocation runs them)
    phases: list[Phase]
    #: the run's plan: every phase, enabled or not, what each reads, runs and writes (pipeline.plan)
    plan: Plan | None = None
    progress: bool = True
    address: str | None = None
    _workers: int | None = None
    _units: dict[str, list[Unit]] = field(default_factory=dict)
    _markers: dict[str, dict[str, UnitResult]] = field(default_factory=dict)
    _parts: dict[str, list[Part]] = field(default_factory=dict)

    @property
    def s3(self) -> S3Options:
        return s3_options(self.config)

    def workers(self) -> int:
        """Parallel workers per phase (``ray.workers``, else the cluster's CPUs); starts Ray."""
        if self._workers is None:
            from pipeline.distribute import cluster_cpus, init_ray

            init_ray(self.config.ray.num_cpus, self.address or self.config.ray.address, self.config.ray.shuffle, self.config.ray.metrics)
            self._workers = self.config.ray.workers or cluster_cpus()
        return self._workers

    def phase(self, name: str) -> Phase:
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(f"no enabled phase named {name!r} in this run")

    def source(self, phase: Phase) -> Phase | None:
        """The phase whose documents ``phase`` reads: the nearest earlier one that writes documents."""
        before = self.phases[: self.phases.index(phase)]
        return next((p for p in reversed(before) if p.writes_documents), None)

    def units_of(self, phase: Phase) -> list[Unit]:
        if phase.name not in self._units:
            self._units[phase.name] = phase.units(self)
        return self._units[phase.name]

    def markers(self, phase: Phase) -> dict[str, UnitResult]:
        """Every marker under ``_done/<phase>/`` by unit name (read once, in parallel: S3 GETs)."""
        if phase.name not in self._markers:
            names = [n.removesuffix(".json") for n in self.storage.list(DONE, phase.name, suffix=".json") if "/" not in n]
            with ThreadPoolExecutor(16) as pool:
                found = list(pool.map(lambda n: self.storage.read_json(DONE, phase.name, f"{n}.json"), names))
            markers = dict(zip(names, found))
            expand = getattr(phase, "expand_markers", None)  # a phase that records many units in one marker (shards)
            markers = expand(markers) if callable(expand) else markers
            self._markers[phase.name] = {k: UnitResult.from_json(v) for k, v in markers.items()}
        return self._markers[phase.name]

    def marker(self, phase: Phase, unit: Unit) -> UnitResult | None:
        """The unit's marker if it is current (same fingerprint), else None."""
        m = self.markers(phase).get(unit.name)
        return m if m is not None and m.fingerprint == unit.fingerprint else None

    def parts(self, phase: Phase | None) -> list[Part]:
        """The finished parts of ``phase`` for the current inputs (none before the first phase)."""
        if phase is None:
            return []
        if phase.name not in self._parts:
            self._parts[phase.name] = phase.parts(self)
        return self._parts[phase.name]

    def forget(self, phase: Phase) -> None:
        """Drop what was cached about ``phase`` (it just ran: its markers changed)."""
        for cache in (self._markers, self._parts):
            cache.pop(phase.name, None)
