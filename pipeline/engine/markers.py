"""Completion markers, read and written as the engine keeps them.

A unit's marker is ``_done/<phase>/<unit>.json`` (``_done/<phase>/<step>/<unit>.json`` for a unit of a step
that is not the phase's own): its result (pipeline.result.UnitResult) and its fingerprint.  The units of a
step that had nothing to do (empty shuffle groups: ``UnitResult.empty``) share one marker,
``_empty_<step>.json`` in the same folder, which names them and the step's fingerprint; reading a folder
expands it into one marker per unit.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from core.layout import DONE
from core.storage import Storage
from pipeline.phase import fingerprint
from pipeline.result import UnitResult

EMPTY_PREFIX = "_empty_"


def folder(phase: str, step: str | None = None) -> tuple[str, ...]:
    return (DONE, phase) if step is None else (DONE, phase, step)


def unit_fingerprint(step_fingerprint: str, unit: str) -> str:
    """A step's unit's fingerprint: the step's (what it reads, its settings) and the unit's name."""
    return fingerprint(step_fingerprint, unit)


def read(storage: Storage, phase: str, step: str | None = None) -> dict[str, UnitResult]:
    """Every marker of a folder by unit name (read in parallel: S3 GETs), empty units' records expanded."""
    where = folder(phase, step)
    names = [n.removesuffix(".json") for n in storage.list(*where, suffix=".json") if "/" not in n]
    with ThreadPoolExecutor(16) as pool:
        found = list(pool.map(lambda n: storage.read_json(*where, f"{n}.json"), names))
    out, records = {}, []
    for name, data in zip(names, found, strict=True):
        if name.startswith(EMPTY_PREFIX) and isinstance(data, dict) and isinstance(data.get("units"), list):
            records.append(data)
        else:
            out[name] = UnitResult.from_json(data)
    for record in records:
        for unit in record["units"]:
            virtual = UnitResult(
                unit,
                unit_fingerprint(record["fingerprint"], unit),
                totals=dict(record.get("totals") or {}),
                empty=True,
            )
            if unit not in out or out[unit].fingerprint != virtual.fingerprint:
                out[unit] = virtual
    return out


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
