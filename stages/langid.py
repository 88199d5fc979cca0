"""Language identification stage: adds ``language`` and ``language_score``.

FineWeb keeps English with a lid.176 score >= 0.65; here the keep list is
configurable (empty keeps every language) and so is the threshold, for all
languages (``min_score``) and per language (``min_score_by_language``, or
FineWeb-2's ``language_score`` of each language from ``fineweb2_configs``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stages.base import add_rejections, set_column
from stages.filters.fineweb2 import read_fineweb2_configs
from stages.filters.labels import NAME_RE, canonical
from stages.named_files import ConfigPath, NamedFile, fasttext_model


class LangIdConfig(BaseModel):
    """Parameters of language identification."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True,
        description="run language ID (filters that need the language, e.g. Gopher's stop words, then need it off too)",
    )
    model: ConfigPath | None = Field(None, description="path to a fastText LID model; null = bundled lid.176.ftz")
    keep: list[str] = Field(
        default_factory=list,
        description="language codes to keep (e.g. [en, de]; ru also keeps "
        "GlotLID's rus_Cyrl and the other way round); empty = all",
    )
    min_score: float = Field(
        0.65, ge=0, le=1, description="reject documents whose top-language score is lower (FineWeb: 0.65)"
    )
    min_score_by_language: dict[str, float] = Field(
        default_factory=dict,
        description="the same per language, e.g. {ru: 0.5, ja: 0.8} (ru also matches GlotLID's rus_Cyrl); "
        "wins over fineweb2_configs",
    )
    fineweb2_configs: ConfigPath | None = Field(
        None,
        description="FineWeb-2's configs/ folder (or some of its {lang}_{script}.yml files): each language's "
        "language_score becomes its min_score (FineWeb-2's are GlotLID scores: check them against your model's); "
        "read when the config is loaded",
    )
    min_score_sources: list[str] = Field(
        default_factory=list,
        description="written when the config is loaded: the folders min_score_by_language was read from",
    )
    max_chars: int = Field(
        4000,
        ge=100,
        le=1_000_000,
        description="characters of each document given to the model (on "
        "samples/ the same labels as the whole text, 2.7x faster)",
    )

    def named_files(self) -> list[NamedFile]:
        return [NamedFile("model", self.model, fasttext_model)] if self.model else []

    @field_validator("keep")
    @classmethod
    def _lower(cls, v: list[str]) -> list[str]:
        """lid.176's codes in lower case; FineWeb-2's / GlotLID's names (rus_Cyrl) as they are spelled."""
        return [x.strip() if NAME_RE.fullmatch(x.strip()) else x.strip().lower() for x in v]

    @field_validator("min_score_by_language")
    @classmethod
    def _scores(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {k: x for k, x in v.items() if not 0 <= x <= 1}
        if bad:
            raise ValueError(f"each score is from 0 to 1 (got {bad})")
        return {canonical(k.strip()): x for k, x in v.items()}

    @model_validator(mode="after")
    def _read_fineweb2(self) -> LangIdConfig:
        """FineWeb-2's cutoffs, read once where the run starts and written into min_score_by_language."""
        if self.fineweb2_configs:
            scores = read_fineweb2_configs(self.fineweb2_configs).min_scores
            self.min_score_by_language = {**scores, **self.min_score_by_language}
            self.min_score_sources.append(f"fineweb2_configs: {self.fineweb2_configs}")
            self.fineweb2_configs = None
        return self

    def thresholds(self, languages: pa.Array) -> np.ndarray:
        """The least score of each row's language."""
        if not self.min_score_by_language:
            return np.full(len(languages), self.min_score)
        encoded = pc.dictionary_encode(languages, null_encoding="encode")
        per_value = [
            self.min_score_by_language.get(canonical(v), self.min_score) if v is not None else self.min_score
            for v in encoded.dictionary.to_pylist()
        ]
        return np.asarray(per_value, dtype=np.float64)[encoded.indices.to_numpy(zero_copy_only=False)]


class LangIdStage:
    name = "langid"
    label = "language identified (language and score rules)"
    needs = ("text",)
    adds = ("language", "language_score")
    types = {"language": pa.string(), "language_score": pa.float32()}  # the Arrow types of what it adds
    reasons = ("language", "language_score")

    def __init__(self, config: LangIdConfig | None = None):
        from classifiers.langid import LanguageIdentifier

        self.config = config or LangIdConfig()
        self.identifier = LanguageIdentifier(self.config.model, self.config.max_chars)
        self.keep = {canonical(k) for k in self.config.keep}

    def __call__(self, batch: pa.Table) -> pa.Table:
        langs, scores = self.identifier.predict(batch.column("text").to_pylist())
        batch = set_column(batch, "language", pa.array(langs, pa.string()))
        batch = set_column(batch, "language_score", pa.array(np.round(scores, 4), pa.float32()))
        reasons, details = [], []
        thresholds = self.config.thresholds(batch.column("language").combine_chunks())
        for lang, score, least in zip(langs, scores, thresholds, strict=False):
            if self.keep and canonical(lang) not in self.keep:
                reasons.append("language")
                details.append(f"{lang}:{score:.2f}")
            elif score < least:
                reasons.append("language_score")
                details.append(f"{lang}:{score:.2f} < {least:g}")
            else:
                reasons.append(None)
                details.append(None)
        return add_rejections(batch, reasons, details)
