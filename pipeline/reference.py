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


def config_reference() -> str:
    lines = ["| field | default | meaning |", "|---|---|---|"]
    lines += [f"| `{k}` | `{d}` | {m} |" for k, d, m in _rows(RunConfig)]
    return "\n".join(lines)


START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def readme_with_reference(readme: str) -> str:
    """The README text with its config-reference section regenerated."""
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{config_reference()}\n{END}{tail}"


if __name__ == "__main__":  # python -m pipeline.reference: refresh README.md
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "README.md"
    path.write_text(readme_with_reference(path.read_text()))
