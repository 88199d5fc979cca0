"""Parameters of decontamination against eval sets (the ``decontam:`` section of a run config).

    decontam:
      eval_sets:
        - data/evals/gsm8k_test.jsonl                   # a path alone: field `text`, format by content
        - {path: s3://evals/mmlu/test.parquet, name: mmlu, fields: [question, choices], id_field: id}
      ngram: 13            # GPT-3 (Brown et al. 2020, App. C) and Dolma
      action: remove       # or tag
      index: exact         # or bloom (bloom_fpr)

How the defaults were chosen is in docs/decontam.md.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stages.named_files import ConfigPath, NamedFile

GPT3 = "GPT-3 (Brown et al. 2020, App. C)"
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FIELD_RE = re.compile(r"^[^.\s]+(\.[^.\s]+)*$")
Format = Literal["auto", "jsonl", "parquet", "text"]


def default_name(path: str) -> str:
    """An eval set's name from its file name: ``.../gsm8k_test.jsonl.gz`` -> ``gsm8k_test``."""
    base = posixpath.basename(path.rstrip("/")) or "eval"
    stem = base.split(".", 1)[0] or base
    return re.sub(r"[^A-Za-z0-9_-]", "_", stem)[:64] or "eval"


class EvalSetConfig(BaseModel):
    """One eval set: a file of items (JSON lines, Parquet or text,
    local or s3://) and which fields hold an item's text."""

    model_config = ConfigDict(extra="forbid")

    path: ConfigPath = Field(
        ...,
        min_length=1,
        max_length=4096,
        description="the file: a local path or s3://bucket/key; .gz or .zst JSON lines and text are read as such",
    )
    name: str = Field(
        "",
        max_length=64,
        description="the name in details, tags and the card (letters, digits, "
        "_ and -); default: the file name without extensions",
    )
    fields: list[str] = Field(
        default_factory=lambda: ["text"],
        min_length=1,
        max_length=16,
        description="the fields whose values make an item's text, joined in this order with a space; a list value "
        "(an MMLU item's choices) gives its elements; dotted paths reach into objects (e.g. [question, choices])",
    )
    format: Format = Field(
        "auto",
        description="auto (by content: Parquet, JSON lines, else UTF-8 text), "
        "jsonl, parquet or text (one item per non-blank line)",
    )
    id_field: str | None = Field(
        None,
        description="the field holding an item's id (a string or an integer; "
        "unique); null: the item's 0-based position in the file",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, str) else v  # `- data/evals/x.jsonl`

    @model_validator(mode="after")
    def _name(self) -> EvalSetConfig:
        if not self.name:
            self.name = default_name(self.path)
        if not NAME_RE.match(self.name):
            raise ValueError(
                f"name '{self.name}' may hold only letters, digits, '_' and '-' (1-64 of them): give another `name`"
            )
        if self.format == "text" and (self.fields != ["text"] or self.id_field is not None):
            raise ValueError(
                "a text eval set has one item per line: leave out "
                "`fields` and `id_field` (or give format jsonl/parquet)"
            )
        return self

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: list[str]) -> list[str]:
        for f in v:
            if not _FIELD_RE.match(f):
                raise ValueError(f"'{f}' is not a field name or dotted path (like 'question' or 'doc.question')")
        if len(set(v)) != len(v):
            raise ValueError(f"a field is listed twice in {v}")
        return v

    @field_validator("id_field")
    @classmethod
    def _id_field(cls, v: str | None) -> str | None:
        if v is not None and not _FIELD_RE.match(v):
            raise ValueError(f"'{v}' is not a field name or dotted path (like 'id' or 'doc.id'); null: positions")
        return v


class DecontamConfig(BaseModel):
    """Remove (or tag) documents that share a normalized word n-gram with an eval item."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="run decontamination (on when eval_sets are given and enabled is not)")
    eval_sets: list[EvalSetConfig] = Field(
        default_factory=list,
        max_length=1000,
        description="the eval sets: paths, or {path, name, fields, format, id_field}",
    )
    ngram: int = Field(
        13,
        ge=8,
        le=64,
        description="words per n-gram: a document sharing one with an eval item is contaminated (13: "
        f"{GPT3} and Dolma; at least 8, {GPT3}'s floor: shorter runs of words are common phrases)",
    )
    min_item_words: int = Field(
        8,
        ge=8,
        le=64,
        description="an item with fewer words than `ngram` but at least "
        "this many is matched whole (all its words, in order); "
        f"shorter items are skipped and counted, as they are common phrases (8: {GPT3}'s floor)",
    )
    action: Literal["remove", "tag"] = Field(
        "remove",
        description="remove: reason `contaminated`, the eval items in details; "
        "tag: keep the document, the items in a `contaminated` column",
    )
    index: Literal["exact", "bloom"] = Field(
        "exact",
        description="exact: a sorted array of 64-bit n-gram hashes (12 bytes per n-gram); bloom: a Bloom filter of "
        "`bloom_fpr` (about 4.8 bytes per n-gram at 1e-8); either "
        "way every hit is checked against the eval items' text",
    )
    bloom_fpr: float = Field(
        1e-8,
        gt=0,
        le=0.01,
        description="the Bloom filter's false-positive rate per n-gram looked "
        "up; each false positive costs a scan of all eval text "
        "(about 0.5 s for 100k items), so it stays far below one per million n-grams (a thousand documents)",
    )
    max_details_items: int = Field(
        10, ge=1, le=100, description="eval items named in a document's details or tag (the rest counted as '+N more')"
    )
    max_file_bytes: int = Field(
        1 << 30, ge=1 << 10, le=1 << 36, description="an eval file (decompressed) larger than this is refused"
    )
    max_items: int = Field(
        10_000_000, ge=1, le=1_000_000_000, description="more eval items than this, over all sets, are refused"
    )

    @model_validator(mode="before")
    @classmethod
    def _on_with_sets(cls, v: Any) -> Any:
        if isinstance(v, dict) and v.get("eval_sets") and "enabled" not in v:
            v = {**v, "enabled": True}
        return v

    @model_validator(mode="after")
    def _check(self) -> DecontamConfig:
        if self.enabled and not self.eval_sets:
            raise ValueError(
                "enabled with no eval_sets: list at least one eval set file, or set decontam.enabled: false"
            )
        if self.min_item_words > self.ngram:
            raise ValueError(
                f"min_item_words ({self.min_item_words}) is more than ngram ({self.ngram}): lower it to at most ngram"
            )
        seen: dict[str, int] = {}
        for i, s in enumerate(self.eval_sets):
            if s.name in seen:
                raise ValueError(
                    f"eval_sets[{i}] and eval_sets[{seen[s.name]}] are both named '{s.name}': give each its own `name`"
                )
            seen[s.name] = i
        return self

    def named_files(self) -> list[NamedFile]:
        from stages.decontam.evalsets import eval_file_check  # checked before a run (pipeline.preflight)

        return [
            NamedFile(f"eval_sets[{i}].path", s.path, eval_file_check(s, self.max_file_bytes, self.max_items))
            for i, s in enumerate(self.eval_sets)
        ]
