"""The run as an explicit plan: every phase in order, what each reads, the stages or steps it runs and
what it writes, built from the config before anything starts.

The runner runs the plan's enabled phases; ``--dry-run`` prints it; the column check reads it (every
column a stage needs is added before it, across phases); ``run.json`` records it, and the dataset card
reads its labels, stage order and settings from there (pipeline/card), so a phase, stage, source or
sink added to the pipeline shows in all four without an edit to any of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pipeline.config import ConfigError, RunConfig
from pipeline.exports import PREFIX as EXPORT_PREFIX, with_exports
from pipeline.phase import INPUTS, ROLE_CARD, ROLE_DOCUMENTS, ROLE_EXPORT, ROLE_SHARDS, Phase, SinkInfo, StepInfo
from stages.base import StageInfo


@dataclass(frozen=True)
class SourceInfo:
    """A source kind as the plan holds it: how its files are read and the stages only its rows meet."""

    kind: str
    #: the read step of its rows (the rows it rejects at read time name the stage ``read``)
    label: str
    #: what its records are, for the card's first step (records -> rows)
    records_label: str
    provides: tuple[str, ...]
    reasons: tuple[str, ...]
    #: the stages only this kind runs, by name, in order
    stages: tuple[str, ...]

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "label": self.label,
            "records_label": self.records_label,
            "provides": list(self.provides),
            "reasons": list(self.reasons),
            "stages": list(self.stages),
        }

    @classmethod
    def from_json(cls, data: dict) -> SourceInfo:
        return cls(
            data["kind"],
            data.get("label") or data["kind"],
            data.get("records_label") or "records",
            tuple(data.get("provides") or ()),
            tuple(data.get("reasons") or ()),
            tuple(data.get("stages") or ()),
        )


#: The stage name of the rows a source rejects at read time (stages.base.run_chain).
READ = "read"


@dataclass(frozen=True)
class PhasePlan:
    """One phase as the plan holds it (nothing built, nothing run)."""

    name: str
    label: str
    enabled: bool
    #: the phase whose documents it reads, or INPUTS (None for a disabled phase)
    reads: str | None
    unit_kind: str
    writes_documents: bool
    #: config sections its outputs depend on
    sections: tuple[str, ...]
    stages: tuple[StageInfo, ...] = ()
    steps: tuple[StepInfo, ...] = ()
    sinks: tuple[SinkInfo, ...] = ()
    #: columns the phase adds outside its stages (dedup's cluster sizes)
    adds: tuple[str, ...] = ()
    #: the source kinds a phase that reads the inputs may meet (their read step and their own stages)
    sources: tuple[SourceInfo, ...] = ()
    #: whether the dataset card reports on its documents
    reported: bool = True
    #: named sources (pipeline/sources.py) and the settings each
    #: overrides for this phase's stages: {name: {key: value}}
    overrides: dict = field(default_factory=dict)
    #: what its outputs are (pipeline.phase ROLE_*): the card finds the shards, the card itself, exports by it
    role: str = ROLE_DOCUMENTS

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "label": self.label,
            "enabled": self.enabled,
            "reads": self.reads,
            "unit_kind": self.unit_kind,
            "writes_documents": self.writes_documents,
            "sections": list(self.sections),
            "stages": [s.to_json() for s in self.stages],
            "steps": [
                {"name": s.name, "label": s.label, "kind": s.kind, "depends": list(s.depends)} for s in self.steps
            ],
            "sinks": [{"name": s.name, "label": s.label, "path": s.path, "role": s.role} for s in self.sinks],
            "adds": list(self.adds),
            "sources": [s.to_json() for s in self.sources],
            "reported": self.reported,
            "overrides": self.overrides,
            "role": self.role,
        }

    @classmethod
    def from_json(cls, data: dict) -> PhasePlan:
        writes = bool(data.get("writes_documents", True))
        reported = bool(data.get("reported", True))
        # a record of an earlier version has no roles: what they then were (documents, the card, the shards)
        role = data.get("role") or (ROLE_DOCUMENTS if writes else ROLE_CARD if not reported else ROLE_SHARDS)
        return cls(
            data["name"],
            data.get("label") or data["name"],
            bool(data.get("enabled", True)),
            data.get("reads"),
            data.get("unit_kind") or "unit",
            writes,
            tuple(data.get("sections") or ()),
            tuple(StageInfo.from_json(s) for s in data.get("stages") or ()),
            tuple(
                StepInfo(s["name"], s.get("label") or s["name"], s.get("kind") or "", tuple(s.get("depends") or ()))
                for s in data.get("steps") or ()
            ),
            tuple(
                SinkInfo(s["name"], s.get("label") or s["name"], s.get("path") or "", s.get("role") or "")
                for s in data.get("sinks") or ()
            ),
            tuple(data.get("adds") or ()),
            tuple(SourceInfo.from_json(s) for s in data.get("sources") or ()),
            reported,
            dict(data.get("overrides") or {}),
            role,
        )

    def source(self, kind: str) -> SourceInfo | None:
        return next((s for s in self.sources if s.kind == kind), None)

    def scores(self) -> tuple[str, ...]:
        """The score columns its stages declare."""
        return tuple(c for s in self.stages for c in s.scores)


@dataclass(frozen=True)
class Plan:
    """Every phase of the pipeline, enabled or not, in run order."""

    phases: tuple[PhasePlan, ...]

    def phase(self, name: str) -> PhasePlan | None:
        return next((p for p in self.phases if p.name == name), None)

    def stage(self, phase: str, name: str) -> StageInfo | None:
        plan = self.phase(phase)
        return next((s for s in plan.stages if s.name == name), None) if plan else None

    def with_role(self, role: str) -> PhasePlan | None:
        """The first phase of this role (the shards, the card)."""
        return next((p for p in self.phases if p.role == role), None)

    def scores(self) -> list[str]:
        """Every score column the enabled phases' stages declare, in order, each once."""
        return list(dict.fromkeys(c for p in self.phases if p.enabled for c in p.scores()))

    def to_json(self) -> dict:
        return {"phases": [p.to_json() for p in self.phases]}

    @classmethod
    def from_json(cls, data: dict) -> Plan:
        return cls(tuple(PhasePlan.from_json(p) for p in (data or {}).get("phases") or ()))


def input_sources(config: RunConfig) -> tuple[list[SourceInfo], list]:
    """Every source kind (stages.sources.kinds) as the plan describes it, and the specs of the stages only
    some kinds run, merged in order (each stage once)."""
    from pipeline.readers import source_kinds

    infos, specs = [], []
    for cls in source_kinds(config):
        own = cls.stages(config)
        infos.append(
            SourceInfo(
                cls.name,
                cls.label,
                cls.records_label,
                tuple(cls.provides),
                tuple(cls.reasons),
                tuple(s.info().name for s in own),
            )
        )
        specs.append(own)
    return infos, _merge_in_order(specs)


def build_plan(config: RunConfig, phases: Sequence[type[Phase] | Phase]) -> tuple[Plan, list[Phase]]:
    """The plan of ``config`` over ``phases`` (classes or instances), and the enabled phase instances."""
    instances = with_exports([p() if isinstance(p, type) else p for p in phases], config)
    names = [p.name for p in instances]
    if len(set(names)) != len(names):
        raise ValueError(f"two phases have the same name: {names}")
    enabled = [p for p in instances if p.enabled(config)]
    out = []
    reads: str | None = INPUTS
    for p in instances:
        on = p in enabled
        stages = p.declared_stages(config) if on else []
        sources: list[SourceInfo] = []
        if on and getattr(p, "reads", None) == INPUTS:
            reads = INPUTS
        if on and reads == INPUTS:  # it reads the inputs: each source kind adds its read step and its own stages
            sources, own = input_sources(config)
            read = StageInfo(
                READ,
                " / ".join(dict.fromkeys(s.label for s in sources)),
                adds=tuple(dict.fromkeys(c for s in sources for c in s.provides)),
                reasons=tuple(dict.fromkeys(r for s in sources for r in s.reasons)),
            )
            stages = [read, *(s.info() for s in own), *stages]
        steps = tuple(s.info() for s in p.steps(config) if s.when(config)) if on else ()
        sinks = tuple(s.info() for s in p.sinks(config)) if on else ()
        overrides = getattr(p, "overrides", lambda c: {})(config) if on else {}
        reads_here = getattr(p, "copies", None) or reads  # an export reads the phase it names
        out.append(
            PhasePlan(
                p.name,
                p.label or p.name,
                on,
                reads_here if on else None,
                p.unit_kind,
                p.writes_documents,
                tuple(p.sections),
                tuple(stages),
                steps,
                sinks,
                tuple(p.adds),
                tuple(sources),
                p.reported,
                overrides,
                p.role,
            )
        )
        if on and p.writes_documents:
            reads = p.name
    plan = Plan(tuple(out))
    check_names(plan)
    check_columns(plan, config)
    for source in config.sources:  # each named source's own stages need their columns too
        try:
            build_plan(config.for_source(source.name), phases)
        except ConfigError as e:
            raise ConfigError(f"{e} (in source {source.name!r}, with its own settings)") from None
    return plan, enabled


def check_names(plan: Plan) -> None:
    """A stage's name is the ``stage`` of the rows it rejects and its funnel row: one per phase (a stage of the
    user's own module named as a built-in one is a one-line error naming both)."""
    for phase in plan.phases:
        seen: dict[str, StageInfo] = {}
        for stage in phase.stages:
            if stage.name in seen:
                where = [s.section or "a built-in stage" for s in (seen[stage.name], stage)]
                raise ConfigError(
                    f"config error: {where[1]}: the stage name {stage.name!r} is taken by {where[0]} "
                    f"in phase {phase.name}: give it its own name"
                )
            seen[stage.name] = stage


def _merge_in_order(lists: Iterable[list]) -> list:
    """The specs of several source kinds as one list (each stage once, by name, in first-seen order)."""
    seen: dict[str, object] = {}
    for specs in lists:
        for s in specs:
            seen.setdefault(s.info().name, s)
    return list(seen.values())


def check_columns(plan: Plan, config: RunConfig) -> None:
    """Every column a stage needs is added before it (by the source, an earlier stage or an earlier
    phase), for every source kind; raises ConfigError naming the stage, the column and the fix."""
    first = next((p for p in plan.phases if p.enabled and p.sources), None)
    have = {s.kind: set(s.provides) for s in first.sources} if first else {"": set()}
    for phase in plan.phases:
        if not phase.enabled:
            continue
        stages = list(phase.stages)
        for i, stage in enumerate(stages):
            for kind in have:
                if stage.name == READ or stage.name in _only_for(phase, kind):
                    continue  # the source's columns are its read step's; another kind's stage does not run on it
                missing = [c for c in stage.needs if c not in have[kind]]
                if missing:
                    later = [s.name for s in stages[i + 1 :] if missing[0] in s.adds]
                    where = (
                        f"{later[0]} adds it after {stage.name}"
                        if later
                        else f"no stage before it adds it ({_provider(missing[0])})"
                    )
                    raise ConfigError(
                        f"config error: {stage.name} needs the '{missing[0]}' column, but {where}: "
                        f"turn that stage on or turn {stage.name} off"
                    )
                have[kind].update(stage.adds)
        for kind in have:
            have[kind].update(phase.adds)
        if phase.role == ROLE_EXPORT:
            _check_export_columns(phase, config, have)
    _check_shard_metadata(plan, config, have)


def _check_export_columns(phase: PhasePlan, config: RunConfig, have: dict[str, set[str]]) -> None:
    """The columns an export names exist in the documents of the phase it copies."""
    index = next((i for i, e in enumerate(config.exports) if f"{EXPORT_PREFIX}{e.name}" == phase.name), None)
    if index is None:
        return  # an export phase of its own (handed to the runner), not an exports: entry
    every = set().union(*have.values()) if have else set()
    missing = [c for c in config.exports[index].columns or () if c not in every]
    if missing:
        raise ConfigError(
            f"config error: exports.{index}.columns: the documents of {phase.reads} have no column "
            f"{missing[0]!r} (no stage before it adds it): remove it or turn on the stage that adds it"
        )


def _only_for(phase: PhasePlan, kind: str) -> set[str]:
    """Stages of ``phase`` that other source kinds run but ``kind`` does not."""
    mine = set(phase.source(kind).stages) if phase.source(kind) else set()
    return {n for s in phase.sources if s.kind != kind for n in s.stages} - mine


#: Which config switch adds a column other stages may need (for the column check's message).
_PROVIDERS = {
    "language": "language ID (langid.enabled) is off",
    "language_score": "language ID (langid.enabled) is off",
    "quality_score": "no classifier named quality scores this run (classifiers:)",
}


def _provider(column: str) -> str:
    return _PROVIDERS.get(column, "no stage of this run adds it")


def _check_shard_metadata(plan: Plan, config: RunConfig, have: dict[str, set[str]]) -> None:
    """The columns shards.layout.metadata names must exist in the documents the shards read."""
    shards = plan.with_role(ROLE_SHARDS)
    if shards is None or not shards.enabled:
        return
    every = set().union(*have.values()) if have else set()
    missing = [c for c in config.shards.layout.metadata if c not in every]
    if missing:
        raise ConfigError(
            f"config error: shards.layout.metadata: no stage of this run adds the column(s) "
            f"{', '.join(missing)}: remove them or turn on the stage that adds them"
        )
