"""The stage contract.

A stage is a small class configured by plain parameters, with
``__call__(batch: pyarrow.Table) -> pyarrow.Table`` working on a whole batch
(a document is a row).  Stages add columns and never rename or drop columns
they do not own.

A *filter* does not drop rows itself: it fills the ``reason`` column (null =
keep) and, optionally, ``details``.  The chain that runs the stages
(:func:`run_chain`) moves every row with a reason into the rejected set, so
"records in = kept + rejected" holds by construction and there is exactly one
place where rows leave the kept set.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

log = logging.getLogger(__name__)

REASON = "reason"
DETAILS = "details"
#: the reason of a row whose stage raised on it (see :func:`run_chain`)
STAGE_ERROR = "stage_error"
#: How a reason says it is an *error* (our code or a tool failed on the row: ``stage_error``, ``extract_error``,
#: ``read_error``, ``tokenize_error``), not a *decision* (the row was judged: a filter, a duplicate, an empty text).
ERROR_SUFFIX = "_error"


def is_error(reason: str) -> bool:
    """Whether a rejection reason is of the class *errors* (named ``*_error``) rather than *decisions*."""
    return reason.endswith(ERROR_SUFFIX)


#: Columns every rejected row carries (the rejected-set schema).
REJECTED_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("url", pa.string()),
        ("source", pa.string()),
        ("warc_date", pa.timestamp("s", tz="UTC")),
        ("stage", pa.string()),
        (REASON, pa.string()),
        (DETAILS, pa.string()),
        ("text", pa.large_string()),
    ]
)


class Stage(Protocol):
    """Anything that maps an Arrow batch to an Arrow batch and says what it is (class attributes):

    - ``name``: the ``stage`` of the rows it rejects;
    - ``label``: what its step means, for the card's funnel and ``--dry-run``;
    - ``needs`` / ``adds``: the columns it reads (some stage or the source must add them before it) and
      the columns it adds;
    - ``reasons``: every ``reason`` it can give (tests/pipeline/test_reasons.py checks that it gives no other);
    - ``scores`` (optional): the columns it adds that are scores (numbers a filter, the dedup keep rule and
      the card's score section read).

    A stage whose columns or reasons depend on its config also has a classmethod
    ``declare(config) -> dict`` returning the attributes that differ.  Its config is part of the
    fingerprint of every unit that runs it (pipeline/engine/settings.py), with the files the config names;
    a classmethod ``depends_on(config)`` narrows that to what its output depends on.
    """

    name: str
    label: str
    needs: tuple[str, ...]
    adds: tuple[str, ...]
    reasons: tuple[str, ...]

    def __call__(self, batch: pa.Table) -> pa.Table: ...


@dataclass(frozen=True)
class StageInfo:
    """A stage as a plan describes it: read from its class (and config), nothing built."""

    name: str
    label: str
    needs: tuple[str, ...] = ()
    adds: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    #: where its settings sit in the run config (e.g. ``filters.gopher_quality``), if anywhere
    section: str | None = None
    #: the columns it adds that are scores
    scores: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out = {
            "name": self.name,
            "label": self.label,
            "needs": list(self.needs),
            "adds": list(self.adds),
            "reasons": list(self.reasons),
            "section": self.section,
        }
        return out | ({"scores": list(self.scores)} if self.scores else {})

    @classmethod
    def from_json(cls, data: dict) -> StageInfo:
        return cls(
            data["name"],
            data.get("label") or data["name"],
            tuple(data.get("needs") or ()),
            tuple(data.get("adds") or ()),
            tuple(data.get("reasons") or ()),
            data.get("section"),
            tuple(data.get("scores") or ()),
        )


@dataclass(frozen=True)
class StageSpec:
    """A stage to build: its class, its config and where that config sits in the run config."""

    cls: type
    config: object = None
    section: str | None = None
    #: further constructor arguments known only at run time (per-language cutoffs...)
    args: tuple = ()
    #: the config is the class's keyword arguments (a stage of the user's own module: ``__init__(**settings)``)
    kwargs: bool = False

    def build(self):
        if self.kwargs:
            return DeclaredReasons(self.cls(**(self.config or {})))
        return self.cls(self.config, *self.args) if self.config is not None or self.args else self.cls()

    def info(self) -> StageInfo:
        c = self.cls
        declared = {
            "name": c.name,
            "label": getattr(c, "label", c.name),
            "needs": tuple(getattr(c, "needs", ())),
            "adds": tuple(getattr(c, "adds", ())),
            "reasons": tuple(getattr(c, "reasons", ())),
            "scores": tuple(getattr(c, "scores", ())),
        }
        declare = getattr(c, "declare", None)
        if callable(declare):
            declared.update(
                {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in declare(self.config).items()}
            )
        return StageInfo(**declared, section=self.section)


class UndeclaredReason(ValueError):
    """A stage gave a reason its ``reasons`` do not list."""


class DeclaredReasons:
    """A stage of a user's own module, held to what it declares: a batch whose rows it rejects with a reason its
    ``reasons`` do not list raises UndeclaredReason (run_chain then rejects those rows as ``stage_error``, counted
    and logged), so every reason in the rejected set and the card's funnel is one the plan shows."""

    def __init__(self, stage):
        self.stage = stage
        self.declared = pa.array(list(getattr(stage, "reasons", ())), pa.string())

    def __getattr__(self, name: str):
        return getattr(self.stage, name)

    def __call__(self, batch: pa.Table) -> pa.Table:
        out = self.stage(batch)
        if REASON in out.column_names:
            given = pc.unique(pc.drop_null(out.column(REASON).cast(pa.string())))
            stray = pc.filter(given, pc.invert(pc.is_in(given, value_set=self.declared)))
            if len(stray):
                raise UndeclaredReason(
                    f"stage {self.stage.name} gave the reason {stray[0].as_py()!r}, which its "
                    f"reasons do not list ({', '.join(self.declared.to_pylist()) or 'none'})"
                )
        return out


def set_column(batch: pa.Table, name: str, values) -> pa.Table:
    """Add or replace a column (stages own the columns they set)."""
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values)
    idx = batch.schema.get_field_index(name)
    if idx >= 0:
        return batch.set_column(idx, name, arr)
    return batch.append_column(name, arr)


def add_rejections(
    batch: pa.Table, reasons: Sequence[str | None], details: Sequence[str | None] | None = None
) -> pa.Table:
    """Mark rows for rejection, keeping any reason an earlier step already set."""
    new_reason = pa.array(reasons, type=pa.string())
    new_details = pa.array(details if details is not None else [None] * len(reasons), type=pa.string())
    if REASON in batch.column_names:
        old = batch.column(REASON)
        keep_old = pc.is_valid(old)
        new_reason = pc.if_else(keep_old, old, new_reason)
        old_details = batch.column(DETAILS) if DETAILS in batch.column_names else pa.nulls(len(batch), pa.string())
        new_details = pc.if_else(keep_old, old_details, new_details)
    batch = set_column(batch, REASON, new_reason)
    return set_column(batch, DETAILS, new_details)


def reject_where(
    batch: pa.Table, mask: np.ndarray | pa.Array, reason: str, details: Sequence[str | None] | None = None
) -> pa.Table:
    """Reject the rows where ``mask`` is true with one ``reason``."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any() and REASON in batch.column_names:
        return batch
    reasons = np.where(mask, reason, None).tolist()
    dets = None if details is None else [d if m else None for d, m in zip(details, mask, strict=False)]
    return add_rejections(batch, reasons, dets)


_logged_kinds: set[tuple[str, str]] = set()


def note_error(where: str, exc: BaseException, logger: logging.Logger = log) -> str:
    """Log the traceback of the first error of each kind (exception type) at ``where``
    in this process, and a one-line warning for the others; returns the kind.

    A broad ``except`` that turns an error into a counted rejection must not
    hide a bug: the first traceback says where it is, the per-kind counts
    (in ``stage_counters``) say how often.
    """
    kind = type(exc).__name__
    if (where, kind) not in _logged_kinds:
        _logged_kinds.add((where, kind))
        logger.error(
            "%s: %s: %s (first of its kind in this process; later ones are counted)\n%s",
            where,
            kind,
            exc,
            "".join(traceback.format_exception(exc)).rstrip(),
        )
    else:
        logger.debug("%s: %s: %s", where, kind, exc)
    return kind


@dataclass
class ChainStats:
    """What a chain of stages did: time per stage and rejections per reason."""

    seconds: Counter = field(default_factory=Counter)
    docs_in: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    #: a stage's own counts ("stage.key"), from its optional ``drain_counters()``
    counters: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict:
        return {
            "stage_seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "stage_docs_in": dict(self.docs_in),
            "stage_counters": dict(sorted(self.counters.items())),
            "rejected_by_reason": dict(sorted(self.rejected.items())),
        }


def split_rejected(batch: pa.Table, stage: str, keep_text: bool = False) -> tuple[pa.Table, pa.Table | None]:
    """Split rows with a non-null ``reason`` off into a REJECTED_SCHEMA table."""
    if REASON not in batch.column_names:
        return batch, None
    reason = batch.column(REASON)
    rejected_mask = pc.is_valid(reason)
    n_rej = pc.sum(rejected_mask).as_py() or 0
    drop = [c for c in (REASON, DETAILS) if c in batch.column_names]
    if n_rej == 0:
        return batch.drop_columns(drop), None
    rej = batch.filter(rejected_mask)
    kept = batch.filter(pc.invert(rejected_mask)).drop_columns(drop)
    return kept, to_rejected(rej, stage, keep_text)


def to_rejected(rows: pa.Table, stage: str, keep_text: bool = False) -> pa.Table:
    """Project rows onto the rejected-set schema."""
    n = len(rows)
    cols = {}
    for f in REJECTED_SCHEMA:
        if f.name == "stage":
            cols[f.name] = pa.array([stage] * n, pa.string())
        elif f.name == "text" and not keep_text:
            cols[f.name] = pa.nulls(n, f.type)
        elif f.name in rows.column_names:
            cols[f.name] = rows.column(f.name).cast(f.type)
        else:
            cols[f.name] = pa.nulls(n, f.type)
    return pa.table(cols, schema=REJECTED_SCHEMA)


def run_chain(
    stages: Iterable[Stage], batch: pa.Table, stats: ChainStats, keep_rejected_text: bool = False
) -> tuple[pa.Table, list[pa.Table]]:
    """Run stages in order; after each, move rejected rows out of the batch.

    Returns the kept rows and the rejected tables (REJECTED_SCHEMA).  Stages
    also run on empty batches so the kept table always has the full schema.
    """
    rejected: list[pa.Table] = []
    batch, rej = split_rejected(batch, "read", keep_rejected_text)
    if rej is not None:
        rejected.append(rej)
        stats.rejected.update(rej.column(REASON).to_pylist())
    for stage in stages:
        stats.docs_in[stage.name] += len(batch)
        t0 = time.perf_counter()
        batch = _call_stage(stage, batch, stats)
        stats.seconds[stage.name] += time.perf_counter() - t0
        drain = getattr(stage, "drain_counters", None)
        if drain is not None:
            stats.counters.update({f"{stage.name}.{k}": v for k, v in drain().items()})
        batch, rej = split_rejected(batch, stage.name, keep_rejected_text)
        if rej is not None:
            rejected.append(rej)
            stats.rejected.update(rej.column(REASON).to_pylist())
    return batch, rejected


def _call_stage(stage: Stage, batch: pa.Table, stats: ChainStats) -> pa.Table:
    """``stage(batch)``; if it raises, again row by row, and the rows it raises on
    are rejected as ``stage_error``: one record only ever costs itself."""
    try:
        return stage(batch)
    except Exception as e:
        kind = note_error(f"stage {stage.name} on a batch of {len(batch)}", e)
        stats.counters[f"{stage.name}.batch_error.{kind}"] += 1
    empty = stage(batch.slice(0, 0))  # a stage that fails on nothing is broken: the file fails
    schema = empty.schema
    for name in (REASON, DETAILS):
        if name not in schema.names:
            schema = schema.append(pa.field(name, pa.string()))
    parts = [_conform(empty, schema)]
    for i in range(len(batch)):
        row = batch.slice(i, 1)
        try:
            parts.append(_conform(stage(row), schema))
        except Exception as e:
            kind = note_error(f"stage {stage.name}", e)
            stats.counters[f"{stage.name}.error.{kind}"] += 1
            row = set_column(
                set_column(row, REASON, pa.array([STAGE_ERROR], pa.string())),
                DETAILS,
                pa.array([f"{stage.name}: {kind}: {e}"[:300]], pa.string()),
            )
            parts.append(_conform(row, schema))
    return pa.concat_tables(parts)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` in ``schema``: its columns cast, missing ones null (a failed row lacks what the stage adds)."""
    cols = []
    for f in schema:
        col = None
        if f.name in table.column_names:
            try:
                col = table.column(f.name).cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                col = None
        cols.append(col if col is not None else pa.nulls(len(table), f.type))
    return pa.table(cols, schema=schema)
