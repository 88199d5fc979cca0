"""The phase: the unit of composition of a run, declared as data that one engine executes (pipeline/engine).

A run is an explicit plan (pipeline.plan): an ordered list of phases, handed to the runner
(``pipeline.phases.DEFAULT_PHASES`` by default; a test or a user adds their own). A phase

- is named after its output folder: ``documents/<name>``, ``rejected/<name>``, ``_done/<name>``;
- declares its role to the card (``documents``, ``shards``, ``card``, ``export``) and its sinks;
- is one of two shapes, both run by the engine and nothing else:

  * a **map phase** (:class:`MapPhase`): a unit source (``INPUTS``: the input files, read through the
    source kinds, with named sources; or ``PARTS``: the parts of the phase it reads) -> its stages
    (``StageSpec``s) -> its sinks (the kept documents, the rejected ones);
  * a **phase of steps** (:class:`Phase` with ``steps``): declared :class:`Step`s over the whole corpus
    (map over parts or items, shuffle by key, a final step), each with what it depends on.

Vocabulary, one meaning each across the code:

- **document**: one row (a page's text and metadata);
- **part**: one Parquet file of a phase's documents, ``part-<name>.parquet``; a part keeps the name
  of the input file it came from through every phase;
- **unit**: one piece of work with its own marker: an input file (extracted), a part (final, a step over
  parts), a shard group, the corpus, the run.

The engine, not the phase, computes every unit's *fingerprint*: what the unit reads (an input file's
identity, the fingerprints of the parts or step outputs it reads) and the settings of the components it
runs, each taken from the component's own declaration (a stage's class and config, a source kind's
section, a sink's settings, a step's sections, any file they name).  A unit is done when its marker
``_done/<phase>/[<step>/]<unit>.json`` records its current fingerprint, so a changed input or setting
redoes exactly the units that depend on it, and everything downstream of them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from core.layout import DOCUMENTS, REJECTED

if TYPE_CHECKING:
    from pipeline.config import RunConfig
    from pipeline.context import RunContext
    from pipeline.result import UnitResult
    from stages.base import StageInfo, StageSpec

#: Roles a phase declares to the card (and to the phases after it): what its outputs are.
ROLE_DOCUMENTS = "documents"  # documents/<name> parts, which the next phase reads
ROLE_SHARDS = "shards"  # training shards and their manifest
ROLE_CARD = "card"  # the dataset card (reports on the others)
ROLE_EXPORT = "export"  # a copy of documents in another format, for readers outside the run

#: Where a map phase's units come from: the run's input files, or the parts of the phase it reads.
INPUTS = "inputs"
PARTS = "parts"
#: What a step may read besides its phase's parts: the state of every earlier phase (the card's).
STATE = "state"

#: Kinds of steps: one unit per part (or per item a step lists), once over the whole corpus (a shuffle by
#: key, or any corpus-wide computation), and a last step of one named unit.
MAP, SHUFFLE, FINAL = "map", "shuffle", "final"


def fingerprint(*items: Any) -> str:
    """A short stable hash of JSON-able values (a :class:`Rows` among them hashed as the list it yields)."""
    rows: list[Rows] = []
    tag = uuid.uuid4().hex  # marks where a Rows' list goes in the JSON (a tag no value can hold by chance)

    def default(value: Any) -> str:
        if not isinstance(value, Rows):
            return str(value)
        rows.append(value)
        return f"{tag}:{len(rows) - 1}"

    blob = json.dumps(items, sort_keys=True, default=default, separators=(",", ":"))
    h = hashlib.sha256()
    for i, piece in enumerate(re.split(f'"{tag}:([0-9]+)"', blob) if rows else [blob]):
        if i % 2:  # a Rows' number: its list, row by row
            rows[int(piece)].hash_into(h)
        else:
            h.update(piece.encode())
    return h.hexdigest()[:16]


class Rows:
    """A long list in a fingerprinted value (a phase's 90,000 units and their fingerprints), hashed as its JSON
    would be, a row at a time: the same fingerprint as the list, without the list nor its JSON (issue 39)."""

    __slots__ = ("_rows",)

    def __init__(self, rows: Iterable):
        self._rows = rows  # read once: a fingerprint takes it once

    def hash_into(self, h) -> None:
        encode = json.JSONEncoder(sort_keys=True, default=str, separators=(",", ":")).encode
        h.update(b"[")
        rows = iter(self._rows)
        first = True
        while batch := list(itertools.islice(rows, 4096)):  # a batch's JSON without its brackets: the same bytes
            h.update((b"" if first else b",") + encode(batch)[1:-1].encode())
            first = False
        h.update(b"]")


@dataclass(frozen=True, slots=True)
class Unit:
    """One piece of work of a phase (of one of its steps, when ``step`` is set)."""

    name: str
    fingerprint: str
    #: what a worker needs besides the config (JSON-able): a URI, a part name...
    params: dict = field(default_factory=dict)
    #: the step whose unit it is, if its marker is under ``_done/<phase>/<step>/`` (None: the phase's own)
    step: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Unit:
        return cls(**json.loads(text))


@dataclass(frozen=True, slots=True)
class Part:
    """A part a phase has finished: its name and the fingerprint of its contents."""

    name: str
    fingerprint: str


@dataclass(frozen=True)
class StepInfo:
    """One step of a phase, for the plan."""

    name: str
    label: str
    kind: str = ""
    depends: tuple[str, ...] = ()


@dataclass(frozen=True)
class SinkInfo:
    """One kind of output a phase writes, for the plan: its name, what it holds, where, and its role."""

    name: str
    label: str
    path: str
    role: str = ""


@dataclass(frozen=True)
class Sink:
    """One kind of output a phase writes: a declaration the plan shows and the fingerprints cover.

    ``settings(config)``: what of the config its bytes depend on (the rejected sink: whether it keeps the
    text); None when nothing does.  ``open(work, config)``, for a map phase's sinks: a writer of one unit's
    outputs through its ``pipeline.units.UnitWork`` (published with the unit, atomically), whose
    ``write(kept, rejected)`` the worker calls with each batch's kept rows and rejected tables.
    """

    name: str
    label: str
    path: str
    role: str
    settings: Callable[[RunConfig], Any] | None = None
    open: Callable[[Any, RunConfig], Any] | None = None

    def info(self) -> SinkInfo:
        return SinkInfo(self.name, self.label, self.path, self.role)


class _KeptWriter:
    """documents/<phase>/part-<unit>.parquet: the kept rows."""

    def __init__(self, work, config: RunConfig):
        self.out = work.documents()

    def write(self, kept, rejected) -> None:
        self.out.write(kept)


class _RejectedWriter:
    """rejected/<phase>/part-<unit>.parquet: the rejected rows, with their stage and reason."""

    def __init__(self, work, config: RunConfig):
        self.out = work.rejected()

    def write(self, kept, rejected) -> None:
        for table in rejected:
            self.out.write(table)


def documents_sinks(phase: str) -> list[Sink]:
    """The default sinks of a phase that writes documents: the kept ones and the rejected ones."""
    return [
        Sink(
            "documents", "the documents it kept (Parquet)", f"{DOCUMENTS}/{phase}/", ROLE_DOCUMENTS, open=_KeptWriter
        ),
        Sink(
            "rejected",
            "the documents it removed, with stage and reason (Parquet)",
            f"{REJECTED}/{phase}/",
            "rejected",
            lambda config: {"rejected_text": config.output.rejected_text},
            _RejectedWriter,
        ),
    ]


def _always(config: RunConfig) -> bool:
    return True


@dataclass(frozen=True)
class Step:
    """One step of a phase of steps, as the engine runs it (pipeline/engine/steps.py).

    - ``kind``: MAP (a unit per part of what the phase reads, or per name ``units(config)`` gives), SHUFFLE
      (once over the whole corpus: its units are not marked, it reruns whenever the phase runs) or FINAL
      (one unit named ``unit``, after the steps it depends on);
    - ``run``: MAP ``run(job, todo) -> iterable of UnitResult`` (its workers write each unit's marker through
      ``UnitWork.for_phase``); SHUFFLE ``run(job) -> dict`` (its part of the phase summary); FINAL
      ``run(job, unit) -> UnitResult`` (the engine writes the marker);
    - ``depends``: the steps whose outputs it reads; ``reads``: PARTS (the phase's input parts), STATE;
    - what its outputs depend on besides those: ``sections`` (dotted config paths; a callable of the config
      when they depend on it), ``files(config)`` (files it reads, by identity: indexes of earlier runs...),
      ``version()`` (what else: the code's version of its output);
    - ``resume``: a rerun skips its units whose markers are current (else every unit reruns when the phase
      runs); ``counted``: its units are the phase's units (progress, status, failures, the summary);
      ``publishes_parts``: its units are the phase's parts (documents/<phase>/part-<unit>.parquet);
    - ``outputs(config)``: the folders and files it writes, deleted before it reruns wholesale;
      ``unit_outputs(config, unit)``: one unit's own, deleted before that unit reruns;
      ``keep(config)``: False deletes its outputs and markers once the phase is done (intermediates);
    - ``when(config)``: whether the config runs it; ``summarize(total)``: a MAP step's part of the summary,
      from the sum of its units' results;
    - ``in_task``: its ``run`` never runs in the driver (a SHUFFLE or MAP step that plans Ray Data datasets: what
      they hold is a task's; pipeline/engine/beside.py): a phase runs in a task beside the driver, and this step
      there with it; a phase run in the driver's process (``RunContext.beside`` false) sends it to a task of its
      own, where it sees the job as the driver would, and what it leaves in ``job.memo`` comes back.

    A phase of steps has at least one counted step: its units say whether the phase has work.
    """

    name: str
    label: str
    kind: str
    run: Callable[..., Any]
    depends: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    sections: tuple[str, ...] | Callable[[RunConfig], tuple[str, ...]] = ()
    files: Callable[[RunConfig], list[str]] | None = None
    version: Callable[[], Any] | None = None
    units: Callable[[RunConfig], list[str]] | None = None
    unit: str = ""
    resume: bool = False
    counted: bool = False
    publishes_parts: bool = False
    outputs: Callable[[RunConfig], list[tuple[str, ...]]] | None = None
    unit_outputs: Callable[[RunConfig, str], list[tuple[str, ...]]] | None = None
    keep: Callable[[RunConfig], bool] = _always
    when: Callable[[RunConfig], bool] = _always
    summarize: Callable[[UnitResult], dict] | None = None
    in_task: bool = False

    @property
    def top(self) -> bool:
        """Whether its markers are the phase's own (``_done/<phase>/<unit>.json``), not under the step's folder."""
        return self.counted or self.publishes_parts

    def info(self) -> StepInfo:
        return StepInfo(self.name, self.label, self.kind, self.depends)


class Phase:
    """A step of the run: class attributes and declarations; the engine runs it.

    Subclass :class:`MapPhase` for a phase that maps units through stages, or set ``steps`` for a phase of
    corpus-wide steps.
    """

    #: the output folder name (documents/<name>, _done/<name>, run.json's key)
    name: ClassVar[str]
    #: what the phase does, in a few words (the card, --dry-run)
    label: ClassVar[str] = ""
    #: what one unit of work is, for the plan and progress bars
    unit_kind: ClassVar[str] = "unit"
    #: what its outputs are, for the card and the phases after it (ROLE_DOCUMENTS: documents/<name> parts)
    role: ClassVar[str] = ROLE_DOCUMENTS
    #: the config sections the card shows as its settings (the fingerprints come from its components)
    sections: ClassVar[tuple[str, ...]] = ()
    #: the summary keys the CLI prints for the phase
    headline_keys: ClassVar[tuple[str, ...]] = ("in", "kept", "rejected")
    #: columns its kept documents get outside its stages (a corpus-wide phase's own columns)
    adds: ClassVar[tuple[str, ...]] = ()
    #: True if its units run in Ray worker processes of their own (pipeline.distribute.map_units ``pool``): what
    #: they load (HTML parsers, language models) is not carried into the processes the later phases reuse
    own_workers: ClassVar[bool] = False

    @property
    def writes_documents(self) -> bool:
        return self.role == ROLE_DOCUMENTS

    @property
    def reported(self) -> bool:
        """Whether the dataset card reports on its documents (not on the card itself)."""
        return self.role != ROLE_CARD

    def enabled(self, config: RunConfig) -> bool:
        return True

    def check(self, config: RunConfig) -> None:
        """Raise ConfigError if this phase cannot run with ``config`` (before anything starts)."""

    def stages(self, config: RunConfig, prepared: Any = None) -> list[StageSpec]:
        """The stages it runs on every document, in order (none for a phase of corpus-wide steps)."""
        return []

    def declared_stages(self, config: RunConfig) -> list[StageInfo]:
        """Every stage whose name its rejected rows may carry, in order, as the plan describes them: its
        stages' own descriptions; a phase of steps names the stages of its steps itself."""
        return [spec.info() for spec in self.stages(config)]

    def steps(self, config: RunConfig) -> list[Step]:
        """Its steps, in order (none for a map phase); the engine runs those the config enables (``when``)."""
        return []

    def sinks(self, config: RunConfig) -> list[Sink]:
        """What it writes: its kept and rejected documents, unless it says otherwise."""
        return documents_sinks(self.name) if self.writes_documents else []

    def finish(self, summary: dict) -> dict:
        """The phase's summary (pipeline.result.summarize over its units), with anything the phase derives from it."""
        return summary

    def headline(self, summary: dict) -> dict:
        """The few counts the CLI prints for this phase."""
        return {k: summary[k] for k in self.headline_keys if k in summary}


class MapPhase(Phase):
    """A phase that maps each unit of ``reads`` through its stages to its sinks, one worker loop for all
    (pipeline/engine/worker.py).  A subclass says which stages::

        class FinalPhase(MapPhase):
            name = "final"
            keep_worker = True     # stages hold models: built once per Ray worker process, kept

            def stages(self, config, prepared=None):
                return [StageSpec(PiiStage, config.pii, "pii")]

    ``prepare(ctx, todo)`` may compute something global on the driver first (per-language score cutoffs over
    every part, an index of eval sets); it is passed to every worker's ``stages``.  When what it computes
    depends on every part, ``corpus_wide(config)`` says so, and every unit's fingerprint covers every part.
    """

    unit_kind = "part"
    #: INPUTS (the run's input files, each read by its source kind) or PARTS (the parts of the phase it reads)
    reads: ClassVar[str] = PARTS
    #: True when the stages hold models: the worker is built once per Ray worker process and kept.
    keep_worker: ClassVar[bool] = False
    #: Rows per Arrow batch read from a part.
    batch_rows: ClassVar[int] = 2048

    def prepare(self, ctx: RunContext, todo: list[Unit]) -> Any:
        """Something global the workers need (picklable), computed on the driver before the units run."""
        return None

    def corpus_wide(self, config: RunConfig) -> bool:
        """Whether every unit depends on every part it could read (what ``prepare`` computes over them)."""
        return False
