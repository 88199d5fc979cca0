"""The phase: the unit of composition of a run.

A run is an explicit plan (pipeline.plan): an ordered list of phases, handed to the runner
(``pipeline.phases.DEFAULT_PHASES`` by default; a test or a user adds their own). A phase

- is named after its output folder: ``documents/<name>``, ``rejected/<name>``, ``_done/<name>``;
- reads the output of the phase before it (the nearest earlier enabled phase that writes
  documents), or the run's inputs;
- describes itself: its label, the config sections its outputs depend on, the stages it runs on
  each document (each stage declares its columns and reasons), the steps of a corpus-wide phase,
  the sinks it writes; the runner, the column check, ``--dry-run`` and the card read that;
- works in units, each published atomically and marked done by ``_done/<name>/<unit>.json``,
  which holds the unit's result (pipeline.result.UnitResult) and fingerprint.

Vocabulary, one meaning each across the code:

- **document**: one row (a page's text and metadata);
- **part**: one Parquet file of a phase's documents, ``part-<name>.parquet``; a part keeps the name
  of the input file it came from through every phase;
- **unit**: one piece of a phase's work with its own marker: an input file (extracted), the corpus
  (deduped), a part (final), a shard group (shards), the run (card).

A unit is done when its marker exists and records the unit's current *fingerprint*: a hash of
what its output depends on (the fingerprints of the parts it reads and the phase's settings). A
changed input or setting therefore redoes exactly the units it affects, and everything downstream
of them, on the next run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

from core.layout import DOCUMENTS, REJECTED

if TYPE_CHECKING:
    from pipeline.config import RunConfig
    from pipeline.context import RunContext
    from pipeline.result import UnitResult
    from stages.base import StageInfo, StageSpec


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


@dataclass(frozen=True)
class StepInfo:
    """One step of a corpus-wide phase (a map or a shuffle over every part), for the plan."""

    name: str
    label: str


@dataclass(frozen=True)
class SinkInfo:
    """One kind of output a phase writes, for the plan: its name, what it holds and where."""

    name: str
    label: str
    path: str


def section_value(config: "RunConfig", section: str) -> Any:
    """The JSON dump of a config section given by its dotted path (``quality.filter``)."""
    value: Any = config
    for key in section.split("."):
        value = getattr(value, key)
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


class Phase:
    """A step of the run.  Subclasses set the class attributes and implement :meth:`units` and :meth:`run`."""

    #: the output folder name (documents/<name>, _done/<name>, run.json's key)
    name: ClassVar[str]
    #: what the phase does, in a few words (the card, --dry-run)
    label: ClassVar[str] = ""
    #: what one unit of work is, for the plan and progress bars
    unit_kind: ClassVar[str] = "unit"
    #: True if the phase writes documents/<name> parts that a later phase reads
    writes_documents: ClassVar[bool] = True
    #: the config sections its outputs depend on (dotted paths): its settings and the card's processing section
    sections: ClassVar[tuple[str, ...]] = ()
    #: the summary keys the CLI prints for the phase
    headline_keys: ClassVar[tuple[str, ...]] = ("in", "kept", "rejected")
    #: columns its kept documents get outside its stages (a corpus-wide phase's own columns)
    adds: ClassVar[tuple[str, ...]] = ()
    #: whether the dataset card reports on its documents (false for the phase that writes the card)
    reported: ClassVar[bool] = True
    #: True if its units run in Ray worker processes of their own (pipeline.distribute.map_units ``pool``): what
    #: they load (HTML parsers, language models) is not carried into the processes the later phases reuse
    own_workers: ClassVar[bool] = False

    def enabled(self, config: "RunConfig") -> bool:
        return True

    def check(self, config: "RunConfig") -> None:
        """Raise ConfigError if this phase cannot run with ``config`` (before anything starts)."""

    def settings(self, config: "RunConfig") -> Any:
        """The settings its outputs depend on (part of every unit's fingerprint): its sections."""
        return {s: section_value(config, s) for s in self.sections}

    def stages(self, config: "RunConfig", prepared: Any = None) -> list["StageSpec"]:
        """The stages it runs on every document, in order (none for a phase of corpus-wide steps)."""
        return []

    def declared_stages(self, config: "RunConfig") -> list["StageInfo"]:
        """Every stage whose name its rejected rows may carry, in order, as the plan describes them: its
        stages' own descriptions; a corpus-wide phase names the stages of its steps itself."""
        return [spec.info() for spec in self.stages(config)]

    def steps(self, config: "RunConfig") -> list[StepInfo]:
        """The steps of a corpus-wide phase, in order (none for a phase that maps units)."""
        return []

    def sinks(self, config: "RunConfig") -> list[SinkInfo]:
        """What it writes: its kept and rejected documents, unless it says otherwise."""
        if not self.writes_documents:
            return []
        return [SinkInfo("documents", "the documents it kept (Parquet)", f"{DOCUMENTS}/{self.name}/"),
                SinkInfo("rejected", "the documents it removed, with stage and reason (Parquet)", f"{REJECTED}/{self.name}/")]

    def units(self, ctx: "RunContext") -> list[Unit]:
        """Every unit of this run, done or not (never starts Ray)."""
        raise NotImplementedError

    def run(self, ctx: "RunContext", todo: list[Unit]) -> Iterable["UnitResult"]:
        """Do the units in ``todo``; yields each unit's result (``failed`` set if it failed)."""
        raise NotImplementedError

    def finish(self, summary: dict) -> dict:
        """The phase's summary (pipeline.result.summarize over its units), with anything the phase derives from it."""
        return summary

    def headline(self, summary: dict) -> dict:
        """The few counts the CLI prints for this phase."""
        return {k: summary[k] for k in self.headline_keys if k in summary}

    def parts(self, ctx: "RunContext") -> list[Part]:
        """The parts this phase has finished for the current inputs (what the next phase reads).

        By default a unit makes the part of the same name: every unit whose
        marker is current and that published a documents part.
        """
        out = []
        for unit in ctx.units_of(self):
            marker = ctx.marker(self, unit)
            if marker is not None and marker.outputs.get("documents_part"):
                out.append(Part(unit.name, unit.fingerprint))
        return out
