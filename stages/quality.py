"""Quality classifier stages: score every document with a fastText model, filter later.

``QualityScoreStage`` adds ``quality_score`` (the model's probability of the
positive label, float32) and ``quality_label`` (its top label).  It runs at the
end of phase 1, on the documents the heuristic filters keep, so that dedup can
keep the best-scored copy of every cluster (``dedup.keep.score_column``).

``QualityFilterStage`` removes documents with reason ``quality``, either below
a fixed ``threshold`` or outside the best ``top_fraction`` of their language.
It runs after dedup (in the ``final`` phase): a low-scored copy never decides
which copy of a cluster survives, and fractions are taken over the
deduplicated corpus.  The top fraction is a global decision:
:func:`top_fraction_cutoffs` computes one cutoff per language from the
(language, score, id) columns of all documents, and the filter applies them
batch by batch.  Ranking is by score (descending), then id (ascending, the
same tie rule as dedup's keep policy); a missing score ranks last.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stages.base import reject_where, set_column
from stages.named_files import NamedFile, fasttext_model

log = logging.getLogger(__name__)

SCORE = "quality_score"
LABEL = "quality_label"
REASON = "quality"
NO_LANGUAGE = ""  # the group of documents whose language is null


class QualityFilterConfig(BaseModel):
    """Which scored documents to remove (after dedup); both null = keep all."""

    model_config = ConfigDict(extra="forbid")

    threshold: float | None = Field(
        None, ge=0, le=1, description="remove documents whose quality_score is lower (or missing); null = no threshold"
    )
    top_fraction: float | None = Field(
        None, gt=0, le=1,
        description="keep the best fraction of each language (ceil(fraction x n) documents; ties: smallest id); null = off",
    )

    @model_validator(mode="after")
    def _one_rule(self) -> "QualityFilterConfig":
        if self.threshold is not None and self.top_fraction is not None:
            raise ValueError("set threshold or top_fraction, not both")
        return self

    @property
    def active(self) -> bool:
        return self.threshold is not None or self.top_fraction is not None


class QualityConfig(BaseModel):
    """The fastText quality classifier: scoring in phase 1, optional filtering after dedup."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="score every document kept by phase 1 (quality_score, quality_label)")
    model: str | None = Field(
        None,
        description="path to a supervised fastText model (.bin or .ftz) on every worker, e.g. DCLM's "
        "openlm-research/dclm-fasttext or samples/quality/model.ftz (a demonstration model)",
    )
    positive_label: str = Field(
        "hq", min_length=1, description="the label whose probability is the score, with or without __label__ (DCLM: hq)"
    )
    lowercase: bool = Field(False, description="lowercase the text first (only if the model was trained on lowercased text)")
    max_chars: int | None = Field(
        None, ge=1, le=100_000_000, description="score only the first characters of each document; null = the whole text (as DCLM does)"
    )
    filter: QualityFilterConfig = Field(default_factory=QualityFilterConfig, description="removal by score, after dedup")

    def named_files(self) -> list[NamedFile]:
        return [NamedFile("model", self.model, fasttext_model)] if self.model else []

    @field_validator("model")
    @classmethod
    def _model_file(cls, v: str | None) -> str | None:
        from classifiers.quality import check_model_file

        if v is not None:
            check_model_file(v)  # a QualityModelError is a ValueError: pydantic names the field
        return v

    @model_validator(mode="after")
    def _needs_model(self) -> "QualityConfig":
        if self.enabled and self.model is None:  # field validators do not run on a missing default
            raise ValueError("quality.model is required when quality.enabled is true")
        if self.filter.active and not self.enabled:
            raise ValueError("quality.filter needs scores: set quality.enabled (and quality.model)")
        return self


class QualityScoreStage:
    """Adds ``quality_score`` and ``quality_label``; removes nothing."""

    name = "quality"
    label = "quality scored"
    needs = ("text",)
    adds = (SCORE, LABEL)
    reasons = ()

    def __init__(self, config: QualityConfig):
        from classifiers.quality import QualityModelError, QualityScorer

        if config.model is None:
            raise QualityModelError("quality.model: no model path given")
        self.config = config
        self.scorer = QualityScorer(config.model, config.positive_label, config.lowercase, config.max_chars)
        self._unscored = 0

    def __call__(self, batch: pa.Table) -> pa.Table:
        scores, labels = self.scorer.score(batch.column("text"))
        missing = np.isnan(scores)
        self._unscored += int(missing.sum())
        batch = set_column(batch, SCORE, pa.array(scores, pa.float32(), mask=missing))
        return set_column(batch, LABEL, labels)

    def drain_counters(self) -> dict:
        """Documents the model gave no prediction for (no known token): their score is null."""
        out, self._unscored = {"unscored": self._unscored}, 0
        return out


def build_quality(config: QualityConfig) -> list:
    """The phase-1 stages of the quality classifier (after the heuristic filters)."""
    return [QualityScoreStage(config)] if config.enabled else []


# ---------------------------------------------------------------- top fraction per language


@dataclass(frozen=True)
class Cutoff:
    """The last kept document of a language: keep ``(score, id)`` ranked at or above it."""

    score: float  # -inf when the cutoff falls among documents without a score
    id: str
    kept: int
    total: int

    def to_dict(self) -> dict:
        return {"score": None if math.isinf(self.score) else self.score, "id": self.id, "kept": self.kept, "total": self.total}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Cutoff":
        score = -math.inf if d["score"] is None else float(d["score"])
        return cls(score, d["id"], int(d["kept"]), int(d["total"]))


def _rank_scores(score) -> pa.Array:
    """Scores as the float32 values the column holds (then float64), null and NaN as -inf (ranked last).

    Rounding to float32 first makes a cutoff computed from any float type
    compare exactly with the float32 ``quality_score`` column.
    """
    arr = score.combine_chunks() if isinstance(score, pa.ChunkedArray) else pa.array(score, pa.float64())
    values = arr.cast(pa.float32()).to_numpy(zero_copy_only=False).astype(np.float64)
    values[np.isnan(values)] = -np.inf
    return pa.array(values, pa.float64())


def _languages(language) -> pa.Array:
    arr = language.combine_chunks() if isinstance(language, pa.ChunkedArray) else pa.array(language, pa.string())
    return pc.fill_null(arr.cast(pa.string()), NO_LANGUAGE)


def top_fraction_cutoffs(language, score, ids, fraction: float) -> dict[str, Cutoff]:
    """Per language, the cutoff that keeps its best ``ceil(fraction x n)`` documents.

    ``language``, ``score`` and ``ids`` are the columns of *all* documents
    (arrays or lists; never the texts).  Documents rank by score, highest
    first, then by id, smallest first, so the cut is exact and deterministic
    even among equal scores; a null score ranks last.  A language with one
    document keeps it (any fraction > 0); a language with none has no entry.
    Memory: the three columns plus a sort index (about 60 bytes a document
    with 45-character ids).
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"quality.filter.top_fraction: must be in (0, 1], got {fraction}")
    table = pa.table({"lang": _languages(language), "score": _rank_scores(score), "id": pa.array(ids, pa.string())})
    if len(table) == 0:
        return {}
    if table.column("id").null_count:
        raise ValueError("top_fraction_cutoffs: every document needs an id")
    order = pc.sort_indices(table, sort_keys=[("lang", "ascending"), ("score", "descending"), ("id", "ascending")])
    table = table.take(order)
    lang = table.column("lang").combine_chunks()
    starts = np.flatnonzero(np.r_[True, pc.not_equal(lang[1:], lang[:-1]).to_numpy(zero_copy_only=False)])
    sizes = np.diff(np.r_[starts, len(table)])
    # Rounded first: 0.3 x 10 is 3, not 3.0000000000000004 (which would keep 4).
    keep = np.ceil(np.round(np.float64(fraction) * sizes, 6)).astype(np.int64)
    keep = np.clip(keep, 1, sizes)
    last = starts + keep - 1
    langs, scores, ids_ = (table.column(c).take(pa.array(last)).to_pylist() for c in ("lang", "score", "id"))
    return {l: Cutoff(s, i, int(k), int(n)) for l, s, i, k, n in zip(langs, scores, ids_, keep, sizes)}


class QualityFilterStage:
    """Removes documents by ``quality_score``: below a threshold, or outside their language's top fraction."""

    name = "quality_filter"
    label = "quality-filtered"
    needs = (SCORE,)
    reasons = (REASON,)

    def __init__(self, config: QualityFilterConfig, cutoffs: Mapping[str, Cutoff] | None = None):
        if not config.active:
            raise ValueError("quality.filter: neither threshold nor top_fraction is set")
        if config.top_fraction is not None and cutoffs is None:
            raise ValueError("quality.filter.top_fraction: needs the per-language cutoffs (top_fraction_cutoffs)")
        self.config = config
        self.cutoffs = dict(cutoffs or {})
        self._no_cutoff = 0

    def __call__(self, batch: pa.Table) -> pa.Table:
        if SCORE not in batch.column_names:
            raise ValueError(f"quality filter: the documents have no {SCORE} column (was quality.enabled on in phase 1?)")
        score = _rank_scores(batch.column(SCORE)).to_numpy()
        if self.config.threshold is not None:
            reject = score < self.config.threshold  # -inf (no score) is below any threshold
            details = self._details(batch, reject, score, lambda i: {"threshold": self.config.threshold})
            return reject_where(batch, reject, REASON, details)
        reject, cut_score = self._outside_top(batch, score)
        details = self._details(batch, reject, score, lambda i: {
            "cutoff": None if math.isinf(cut_score[i]) else float(cut_score[i]),
            "top_fraction": self.config.top_fraction,
        })
        return reject_where(batch, reject, REASON, details)

    def _outside_top(self, batch: pa.Table, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows ranked below their language's cutoff, and each row's cutoff score."""
        lang = _languages(batch.column("language")) if "language" in batch.column_names else pa.array([NO_LANGUAGE] * len(batch))
        names = list(self.cutoffs)
        idx = pc.index_in(lang, value_set=pa.array(names, pa.string()))
        known = idx.is_valid().to_numpy(zero_copy_only=False)
        n_unknown = int((~known).sum())
        if n_unknown:  # cutoffs computed on other documents: keep these, count and say so
            self._no_cutoff += n_unknown
            log.warning("quality filter: %d documents of languages without a cutoff kept", n_unknown)
        at = pc.fill_null(idx, 0).to_numpy(zero_copy_only=False)
        if not names:
            return np.zeros(len(batch), dtype=bool), np.full(len(batch), np.inf)
        cut_score = np.array([self.cutoffs[n].score for n in names], dtype=np.float64)[at]
        cut_id = pa.array([self.cutoffs[n].id for n in names], pa.string()).take(pa.array(at))
        ids = batch.column("id").combine_chunks().cast(pa.string())
        id_le = pc.fill_null(pc.less_equal(ids, cut_id), False).to_numpy(zero_copy_only=False)
        inside = (score > cut_score) | ((score == cut_score) & id_le)
        return known & ~inside, cut_score

    @staticmethod
    def _details(batch: pa.Table, reject: np.ndarray, score: np.ndarray, extra) -> list[str | None]:
        """JSON details for the rejected rows only."""
        out: list[str | None] = [None] * len(batch)
        for i in np.flatnonzero(reject):
            out[i] = json.dumps({"score": None if math.isinf(score[i]) else round(float(score[i]), 6), **extra(i)})
        return out

    def drain_counters(self) -> dict:
        out, self._no_cutoff = {"no_cutoff": self._no_cutoff}, 0
        return out
