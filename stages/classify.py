"""fastText classifiers as taggers: any number of models score every document in one pass; each may filter.

``classifiers:`` is a list; an entry names a model, the label whose probability
is its score, how the text is prepared for it, and optionally a filter::

    classifiers:
      - {name: quality, model: samples/quality/model.ftz, label: hq, filter: {threshold: 0.5}}
      - {name: edu, model: samples/classifiers/edu.ftz, label: edu}
      - {name: toxicity, model: samples/classifiers/toxicity.ftz, label: toxic,
         filter: {threshold: 0.5, remove: above}}

:class:`ClassifyStage` (stage ``classifiers``, at the end of phase 1, so that
dedup can keep the best-scored copy of a cluster) adds ``<name>_score``
(float32, the label's probability) and ``<name>_label`` (the model's top label)
for every entry.  The text is prepared once per preparation (lowercasing,
``max_chars``) however many models share it, and each model is loaded once per
worker process and called once per batch: through fastText's binding
(classifiers/quality.py), or projected onto its labels with the tokens shared by
the models of a preparation (classifiers/projected.py; ``engine``).

:class:`ClassifierFilterStage` (stage ``<name>_filter``, reason ``<name>``, in
the ``final`` phase, after dedup) removes documents by that score: below (or,
``remove: above``, above) a threshold, or outside the best ``top_fraction`` of
their language (stages.top_fraction), with per-language values in ``by_language``.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stages.base import reject_where, set_column
from stages.filters.labels import canonical
from stages.named_files import ConfigPath, NamedFile, fasttext_classifier
from stages.top_fraction import Cutoff, _languages, _rank_scores

log = logging.getLogger(__name__)

NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
SCORE_SUFFIX, LABEL_SUFFIX = "_score", "_label"
#: names whose columns another stage writes (language ID's language_score)
RESERVED = ("language",)


def score_column(name: str) -> str:
    return name + SCORE_SUFFIX


def label_column(name: str) -> str:
    return name + LABEL_SUFFIX


def filter_stage_name(name: str) -> str:
    return f"{name}_filter"


class ClassifierFilterConfig(BaseModel):
    """Which scored documents to remove (after dedup); no threshold and no top_fraction = keep all."""

    model_config = ConfigDict(extra="forbid")

    threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="remove documents scoring below it (remove: below; a "
        "missing score too) or above it (remove: above); null = no threshold",
    )
    remove: Literal["below", "above"] = Field(
        "below",
        description="which side of the threshold goes: below for a "
        "score where high is good (quality, edu), above for one where high is bad (toxicity)",
    )
    top_fraction: float | None = Field(
        None,
        gt=0,
        le=1,
        description="keep the best fraction of each language "
        "(ceil(fraction x n) documents; ties: smallest id); null = off",
    )
    by_language: dict[str, float] = Field(
        default_factory=dict,
        description="per language (lid.176 code or FineWeb-2 "
        "name): its own threshold, or its own fraction with top_fraction",
    )

    @model_validator(mode="after")
    def _one_rule(self) -> ClassifierFilterConfig:
        if self.threshold is not None and self.top_fraction is not None:
            raise ValueError("set threshold or top_fraction, not both")
        if self.top_fraction is not None and self.remove == "above":
            raise ValueError(
                "top_fraction keeps the highest scores: for a score where high is bad use threshold with remove: above"
            )
        if self.by_language and not self.active:
            raise ValueError(
                "by_language changes the threshold or top_fraction per language: set one of them "
                "for the other languages (threshold: 0 or top_fraction: 1 keeps them all)"
            )
        low = 0.0 if self.threshold is not None else 1e-9
        bad = {k: v for k, v in self.by_language.items() if not low <= v <= 1}
        if bad:
            raise ValueError(f"by_language: values must be in [{low:g}, 1] (got {bad})")
        return self

    @property
    def active(self) -> bool:
        return self.threshold is not None or self.top_fraction is not None

    def value_for(self, language: str) -> float | None:
        """The threshold (or fraction) of a language: its own in by_language, else the general one."""
        own = {canonical(k): v for k, v in self.by_language.items()}.get(canonical(language))
        return own if own is not None else self.threshold if self.threshold is not None else self.top_fraction


class ClassifierConfig(BaseModel):
    """One fastText classifier: scores in phase 1 (``<name>_score``,
    ``<name>_label``), an optional filter after dedup."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        ...,
        description="its columns <name>_score and <name>_label, and "
        "its filter's reason (lowercase letters, digits, _)",
    )
    model: ConfigPath = Field(..., description="path to a supervised fastText model (.bin or .ftz) on every worker")
    label: str = Field(
        ...,
        min_length=1,
        description="the label whose probability is the score, with or without "
        "__label__ (DCLM: hq; Dolma's Jigsaw models: toxic, nsfw)",
    )
    lowercase: bool = Field(
        False, description="lowercase the text first (only if the model was trained on lowercased text)"
    )
    max_chars: int | None = Field(
        None,
        ge=1,
        le=100_000_000,
        description="score only the first characters of each document; null = the whole text (as DCLM does)",
    )
    engine: Literal["auto", "fasttext", "projected"] = Field(
        "auto",
        description="how the model runs: fasttext (its binding: one predict per model); projected (read from "
        "the file, its rows projected onto its labels at load, "
        "the tokens shared by every model of the same preparation: "
        "the same scores, faster from two models on, a worker "
        "holds megabytes instead of the model; not for hierarchical "
        "softmax or character n-grams); auto: projected when two or more models it supports share a preparation",
    )
    filter: ClassifierFilterConfig = Field(
        default_factory=ClassifierFilterConfig, description="removal by score, after dedup"
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME.fullmatch(v):
            raise ValueError(
                f"{v!r} is not a classifier name: lowercase letters, digits and _, starting with a letter (e.g. edu)"
            )
        if v in RESERVED:
            raise ValueError(f"{v!r} is taken: {score_column(v)} is another stage's column; choose another name")
        return v

    @field_validator("model")
    @classmethod
    def _model_file(cls, v: str) -> str:
        from classifiers.quality import check_model_file

        check_model_file(v)  # a QualityModelError is a ValueError: pydantic names the field
        return v

    def named_files(self) -> list[NamedFile]:
        return [NamedFile("model", self.model, fasttext_classifier(self.label))]

    @property
    def score_column(self) -> str:
        return score_column(self.name)

    @property
    def label_column(self) -> str:
        return label_column(self.name)

    @property
    def preparation(self) -> tuple[bool, int | None]:
        """What the text goes through before this model (models with the same one share it)."""
        return self.lowercase, self.max_chars


def check_classifiers(classifiers: Sequence[ClassifierConfig]) -> None:
    """Names are unique (each is a pair of columns and a reason)."""
    twice = [n for n, k in Counter(c.name for c in classifiers).items() if k > 1]
    if twice:
        raise ValueError(f"two classifiers are named {twice[0]!r}: each name is a pair of columns, give each its own")


class ClassifyStage:
    """Adds ``<name>_score`` and ``<name>_label`` for every classifier; removes nothing."""

    name = "classifiers"
    label = "scored by the classifiers"
    needs = ("text",)
    adds: tuple[str, ...] = ()  # per config: declare()
    reasons = ()

    @classmethod
    def declare(cls, config: Sequence[ClassifierConfig]) -> dict:
        return {
            "label": "scored by " + ", ".join(c.name for c in config),
            "adds": [col for c in config for col in (c.score_column, c.label_column)],
            "scores": [c.score_column for c in config],
        }

    @classmethod
    def depends_on(cls, config: Sequence[ClassifierConfig]) -> list:
        """Its scores depend on each model and how its text is prepared, not on the filter that runs after dedup."""
        return [c.model_dump(mode="json", exclude={"filter"}) for c in config]

    def __init__(self, config: Sequence[ClassifierConfig]):
        self.config = list(config)
        self.by_preparation: dict[tuple, list[int]] = {}
        for i, c in enumerate(self.config):
            self.by_preparation.setdefault(c.preparation, []).append(i)
        projected = {i for members in self.by_preparation.values() for i in _projected(self.config, members)}
        self.scorers = [_scorer(c, f"classifiers.{i}", i in projected) for i, c in enumerate(self.config)]
        self.engines = ["projected" if i in projected else "fasttext" for i in range(len(self.config))]
        self._unscored: Counter = Counter()

    def __call__(self, batch: pa.Table) -> pa.Table:
        from classifiers.fasttext_tokens import tokenize
        from classifiers.quality import prepare_texts, prepared_lines

        texts = batch.column("text")
        for (lowercase, max_chars), members in self.by_preparation.items():
            lines = tokens = None  # each made once for every model of this preparation that reads it
            for i in members:
                c = self.config[i]
                if self.engines[i] == "projected":
                    tokens = tokens or tokenize(prepare_texts(texts, lowercase, max_chars, one_line=False))
                    scores, labels = self.scorers[i].score_tokens(tokens)
                else:
                    lines = lines if lines is not None else prepared_lines(texts, lowercase, max_chars)
                    scores, labels = self.scorers[i].score_lines(lines)
                missing = np.isnan(scores)
                self._unscored[c.name] += int(missing.sum())
                batch = set_column(batch, c.score_column, pa.array(scores, pa.float32(), mask=missing))
                batch = set_column(batch, c.label_column, labels)
        return batch

    def drain_counters(self) -> dict:
        """Documents a model gave no prediction for (no known token): their score is null."""
        out = {f"unscored.{c.name}": self._unscored[c.name] for c in self.config}
        self._unscored.clear()
        return out


def _projected(config: list[ClassifierConfig], members: list[int]) -> list[int]:
    """The classifiers of one preparation that run projected: engine projected, or auto when two or more can."""
    from classifiers.projected import Unsupported, load_projected
    from classifiers.quality import QualityModelError

    able = []
    for i in members:
        c = config[i]
        if c.engine == "fasttext":
            continue
        try:
            load_projected(c.model)
        except Unsupported as e:
            if c.engine == "projected":
                raise QualityModelError(
                    f"classifiers.{i}.engine: projected cannot run {c.model!r} ({e}): use fasttext or auto"
                ) from None
            continue
        except QualityModelError as e:
            raise QualityModelError(f"classifiers.{i}.model: {e}") from None
        able.append(i)
    return [i for i in able if config[i].engine == "projected" or len(able) >= 2]


def _scorer(c: ClassifierConfig, field: str, projected: bool):
    from classifiers.projected import ProjectedScorer
    from classifiers.quality import QualityScorer

    if projected:
        return ProjectedScorer(c.model, c.label, field)
    return QualityScorer(c.model, c.label, c.lowercase, c.max_chars, field=field)


class ClassifierFilterStage:
    """Removes documents by one classifier's score: by a threshold, or outside their language's top fraction."""

    name = "classifier_filter"  # per config: <name>_filter (declare())
    label = "classifier filter"
    needs: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()  # per config: the classifier's name

    @classmethod
    def declare(cls, config: ClassifierConfig) -> dict:
        return {
            "name": filter_stage_name(config.name),
            "label": f"{config.name}-filtered ({describe_rule(config.filter)})",
            "needs": [config.score_column],
            "reasons": [config.name],
        }

    @classmethod
    def depends_on(cls, config: ClassifierConfig) -> dict:
        """What it removes depends on its rule and the score column, not on how the score was computed."""
        return {"name": config.name, "filter": config.filter.model_dump(mode="json")}

    def __init__(self, config: ClassifierConfig, cutoffs: Mapping[str, Cutoff] | None = None):
        rule = config.filter
        if not rule.active:
            raise ValueError(f"classifier {config.name}: its filter has neither threshold nor top_fraction")
        if rule.top_fraction is not None and cutoffs is None:
            raise ValueError(
                f"classifier {config.name}: top_fraction needs the per-language cutoffs (top_fraction_cutoffs)"
            )
        self.config, self.rule = config, rule
        self.name, self.reason, self.column = filter_stage_name(config.name), config.name, config.score_column
        self.cutoffs = dict(cutoffs or {})
        self._no_cutoff = 0

    def __call__(self, batch: pa.Table) -> pa.Table:
        if self.column not in batch.column_names:
            raise ValueError(
                f"{self.name}: the documents have no {self.column} column (was classifier {self.reason} in phase 1?)"
            )
        score = _rank_scores(batch.column(self.column)).to_numpy()
        lang = (
            _languages(batch.column("language")) if "language" in batch.column_names else pa.array([""] * len(batch))
        )
        if self.rule.threshold is not None:
            threshold = self._per_row(lang)
            # -inf (no score) is below any threshold: removed when removing below, kept when removing above
            reject = score < threshold if self.rule.remove == "below" else score > threshold
            extra = {"remove": "above"} if self.rule.remove == "above" else {}
            return reject_where(
                batch,
                reject,
                self.reason,
                self._details(lang, reject, score, lambda i: {"threshold": float(threshold[i]), **extra}),
            )
        reject, cut_score = self._outside_top(batch, lang, score)
        return reject_where(
            batch,
            reject,
            self.reason,
            self._details(
                lang,
                reject,
                score,
                lambda i: {
                    "cutoff": None if math.isinf(cut_score[i]) else float(cut_score[i]),
                    "top_fraction": self.rule.value_for(lang[i].as_py()),
                },
            ),
        )

    def _per_row(self, lang: pa.Array) -> np.ndarray:
        """Each row's threshold (its language's own, else the general one)."""
        names = pc.unique(lang)
        values = np.array([self.rule.value_for(n) for n in names.to_pylist()], dtype=np.float64)
        return values[pc.index_in(lang, value_set=names).to_numpy(zero_copy_only=False)]

    def _outside_top(self, batch: pa.Table, lang: pa.Array, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows ranked below their language's cutoff, and each row's cutoff score."""
        names = list(self.cutoffs)
        idx = pc.index_in(lang, value_set=pa.array(names, pa.string()))
        known = idx.is_valid().to_numpy(zero_copy_only=False)
        n_unknown = int((~known).sum())
        if n_unknown:  # cutoffs computed on other documents: keep these, count and say so
            self._no_cutoff += n_unknown
            log.warning("%s: %d documents of languages without a cutoff kept", self.name, n_unknown)
        if not names:
            return np.zeros(len(batch), dtype=bool), np.full(len(batch), np.inf)
        at = pc.fill_null(idx, 0).to_numpy(zero_copy_only=False)
        cut_score = np.array([self.cutoffs[n].score for n in names], dtype=np.float64)[at]
        cut_id = pa.array([self.cutoffs[n].id for n in names], pa.string()).take(pa.array(at))
        ids = batch.column("id").combine_chunks().cast(pa.string())
        id_le = pc.fill_null(pc.less_equal(ids, cut_id), False).to_numpy(zero_copy_only=False)
        inside = (score > cut_score) | ((score == cut_score) & id_le)
        return known & ~inside, cut_score

    @staticmethod
    def _details(lang: pa.Array, reject: np.ndarray, score: np.ndarray, extra) -> list[str | None]:
        """JSON details for the rejected rows only (the language lets the card count removals per language)."""
        out: list[str | None] = [None] * len(reject)
        for i in np.flatnonzero(reject):
            out[i] = json.dumps(
                {
                    "score": None if math.isinf(score[i]) else round(float(score[i]), 6),
                    **extra(i),
                    "language": lang[i].as_py(),
                }
            )
        return out

    def drain_counters(self) -> dict:
        out, self._no_cutoff = {"no_cutoff": self._no_cutoff}, 0
        return out


def describe_rule(rule: ClassifierFilterConfig) -> str:
    """The filter in a few words (the plan's label, the card)."""
    own = f", per language: {', '.join(f'{k} {v:g}' for k, v in rule.by_language.items())}" if rule.by_language else ""
    if rule.threshold is not None:
        return f"{rule.remove} {rule.threshold:g} removed{own}"
    if rule.top_fraction is not None:
        return f"best {rule.top_fraction:g} of each language kept{own}"
    return "no filter"
