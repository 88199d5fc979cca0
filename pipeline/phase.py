"""The phase: the unit of composition of a run.

A run is an ordered list of phases (DESIGN.md).  A phase

- is named after its output folder: ``documents/<name>``, ``rejected/<name>``,
  ``_done/<name>``;
- reads the output of the phase before it (the nearest earlier enabled phase
  that writes documents), or the input WARC files;
- works in units, each published atomically and then marked done by
  ``_done/<name>/<unit>.json``, which holds the unit's stats and fingerprint;
- returns a summary, which the runner records in ``run.json``.

Vocabulary, one meaning each across the code:

- **document**: one row (a page's text and metadata);
- **part**: one Parquet file of a phase's documents, ``part-<name>.parquet``; a
  part keeps the name of the input file it came from through every phase;
- **unit**: one piece of a phase's work with its own marker: an input file
  (extracted), the corpus (deduped), a part (final), a shard group (shards),
  the run (card).

A unit is done when its marker exists and records the unit's current
*fingerprint*: a hash of what its output depends on (the fingerprints of the
parts it reads and the phase's settings).  A changed input or setting
therefore redoes exactly the units it affects, and everything downstream of
them, on the next run.

The runner knows no phase by name: phases register themselves in order
(:func:`register`) and adding a phase is one new module.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

if TYPE_CHECKING:
    from pipeline.config import RunConfig
    from pipeline.context import RunContext


def fingerprint(*items: Any) -> str:
    """A short stable hash of JSON-able values."""
    blob = json.dumps(items, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Unit:
    """One piece of a phase's work."""

    name: str
    fingerprint: str
    #: what a worker needs besides the config (JSON-able): a URI, a part name...
    params: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Unit":
        return cls(**json.loads(text))


@dataclass(frozen=True)
class Part:
    """A part a phase has finished: its name and the fingerprint of its contents."""

    name: str
    fingerprint: str


class Phase:
    """A step of the run.  Subclasses set the class attributes and implement
    :meth:`units`, :meth:`run` and :meth:`summarize`."""

    #: the output folder name (documents/<name>, _done/<name>, run.json's key)
    name: ClassVar[str]
    #: what one unit of work is, for the plan and progress bars
    unit_kind: ClassVar[str] = "unit"
    #: True if the phase writes documents/<name> parts that a later phase reads
    writes_documents: ClassVar[bool] = True

    def enabled(self, config: "RunConfig") -> bool:
        return True

    def check(self, config: "RunConfig") -> None:
        """Raise ConfigError if this phase cannot run with ``config`` (before anything starts)."""

    def settings(self, config: "RunConfig") -> Any:
        """The settings its outputs depend on (part of every unit's fingerprint)."""
        return None

    def units(self, ctx: "RunContext") -> list[Unit]:
        """Every unit of this run, done or not (never starts Ray)."""
        raise NotImplementedError

    def run(self, ctx: "RunContext", todo: list[Unit]) -> Iterable[dict]:
        """Do the units in ``todo``; yields each unit's stats (``failed`` set if it failed)."""
        raise NotImplementedError

    def summarize(self, stats: list[dict]) -> dict:
        """The phase summary from the stats of all its units (done before or now)."""
        return sum_counts(stats)

    def headline(self, summary: dict) -> dict:
        """The few counts the CLI prints for this phase."""
        return {k: summary[k] for k in ("in", "kept", "rejected") if k in summary}

    def parts(self, ctx: "RunContext") -> list[Part]:
        """The parts this phase has finished for the current inputs (what the next phase reads).

        By default a unit makes the part of the same name: every unit whose
        marker is current and that published a documents part.
        """
        out = []
        for unit in ctx.units_of(self):
            marker = ctx.marker(self, unit)
            if marker is not None and marker.get("documents_part"):
                out.append(Part(unit.name, unit.fingerprint))
        return out


def sum_counts(stats: list[dict], keys: tuple[str, ...] = ("in", "kept", "rejected")) -> dict:
    """Totals of the usual counts and of ``rejected_by_reason`` over units."""
    totals: Counter = Counter()
    reasons: Counter = Counter()
    for s in stats:
        totals.update({k: s.get(k, 0) for k in keys})
        reasons.update(s.get("rejected_by_reason", {}))
    return {**{k: totals[k] for k in keys}, "rejected_by_reason": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))}


# ----------------------------------------------------------------------------- registry

_REGISTRY: list[type[Phase]] = []


def register(phase: type[Phase], after: str | None = None) -> type[Phase]:
    """Add a phase to every run: at the end, or right after the phase named ``after``.

    Usable as a decorator.  Registering a class again (a module imported twice)
    moves nothing.
    """
    if after is not None:
        import pipeline.phases  # noqa: F401  (the built-in phases come first)
    if any(p.name == phase.name for p in _REGISTRY):
        if phase not in _REGISTRY:
            raise ValueError(f"a phase named {phase.name!r} is already registered")
        return phase
    if after is None:
        _REGISTRY.append(phase)
    else:
        names = [p.name for p in _REGISTRY]
        if after not in names:
            raise ValueError(f"cannot register {phase.name!r} after {after!r}: no such phase ({', '.join(names)})")
        _REGISTRY.insert(names.index(after) + 1, phase)
    return phase


def unregister(name: str) -> None:
    """Remove a phase (tests that register their own)."""
    _REGISTRY[:] = [p for p in _REGISTRY if p.name != name]


def registered() -> list[Phase]:
    """One instance of every registered phase, in run order."""
    import pipeline.phases  # noqa: F401  (registers the built-in phases)

    return [p() for p in _REGISTRY]


def phase_names() -> list[str]:
    return [p.name for p in registered()]
