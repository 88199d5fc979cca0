"""The JSON files the card reads (run.json, the markers, the shards manifest), checked as they are read.

A truncated or hand-edited file must give a one-line error that names it
(``curate report`` exits 2), never a traceback from deep inside the card.  Only
the fields the card uses are checked, for the type the card needs.
"""

from __future__ import annotations

from core.storage import Storage


class CardInputError(ValueError):
    """A file the card needs is missing, not valid JSON, or not shaped as the run writes it (names the file)."""


#: Fields of run.json the card reads, and their JSON type (a field may be absent or null).
RECORD_FIELDS = {"config": dict, "inputs": list, "versions": dict, "phases": dict, "command": list, "phases_run": list}
#: Fields of a marker (``_done/<phase>/<unit>.json``) the card reads.
MARKER_FIELDS = {"unit": str, "fingerprint": str, "stage_docs_in": dict, "totals": dict, "outputs": dict}
#: Fields of a marker's totals and outputs the card reads.
TOTALS_FIELDS = {"records_by_type": dict, "malformed_records": int, "rows": int}
OUTPUTS_FIELDS = {"documents_part": bool, "source": str, "kind": str}
_JSON_NAMES = {dict: "an object", list: "a list", int: "an integer", bool: "true or false", str: "a string"}


def _kind(value) -> str:
    return next(
        (name for t, name in _JSON_NAMES.items() if type(value) is t),
        "null" if value is None else type(value).__name__,
    )


def read_object(storage: Storage, *parts: str) -> dict:
    """The JSON object in the file at ``parts``, or CardInputError naming it."""
    uri = storage.uri(*parts)
    try:
        value = storage.read_json(*parts)
    except FileNotFoundError:
        raise CardInputError(f"{uri}: not found") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise CardInputError(f"{uri}: not valid JSON (truncated or corrupt?): {e}") from None
    if not isinstance(value, dict):
        raise CardInputError(f"{uri}: {_kind(value)}, expected a JSON object")
    return value


def check_fields(obj: dict, fields: dict[str, type], uri: str) -> dict:
    """``obj`` if each of ``fields`` it has is of its JSON type
    (null allowed), else CardInputError naming the field."""
    for key, want in fields.items():
        value = obj.get(key)
        bad = value is not None and (
            type(value) is not want and not (want is int and type(value) is float and value.is_integer())
        )
        if bad:
            raise CardInputError(f"{uri}: {key!r} is {_kind(value)}, expected {_JSON_NAMES[want]}")
    return obj


def check_record(record: dict, uri: str) -> dict:
    """run.json as the card reads it: its fields' types, the input list as strings, each phase summary an object."""
    check_fields(record, RECORD_FIELDS, uri)
    for key in ("inputs", "command", "phases_run"):
        if any(not isinstance(v, str) for v in record.get(key) or []):
            raise CardInputError(f"{uri}: {key!r} holds a value that is not a string")
    for phase, summary in (record.get("phases") or {}).items():
        if not isinstance(summary, dict):
            raise CardInputError(f"{uri}: phases.{phase} is {_kind(summary)}, expected an object")
    return record


def check_marker(marker, uri: str) -> dict:
    """A marker as the card reads it (its record counts integers), else CardInputError naming it."""
    if not isinstance(marker, dict):
        raise CardInputError(f"{uri}: {_kind(marker)}, expected a JSON object (a completion marker)")
    check_fields(marker, MARKER_FIELDS, uri)
    if not isinstance(marker.get("unit"), str):
        raise CardInputError(f"{uri}: no 'unit' name: not a completion marker")
    check_fields(marker.get("totals") or {}, TOTALS_FIELDS, f"{uri}: totals")
    check_fields(marker.get("outputs") or {}, OUTPUTS_FIELDS, f"{uri}: outputs")
    counts = (marker.get("totals") or {}).get("records_by_type") or {}
    if any(type(v) is not int for v in counts.values()):
        raise CardInputError(f"{uri}: 'records_by_type' holds a count that is not an integer")
    return marker


def find_bad_marker(storage: Storage) -> CardInputError | None:
    """The first marker under ``_done/`` that is not valid JSON or not a marker, or None.

    Called only after reading the markers failed (the run's context reads them without naming the file).
    """
    for name in sorted(storage.list("_done", suffix=".json")):
        parts = ("_done", *name.split("/"))
        try:
            check_marker(read_object(storage, *parts), storage.uri(*parts))
        except CardInputError as e:
            return e
    return None
