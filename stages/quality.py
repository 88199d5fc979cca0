"""The ``quality:`` section of earlier configs: one fastText classifier, now the ``quality`` entry of ``classifiers:``.

It keeps working: :func:`as_classifier` turns an enabled section into
``{name: quality, model, label: <positive_label>, lowercase, max_chars,
filter}``, whose columns (``quality_score``, ``quality_label``), filter stage
(``quality_filter``) and reason (``quality``) are the ones the section always
had.  pipeline/config.py does the conversion and logs what to write instead.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stages.classify import ClassifierConfig, ClassifierFilterConfig
from stages.named_files import ConfigPath

NAME = "quality"
REASON = NAME  # the reason its filter gives


class QualityConfig(BaseModel):
    """The fastText quality classifier (earlier configs; write a ``classifiers:`` entry instead)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="score every document kept by phase 1 (quality_score, quality_label)")
    model: ConfigPath | None = Field(
        None, description="path to a supervised fastText model (.bin or .ftz) on every worker"
    )
    positive_label: str = Field("hq", min_length=1, description="the label whose probability is the score (DCLM: hq)")
    lowercase: bool = Field(
        False, description="lowercase the text first (only if the model was trained on lowercased text)"
    )
    max_chars: int | None = Field(
        None, ge=1, le=100_000_000, description="score only the first characters of each document"
    )
    filter: ClassifierFilterConfig = Field(
        default_factory=ClassifierFilterConfig, description="removal by score, after dedup"
    )

    @field_validator("model")
    @classmethod
    def _model_file(cls, v: str | None) -> str | None:
        from classifiers.quality import check_model_file

        if v is not None:
            check_model_file(v)  # a QualityModelError is a ValueError: pydantic names the field
        return v

    @model_validator(mode="after")
    def _needs_model(self) -> QualityConfig:
        if self.enabled and self.model is None:  # field validators do not run on a missing default
            raise ValueError("quality.model is required when quality.enabled is true")
        if self.filter.active and not self.enabled:
            raise ValueError("quality.filter needs scores: set quality.enabled (and quality.model)")
        return self

    def as_classifier(self) -> ClassifierConfig | None:
        """The ``classifiers:`` entry this section means (None when it is off)."""
        if not self.enabled:
            return None
        return ClassifierConfig(
            name=NAME,
            model=self.model,
            label=self.positive_label,
            lowercase=self.lowercase,
            max_chars=self.max_chars,
            filter=self.filter,
        )

    def replacement(self) -> str:
        """What to write instead, as YAML."""
        rule = self.filter.model_dump(exclude_defaults=True)
        extra = "".join(f", {k}: {v}" for k, v in (("lowercase", self.lowercase), ("max_chars", self.max_chars)) if v)
        return (
            f"classifiers: [{{name: {NAME}, model: {self.model}, label: {self.positive_label}{extra}"
            + (f", filter: {rule}" if rule else "")
            + "}]"
        ).replace("'", "")
