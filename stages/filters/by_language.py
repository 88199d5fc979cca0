"""Filter settings by language: ``filters.by_language: {de: {...}, ja: {...}}``.

Each language's value changes any field of any text filter (a partial
:class:`~stages.filters.FiltersConfig` without ``url``: the URL filter runs
before language ID).  A filter with at least one language's changes runs as a
:class:`LanguageSplit`: the batch's rows are grouped by the settings their
language gets (languages without changes share the base settings), each group
goes through a filter built with its settings, and the rows come back in
their order.  A filter nobody changes runs as before, at no extra cost.  A
language whose settings turn a filter off passes through it untouched (the
columns the filter adds are null for its rows).

Labels are matched through :func:`stages.filters.labels.canonical`, so ``ru``
settings apply to ``rus_Cyrl`` documents (GlotLID) and the other way round.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, create_model, model_serializer, model_validator

from stages.base import _conform
from stages.filters.c4 import C4Config, C4Filter
from stages.filters.fineweb import FineWebQualityConfig, FineWebQualityFilter
from stages.filters.gopher_quality import GopherQualityConfig, GopherQualityFilter
from stages.filters.gopher_repetition import GopherRepetitionConfig, GopherRepetitionFilter
from stages.filters.labels import canonical
from stages.filters.rules import texts_of
from stages.named_files import relative_hint

#: The filters whose settings may differ by language (the ones after language ID), in run order.
TEXT_FILTERS: dict[str, tuple[type, type[BaseModel]]] = {
    "gopher_quality": (GopherQualityFilter, GopherQualityConfig),
    "gopher_repetition": (GopherRepetitionFilter, GopherRepetitionConfig),
    "c4": (C4Filter, C4Config),
    "fineweb": (FineWebQualityFilter, FineWebQualityConfig),
}


class _SetFieldsOnly(BaseModel):
    """Dumps only the fields that were given: a partial config stays partial when written and read back."""

    @model_serializer(mode="wrap")
    def _set_only(self, handler):
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}


def _partial(model: type[BaseModel], name: str) -> type[BaseModel]:
    """``model`` with every field optional (not given = not changed), same types, bounds and validators."""
    fields = {}
    for field_name, info in model.model_fields.items():
        info = copy.copy(info)
        info.default, info.default_factory = None, None
        fields[field_name] = (info.annotation, info)
    return create_model(name, __base__=(model, _SetFieldsOnly), __module__=__name__, **fields)


# Module-level names, so that configs holding them pickle (Ray ships configs to workers).
PartialGopherQuality = _partial(GopherQualityConfig, "PartialGopherQuality")
PartialGopherRepetition = _partial(GopherRepetitionConfig, "PartialGopherRepetition")
PartialC4 = _partial(C4Config, "PartialC4")
PartialFineWeb = _partial(FineWebQualityConfig, "PartialFineWeb")


class LanguageOverride(_SetFieldsOnly):
    """One language's changes to the text filters: any field of any of them."""

    model_config = ConfigDict(extra="forbid")

    gopher_quality: PartialGopherQuality | None = None  # type: ignore[valid-type]
    gopher_repetition: PartialGopherRepetition | None = None  # type: ignore[valid-type]
    c4: PartialC4 | None = None  # type: ignore[valid-type]
    fineweb: PartialFineWeb | None = None  # type: ignore[valid-type]

    @model_validator(mode="before")
    @classmethod
    def _no_url(cls, data: Any) -> Any:
        if isinstance(data, dict) and "url" in data:
            raise ValueError(
                "url: the URL filter runs before language ID, so its settings cannot differ by language "
                "(set them in filters.url)"
            )
        return data

    def changes(self, filter_name: str) -> dict:
        """The fields this language sets for one filter (empty: none)."""
        part = getattr(self, filter_name)
        return {} if part is None else part.model_dump()


def merge(*overrides: dict[str, LanguageOverride]) -> dict[str, LanguageOverride]:
    """Overrides by language, later ones winning field by field (``{c4: {enabled: false}}`` keeps the rest)."""
    out: dict[str, dict] = {}
    for layer in overrides:
        for lang, override in layer.items():
            into = out.setdefault(canonical(lang), {})
            for name in TEXT_FILTERS:
                if changes := override.changes(name):
                    into[name] = {**into.get(name, {}), **changes}
    return {lang: LanguageOverride.model_validate(v) for lang, v in out.items()}


def effective(base: BaseModel, changes: dict) -> BaseModel:
    """A filter's settings for one language: the base ones with that language's changes."""
    return type(base).model_validate({**base.model_dump(), **changes}) if changes else base


# ----------------------------------------------------------------------------- a folder of files


def read_overrides_dir(folder: str) -> dict[str, LanguageOverride]:
    """``{lang}.yml`` files (or FineWeb-2's ``{lang}_{script}.yml`` names), each a LanguageOverride.

    Raises ValueError naming the file and the field of the first problems.
    """
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(
            f"by_language_dir: {folder!r} is not a folder (give a folder of {{lang}}.yml files){relative_hint(folder)}"
        )
    files = sorted(p for p in path.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
    if not files:
        raise ValueError(f"by_language_dir: no .yml files in {folder!r} (name them by language: de.yml, rus_Cyrl.yml)")
    out: dict[str, LanguageOverride] = {}
    source: dict[str, Path] = {}
    for file in files:
        lang = canonical(file.stem)
        if lang in source:
            raise ValueError(f"by_language_dir: {source[lang].name} and {file.name} both set {lang!r}: keep one")
        source[lang] = file
        try:
            out[lang] = LanguageOverride.model_validate(read_yaml_mapping(file, "by_language_dir"))
        except ValidationError as e:
            raise ValueError(f"by_language_dir: {file.name}: {describe(e)}") from None
    return out


def read_yaml_mapping(file: Path, what: str) -> dict:
    """A YAML file's top-level mapping, or a one-line ValueError naming the file."""
    try:
        data = yaml.load(file.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except UnicodeDecodeError:
        raise ValueError(f"{what}: {file} is not UTF-8 text") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{what}: {file} is not valid YAML: {e}".replace("\n", " ")) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{what}: {file}: the top level must be a mapping of fields (got {type(data).__name__})")
    return data


def describe(e: ValidationError) -> str:
    """pydantic's errors as ``field: problem``, on one line."""
    parts = []
    for err in e.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {msg}")
    return "; ".join(parts)


# ----------------------------------------------------------------------------- the stage


@dataclass(frozen=True)
class LanguageSettings:
    """One filter's settings: the base ones, and each language's where they differ."""

    base: BaseModel
    by_language: dict[str, BaseModel]

    @property
    def enabled(self) -> bool:
        return self.base.enabled or any(c.enabled for c in self.by_language.values())


class LanguageSplit:
    """Runs the ``inner`` filter with each row's language's settings (see the module's docstring)."""

    inner: type

    def __init_subclass__(cls, inner: type, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.inner = inner
        cls.name, cls.label, cls.reasons = inner.name, inner.label, inner.reasons
        cls.needs = tuple(dict.fromkeys((*inner.needs, "language")))
        cls.adds = getattr(inner, "adds", ())
        cls.types, cls.drops = getattr(inner, "types", {}), getattr(inner, "drops", ())

    def __init__(self, settings: LanguageSettings):
        self.settings = self.config = settings
        configs = [settings.base]  # distinct settings; languages with equal ones share a filter
        self._slot: dict[str, int] = {}
        for lang, cfg in settings.by_language.items():
            if cfg not in configs:
                configs.append(cfg)
            self._slot[canonical(lang)] = configs.index(cfg)
        self.filters = [self.inner(cfg) if cfg.enabled else None for cfg in configs]
        self._some = next(f for f in self.filters if f is not None)
        self._schemas: tuple[pa.Schema, pa.Schema] | None = None

    def slots(self, languages: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Per row, the index of its settings (0: the base ones)."""
        if isinstance(languages, pa.ChunkedArray):
            languages = languages.combine_chunks()
        encoded = pc.dictionary_encode(languages, null_encoding="encode")
        per_value = [0 if v is None else self._slot.get(canonical(v), 0) for v in encoded.dictionary.to_pylist()]
        return np.asarray(per_value, dtype=np.int64)[encoded.indices.to_numpy(zero_copy_only=False)]

    def __call__(self, batch: pa.Table) -> pa.Table:
        slots = self.slots(batch.column("language"))
        present = np.unique(slots)
        if len(present) == 1 and self.filters[present[0]] is not None:
            return self.filters[present[0]](batch)  # one settings group: no split
        texts = texts_of(batch)
        for derive in getattr(self.inner, "derives", ()):
            derive(texts)  # once for the whole batch: each group takes its rows
        parts, rows = [], []
        for slot in present:
            idx = np.flatnonzero(slots == slot)
            part = batch.take(idx)
            stage = self.filters[slot]
            parts.append(stage(part) if stage is not None else part)
            rows.append(idx)
        schema = self._output_schema(batch)
        out = pa.concat_tables([_conform(p, schema) for p in parts]) if parts else self._some(batch)
        if len(rows) > 1:
            order = np.empty(len(batch), dtype=np.int64)
            order[np.concatenate(rows)] = np.arange(len(batch))
            out = out.take(order)
        return out

    def _output_schema(self, batch: pa.Table) -> pa.Schema:
        """The columns the filter's output has for this input (an enabled filter run on no rows)."""
        if self._schemas is None or not self._schemas[0].equals(batch.schema):
            self._schemas = (batch.schema, self._some(batch.slice(0, 0)).schema)
        return self._schemas[1]


class GopherQualityByLanguage(LanguageSplit, inner=GopherQualityFilter):
    """Gopher quality rules with per-language settings."""


class GopherRepetitionByLanguage(LanguageSplit, inner=GopherRepetitionFilter):
    """Gopher repetition rules with per-language settings."""


class C4ByLanguage(LanguageSplit, inner=C4Filter):
    """C4 rules with per-language settings."""


class FineWebByLanguage(LanguageSplit, inner=FineWebQualityFilter):
    """FineWeb rules with per-language settings."""


BY_LANGUAGE: dict[type, type[LanguageSplit]] = {
    GopherQualityFilter: GopherQualityByLanguage,
    GopherRepetitionFilter: GopherRepetitionByLanguage,
    C4Filter: C4ByLanguage,
    FineWebQualityFilter: FineWebByLanguage,
}
