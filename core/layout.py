"""Where a run's outputs live under its output root (DESIGN.md, "Output layout").

``documents/<phase>/part-<name>.parquet`` what a phase kept, ``rejected/<phase>/...`` what it removed,
``_done/<phase>/<unit>.json`` a unit's completion marker.
"""

from __future__ import annotations

DOCUMENTS = "documents"
REJECTED = "rejected"
DONE = "_done"


def part_file(name: str) -> str:
    """The file of part ``name`` in any per-part folder."""
    return f"part-{name}.parquet"


def marker_path(phase: str, unit: str) -> tuple[str, str, str]:
    """The completion marker of a phase's unit."""
    return DONE, phase, f"{unit}.json"
