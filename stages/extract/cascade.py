"""The cascade: the boilerplate extractor first, trafilatura for the pages it
is unsure about.

The fast path is unsure when the page gave it little to go on: no element
named as content, and little text kept.  Those pages go to trafilatura,
which runs its own fallbacks (readability, jusText); trafilatura's answer is
taken only if it found text.  :attr:`CascadeExtractor.stats` counts the
pages per path, so the share sent to the slow path can be reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from stages.extract.boilerplate import BoilerplateConfig, BoilerplateExtractor, Result


class CascadeConfig(BaseModel):
    """When the cascade hands a page to trafilatura."""

    model_config = ConfigDict(extra="forbid")

    min_chars_without_root: int = Field(
        1000,
        ge=0,
        le=1_000_000,
        description="a page with no content container and less kept text (non-space chars) goes to trafilatura",
    )
    min_chars: int = Field(
        300,
        ge=0,
        le=1_000_000,
        description="a page with less kept text goes to trafilatura even with a content container",
    )


def trafilatura_extractor() -> Callable[[str], str]:
    """trafilatura as the baselines run it (precision first, no comments)."""
    import trafilatura
    from trafilatura.settings import use_config

    config = use_config()
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # the stage's own limit applies; two alarms would clash

    def run(html: str, url: str | None = None) -> str:  # the URL is not passed: the baseline as FineWeb runs it
        return (
            trafilatura.extract(html, favor_precision=True, include_comments=False, deduplicate=True, config=config)
            or ""
        )

    return run


def unsure(result: Result, cfg: CascadeConfig) -> bool:
    """Whether the fast path's answer should be checked by the slow path."""
    kept = sum(b.chars for b in result.kept)
    if not result.root_found:
        return kept < cfg.min_chars_without_root
    return kept < cfg.min_chars


class CascadeExtractor:
    """``html -> text``: boilerplate, or trafilatura where boilerplate is unsure."""

    takes_bytes = True  # as the boilerplate extractor; trafilatura gets text

    def __init__(self, config: BoilerplateConfig | None = None, cascade: CascadeConfig | None = None):
        self.fast = BoilerplateExtractor(config)
        self.slow = trafilatura_extractor()
        self.cascade = cascade or CascadeConfig()
        self.stats: Counter = Counter()  # pages per path: fast, slow, slow_empty

    def __call__(self, html: str | bytes, url: str | None = None) -> str:
        result = self.fast.run(html, url)
        if not unsure(result, self.cascade):
            self.stats["fast"] += 1
            return result.text
        text = self.slow(html.decode("utf-8", "replace") if isinstance(html, bytes) else html)
        if not text.strip():
            self.stats["slow_empty"] += 1  # trafilatura found nothing: keep the fast answer
            return result.text
        self.stats["slow"] += 1
        return text

    @property
    def slow_fraction(self) -> float:
        total = sum(self.stats.values())
        return (self.stats["slow"] + self.stats["slow_empty"]) / total if total else 0.0
