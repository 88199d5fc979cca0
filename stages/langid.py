"""Language identification stage: adds ``language`` and ``language_score``.

FineWeb keeps English with a lid.176 score >= 0.65; here the keep list is
configurable (empty keeps every language) and the threshold applies to all.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from stages.base import add_rejections, set_column
from stages.named_files import NamedFile, fasttext_model


class LangIdConfig(BaseModel):
    """Parameters of language identification."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="run language ID (filters that need the language, e.g. Gopher's stop words, then need it off too)")
    model: str | None = Field(None, description="path to a fastText LID model; null = bundled lid.176.ftz")
    keep: list[str] = Field(default_factory=list, description="language codes to keep (e.g. [en, de]); empty = all")
    min_score: float = Field(0.65, ge=0, le=1, description="reject documents whose top-language score is lower (FineWeb: 0.65)")
    max_chars: int = Field(
        4000, ge=100, le=1_000_000, description="characters of each document given to the model (on samples/ the same labels as the whole text, 2.7x faster)"
    )

    def named_files(self) -> list[NamedFile]:
        return [NamedFile("model", self.model, fasttext_model)] if self.model else []

    @field_validator("keep")
    @classmethod
    def _lower(cls, v: list[str]) -> list[str]:
        return [x.strip().lower() for x in v]


class LangIdStage:
    name = "langid"
    label = "language identified (language and score rules)"
    needs = ("text",)
    adds = ("language", "language_score")
    reasons = ("language", "language_score")

    def __init__(self, config: LangIdConfig | None = None):
        from classifiers.langid import LanguageIdentifier

        self.config = config or LangIdConfig()
        self.identifier = LanguageIdentifier(self.config.model, self.config.max_chars)
        self.keep = set(self.config.keep)

    def __call__(self, batch: pa.Table) -> pa.Table:
        langs, scores = self.identifier.predict(batch.column("text").to_pylist())
        batch = set_column(batch, "language", pa.array(langs, pa.string()))
        batch = set_column(batch, "language_score", pa.array(np.round(scores, 4), pa.float32()))
        reasons, details = [], []
        for lang, score in zip(langs, scores):
            if self.keep and lang not in self.keep:
                reasons.append("language")
                details.append(f"{lang}:{score:.2f}")
            elif score < self.config.min_score:
                reasons.append("language_score")
                details.append(f"{lang}:{score:.2f} < {self.config.min_score}")
            else:
                reasons.append(None)
                details.append(None)
        return add_rejections(batch, reasons, details)
