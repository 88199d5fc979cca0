"""What the card reads: each phase's status and current parts, and the WARC reader's record counts.

In a run (and in ``curate report`` when the recorded config still validates)
the parts are those the runner itself would hand to the next phase: the parts
whose markers are current for the recorded inputs and settings
(``RunContext.parts``), so a part left over from an earlier run with other
inputs is never counted.  When the recorded config no longer validates here
(a model file that is not on this machine...), ``curate report`` falls back to
every part that has a marker, and the card says so.  Every marker the card
uses is checked (pipeline.card.reading): a truncated one is an error naming it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pipeline.card import names as N
from pipeline.card.reading import check_marker, read_object
from pipeline.phase import registered
from core.storage import Storage

log = logging.getLogger(__name__)

CARD = "card"


@dataclass
class PhaseInfo:
    """One phase as the card sees it."""

    name: str
    #: ran (it has finished units), not_run (enabled, nothing finished), disabled (by the config),
    #: absent (no such phase in this version of the pipeline)
    status: str
    writes_documents: bool = True
    #: current parts (documents/<name>/part-<part>.parquet)
    parts: list[str] = field(default_factory=list)
    #: files under rejected/<name>/ that belong to the current parts
    rejected: list[str] = field(default_factory=list)
    #: stages that ran (the markers' stage_docs_in), for steps that removed nothing
    stages: list[str] = field(default_factory=list)


@dataclass
class CardPlan:
    record: dict
    phases: list[PhaseInfo]
    #: the extracted phase's markers (WARC reader counts per input file)
    reader: list[dict] = field(default_factory=list)
    #: why parts were taken from markers without checking fingerprints (None: they were checked)
    fallback: str | None = None

    def phase(self, name: str) -> PhaseInfo | None:
        return next((p for p in self.phases if p.name == name), None)


def _part_file(name: str) -> str:
    return f"part-{name}.parquet"


def _stages(markers: list[dict]) -> list[str]:
    from pipeline.card.funnel import stage_order

    return stage_order({s for m in markers for s in m.get("stage_docs_in", {})})


def _checked(storage: Storage, phase: str, markers: dict[str, dict]) -> dict[str, dict]:
    """``{unit: marker}``, each marker checked for the fields the card reads (an error names the file)."""
    return {u: check_marker(m, storage.uri("_done", phase, f"{u}.json")) for u, m in markers.items()}


def _info(storage: Storage, phase, parts: list[str], markers: list[dict]) -> PhaseInfo:
    rejected_files = set(storage.list("rejected", phase.name, suffix=".parquet"))
    if phase.writes_documents:
        rejected = [_part_file(p) for p in parts if _part_file(p) in rejected_files]
    else:  # a phase whose units are not parts (shards: groups): every rejected file it wrote
        rejected = sorted(f for f in rejected_files if "/" not in f) if markers else []
    status = "ran" if markers else "not_run"
    return PhaseInfo(phase.name, status, phase.writes_documents, sorted(parts), rejected, _stages(markers))


def _with_expected(phases: list[PhaseInfo]) -> list[PhaseInfo]:
    """Add the expected phases this pipeline version does not have, as absent, where they belong."""
    out = list(phases)
    for i, name in enumerate(N.EXPECTED_PHASES):
        if any(p.name == name for p in out):
            continue
        before = [n for n in N.EXPECTED_PHASES[:i] if any(p.name == n for p in out)]
        at = max((j for j, p in enumerate(out) if p.name in before), default=-1) + 1
        out.insert(at, PhaseInfo(name, "absent", name != N.SHARDS))
    return out


def plan_from_context(ctx, record: dict) -> CardPlan:
    """The plan of a run: current parts by fingerprint, as the runner sees them."""
    enabled = {p.name: p for p in ctx.phases}
    infos = []
    reader: list[dict] = []
    for phase in registered():
        if phase.name == CARD:
            continue
        if phase.name not in enabled:
            infos.append(PhaseInfo(phase.name, "disabled", phase.writes_documents))
            continue
        phase = enabled[phase.name]
        done = _checked(ctx.storage, phase.name, {u.name: m for u in ctx.units_of(phase) if (m := ctx.marker(phase, u)) is not None})
        parts = [p.name for p in ctx.parts(phase)] if phase.writes_documents else []
        markers = ctx.markers(phase)  # a global phase (deduped) marks its parts beside its one unit
        part_markers = _checked(ctx.storage, phase.name, {p: markers[p] for p in parts if p not in done and p in markers})
        infos.append(_info(ctx.storage, phase, parts, [*done.values(), *part_markers.values()]))
        if phase.name == N.EXTRACTED:
            reader = list(done.values())
    return CardPlan(record, _with_expected(infos), reader)


def _phase_names(storage: Storage) -> list[tuple[str, bool]]:
    """(name, writes documents) of the registered phases, then of phases this version does not have but
    whose markers are in the output (written by another version of the pipeline), in run order."""
    known = [(p.name, p.writes_documents) for p in registered() if p.name != CARD]
    found = {n.split("/")[0] for n in storage.list("_done")} - {CARD} - {n for n, _ in known}
    for name in [*[n for n in N.EXPECTED_PHASES if n in found], *sorted(found - set(N.EXPECTED_PHASES))]:
        at = len(known)
        if name in N.EXPECTED_PHASES:  # before the first registered phase that comes after it
            later = N.EXPECTED_PHASES[N.EXPECTED_PHASES.index(name) + 1:]
            at = next((i for i, (n, _) in enumerate(known) if n in later), at)
        known.insert(at, (name, storage.exists("documents", name)))
    return known


class _Named:
    def __init__(self, name: str, writes_documents: bool):
        self.name, self.writes_documents = name, writes_documents


def plan_from_markers(storage: Storage, record: dict, why: str) -> CardPlan:
    """The plan when the recorded config cannot be rebuilt: every part with a marker and a documents file."""
    from concurrent.futures import ThreadPoolExecutor

    infos = []
    reader: list[dict] = []
    for name, writes_documents in _phase_names(storage):
        names = [n.removesuffix(".json") for n in storage.list("_done", name, suffix=".json") if "/" not in n]
        with ThreadPoolExecutor(16) as pool:
            markers = list(pool.map(lambda n: read_object(storage, "_done", name, f"{n}.json"), names))
        markers = list(_checked(storage, name, dict(zip(names, markers))).values())
        files = {f.removeprefix("part-").removesuffix(".parquet") for f in storage.list("documents", name, suffix=".parquet")}
        parts = [n for n, m in zip(names, markers) if m.get("documents_part") and n in files] if writes_documents else []
        infos.append(_info(storage, _Named(name, writes_documents), parts, markers))
        if name == N.EXTRACTED:
            reader = markers
    return CardPlan(record, _with_expected(infos), reader, fallback=why)
