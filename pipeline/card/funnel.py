"""The funnel: from the records of the input files to documents and tokens written, one step per stage
that removes documents.

Every step has ``in``, ``removed`` (by reason) and ``out = in - removed``, and each step's ``out`` is the
next step's ``in``.  The counts come from the data: a phase's removals are its rejected rows grouped by
``stage`` and ``reason``, its survivors are its kept rows, the last step's documents are the shards
manifest's.  Only the first step (records -> rows: a WARC's requests and metadata never become rows)
needs the readers' per-file counts (the input phase's markers); the last step's out is the samples of
the shards (the documents, unless a training mix repeated some).  Where the data do not meet (a part a
phase did not finish, documents the manifest does not account for), the gap is a step of its own, so
nothing is silently lost and the funnel still adds up.

Labels and the order of the steps are the plan's (each stage and phase says what it is); the funnel
is drawn for the whole run and, when the inputs are of several kinds (WARC, JSON lines / Parquet), for
each kind's parts on its own, each adding up.
"""

from __future__ import annotations

from collections import Counter

from pipeline.card.plan import CardPlan, PhaseInfo
from pipeline.phase import ROLE_DOCUMENTS, ROLE_SHARDS

STATUS_TEXT = {"disabled": "not run: disabled by the config", "not_run": "not run: no finished units"}
NOT_PROCESSED = "not processed (parts this phase has not finished)"
NOT_IN_SHARDS = "not in the shards manifest (unaccounted)"
#: Documents none of whose tokens reached a sample: the packed layout's remainder drop (the manifest's ``dropped``).
DROPPED = "dropped whole by packing (layout.remainder: drop)"
#: The training mix (stages/mix.py): documents it did not draw, and the samples its repeats add (a negative removal).
NOT_DRAWN, REPEATS = (
    "not drawn (the mix subsampled its source)",
    "repeated (extra samples of a source the mix upsampled)",
)
READ = "read"


def share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _row(step: str, phase: str, stage: str, n_in: int, by_reason: dict, status: str = "ran", label: str = "") -> dict:
    removed = sum(by_reason.values())
    return {
        "step": step,
        "phase": phase,
        "stage": stage,
        "status": status,
        "label": label or f"{phase}: {stage}",
        "in": n_in,
        "removed": removed,
        "by_reason": dict(sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))),
        "out": n_in - removed,
    }


def reader_counts(plan: CardPlan, kind: str | None = None) -> dict:
    """Records by type over the input files the input phase finished (of one source kind, or all)."""
    by_type: Counter = Counter()
    malformed = rows = 0
    for k, counts in plan.reader.kinds.items():
        if kind is not None and k != kind:
            continue
        by_type.update(counts["by_type"])
        malformed += counts["malformed"]
        rows += counts["rows"]
    return {
        "by_type": dict(sorted(by_type.items())),
        "records": sum(by_type.values()),
        "rows": rows,
        "malformed": malformed,
    }


def _records_label(plan: CardPlan, kinds: list[str]) -> str:
    first = plan.plan.phase(plan.inputs_phase())
    labels = [s.records_label for s in first.sources if s.kind in kinds] if first is not None else []
    if len(labels) == 1:
        return labels[0]
    return "rows among the records read" + (f" ({', '.join(labels)})" if labels else "")


def funnel(plan: CardPlan, aggs: dict[str, dict], manifest: dict | None, kind: str | None = None) -> list[dict]:
    """The funnel of the run (``kind`` None) or of one source kind's parts (then without the shards step,
    whose groups mix every kind)."""
    first_phase = plan.inputs_phase()
    reader = reader_counts(plan, kind)
    inputs = plan.phase(first_phase)
    rows_read = _rows(aggs, first_phase, "documents") + _rows(aggs, first_phase, "rejected")
    kinds = sorted(k for k in plan.reader.kinds if k) if kind is None else [kind]
    non_rows = {f"{t} record": n for t, n in reader["by_type"].items() if n and t not in ("response", "record")}
    first = _row(
        "records",
        first_phase or "",
        "records",
        reader["records"],
        non_rows,
        inputs.status if inputs else "not_run",
        _records_label(plan, kinds),
    )
    if first["out"] != rows_read:  # the readers' counts and the rows disagree: shown, and a failed check
        first["by_reason"]["(reader's row count - rows)"] = first["out"] - rows_read
        first.update(removed=reader["records"] - rows_read, out=rows_read)
    out = [first]
    for phase in plan.phases:
        if kind is not None and phase.role == ROLE_SHARDS:
            break  # shards mix the parts of every kind
        out += _phase_rows(plan, phase, out[-1]["out"], aggs, manifest if kind is None else None, kinds)
    return out


def _rows(aggs: dict, phase: str | None, kind: str) -> int:
    return aggs.get(f"{phase}/{kind}", {}).get("rows", 0)


def _stage_label(plan: CardPlan, phase: str, stage: str, kinds: list[str]) -> str | None:
    """The plan's label of a stage; a source's read step, by the kinds of the inputs read."""
    planned = plan.plan.phase(phase)
    if stage == READ and planned is not None and planned.sources:
        labels = [s.label for s in planned.sources if s.kind in kinds] or [s.label for s in planned.sources]
        return " / ".join(labels)
    return plan.stage_label(phase, stage)


def _phase_rows(
    plan: CardPlan, phase: PhaseInfo, n_in: int, aggs: dict, manifest: dict | None, kinds: list[str]
) -> list[dict]:
    planned = plan.plan.phase(phase.name)
    phase_label = planned.label if planned else phase.name
    if phase.status != "ran":
        return [
            _row(
                phase.name,
                phase.name,
                "",
                n_in,
                {},
                phase.status,
                f"{phase_label} ({phase.name}: {STATUS_TEXT[phase.status]})",
            )
        ]
    rejected = aggs.get(f"{phase.name}/rejected", {})
    reasons: dict[str, dict[str, int]] = rejected.get("reasons", {})
    rows = []
    if phase.role == ROLE_DOCUMENTS:
        phase_in = _rows(aggs, phase.name, "documents") + rejected.get("rows", 0)
        if phase_in != n_in:
            rows.append(
                _row(
                    f"{phase.name}:not_processed",
                    phase.name,
                    "",
                    n_in,
                    {NOT_PROCESSED: n_in - phase_in},
                    label=f"{phase.name}: {NOT_PROCESSED}",
                )
            )
            n_in = phase_in
    ran = set(reasons) | set(phase.stages)
    order = [s.name for s in planned.stages if s.name in ran] if planned else []
    stages = order + sorted(s for s in ran if s not in order) or [""]
    for stage in stages:
        label = (_stage_label(plan, phase.name, stage, kinds) if stage else None) or (
            phase_label if not stage else f"{phase.name}: {stage}"
        )
        rows.append(
            _row(
                f"{phase.name}:{stage}" if stage else phase.name,
                phase.name,
                stage,
                n_in,
                reasons.get(stage, {}),
                label=label,
            )
        )
        n_in = rows[-1]["out"]
    shards = phase.role == ROLE_SHARDS  # the manifest says what the shards hold
    mix = (manifest or {}).get("mix") if shards else None
    if mix:  # the mix draws each document 0..n times: the documents left out, the repeats added
        rows.append(
            _row(
                f"{phase.name}:mix",
                phase.name,
                "mix",
                n_in,
                {
                    k: v
                    for k, v in (
                        (NOT_DRAWN, n_in - mix["documents_drawn"]),
                        (REPEATS, mix["documents_drawn"] - mix["samples"]),
                    )
                    if v
                },
                label="training mix: documents drawn to the target shares",
            )
        )
        n_in = rows[-1]["out"]
    dropped = ((manifest or {}).get("dropped") or {}).get("documents", 0) if shards else 0
    if dropped:
        rows.append(
            _row(f"{phase.name}:dropped", phase.name, "", n_in, {DROPPED: dropped}, label=f"{phase.name}: {DROPPED}")
        )
        n_in = rows[-1]["out"]
    if shards and manifest is not None and manifest["samples"] != n_in:
        missing = {NOT_IN_SHARDS: n_in - manifest["samples"]}
        rows.append(
            _row(f"{phase.name}:unaccounted", phase.name, "", n_in, missing, label=f"{phase.name}: {NOT_IN_SHARDS}")
        )
    return rows


def adds_up(rows: list[dict]) -> bool:
    """Each step's out is the next step's in, and in - removed = out with removed = the sum of its reasons."""
    steps_ok = all(r["in"] - r["removed"] == r["out"] and sum(r["by_reason"].values()) == r["removed"] for r in rows)
    return steps_ok and all(a["out"] == b["in"] for a, b in zip(rows, rows[1:], strict=False))
