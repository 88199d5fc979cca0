"""Completion markers, read and written as the engine keeps them.

A unit's marker is ``_done/<phase>/<unit>.json`` (``_done/<phase>/<step>/<unit>.json`` for a unit of a step
that is not the phase's own): its result (pipeline.result.UnitResult) and its fingerprint.  The units of a
step that had nothing to do (empty shuffle groups: ``UnitResult.empty``) share one marker,
``_empty_<step>.json`` in the same folder, which names them and the step's fingerprint; reading a folder
expands it into one marker per unit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from core.layout import DOCUMENTS, DONE, part_file
from core.storage import Storage
from core.threads import map_bounded
from pipeline.engine.columns import Marker, MarkerMap
from pipeline.phase import fingerprint
from pipeline.result import UnitResult
from pipeline.units import PUBLISHED, PUBLISHED_SEP

EMPTY_PREFIX = "_empty_"
#: Markers read at once (in parallel): what a fold over a phase's results holds.
READ_BATCH = 256


def folder(phase: str, step: str | None = None) -> tuple[str, ...]:
    return (DONE, phase) if step is None else (DONE, phase, step)


def unit_fingerprint(step_fingerprint: str, unit: str) -> str:
    """A step's unit's fingerprint: the step's (what it reads, its settings) and the unit's name."""
    return fingerprint(step_fingerprint, unit)


def published_files(phase: str, result: UnitResult) -> list[str]:
    """The files a unit's marker says it published (a marker of an earlier version, without the list: its
    documents part), as ``/``-separated paths under the output root."""
    listed = result.outputs.get(PUBLISHED)
    if listed is None:
        documents = result.outputs.get("documents_part")
        listed = [PUBLISHED_SEP.join((DOCUMENTS, phase, part_file(result.unit)))] if documents else []
    return listed


def read(
    storage: Storage, phase: str, step: str | None = None, exists: Callable[[str], bool] | None = None
) -> MarkerMap:
    """Every marker of a folder by unit name, as the engine keeps it (:class:`Marker`, packed in a
    :class:`MarkerMap`), empty units' records expanded; ``exists(path)`` says whether a file a unit published is
    there (None: take every one as there)."""
    out = MarkerMap()
    for name, r in _scan(storage, phase, step, None, known=lambda unit: _fingerprint(out.get(unit))):
        complete = exists is None or all(exists(p) for p in published_files(phase, r))
        out.add(name, Marker(r.fingerprint, complete, bool(r.outputs.get("documents_part")), r.empty))
    return out


def _fingerprint(marker: Marker | None) -> str | None:
    return marker.fingerprint if marker is not None else None


def results(storage: Storage, phase: str, step: str | None, wanted: dict[str, str]) -> Iterator[UnitResult]:
    """The results in the markers of the units ``wanted`` names (unit -> fingerprint) whose marker has that
    fingerprint, by name, read a few at a time: a fold over them holds one batch, never the phase's."""
    for _, r in _scan(storage, phase, step, wanted):
        if r.fingerprint == wanted[r.unit]:
            yield r


def _scan(
    storage: Storage,
    phase: str,
    step: str | None,
    wanted: dict[str, str] | None,
    known: Callable[[str], str | None] | None = None,
) -> Iterator[tuple[str, UnitResult]]:
    """The markers of a folder (of the units ``wanted``, or all), read in parallel (S3 GETs) in batches; the units
    of its records of empty units last, where no marker of the same fingerprint came first.

    By name, unless the caller keeps what it was given (``known``: a unit's fingerprint so far): then as listed,
    no list of the folder's names held (90,000 markers: ~13 MB)."""
    where = folder(phase, step)
    records: list[str] = []
    seen: dict[str, str] = {}  # by name, with records of empty units to check against (90,000 entries: ~15 MB)
    by_name = known is None
    if by_name:
        names = [n.removesuffix(".json") for n in storage.list(*where, suffix=".json") if "/" not in n]
        records = [n for n in names if n.startswith(EMPTY_PREFIX)]
        listed: Iterable[str] = (n for n in names if not n.startswith(EMPTY_PREFIX))
        known = seen.get
    else:
        listed = _own(storage.names(*where, suffix=".json"), records)
    own = (n for n in listed if wanted is None or n in wanted)
    found = map_bounded(lambda n: (n, storage.read_json(*where, f"{n}.json")), own, window=READ_BATCH)
    for name, data in found:
        r = UnitResult.from_json(data)
        if by_name and records:
            seen[name] = r.fingerprint
        yield name, r
    for name in sorted(records):
        record = storage.read_json(*where, f"{name}.json")
        if not (isinstance(record, dict) and isinstance(record.get("units"), list)):
            yield name, UnitResult.from_json(record)
            continue
        for unit in record["units"]:
            if wanted is not None and unit not in wanted:
                continue
            fp = unit_fingerprint(record["fingerprint"], unit)
            if known(unit) != fp:
                yield unit, UnitResult(unit, fp, totals=dict(record.get("totals") or {}), empty=True)


def _own(listed: Iterable[str], records: list[str]) -> Iterator[str]:
    """The units of a folder's own markers, as listed; its records of empty units put in ``records``."""
    for n in listed:
        name = n.removesuffix(".json")
        if "/" in name:
            continue
        if name.startswith(EMPTY_PREFIX):
            records.append(name)
        else:
            yield name


def record_empty(
    storage: Storage, phase: str, step: str, top: bool, step_fingerprint: str, results: list[UnitResult]
) -> None:
    """Add the units of ``results`` (empty ones of one step) to the step's record of empty units; the units of
    an earlier fingerprint (another corpus, other settings) are dropped."""
    if not results:
        return
    totals = results[0].totals
    if any(r.totals != totals for r in results):
        raise ValueError(
            f"step {step}: its empty units report different totals (an empty unit reports what any other does)"
        )
    path = (*folder(phase, None if top else step), f"{EMPTY_PREFIX}{step}.json")
    old = storage.read_json(*path) if storage.exists(*path) else {}
    known = set(old.get("units", [])) if old.get("fingerprint") == step_fingerprint else set()
    record = {
        "unit": f"{EMPTY_PREFIX}{step}",
        "step": step,
        "fingerprint": step_fingerprint,
        "totals": totals,
        "units": sorted(known | {r.unit for r in results}),
    }
    storage.write_json(record, *path)


def delete(storage: Storage, phase: str, step: str | None, units: list[str]) -> None:
    """Delete the markers of ``units`` (they are about to be redone)."""
    where = folder(phase, step)
    present = {n.removesuffix(".json") for n in storage.list(*where, suffix=".json") if "/" not in n}
    for unit in units:
        if unit in present:
            storage.fs.delete_file(storage.path(*where, f"{unit}.json"))
