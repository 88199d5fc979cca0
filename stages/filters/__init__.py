"""Document-level heuristic filters (URL, Gopher, C4, FineWeb).

``FiltersConfig`` holds one model per filter, each with ``enabled`` and its
thresholds (defaults are the published ones; every field cites its source).
``build_url_filters`` returns the stages that run before decoding (they need
only ``url``); ``build_filters`` those that run after language ID, in order:
Gopher quality, Gopher repetition, C4 (rewrites ``text``), FineWeb.  The two
Gopher filters judge the same text, so the cheaper runs first; C4 must come
before FineWeb, which judges the cleaned text (as in FineWeb's pipeline).

Every removed document gets a ``reason`` ``<filter>:<rule>`` and ``details``
(the measured value against the threshold); rules that do not apply to a
document (language without a stop-word list, ...) are listed in its
``filter_skipped`` column.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from stages.filters.c4 import C4Config, C4Filter
from stages.filters.fineweb import FineWebQualityConfig, FineWebQualityFilter
from stages.filters.gopher_quality import GopherQualityConfig, GopherQualityFilter
from stages.filters.gopher_repetition import GopherRepetitionConfig, GopherRepetitionFilter
from stages.filters.url import UrlFilter, UrlFilterConfig


class FiltersConfig(BaseModel):
    """Parameters of the heuristic filters."""

    model_config = ConfigDict(extra="forbid")

    url: UrlFilterConfig = Field(default_factory=UrlFilterConfig)
    gopher_quality: GopherQualityConfig = Field(default_factory=GopherQualityConfig)
    gopher_repetition: GopherRepetitionConfig = Field(default_factory=GopherRepetitionConfig)
    c4: C4Config = Field(default_factory=C4Config)
    fineweb: FineWebQualityConfig = Field(default_factory=FineWebQualityConfig)


def text_filter_specs(config: FiltersConfig) -> list[tuple[type, BaseModel]]:
    """(class, config) of the enabled text filters, in the order they run (after language ID)."""
    stages = [
        (GopherQualityFilter, config.gopher_quality),
        (GopherRepetitionFilter, config.gopher_repetition),
        (C4Filter, config.c4),
        (FineWebQualityFilter, config.fineweb),
    ]
    return [(cls, cfg) for cls, cfg in stages if cfg.enabled]


def url_filter_specs(config: FiltersConfig) -> list[tuple[type, BaseModel]]:
    """(class, config) of the URL filter if enabled (it runs before decoding and extraction)."""
    return [(UrlFilter, config.url)] if config.url.enabled else []


def build_filters(config: FiltersConfig) -> list:
    """The text filters, in the order they run (after language ID)."""
    return [cls(cfg) for cls, cfg in text_filter_specs(config)]


def build_url_filters(config: FiltersConfig) -> list:
    """The URL filter (before decoding and extraction)."""
    return [cls(cfg) for cls, cfg in url_filter_specs(config)]


__all__ = [
    "FiltersConfig",
    "build_filters",
    "build_url_filters",
    "text_filter_specs",
    "url_filter_specs",
    "UrlFilter",
    "GopherQualityFilter",
    "GopherRepetitionFilter",
    "C4Filter",
    "FineWebQualityFilter",
]
