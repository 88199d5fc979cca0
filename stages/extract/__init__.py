"""Main-text extraction: ``html`` -> ``text``, paragraphs kept as newlines.

Extractors are selected by name in the config.  Each is a function
``(html: str) -> str`` built once per worker by :func:`make_extractor`; the
stage applies it per document under a size and time limit and rejects pages
with no main text.

- ``boilerplate`` (default): markup hints and block rules on a lexbor DOM
  (:mod:`stages.extract.boilerplate`), trafilatura's accuracy at a fraction of
  its cost;
- ``cascade``: ``boilerplate``, and trafilatura for the pages it is unsure
  about (:mod:`stages.extract.cascade`);
- ``resiliparse``: resiliparse's ``main_content`` heuristics, fastest, leaks
  more boilerplate;
- ``trafilatura``: ``favor_precision``, the slowest.

See docs/extraction.md for how they compare on the dev set.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from stages.base import add_rejections, set_column
from stages.extract.boilerplate import BoilerplateConfig
from stages.extract.cascade import CascadeConfig
from stages.extract.timelimit import TimeLimitExceeded, time_limit

log = logging.getLogger(__name__)

Extractor = Callable[[str], str]


class ExtractConfig(BaseModel):
    """Parameters of main-text extraction."""

    model_config = ConfigDict(extra="forbid")

    extractor: Literal["boilerplate", "cascade", "resiliparse", "trafilatura"] = Field(
        "boilerplate",
        description="boilerplate (default: fast and precise), cascade (boilerplate, trafilatura for unsure pages), "
        "resiliparse (fastest, leaks boilerplate) or trafilatura (slowest)",
    )
    max_html_chars: int = Field(
        2_000_000, ge=1000, description="longer pages are cut to this many characters before extraction"
    )
    timeout_s: float = Field(2.0, gt=0, description="per-document time limit; a page over it is rejected as extract_timeout")
    min_text_chars: int = Field(1, ge=0, description="pages whose extracted text is shorter are rejected as no_text")
    boilerplate: BoilerplateConfig = Field(default_factory=BoilerplateConfig, description="the boilerplate extractor's rules")
    cascade: CascadeConfig = Field(default_factory=CascadeConfig, description="when the cascade calls trafilatura")


def _resiliparse() -> Extractor:
    from resiliparse.extract.html2text import extract_plain_text

    from stages.extract.dom import refuse_deep_nesting

    def run(html: str) -> str:
        refuse_deep_nesting(html)  # its main_content pass hangs on 100k nested elements
        return extract_plain_text(
            html, preserve_formatting=True, main_content=True, list_bullets=True, alt_texts=False, links=False
        )

    return run


def _trafilatura() -> Extractor:
    from stages.extract.cascade import trafilatura_extractor

    return trafilatura_extractor()


def _boilerplate(cfg: ExtractConfig) -> Extractor:
    from stages.extract.boilerplate import BoilerplateExtractor

    return BoilerplateExtractor(cfg.boilerplate)


def _cascade(cfg: ExtractConfig) -> Extractor:
    from stages.extract.cascade import CascadeExtractor

    return CascadeExtractor(cfg.boilerplate, cfg.cascade)


_EXTRACTORS: dict[str, Callable[[ExtractConfig], Extractor]] = {
    "boilerplate": _boilerplate,
    "cascade": _cascade,
    "resiliparse": lambda cfg: _resiliparse(),
    "trafilatura": lambda cfg: _trafilatura(),
}


def make_extractor(config: ExtractConfig) -> Extractor:
    return _EXTRACTORS[config.extractor](config)


class ExtractStage:
    """``html`` -> ``text``; drops ``html`` (this stage owns it)."""

    name = "extract"

    def __init__(self, config: ExtractConfig | None = None):
        self.config = config or ExtractConfig()
        self.extract = make_extractor(self.config)

    def one(self, html: str | None) -> tuple[str | None, str | None, str | None]:
        """(text, reason, details) for one page."""
        if not html:
            return None, "no_text", "empty html"
        html = html[: self.config.max_html_chars]
        try:
            with time_limit(self.config.timeout_s):
                text = self.extract(html)
        except TimeLimitExceeded:
            return None, "extract_timeout", f"> {self.config.timeout_s}s"
        except RecursionError:
            return None, "extract_error", "RecursionError"
        except Exception as e:  # one page's parser failure must not stop the file
            log.warning("extraction failed: %s: %s", type(e).__name__, e)
            return None, "extract_error", f"{type(e).__name__}: {e}"[:200]
        text = (text or "").strip()
        if len(text) < max(self.config.min_text_chars, 1):
            return None, "no_text", None
        return text, None, None

    def drain_counters(self) -> Counter:
        """Pages per extraction path since the last call (the cascade's slow-path share)."""
        stats = getattr(self.extract, "stats", None)
        if not stats:
            return Counter()
        out = Counter(stats)
        stats.clear()
        return out

    def __call__(self, batch: pa.Table) -> pa.Table:
        results = [self.one(h) for h in batch.column("html").to_pylist()]
        texts = [r[0] for r in results]
        batch = set_column(batch.drop_columns(["html"]), "text", pa.array(texts, pa.large_string()))
        return add_rejections(batch, [r[1] for r in results], [r[2] for r in results])
