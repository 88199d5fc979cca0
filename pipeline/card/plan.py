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
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.layout import DOCUMENTS, DONE, REJECTED, part_file
from core.storage import Storage
from pipeline.card.reading import check_marker, read_object
from pipeline.phase import ROLE_DOCUMENTS
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
    #: files under rejected/<name>/ that belong to the current parts
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
class CardPlan:
    record: dict
    #: the phases the card reports on (every phase of the plan but the card's own), in run order
    phases: list[PhaseInfo]
    #: the run's plan: labels, stage order, settings, sources
    plan: Plan
    #: the results of the units that read the input files (records by type per file)
    reader: list[UnitResult] = field(default_factory=list)
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


def _checked(storage: Storage, phase: str, markers: dict) -> dict[str, UnitResult]:
    """``{unit: result}``, each marker checked for the fields the card reads (an error names the file)."""
    out = {}
    for unit, m in markers.items():
        uri = storage.uri(DONE, phase, f"{unit}.json")
        out[unit] = UnitResult.from_json(check_marker(m.to_json() if isinstance(m, UnitResult) else m, uri))
    return out


def _info(storage: Storage, phase: PhasePlan, parts: list[str], markers: list[UnitResult]) -> PhaseInfo:
    rejected_files = set(storage.list(REJECTED, phase.name, suffix=".parquet"))
    if phase.writes_documents:
        rejected = [part_file(p) for p in parts if part_file(p) in rejected_files]
    else:  # a phase whose units are not parts (shards: groups): every rejected file it wrote
        rejected = sorted(f for f in rejected_files if "/" not in f) if markers else []
    status = "ran" if markers else "not_run"
    stages = _stage_order(phase, {s for m in markers for s in m.stages.docs_in})
    kinds = {m.unit: m.outputs["kind"] for m in markers if m.outputs.get("kind")} if phase.sources else {}
    return PhaseInfo(phase.name, status, phase.writes_documents, sorted(parts), rejected, stages, kinds, phase.role)


def _reported(plan: Plan) -> list[PhasePlan]:
    """The phases the card reports on (every one but the card's own)."""
    return [p for p in plan.phases if p.reported]


def plan_from_context(ctx, record: dict) -> CardPlan:
    """The plan of a run: current parts by fingerprint, as the runner sees them."""
    enabled = {p.name: p for p in ctx.phases}
    infos = []
    reader: list[UnitResult] = []
    for planned in _reported(ctx.plan):
        if planned.name not in enabled:
            infos.append(PhaseInfo(planned.name, "disabled", planned.writes_documents, role=planned.role))
            continue
        phase = enabled[planned.name]
        done = _checked(
            ctx.storage,
            phase.name,
            {u.name: m for u in ctx.units_of(phase) if (m := ctx.marker(phase, u)) is not None},
        )
        parts = [p.name for p in ctx.parts(phase)] if phase.writes_documents else []
        markers = ctx.markers(phase)  # a global phase (deduped) marks its parts beside its one unit
        part_markers = _checked(
            ctx.storage, phase.name, {p: markers[p] for p in parts if p not in done and p in markers}
        )
        infos.append(_info(ctx.storage, planned, parts, [*done.values(), *part_markers.values()]))
        infos[-1].missing = [
            u.name
            for u in ctx.units_of(phase)
            if (m := ctx.markers(phase, u.step).get(u.name)) is not None
            and m.fingerprint == u.fingerprint
            and ctx.missing(phase, m)
        ]
        if planned.sources:
            reader = list(done.values())
        ctx.drop_markers(phase.name)
    return CardPlan(record, infos, ctx.plan, reader)


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
    from concurrent.futures import ThreadPoolExecutor

    plan = recorded_plan(storage, record, phases)
    infos = []
    reader: list[UnitResult] = []
    for planned in _reported(plan):
        if not planned.enabled:
            infos.append(PhaseInfo(planned.name, "disabled", planned.writes_documents, role=planned.role))
            continue
        name = planned.name
        names = [n.removesuffix(".json") for n in storage.list(DONE, name, suffix=".json") if "/" not in n]
        with ThreadPoolExecutor(16) as pool:
            found = list(pool.map(lambda n, name=name: read_object(storage, DONE, name, f"{n}.json"), names))
        markers = _checked(storage, name, dict(zip(names, found, strict=False)))
        files = {
            f.removeprefix("part-").removesuffix(".parquet") for f in storage.list(DOCUMENTS, name, suffix=".parquet")
        }
        parts = (
            [n for n, m in markers.items() if m.outputs.get("documents_part") and n in files]
            if planned.writes_documents
            else []
        )
        infos.append(_info(storage, planned, parts, list(markers.values())))
        if planned.sources or name == plan.phases[0].name:
            reader = [m for m in markers.values() if m.totals.get("records_by_type")]
    return CardPlan(record, infos, plan, reader, fallback=why)
