"""One unit of work's outputs: writers, atomic publish, abort on error, the accounting check, the marker.

Every phase writes through :class:`UnitWork`::

    with UnitWork.for_phase(storage, "final", unit) as work:
        kept, rejected = work.documents(), work.rejected()
        for batch in ...:
            kept.write(...); rejected.write(...)
        return work.commit(UnitResult(unit.name, stages=chain), docs_in=n)

Each writer publishes its file atomically when the unit commits; an exception
inside the block aborts every writer (nothing half-written appears) and no
marker is written, so a rerun redoes the unit.  The marker is written last and
holds the unit's result (pipeline.result.UnitResult) and fingerprint.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from core.layout import DOCUMENTS, REJECTED, marker_path, part_file
from core.storage import PartWriter, Storage
from pipeline.phase import Unit
from pipeline.result import UnitResult
from stages.base import REJECTED_SCHEMA

#: A marker's ``outputs`` key listing the files its unit published (paths under the output root, "/"-joined): the
#: unit is done only while every one of them exists.
PUBLISHED = "published"
PUBLISHED_SEP = "/"


class AccountingError(RuntimeError):
    """Documents in != kept + rejected: a bug, and the unit is not marked done."""


class UnitWork:
    """The outputs of one unit, committed together with its marker."""

    def __init__(self, storage: Storage, unit: Unit, marker: tuple[str, ...], phase: str | None = None):
        self.storage = storage
        self.unit = unit
        self.phase = phase
        self._marker = marker
        self._writers: dict[tuple[str, ...], PartWriter] = {}

    @classmethod
    def for_phase(cls, storage: Storage, phase: str, unit: Unit) -> UnitWork:
        """The unit's outputs and its marker where the engine keeps it (under its step's folder if it has one)."""
        return cls(storage, unit, marker_path(phase, unit.name, unit.step), phase)

    def writer(self, *parts: str, schema: pa.Schema | None = None) -> PartWriter:
        """A Parquet writer for one output file of this unit (opened once per path)."""
        if parts not in self._writers:
            self._writers[parts] = PartWriter(self.storage, *parts, schema=schema)
        return self._writers[parts]

    def add(self, parts: tuple[str, ...], writer):
        """Another output of this unit (``write``, ``close`` publishing it atomically, ``abort``), committed and
        aborted with the others: an export's file (pipeline/exports.py)."""
        if parts in self._writers:
            raise ValueError(f"{'/'.join(parts)}: two writers of one output")
        self._writers[parts] = writer
        return writer

    def documents(self) -> PartWriter:
        """documents/<phase>/part-<unit>.parquet: the kept documents."""
        return self.writer(DOCUMENTS, self.phase, part_file(self.unit.name))

    def rejected(self) -> PartWriter:
        """rejected/<phase>/part-<unit>.parquet: the removed documents (REJECTED_SCHEMA)."""
        return self.writer(REJECTED, self.phase, part_file(self.unit.name), schema=REJECTED_SCHEMA)

    def __enter__(self) -> UnitWork:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            self.abort()
        return False

    def abort(self) -> None:
        for w in self._writers.values():
            w.abort()

    def commit(self, result: UnitResult, docs_in: int | None = None) -> UnitResult:
        """Publish every output, check the accounting, write the marker; returns the result as marked.

        With ``docs_in`` the unit must account for every document it read:
        ``docs_in == kept + rejected`` (counted from the writers into the result).
        """
        result.unit, result.fingerprint = self.unit.name, self.unit.fingerprint
        docs = (DOCUMENTS, self.phase, part_file(self.unit.name))
        if self.phase is not None and docs in self._writers:
            kept = self._writers[docs].rows
            rejected = self.rejected().rows
            if docs_in is not None and docs_in != kept + rejected:  # checked before anything is published
                raise AccountingError(f"{self.unit.name}: {docs_in} documents in != {kept} kept + {rejected} rejected")
            result.docs_in, result.kept, result.rejected = kept + rejected, kept, rejected
            result.by_reason = result.by_reason or Counter(result.stages.rejected)
        for w in self._writers.values():
            w.close()
        if docs in self._writers:
            result.outputs["documents_part"] = self._writers[docs].published
        published = [PUBLISHED_SEP.join(p) for p, w in self._writers.items() if w.published]
        if published:  # the marker is trusted only while these exist (pipeline.context.RunContext.marker)
            result.outputs[PUBLISHED] = sorted({*result.outputs.get(PUBLISHED, []), *published})
        self.storage.write_json(result.to_json(), *self._marker)
        return result
