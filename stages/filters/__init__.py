"""Document-level heuristic filters (URL, Gopher, C4, FineWeb).

``FiltersConfig`` holds every filter's parameters; ``build_filters`` returns
the enabled filters as stages, in the order they run.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FiltersConfig(BaseModel):
    """Parameters of the heuristic filters."""

    model_config = ConfigDict(extra="forbid")


def build_filters(config: FiltersConfig) -> list:
    """Stages that run before extraction (URL) and after language ID (text)."""
    return []


def build_url_filters(config: FiltersConfig) -> list:
    return []
