"""A team's own code by config: ``use: "module:Class"`` with ``with:`` its keyword arguments.

Three kinds of component plug in this way, each checked against its contract when the config is read (a
one-line error naming the field, before any work; ``curate validate`` too):

- a **stage** (``stages:``, stages/base.py's contract): ``name``, ``label``, ``needs``, ``adds``, ``reasons``
  (and ``scores``, the numeric columns it adds that are scores: a tagger), ``__init__(**settings)``,
  ``__call__(pyarrow.Table) -> pyarrow.Table``; it runs in the phase it names (``extracted``: after the
  built-in filters; ``final``: before PII redaction), fingerprinted by its ``use`` and ``with``;
- a **reader** (``readers:``): ``name``, ``label``, ``records_label``, ``provides``, ``reasons``, ``suffixes``
  (the input file names it reads), ``__init__(**settings)``, ``read(stream, uri) -> Iterator[pyarrow.Table]``;
  the engine runs it as a source kind (pipeline/readers.py);
- an **export format** (``exports:``, pipeline/exports.py): ``label``, ``suffix``, ``__init__(**settings)``,
  ``write(table, out)`` (called per batch with one binary output stream per part), optionally ``finish(out)``.

The module must be importable by its name on the driver and on every Ray worker: on the path, an installed
package, or shipped to a cluster by Ray's ``runtime_env`` (``py_modules`` / ``working_dir``).
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from stages.classify import ClassifierFilterConfig

USE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
STAGE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: the columns of the rejected-set schema a stage never adds (stages.base.run_chain owns them)
_OWNED = ("reason", "details", "stage")


class PluginError(ValueError):
    """A ``use`` that does not name a class meeting its contract; the message says what is wrong and the fix."""


def load(use: str) -> type:
    """The class ``module:Class`` names (imported now), or PluginError saying what is missing."""
    if not USE.fullmatch(use):
        raise PluginError(f"{use!r} is not module:Class (e.g. my_recipe.filters:LinkDensity)")
    module_name, qualname = use.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        own = e.name is None or module_name == e.name or module_name.startswith(f"{e.name}.")
        where = "" if own else f" (it imports {e.name!r}, which is missing)"
        raise PluginError(
            f"module {module_name!r} cannot be imported{where}: put its folder on PYTHONPATH, install "
            "it, or ship it to a cluster with Ray's runtime_env (py_modules / working_dir)"
        ) from None
    except Exception as e:  # the user's module fails on import: its own error, in one line
        raise PluginError(f"module {module_name!r} fails on import: {type(e).__name__}: {e}") from None
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise PluginError(f"module {module_name!r} has no {qualname!r}")
    if not inspect.isclass(obj):
        raise PluginError(f"{use} is a {type(obj).__name__}, not a class")
    return obj


def use_of(cls: type) -> str:
    """The ``use`` of a class (``module:Class``)."""
    return f"{cls.__module__}:{cls.__qualname__}"


def check_settings(cls: type, settings: dict) -> None:
    """``settings`` are keyword arguments ``cls`` takes (a key it does not take, or one it needs and lacks, is an
    error naming it)."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return  # a class without a readable signature (a C extension): its constructor says so at run time
    params = signature.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    takes = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in settings if k not in takes]
    if unknown:
        raise PluginError(f"{cls.__name__} takes no setting {unknown[0]!r} (it takes: {', '.join(takes) or 'none'})")
    needed = [
        p.name
        for p in params
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in settings
    ]
    if needed:
        raise PluginError(f"{cls.__name__} needs the setting {needed[0]!r}: give it under with:")


def _names(cls: type, attr: str, required: bool = True) -> tuple[str, ...]:
    value = getattr(cls, attr, None)
    if value is None and not required:
        return ()
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
        raise PluginError(f"{cls.__name__}.{attr} must be a tuple of strings (got {value!r})")
    return tuple(value)


def _text(cls: type, attr: str) -> str:
    value = getattr(cls, attr, None)
    if not isinstance(value, str) or not value.strip():
        raise PluginError(f"{cls.__name__} has no {attr} (a class attribute: a non-empty string)")
    return value


def check_stage(cls: type) -> None:
    """The stage contract (stages/base.py), read from the class: nothing is built."""
    name = _text(cls, "name")
    if not STAGE_NAME.fullmatch(name):
        raise PluginError(f"{cls.__name__}.name {name!r}: lowercase letters, digits and _, starting with a letter")
    _text(cls, "label")
    _names(cls, "needs")
    adds, reasons = _names(cls, "adds"), _names(cls, "reasons")
    scores = _names(cls, "scores", required=False)
    owned = [c for c in adds if c in _OWNED]
    if owned:
        raise PluginError(
            f"{cls.__name__}.adds: {owned[0]!r} is run_chain's (a filter sets reason and details; "
            "leave them out of adds)"
        )
    stray = [c for c in scores if c not in adds]
    if stray:
        raise PluginError(f"{cls.__name__}.scores: {stray[0]!r} is not a column it adds (add it to adds)")
    if any(not r for r in reasons):
        raise PluginError(f"{cls.__name__}.reasons: every reason is a non-empty string")
    if not any("__call__" in vars(c) for c in cls.__mro__):
        raise PluginError(f"{cls.__name__} has no __call__(batch: pyarrow.Table) -> pyarrow.Table")


def check_reader(cls: type) -> None:
    """The reader contract: what it is, the columns it gives, the reasons it rejects with, the names it reads."""
    name = _text(cls, "name")
    if not STAGE_NAME.fullmatch(name):
        raise PluginError(f"{cls.__name__}.name {name!r}: lowercase letters, digits and _, starting with a letter")
    _text(cls, "label")
    _text(cls, "records_label")
    provides = _names(cls, "provides")
    _names(cls, "reasons")
    suffixes = _names(cls, "suffixes")
    if not suffixes:
        raise PluginError(f"{cls.__name__}.suffixes: name the input file endings it reads (e.g. ('.csv',))")
    missing = [c for c in ("id", "text") if c not in provides]
    if missing:
        raise PluginError(f"{cls.__name__}.provides: a document has {missing[0]!r}: its rows must have it")
    if not callable(getattr(cls, "read", None)):
        raise PluginError(f"{cls.__name__} has no read(stream, uri) -> Iterator[pyarrow.Table]")


def check_format(cls: type) -> None:
    """The export format contract: a label, its files' suffix, ``write(table, out)``."""
    _text(cls, "label")
    suffix = _text(cls, "suffix")
    if not suffix.startswith(".") or "/" in suffix:
        raise PluginError(f"{cls.__name__}.suffix {suffix!r}: a file ending such as .jsonl.gz")
    if not callable(getattr(cls, "write", None)):
        raise PluginError(f"{cls.__name__} has no write(table: pyarrow.Table, out: binary stream)")


def _loaded(use: str, check) -> str:
    """``use``, checked: a field validator's (pydantic names the field: "config error: stages.0.use: ...")."""
    try:
        check(load(use))
    except PluginError as e:
        raise ValueError(str(e)) from None
    return use


def _settings(settings: dict, info: ValidationInfo) -> dict:
    """The ``with`` of an entry whose ``use`` is valid: keyword arguments its class takes."""
    use = info.data.get("use")
    if use is None:
        return settings  # its use is wrong: that is the error to show
    from pipeline.exports import BUILT_IN

    try:
        check_settings(BUILT_IN.get(use) or load(use), settings)
    except PluginError as e:
        raise ValueError(str(e)) from None
    return settings


class ScoreFilterConfig(ClassifierFilterConfig):
    """Removal by a tagger's score, after dedup (the final phase), as a classifier's ``filter:``."""

    score: str | None = Field(
        None, description="the score column it reads: one the stage declares in `scores` (default: its only one)"
    )


class UserStageConfig(BaseModel):
    """A stage of the user's own module, run by the engine as a built-in is."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    use: str = Field(
        ..., description="module:Class (stages/base.py's contract), importable on the driver and every worker"
    )
    phase: Literal["extracted", "final"] = Field(
        "extracted",
        description="extracted: after the built-in filters "
        "(before the classifiers); final: after dedup, before PII redaction",
    )
    with_: dict[str, Any] = Field(
        default_factory=dict,
        alias="with",
        description="keyword arguments of the class "
        "(part of the fingerprint: a changed one redoes what depends on it)",
    )
    filter: ScoreFilterConfig | None = Field(
        None,
        description="a tagger's score as a filter after dedup: threshold "
        "(remove: below|above), top_fraction, by_language, score",
    )

    _use = field_validator("use")(lambda v: _loaded(v, check_stage))
    _with = field_validator("with_")(_settings)

    @model_validator(mode="after")
    def _filter(self) -> UserStageConfig:
        cls = self.cls
        if self.filter is not None:
            scores = _names(cls, "scores", required=False)
            if not scores:
                raise ValueError(
                    f"filter: {cls.__name__} declares no scores (a tagger lists the columns it adds that "
                    "are scores in `scores`)"
                )
            if self.filter.score is None and len(scores) > 1:
                raise ValueError(
                    f"filter.score: {cls.__name__} declares several scores ({', '.join(scores)}): "
                    "name the one to filter on"
                )
            if self.filter.score is not None and self.filter.score not in scores:
                raise ValueError(
                    f"filter.score: {self.filter.score!r} is not a score {cls.__name__} declares ({', '.join(scores)})"
                )
            if not self.filter.active:
                raise ValueError("filter: give threshold or top_fraction")
        return self

    @property
    def cls(self) -> type:
        return load(self.use)

    def scores(self) -> tuple[str, ...]:
        return _names(self.cls, "scores", required=False)

    def score_rule(self) -> ScoreRule | None:
        """Its filter as the final phase runs it (a classifier's filter, on the declared score)."""
        if self.filter is None:
            return None
        column = self.filter.score or self.scores()[0]
        return ScoreRule(
            name=column.removesuffix("_score"),
            score=column,
            filter=ClassifierFilterConfig(**self.filter.model_dump(exclude={"score"})),
        )


class ScoreRule(BaseModel):
    """A filter on a declared score, shaped as a classifier's (``name``, ``score_column``, ``filter``), so the
    final phase's threshold and top-fraction filter (stages.classify.ClassifierFilterStage) runs it as it is."""

    model_config = ConfigDict(extra="forbid")

    name: str
    score: str
    filter: ClassifierFilterConfig

    @property
    def score_column(self) -> str:
        return self.score


class ReaderConfig(BaseModel):
    """A reader of the user's own module for the input files its ``suffixes`` name (a CSV source...)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    use: str = Field(..., description="module:Class (the reader contract: pipeline/plugins.py)")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with", description="keyword arguments of the class")

    _use = field_validator("use")(lambda v: _loaded(v, check_reader))
    _with = field_validator("with_")(_settings)

    @property
    def cls(self) -> type:
        return load(self.use)


class ExportConfig(BaseModel):
    """A copy of one phase's kept documents under ``exports/<name>/``, one file per part (pipeline/exports.py)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    name: str = Field(..., description="its folder exports/<name>/ (lowercase letters, digits, _)")
    use: str = Field(
        "jsonl",
        description="jsonl (JSON lines, gzip: {id, text, metadata}, as DataTrove and Dolma "
        "write them), parquet, or module:Class (an export format: pipeline/plugins.py)",
    )
    phase: str = Field(
        "final",
        description="the phase whose kept documents it writes (extracted, deduped, final); "
        "before final they are not PII-redacted: the card says so and never offers them for upload",
    )
    columns: list[str] | None = Field(None, description="the columns it writes (default: every column)")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with", description="keyword arguments of the format")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not STAGE_NAME.fullmatch(v):
            raise ValueError(f"{v!r}: lowercase letters, digits and _, starting with a letter (its folder's name)")
        return v

    @field_validator("use")
    @classmethod
    def _format(cls, v: str) -> str:
        from pipeline.exports import BUILT_IN

        return v if v in BUILT_IN else _loaded(v, check_format)

    _with = field_validator("with_")(_settings)

    @property
    def cls(self) -> type:
        from pipeline.exports import BUILT_IN

        return BUILT_IN.get(self.use) or load(self.use)


def user_stages(config, phase: str) -> list:
    """The ``stages:`` entries of a phase as the engine builds them: the class with ``with`` as its keyword
    arguments (its fingerprint: the class and those settings, pipeline/engine/settings.py)."""
    from stages.base import StageSpec

    return [
        StageSpec(s.cls, dict(s.with_), f"stages.{i}", kwargs=True)
        for i, s in enumerate(config.stages)
        if s.phase == phase
    ]


def score_rules(config) -> list[tuple[int, ScoreRule]]:
    """(entry, rule) of every tagger whose declared score filters after dedup."""
    return [(i, r) for i, s in enumerate(config.stages) if (r := s.score_rule()) is not None]


def check_plugins(config) -> list[str]:
    """What no single entry can check: a filter's reason taken twice, an export's folder taken twice (a stage
    name taken twice is the plan's to say, pipeline.plan.check_names, as it knows every built-in stage)."""
    problems = []
    names = [c.name for c in config.classifiers]
    for i, rule in score_rules(config):
        if rule.name in names:
            problems.append(
                f"config error: stages.{i}.filter: its reason {rule.name!r} is a classifier's name: "
                "rename the score column or the classifier"
            )
        names.append(rule.name)
    exports = [e.name for e in config.exports]
    twice = sorted({n for n in exports if exports.count(n) > 1})
    if twice:
        problems.append(f"config error: exports: two exports are named {twice[0]!r}: give each its own folder")
    return problems
