"""Where a run's outputs live under its output root (README.md, "What a run produces").

``documents/<phase>/part-<name>.parquet`` what a phase kept, ``rejected/<phase>/...`` what it removed,
``_done/<phase>/<unit>.json`` a unit's completion marker (``_done/<phase>/<step>/<unit>.json`` for a unit
of a step that is not the phase's own).
"""

from __future__ import annotations

DOCUMENTS = "documents"
REJECTED = "rejected"
DONE = "_done"


def part_file(name: str) -> str:
    """The file of part ``name`` in any per-part folder."""
    return f"part-{name}.parquet"


def marker_path(phase: str, unit: str, step: str | None = None) -> tuple[str, ...]:
    """The completion marker of a phase's unit, or of a unit of one of its steps."""
    return (DONE, phase, f"{unit}.json") if step is None else (DONE, phase, step, f"{unit}.json")


def empty_record_path(phase: str, step: str) -> tuple[str, str, str]:
    """The one marker of the units of a step that had nothing to do (empty shuffle groups): a file per
    such unit would be 500,000 files for 10 documents in 500,000 groups."""
    return DONE, phase, f"_empty_{step}.json"
