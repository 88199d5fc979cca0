"""The config reference, generated from the typed models (README and CLI)."""

from __future__ import annotations

import json

from pydantic import BaseModel

from pipeline.config import RunConfig


def _rows(model: type[BaseModel], prefix: str = ""):
    for name, field in model.model_fields.items():
        ann = field.annotation
        sub = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        if sub is not None:
            yield from _rows(sub, f"{prefix}{name}.")
            continue
        if field.is_required():
            default = "required"
        else:
            value = field.get_default(call_default_factory=True)
            default = json.dumps(value.model_dump() if isinstance(value, BaseModel) else value, default=str)
        yield f"{prefix}{name}", default, (field.description or "").replace("|", "\\|")


def config_reference(section: str = "") -> str:
    """The settings table; with ``section`` (e.g. ``"dedup."``) only the fields under it, named without the prefix."""
    lines = ["| field | default | meaning |", "|---|---|---|"]
    lines += [f"| `{k.removeprefix(section)}` | `{d}` | {m} |" for k, d, m in _rows(RunConfig) if k.startswith(section)]
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
    for path, refresh in ((root / "README.md", readme_with_reference), (root / "docs" / "dedup.md", dedup_doc_with_reference)):
        path.write_text(refresh(path.read_text()))
