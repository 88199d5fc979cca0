"""The config reference, generated from the typed models (README and CLI)."""

from __future__ import annotations

import json
import typing

import annotated_types as at
from pydantic import BaseModel

from pipeline.config import RunConfig
from pipeline.paths import marker


def _rows(model: type[BaseModel], prefix: str = ""):
    for attr, field in model.model_fields.items():
        name = field.alias or attr  # the key a config writes (``with``, not the attribute ``with_``)
        ann = field.annotation
        sub = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        if sub is not None:
            yield from _rows(sub, f"{prefix}{name}.")
            continue
        item = typing.get_args(ann)[0] if typing.get_origin(ann) is list and typing.get_args(ann) else None
        if isinstance(item, type) and issubclass(
            item, BaseModel
        ):  # a list of sections (classifiers): the list, then an entry's fields
            yield f"{prefix}{name}", "[]", "", (field.description or "").replace("|", "\\|")
            yield from _rows(item, f"{prefix}{name}[].")
            continue
        if field.is_required():
            default = "required"
        else:
            value = field.get_default(call_default_factory=True)
            default = json.dumps(value.model_dump() if isinstance(value, BaseModel) else value, default=str)
        kind = allowed(field.metadata) or ("path" if marker(model, attr) is not None else "")
        yield f"{prefix}{name}", default, kind, (field.description or "").replace("|", "\\|")


def _number(v) -> str:
    return f"{v:_}" if isinstance(v, int) and abs(v) >= 10_000 else f"{v:g}" if isinstance(v, float) else str(v)


def allowed(metadata) -> str:
    """A number field's bounds as an interval: ``[1, 256]``, ``(0, 3600]``; empty for other fields."""
    low = next(
        (("[", m.ge) if isinstance(m, at.Ge) else ("(", m.gt) for m in metadata if isinstance(m, (at.Ge, at.Gt))), None
    )
    high = next(
        ((m.le, "]") if isinstance(m, at.Le) else (m.lt, ")") for m in metadata if isinstance(m, (at.Le, at.Lt))), None
    )
    if low is None and high is None:
        return ""
    left = f"{low[0]}{_number(low[1])}" if low else "(-inf"
    right = f"{_number(high[0])}{high[1]}" if high else "inf)"
    return f"`{left}, {right}`"


def config_reference(section: str = "") -> str:
    """The settings table; with ``section`` (e.g. ``"dedup."``) only the fields under it, named without the prefix."""
    lines = ["| field | default | allowed | meaning |", "|---|---|---|---|"]
    lines += [
        f"| `{k.removeprefix(section)}` | `{d}` | {a} | {m} |"
        for k, d, a, m in _rows(RunConfig)
        if k.startswith(section)
    ]
    return "\n".join(lines)


START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def _with_section(text: str, start: str, end: str, body: str) -> str:
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def readme_with_reference(readme: str) -> str:
    """The README text with its config-reference section regenerated."""
    return _with_section(readme, START, END, config_reference())


DEDUP_START, DEDUP_END = "<!-- dedup-reference:start -->", "<!-- dedup-reference:end -->"


def dedup_reference() -> str:
    """The ``dedup:`` settings table of docs/dedup.md."""
    return config_reference("dedup.")


def dedup_doc_with_reference(doc: str) -> str:
    """docs/dedup.md with its settings table regenerated."""
    return _with_section(doc, DEDUP_START, DEDUP_END, dedup_reference())


if __name__ == "__main__":  # python -m pipeline.reference: refresh README.md and docs/dedup.md
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for path, refresh in (
        (root / "README.md", readme_with_reference),
        (root / "docs" / "dedup.md", dedup_doc_with_reference),
    ):
        path.write_text(refresh(path.read_text()))
