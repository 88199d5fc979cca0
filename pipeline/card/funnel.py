"""The funnel: from WARC records to documents and tokens written, one step per stage that removes documents.

Every step has ``in``, ``removed`` (by reason) and ``out = in - removed``, and
each step's ``out`` is the next step's ``in``.  The counts come from the data:
a phase's removals are its rejected rows grouped by ``stage`` and ``reason``,
its survivors are its kept rows, the last step's documents are the shards
manifest's.  Only the first step (all WARC records -> HTTP responses) needs
the reader's per-file counts (``_done/extracted``), because records other than
responses never become rows.  Where the data do not meet (a part a phase did
not finish, documents the manifest does not account for), the gap is a step of
its own, so nothing is silently lost and the funnel still adds up.
"""

from __future__ import annotations

from collections import Counter

from pipeline.card import names as N
from pipeline.card.plan import CardPlan

#: What each stage's step means in the card (a stage not listed shows as "<phase>: <stage>").
LABELS = {
    "warc": "HTTP responses among the WARC records",
    "read": "HTML responses (record checks: type, HTTP status, size, truncation)",
    "url_filter": "URL filter (RefinedWeb block list)",
    "decode": "text decoded (charset)",
    "extract": "main text extracted",
    "langid": "language identified (language and score rules)",
    "gopher_quality": "Gopher quality rules",
    "gopher_repetition": "Gopher repetition rules",
    "c4": "C4 rules",
    "fineweb": "FineWeb rules",
    "quality": "quality scored",
    "dedup": "exact and near duplicates removed",
    "quality_filter": "quality-filtered",
    "pii": "PII redacted",
    "shards": "documents and tokens written to shards",
}
#: What a phase that did not run would have done.
PHASE_LABELS = {N.EXTRACTED: "documents extracted and filtered", N.DEDUPED: LABELS["dedup"],
                N.FINAL: "quality filter and PII redaction", N.SHARDS: LABELS["shards"]}
STATUS_TEXT = {"disabled": "not run: disabled by the config", "absent": "not run: no such phase in this pipeline",
               "not_run": "not run: no finished units"}
NOT_PROCESSED = "not processed (parts this phase has not finished)"
NOT_IN_SHARDS = "not in the shards manifest (unaccounted)"


def share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def stage_order(stages) -> list[str]:
    known = [s for s in N.STAGE_ORDER if s in stages]
    return known + sorted(s for s in stages if s not in N.STAGE_ORDER)


def _row(step: str, phase: str, stage: str, n_in: int, by_reason: dict, status: str = "ran", label: str | None = None) -> dict:
    removed = sum(by_reason.values())
    return {"step": step, "phase": phase, "stage": stage, "status": status,
            "label": label or LABELS.get(stage, f"{phase}: {stage}"), "in": n_in, "removed": removed,
            "by_reason": dict(sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))), "out": n_in - removed}


def reader_counts(plan: CardPlan) -> dict:
    """Records by type over the input files the extracted phase finished (from its markers)."""
    by_type: Counter = Counter()
    malformed = 0
    for m in plan.reader:
        by_type.update(m.get("records_by_type", {}))
        malformed += m.get("malformed_records", 0)
    return {"by_type": dict(sorted(by_type.items())), "records": sum(by_type.values()), "malformed": malformed}


def funnel(plan: CardPlan, aggs: dict[str, dict], manifest: dict | None) -> list[dict]:
    reader = reader_counts(plan)
    extracted = plan.phase(N.EXTRACTED)
    responses = _rows(aggs, N.EXTRACTED, "documents") + _rows(aggs, N.EXTRACTED, "rejected")
    others = {f"{t} record": n for t, n in reader["by_type"].items() if t != "response"}
    first = _row("records", N.EXTRACTED, "warc", reader["records"], others, extracted.status if extracted else "absent")
    if first["out"] != responses:  # the reader's response count and the rows disagree: shown, and a failed check
        first["by_reason"]["(reader's response count - rows)"] = first["out"] - responses
        first.update(removed=reader["records"] - responses, out=responses)
    rows = [first]
    for phase in plan.phases:
        rows += _phase_rows(phase, rows[-1]["out"], aggs, manifest)
    return rows


def _rows(aggs: dict, phase: str, kind: str) -> int:
    return aggs.get(f"{phase}/{kind}", {}).get("rows", 0)


def _phase_rows(phase, n_in: int, aggs: dict, manifest: dict | None) -> list[dict]:
    if phase.status != "ran":
        stage = N.PHASE_STAGE.get(phase.name, phase.name)
        label = f"{PHASE_LABELS.get(phase.name, phase.name)} ({phase.name}: {STATUS_TEXT[phase.status]})"
        return [_row(phase.name, phase.name, stage, n_in, {}, phase.status, label)]
    rejected = aggs.get(f"{phase.name}/rejected", {})
    reasons: dict[str, dict[str, int]] = rejected.get("reasons", {})
    rows = []
    if phase.writes_documents:
        phase_in = _rows(aggs, phase.name, "documents") + rejected.get("rows", 0)
        if phase_in != n_in:
            rows.append(_row(f"{phase.name}:not_processed", phase.name, "", n_in, {NOT_PROCESSED: n_in - phase_in},
                             label=f"{phase.name}: {NOT_PROCESSED}"))
            n_in = phase_in
    stages = stage_order(set(reasons) | set(phase.stages)) or [N.PHASE_STAGE.get(phase.name, phase.name)]
    for stage in stages:
        rows.append(_row(f"{phase.name}:{stage}", phase.name, stage, n_in, reasons.get(stage, {})))
        n_in = rows[-1]["out"]
    if not phase.writes_documents and manifest is not None and manifest["documents"] != n_in:
        rows.append(_row(f"{phase.name}:unaccounted", phase.name, "", n_in, {NOT_IN_SHARDS: n_in - manifest["documents"]},
                         label=f"{phase.name}: {NOT_IN_SHARDS}"))
    return rows


def adds_up(rows: list[dict]) -> bool:
    """Each step's out is the next step's in, and in - removed = out with removed = the sum of its reasons."""
    steps_ok = all(r["in"] - r["removed"] == r["out"] and sum(r["by_reason"].values()) == r["removed"] for r in rows)
    return steps_ok and all(a["out"] == b["in"] for a, b in zip(rows, rows[1:]))
