"""Document-level heuristic filters (URL, Gopher, C4, FineWeb).

``FiltersConfig`` holds one model per filter, each with ``enabled`` and its
thresholds (defaults are the published ones; every field cites its source).
``url_filter_specs`` gives the stages that run before decoding (they need
only ``url``); ``build_filters`` those that run after language ID, in order:
Gopher quality, Gopher repetition, C4 (rewrites ``text``), FineWeb.  The two
Gopher filters judge the same text, so the cheaper runs first; C4 must come
before FineWeb, which judges the cleaned text (as in FineWeb's pipeline).

Every removed document gets a ``reason`` ``<filter>:<rule>`` and ``details``
(the measured value against the threshold); rules that do not apply to a
document (language without a stop-word list, ...) are listed in its
``filter_skipped`` column.

Any setting of the text filters may differ by language (``by_language``,
``by_language_dir``, FineWeb-2's per-language files in ``fineweb2_configs``):
see :mod:`stages.filters.by_language` and :mod:`stages.filters.fineweb2`.
The folders are read once, when the config is validated where the run starts:
their settings are written into ``by_language`` (which run.json records and
workers receive) and the folder fields are cleared, so workers need no files.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stages.filters.by_language import (
    BY_LANGUAGE,
    TEXT_FILTERS,
    LanguageOverride,
    LanguageSettings,
    effective,
    merge,
    read_overrides_dir,
)
from stages.filters.c4 import C4Config, C4Filter
from stages.filters.fineweb import FineWebQualityConfig, FineWebQualityFilter
from stages.filters.fineweb2 import Unmapped, log_unmapped, read_fineweb2_configs
from stages.filters.gopher_quality import GopherQualityConfig, GopherQualityFilter
from stages.filters.gopher_repetition import GopherRepetitionConfig, GopherRepetitionFilter
from stages.filters.url import UrlFilter, UrlFilterConfig
from stages.named_files import ConfigPath

FINEWEB2 = "FineWeb-2 (Penedo et al. 2025)"


class FiltersConfig(BaseModel):
    """Parameters of the heuristic filters."""

    model_config = ConfigDict(extra="forbid")

    url: UrlFilterConfig = Field(default_factory=UrlFilterConfig)
    gopher_quality: GopherQualityConfig = Field(default_factory=GopherQualityConfig)
    gopher_repetition: GopherRepetitionConfig = Field(default_factory=GopherRepetitionConfig)
    c4: C4Config = Field(default_factory=C4Config)
    fineweb: FineWebQualityConfig = Field(default_factory=FineWebQualityConfig)
    by_language: dict[str, LanguageOverride] = Field(
        default_factory=dict,
        description=f"changes to the text filters by language label, e.g. {{ja: {{c4: {{enabled: false}}}}, de: "
        f"{{gopher_quality: {{min_stop_words: 1}}}}}}: any field of gopher_quality, gopher_repetition, c4, fineweb "
        f"({FINEWEB2} sets them per language); wins over the two folders below",
    )
    by_language_dir: ConfigPath | None = Field(
        None,
        description=f"a folder of {{lang}}.yml files (or {FINEWEB2}'s {{lang}}_{{script}}.yml names), each one "
        "language's by_language value; read when the config is loaded",
    )
    fineweb2_configs: ConfigPath | None = Field(
        None,
        description=f"{FINEWEB2}'s configs/ folder (or a copy of some of its {{lang}}_{{script}}.yml files): their "
        "Gopher, FineWeb thresholds and stop words by language (docs/filters.md says what maps to what); "
        "langid.fineweb2_configs reads their language-score cutoffs",
    )
    fineweb2_languages: list[str] = Field(
        default_factory=list,
        description=f"read only these languages' {FINEWEB2} files (ru or rus_Cyrl); empty = every file in the folder",
    )
    fineweb2_pipeline: bool = Field(
        False,
        description=f"also give those languages the settings {FINEWEB2}'s pipeline script fixes for all: C4 off, "
        "Gopher repetition's paragraph and dup_line_char_frac rules off, FineWeb's short-line rule off and "
        "char_duplicates_ratio 0.1",
    )
    by_language_sources: list[str] = Field(
        default_factory=list,
        description=f"written when the config is loaded: the folders by_language was read from ({FINEWEB2} files, "
        "by_language_dir); informational",
    )
    fineweb2_unmapped: list[str] = Field(
        default_factory=list,
        description=f"written when the config is loaded: what of the {FINEWEB2} files is not carried over as it is "
        "(file: key = value: why); informational",
    )

    @model_validator(mode="after")
    def _read_language_folders(self) -> FiltersConfig:
        """Read the folders into by_language once (folder files, then by_language_dir, then by_language win)."""
        layers = []
        if self.fineweb2_configs:
            fineweb2 = read_fineweb2_configs(self.fineweb2_configs, self.fineweb2_languages, self.fineweb2_pipeline)
            log_unmapped(fineweb2)
            layers.append({lang: LanguageOverride.model_validate(c) for lang, c in fineweb2.filters.items()})
            self.by_language_sources.append(f"fineweb2_configs: {self.fineweb2_configs} ({len(fineweb2.files)} files)")
            self.fineweb2_unmapped += [str(u) for u in fineweb2.unmapped]
            self.fineweb2_configs = None
        if self.by_language_dir:
            layers.append(read_overrides_dir(self.by_language_dir))
            self.by_language_sources.append(f"by_language_dir: {self.by_language_dir}")
            self.by_language_dir = None
        if layers or self.by_language:
            self.by_language = merge(*layers, self.by_language)
        return self

    def language_settings(self, filter_name: str) -> LanguageSettings:
        """One text filter's base settings and each language's that differ."""
        base = getattr(self, filter_name)
        per_language = {}
        for lang, override in self.by_language.items():
            cfg = effective(base, override.changes(filter_name))
            if cfg != base:
                per_language[lang] = cfg
        return LanguageSettings(base, per_language)


def text_filter_specs(config: FiltersConfig) -> list[tuple[type, object]]:
    """(class, config) of the enabled text filters, in the order they run (after language ID).

    A filter whose settings differ by language is its :class:`LanguageSplit` with a LanguageSettings.
    """
    specs: list[tuple[type, object]] = []
    for name, (cls, _) in TEXT_FILTERS.items():
        settings = config.language_settings(name)
        if not settings.by_language:
            if settings.base.enabled:
                specs.append((cls, settings.base))
        elif settings.enabled:
            specs.append((BY_LANGUAGE[cls], settings))
    return specs


def url_filter_specs(config: FiltersConfig) -> list[tuple[type, BaseModel]]:
    """(class, config) of the URL filter if enabled (it runs before decoding and extraction)."""
    return [(UrlFilter, config.url)] if config.url.enabled else []


def build_filters(config: FiltersConfig) -> list:
    """The text filters, in the order they run (after language ID)."""
    return [cls(cfg) for cls, cfg in text_filter_specs(config)]


__all__ = [
    "FiltersConfig",
    "LanguageOverride",
    "Unmapped",
    "build_filters",
    "text_filter_specs",
    "url_filter_specs",
    "UrlFilter",
    "GopherQualityFilter",
    "GopherRepetitionFilter",
    "C4Filter",
    "FineWebQualityFilter",
]
