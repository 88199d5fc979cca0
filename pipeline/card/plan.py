"""What the card reads: the run's plan (pipeline.plan, recorded in run.json), each phase's status and
current parts, and the records each input file held.

The card knows no phase by name: labels, the order of the stages and the settings of each phase come
from the plan; the phase that reads the inputs, the one that deduplicates, redacts PII or writes the
shards manifest are found in it by what they declare (sources, sections, stages, roles), and so are the
score columns (what the stages declare as ``scores``).

In a run (and in ``curate report`` when the recorded config still validates) the parts are those
the runner itself would hand to the next phase: the parts whose markers are current for the recorded
inputs and settings (``RunContext.parts``), so a part left over from an earlier run with other inputs
is never counted.  When the recorded config no longer validates here (a model file that is not on
this machine...), ``curate report`` falls back to every part that has a marker, and the card says so.
Every marker the card uses is checked (pipeline.card.reading): a truncated one is an error naming it.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from core.layout import DOCUMENTS, DONE, REJECTED, part_file
from core.storage import Storage
from core.threads import map_bounded
from pipeline.card.reading import check_marker, read_object
from pipeline.engine import markers as marker_store
from pipeline.engine.columns import UnitList, split
from pipeline.phase import ROLE_DOCUMENTS, Unit
from pipeline.plan import PhasePlan, Plan
from pipeline.result import UnitResult

log = logging.getLogger(__name__)


@dataclass
class PhaseInfo:
    """One phase as the card sees it."""

    name: str
    #: ran (it has finished units), not_run (enabled, nothing finished), disabled (by the config)
    status: str
    writes_documents: bool = True
    #: current parts (documents/<name>/part-<part>.parquet)
    parts: list[str] = field(default_factory=list)
    #: the current parts that have a file under rejected/<name>/ (a phase whose units are not parts, shards: the
    #: files there)
    rejected: list[str] = field(default_factory=list)
    #: stages that ran (the markers' stage_docs_in), for steps that removed nothing
    stages: list[str] = field(default_factory=list)
    #: the source kind of each current part (the phase that reads the inputs only)
    kinds: dict[str, str] = field(default_factory=dict)
    #: what its outputs are, as it declares (pipeline.phase ROLE_*)
    role: str = ROLE_DOCUMENTS
    #: units whose marker is current by its fingerprint but some file it published is gone (``shards/`` deleted)
    missing: list[str] = field(default_factory=list)


@dataclass
class ReaderCounts:
    """What the units that read the input files counted, added up as their markers are read (never kept one by
    one: issue 39): per input file its kind and records (the card's table of files); per kind the records by type,
    the malformed stretches skipped and the rows."""

    files: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    kinds: dict[str | None, dict] = field(default_factory=dict)

    def add(self, m: UnitResult) -> None:
        kind, by_type = m.outputs.get("kind"), m.totals.get("records_by_type", {})
        kind = sys.intern(kind) if isinstance(kind, str) else kind  # a few kinds, 90,000 files
        source = m.outputs.get("source", m.unit)
        source = sys.intern(source) if isinstance(source, str) else source  # one string, shared with the counts
        self.files[source] = (kind, sum(by_type.values()))
        counts = self.kinds.setdefault(kind, {"by_type": Counter(), "malformed": 0, "rows": 0})
        counts["by_type"].update(by_type)
        counts["malformed"] += m.totals.get("malformed_records", 0)
        counts["rows"] += m.totals.get("rows", by_type.get("response", 0))


@dataclass
class _Seen:
    """A phase's markers as the card uses them, added up as they are read: any, the stages that ran, each part's
    source kind (the phase that reads the inputs)."""

    any: bool = False
    stages: set[str] = field(default_factory=set)
    kinds: dict[str, str] = field(default_factory=dict)

    def add(self, m: UnitResult, sources: bool) -> None:
        self.any = True
        self.stages.update(m.stages.docs_in)
        if sources and m.outputs.get("kind"):
            self.kinds[sys.intern(m.unit)] = sys.intern(m.outputs["kind"])


@dataclass
class CardPlan:
    record: dict
    #: the phases the card reports on (every phase of the plan but the card's own), in run order
    phases: list[PhaseInfo]
    #: the run's plan: labels, stage order, settings, sources
    plan: Plan
    #: what the units that read the input files counted (records by type per file)
    reader: ReaderCounts = field(default_factory=ReaderCounts)
    #: why parts were taken from markers without checking fingerprints (None: they were checked)
    fallback: str | None = None

    def phase(self, name: str | None) -> PhaseInfo | None:
        return next((p for p in self.phases if p.name == name), None)

    def inputs_phase(self) -> str | None:
        """The phase that reads the input files."""
        first = self.plan.phases[0].name if self.plan.phases else None  # an earlier version's record: the first phase
        return next((p.name for p in self.plan.phases if p.sources), first)

    def with_stage(self, stage: str) -> str | None:
        """The phase that runs ``stage`` (by the plan; for an earlier version's output, by its markers)."""
        planned = next((p.name for p in self.plan.phases if any(s.name == stage for s in p.stages)), None)
        return planned or next((p.name for p in self.phases if stage in p.stages), None)

    def with_section(self, section: str) -> str | None:
        """The phase whose outputs depend on the config section ``section`` (``dedup``)."""
        return next((p.name for p in self.plan.phases if section in p.sections), None)

    def with_role(self, role: str) -> str | None:
        """The phase of a role (``shards``), as it declares."""
        planned = self.plan.with_role(role)
        return planned.name if planned is not None else None

    def stage_label(self, phase: str, stage: str) -> str | None:
        info = self.plan.stage(phase, stage)
        return info.label if info else None


def _stage_order(plan: PhasePlan | None, stages: set[str]) -> list[str]:
    """``stages`` in the plan's order; stages it does not name (another version's) after, by name."""
    known = [s.name for s in plan.stages if s.name in stages] if plan else []
    return known + sorted(s for s in stages if s not in known)


def _checked(storage: Storage, phase: str, m: UnitResult) -> UnitResult:
    """``m``, checked for the fields the card reads (an error names its file)."""
    check_marker(m.to_json(), storage.uri(DONE, phase, f"{m.unit}.json"))
    return m


def _info(storage: Storage, phase: PhasePlan, parts: list[str], seen: _Seen) -> PhaseInfo:
    rejected_files = set(storage.list(REJECTED, phase.name, suffix=".parquet"))
    if phase.writes_documents:
        rejected = [p for p in parts if part_file(p) in rejected_files]
    else:  # a phase whose units are not parts (shards: groups): every rejected file it wrote
        rejected = sorted(f for f in rejected_files if "/" not in f) if seen.any else []
    status = "ran" if seen.any else "not_run"
    stages = _stage_order(phase, seen.stages)
    return PhaseInfo(
        phase.name, status, phase.writes_documents, sorted(parts), rejected, stages, seen.kinds, phase.role
    )


def _reported(plan: Plan) -> list[PhasePlan]:
    """The phases the card reports on (every one but the card's own)."""
    return [p for p in plan.phases if p.reported]


def plan_from_context(ctx, record: dict) -> CardPlan:
    """The plan of a run: current parts by fingerprint, as the runner sees them."""
    enabled = {p.name: p for p in ctx.phases}
    infos = []
    reader = ReaderCounts()
    for planned in _reported(ctx.plan):
        if planned.name not in enabled:
            infos.append(PhaseInfo(planned.name, "disabled", planned.writes_documents, role=planned.role))
            continue
        phase = enabled[planned.name]
        units = ctx.units_of(phase)
        # a part's name once for every phase it is in (interned): each phase's names were new strings (issue 39)
        parts = ctx.parts(phase).names if phase.writes_documents else []  # interned: one string for every phase
        seen = _Seen()
        done = split(units, ctx.current(phase, units))[0]
        for m in ctx.results(phase, done):
            seen.add(_checked(ctx.storage, phase.name, m), planned.sources)
            if planned.sources:
                reader.add(m)
        names, markers = _names(done), ctx.markers(phase)
        # a global phase (deduped) marks its parts beside its one unit
        beside = {p: markers[p].fingerprint for p in parts if p not in names and p in markers}
        del names
        for m in marker_store.results(ctx.storage, phase.name, None, beside):
            seen.add(_checked(ctx.storage, phase.name, m), planned.sources)
        infos.append(_info(ctx.storage, planned, parts, seen))
        infos[-1].missing = _missing(ctx, phase, units)
        ctx.release(phase.name)  # one phase's units and markers at a time
    return CardPlan(record, infos, ctx.plan, reader)


def _names(units: Sequence[Unit]) -> set[str]:
    return set(units.names) if isinstance(units, UnitList) else {u.name for u in units}


def _missing(ctx, phase, units: Sequence[Unit]) -> list[str]:
    """The units whose marker is current by its fingerprint but some file it published is gone."""
    by_step = (
        [(units.step, units.names, units.fingerprints)]
        if isinstance(units, UnitList)
        else [(u.step, [u.name], [u.fingerprint]) for u in units]
    )
    out = []
    for step, names, fps in by_step:
        markers = ctx.markers(phase, step)
        for name, fp in zip(names, fps, strict=True):
            if name in markers and not markers.is_current(name, fp) and markers[name].fingerprint == fp:
                out.append(name)  # same fingerprint, not current: a file it published is gone
    return out


def _every_stage():
    """A config with every optional stage on (its model files are never opened): the plan of an earlier
    version's output is built with it, so that its steps come in the pipeline's order with their labels."""
    from pipeline.config import parse_config
    from stages.classify import ClassifierConfig, ClassifierFilterConfig

    config = parse_config(
        {"inputs": ["-"], "output": "-", "dedup": {"paragraphs": {"enabled": True}}, "pii": {"enabled": True}}
    )
    quality = ClassifierConfig.model_construct(
        name="quality",
        model="-",
        label="hq",
        lowercase=False,
        max_chars=None,
        filter=ClassifierFilterConfig(threshold=0.5),
    )  # the one classifier earlier versions had
    return config.model_copy(update={"classifiers": [quality]})


def recorded_plan(storage: Storage, record: dict, phases: Sequence = ()) -> Plan:
    """The plan run.json recorded; for an output of an earlier version without one, the plan of ``phases``
    (the pipeline's) with every optional stage on, its phases that have markers or write documents, then
    any other phase whose markers are in the output."""
    if record.get("plan"):
        return Plan.from_json(record["plan"])
    from pipeline.plan import build_plan

    found = {n.split("/")[0] for n in storage.list(DONE)}
    built, _ = build_plan(_every_stage(), phases)
    out = [p for p in built.phases if p.name in found or p.writes_documents]
    known = {p.name for p in built.phases}
    for n in sorted(found - known):
        docs = storage.exists(DOCUMENTS, n)
        out.append(PhasePlan(n, n, True, None, "unit", docs, (), role=ROLE_DOCUMENTS if docs else ""))
    return Plan(tuple(out))


def plan_from_markers(storage: Storage, record: dict, why: str, phases: Sequence = ()) -> CardPlan:
    """The plan when the recorded config cannot be rebuilt: every part with a marker and a documents file
    (``phases``: the pipeline's, for an output whose run.json recorded no plan)."""
    plan = recorded_plan(storage, record, phases)
    infos = []
    reader = ReaderCounts()
    for planned in _reported(plan):
        if not planned.enabled:
            infos.append(PhaseInfo(planned.name, "disabled", planned.writes_documents, role=planned.role))
            continue
        name = planned.name
        files = {
            f.removeprefix("part-").removesuffix(".parquet") for f in storage.list(DOCUMENTS, name, suffix=".parquet")
        }
        counts_reader = planned.sources or name == plan.phases[0].name
        seen, parts = _Seen(), []
        for m in _every_marker(storage, name):
            seen.add(m, planned.sources)
            if planned.writes_documents and m.outputs.get("documents_part") and m.unit in files:
                parts.append(sys.intern(m.unit))
            if counts_reader and m.totals.get("records_by_type"):
                reader.add(m)
        infos.append(_info(storage, planned, parts, seen))
    return CardPlan(record, infos, plan, reader, fallback=why)


def _every_marker(storage: Storage, phase: str) -> Iterator[UnitResult]:
    """Every marker of ``phase``'s folder, checked (an error names its file), read in parallel a batch at a time."""
    names = [n.removesuffix(".json") for n in storage.list(DONE, phase, suffix=".json") if "/" not in n]
    found = map_bounded(lambda n: read_object(storage, DONE, phase, f"{n}.json"), names)
    for name, data in zip(names, found, strict=True):
        yield UnitResult.from_json(check_marker(data, storage.uri(DONE, phase, f"{name}.json")))
