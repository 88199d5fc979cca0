"""What a unit of work did: the one typed result every phase's units return, write as their marker
and add up into the phase's summary.

Every unit, whatever its phase (an input file, a part, a shard group, the corpus, the run), returns a
:class:`UnitResult`: the documents it read, kept and rejected (by reason), what its stages did, the
phase's own additive counts (``totals``: records by type, samples, tokens...) and what it published
(``outputs``: a documents part, shard files, indexes: per unit, never added up).  A failed unit is
the same type with ``failed`` set (no marker is written for it).  :meth:`UnitResult.merge` adds two
results, so a phase's summary is one fold over its units (:func:`summarize`), the same for every phase.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stages.base import ChainStats, is_error


def add_totals(a: dict, b: dict) -> dict:
    """``a`` + ``b``: numbers add, dicts add key by key, anything else takes ``b``'s value."""
    out = dict(a)
    for k, v in b.items():
        old = out.get(k)
        if isinstance(v, bool) or isinstance(old, bool):
            out[k] = v
        elif isinstance(v, (int, float)) and isinstance(old, (int, float)):
            out[k] = round(old + v, 6) if isinstance(old, float) or isinstance(v, float) else old + v
        elif isinstance(v, dict) and isinstance(old, dict):
            out[k] = add_totals(old, v)
        else:
            out[k] = v
    return out


@dataclass
class UnitResult:
    """One unit's result (and its marker's content)."""

    unit: str
    fingerprint: str = ""
    #: why the unit failed ("Type: message"); a failed unit has no marker and is retried by a rerun
    failed: str | None = None
    #: an output fault (a full disk...) that stops the run (core.faults)
    fatal: str | None = None
    docs_in: int = 0
    kept: int = 0
    rejected: int = 0
    by_reason: Counter = field(default_factory=Counter)
    stages: ChainStats = field(default_factory=ChainStats)
    #: the phase's own additive counts (added up over units into the summary)
    totals: dict = field(default_factory=dict)
    #: what the unit published or decided (kept per unit in its marker, never added up)
    outputs: dict = field(default_factory=dict)
    seconds: float = 0.0
    #: the unit had nothing to do and published nothing (an empty shuffle group): the engine records such units
    #: of a step together, in one marker (core.layout.empty_record_path)
    empty: bool = False

    @classmethod
    def failure(cls, unit: str, error: str, fatal: str | None = None) -> UnitResult:
        return cls(unit, failed=error[:2000], fatal=fatal)

    def merge(self, other: UnitResult) -> UnitResult:
        """The sum of two results (for a phase's totals; ``unit`` and ``outputs`` are not summed)."""
        stages = ChainStats(
            self.stages.seconds + other.stages.seconds,
            self.stages.docs_in + other.stages.docs_in,
            self.stages.rejected + other.stages.rejected,
            self.stages.counters + other.stages.counters,
        )
        return UnitResult(
            "",
            docs_in=self.docs_in + other.docs_in,
            kept=self.kept + other.kept,
            rejected=self.rejected + other.rejected,
            by_reason=self.by_reason + other.by_reason,
            stages=stages,
            totals=add_totals(self.totals, other.totals),
            seconds=round(self.seconds + other.seconds, 3),
        )

    def to_json(self) -> dict:
        stages = self.stages.to_dict()
        out: dict[str, Any] = {
            "unit": self.unit,
            "fingerprint": self.fingerprint,
            "in": self.docs_in,
            "kept": self.kept,
            "rejected": self.rejected,
            "rejected_by_reason": _sorted(self.by_reason),
            **{k: stages[k] for k in ("stage_seconds", "stage_docs_in", "stage_counters")},
            "totals": self.totals,
            "outputs": self.outputs,
            "seconds": round(self.seconds, 3),
        }
        if self.failed is not None:
            out["failed"] = self.failed
        if self.fatal is not None:
            out["fatal"] = self.fatal
        if self.empty:
            out["empty"] = True
        return out

    @classmethod
    def from_json(cls, data: dict) -> UnitResult:
        if not isinstance(data, dict) or not isinstance(data.get("unit"), str):
            raise ValueError("not a unit's result: a JSON object with a 'unit' name")
        stages = ChainStats(
            Counter(data.get("stage_seconds") or {}),
            Counter(data.get("stage_docs_in") or {}),
            Counter(),
            Counter(data.get("stage_counters") or {}),
        )
        return cls(
            data["unit"],
            data.get("fingerprint", ""),
            data.get("failed"),
            data.get("fatal"),
            data.get("in", 0),
            data.get("kept", 0),
            data.get("rejected", 0),
            Counter(data.get("rejected_by_reason") or {}),
            stages,
            dict(data.get("totals") or {}),
            dict(data.get("outputs") or {}),
            float(data.get("seconds") or 0.0),
            bool(data.get("empty")),
        )


def _sorted(counts: Counter) -> dict:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def summarize(results: Iterable[UnitResult]) -> dict:
    """A phase's summary from the results of all its units (done before or now): the totals of the
    units that did not fail, flat, and the failures by unit."""
    total = UnitResult("")
    failed: dict[str, str] = {}
    for r in results:
        if r.failed is not None:
            failed[r.unit] = r.failed
        else:
            total = total.merge(r)
    return {
        "in": total.docs_in,
        "kept": total.kept,
        "rejected": total.rejected,
        "rejected_by_reason": _sorted(total.by_reason),
        "stage_seconds": {k: round(v, 2) for k, v in total.stages.seconds.items()},
        "stage_counters": dict(sorted(total.stages.counters.items())),
        **total.totals,
        "failed_units": failed,
    }


def lost_to_errors(summary: dict) -> str | None:
    """Why a phase's summary is a failure although no unit failed: it kept no document, and errors (reasons of the
    class errors: stages.base.is_error) took some; None otherwise.  A phase that filtered everything out decided so;
    one whose every document a stage or tool failed on has no result to give the phases after it."""
    errors = {r: n for r, n in (summary.get("rejected_by_reason") or {}).items() if is_error(r) and n}
    if summary.get("kept") or not errors:
        return None
    shown = ", ".join(f"{n:,} {r}" for r, n in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"every document was lost, {sum(errors.values()):,} of {summary.get('in', 0):,} to errors ({shown})"
