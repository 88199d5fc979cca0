"""Exports: a copy of one phase's kept documents under ``exports/<name>/``, one file per part, as a sink.

An ``exports:`` entry becomes a map phase of its own (``export_<name>``, role ``export``), placed right after
the phase it copies and run by the engine as any other: one unit per part of that phase, fingerprinted by
the part and the export's settings (``use``, ``columns``, ``with``), written atomically, marked under
``_done/export_<name>/``, resumed.  Its one sink writes the part through an export *format*: ``jsonl`` (JSON
lines, gzip, ``{id, text, metadata}`` as DataTrove's JsonlWriter and Dolma write documents), ``parquet``, or a
class of the user's own module (pipeline/plugins.py: ``label``, ``suffix``, ``write(table, out)``).

The card lists exports apart from the funnel; one of a phase before PII redaction holds unredacted text and
is never offered for upload (pipeline/card).
"""

from __future__ import annotations

import gzip
from typing import Any, ClassVar, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.phase import PARTS, ROLE_DOCUMENTS, ROLE_EXPORT, MapPhase, Phase, Sink
from pipeline.plugins import ExportConfig
from stages.writers import jsonl

EXPORTS = "exports"
PREFIX = "export_"


class JsonlExport:
    """JSON lines, one document a line: ``{"id", "text", "metadata": {...}}`` (``layout: flat``: every column at
    the top level), gzip-compressed by default (``compression: none`` for plain)."""

    label = "JSON lines"

    def __init__(self, compression: Literal["gzip", "none"] = "gzip", layout: Literal["nested", "flat"] = "nested"):
        if compression not in ("gzip", "none") or layout not in ("nested", "flat"):
            raise ValueError("jsonl: compression is gzip or none, layout nested or flat")
        self.compression, self.layout = compression, layout
        self.suffix = ".jsonl.gz" if compression == "gzip" else ".jsonl"
        self._gz: gzip.GzipFile | None = None

    def write(self, table: pa.Table, out) -> None:
        data = jsonl.to_bytes(table, self.layout)
        if self.compression == "none":
            out.write(data)
            return
        if self._gz is None:  # mtime 0: the same rows give the same bytes
            self._gz = gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="")
        self._gz.write(data)

    def finish(self, out) -> None:
        if self._gz is None and self.compression == "gzip":
            self._gz = gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="")  # an empty part: an empty gzip
        if self._gz is not None:
            self._gz.close()
            self._gz = None


class ParquetExport:
    """Parquet (zstd), the columns as the phase has them."""

    label = "Parquet"
    suffix = ".parquet"

    def __init__(self):
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table, out) -> None:
        if self._writer is None:
            self._writer = pq.ParquetWriter(out, table.schema, compression="zstd")
        self._writer.write_table(table.cast(self._writer.schema))

    def finish(self, out) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


BUILT_IN: dict[str, type] = {"jsonl": JsonlExport, "parquet": ParquetExport}


def export_of(config, name: str) -> ExportConfig:
    return next(e for e in config.exports if e.name == name)


def settings(config, name: str) -> dict:
    """What an export's bytes depend on besides the part: its format, its settings, its columns."""
    entry = export_of(config, name)
    return {"use": entry.use, "with": entry.with_, "columns": entry.columns}


class _FileWriter:
    """One export file of a unit, through the unit's UnitWork: published with it (atomically) or not at all."""

    def __init__(self, storage, parts: tuple[str, ...], fmt: Any):
        self.storage, self.parts, self.fmt = storage, parts, fmt
        self._ctx = self._out = None
        self.rows = 0
        self.published = False

    def write(self, table: pa.Table) -> None:
        if self._out is None:
            self._ctx = self.storage.atomic_output(*self.parts)
            self._out = self._ctx.__enter__()
        self.fmt.write(table, self._out)
        self.rows += len(table)

    def close(self) -> None:
        if self._out is None:
            return
        try:
            finish = getattr(self.fmt, "finish", None)
            if callable(finish):
                finish(self._out)
        except BaseException as e:
            self.abort(e)
            raise
        ctx, self._ctx, self._out = self._ctx, None, None
        ctx.__exit__(None, None, None)
        self.published = True

    def abort(self, error: BaseException | None = None) -> None:
        if self._ctx is not None:
            ctx, self._ctx, self._out = self._ctx, None, None
            error = error or RuntimeError("aborted")
            ctx.__exit__(type(error), error, None)


class _ExportSink:
    """The sink of an export phase: every kept row of the part, its columns selected, to its file."""

    def __init__(self, work, config, name: str):
        entry = export_of(config, name)
        fmt = entry.cls(**entry.with_)
        self.columns = entry.columns
        where = (EXPORTS, name, f"{work.unit.name}{fmt.suffix}")
        self.file = work.add(where, _FileWriter(work.storage, where, fmt))

    def write(self, kept: pa.Table, rejected) -> None:
        self.file.write(kept.select(self.columns) if self.columns else kept)

    def totals(self) -> dict:
        return {"exported": self.file.rows}


class ExportPhase(MapPhase):
    """An export: a map phase over the parts of ``copies``, no stages, its one sink (made by :func:`phase_of`)."""

    role = ROLE_EXPORT
    reads = PARTS
    headline_keys = ("parts", "exported")
    #: the export's name (its folder) and the phase whose documents it copies
    export: ClassVar[str]
    copies: ClassVar[str]

    @property
    def reported(self) -> bool:
        return False  # no funnel row: the card lists it among the exports

    def sinks(self, config) -> list[Sink]:
        entry = export_of(config, self.export)
        fmt = entry.cls.label
        return [
            Sink(
                "export",
                f"{fmt} of the documents {self.copies} kept",
                f"{EXPORTS}/{self.export}/",
                ROLE_EXPORT,
                lambda c, name=self.export: settings(c, name),
                lambda work, c, name=self.export: _ExportSink(work, c, name),
            )
        ]

    def finish(self, summary: dict) -> dict:
        return {**summary, "export": self.export, "copies": self.copies}


def phase_of(entry: ExportConfig) -> type[ExportPhase]:
    """The phase class of an ``exports:`` entry (a class, as the engine's workers build their phase from it;
    Ray pickles it by value)."""
    return type(
        f"Export_{entry.name}",
        (ExportPhase,),
        {
            "name": f"{PREFIX}{entry.name}",
            "label": f"export {entry.name}: the documents of {entry.phase} to {EXPORTS}/{entry.name}/",
            "export": entry.name,
            "copies": entry.phase,
            "__module__": __name__,
        },
    )


def with_exports(phases: list[Phase], config) -> list[Phase]:
    """``phases`` with each export's phase right after the phase it copies (a ConfigError names an export of a
    phase that is not there or writes no documents)."""
    from pipeline.config import ConfigError

    out = list(phases)
    for i, entry in enumerate(config.exports):
        at = next((k for k, p in enumerate(out) if p.name == entry.phase), None)
        documents = [p.name for p in phases if p.role == ROLE_DOCUMENTS]
        if at is None or out[at].role != ROLE_DOCUMENTS:
            raise ConfigError(
                f"config error: exports.{i}.phase: {entry.phase!r} is not a phase that writes documents "
                f"(phases: {', '.join(documents)})"
            )
        if not out[at].enabled(config):
            raise ConfigError(
                f"config error: exports.{i}.phase: phase {entry.phase!r} does not run with this config "
                "(nothing to export): export another phase or turn on what it runs"
            )
        while at + 1 < len(out) and isinstance(out[at + 1], ExportPhase):
            at += 1  # after the exports before it, in their order
        out.insert(at + 1, phase_of(entry)())
    return out
