"""Main-text extraction: ``html`` -> ``text``, paragraphs kept as newlines.

Extractors are selected by name in the config.  Each is a function
``(html: str, url: str | None) -> str`` built once per worker by
:func:`make_extractor` (the URL helps tell what kind of page it is); the
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

# Arrow (and numpy, through stages.base) are imported where batches are handled,
# not here: the extraction helper process imports this package, and without
# them it starts in half the time and a quarter of the memory (~25 MB).
from stages.extract.boilerplate import BoilerplateConfig
from stages.extract.cascade import CascadeConfig
from stages.extract.dom import ExtractionError, tag_count
from stages.extract.timelimit import TimeLimitExceeded, time_limit

log = logging.getLogger(__name__)

Extractor = Callable[[str, "str | None"], str]  # (html, url) -> text; bytes too if it says ``takes_bytes``


class ExtractConfig(BaseModel):
    """Parameters of main-text extraction."""

    model_config = ConfigDict(extra="forbid")

    extractor: Literal["boilerplate", "cascade", "resiliparse", "trafilatura"] = Field(
        "boilerplate",
        description="boilerplate (default: fast and precise), cascade (boilerplate, trafilatura for unsure pages), "
        "resiliparse (fastest, leaks boilerplate) or trafilatura (slowest)",
    )
    max_html_chars: int = Field(
        2_000_000,
        ge=1000,
        le=100_000_000,
        description="longer pages are cut to this many characters before extraction",
    )
    timeout_s: float = Field(
        2.0, gt=0, le=3600, description="per-document time limit; a page over it is rejected as extract_timeout"
    )
    isolate_tags: int | None = Field(
        5000,
        ge=0,
        le=100_000_000,
        description="pages with more tags ('<') are extracted in a helper "
        "process, killed at 1.5x timeout_s: parsers run "
        "in C, where the time limit cannot interrupt them, and only pages this large can keep them busy (measured "
        "worst case below it ~0.3 s); null = never (the limit then holds between Python steps only)",
    )
    min_text_chars: int = Field(
        1, ge=0, le=1_000_000, description="pages whose extracted text is shorter are rejected as no_text"
    )
    boilerplate: BoilerplateConfig = Field(
        default_factory=BoilerplateConfig, description="the boilerplate extractor's rules"
    )
    cascade: CascadeConfig = Field(default_factory=CascadeConfig, description="when the cascade calls trafilatura")


def _cut(html: str | bytes, limit: int) -> str | bytes:
    """``html`` cut to ``limit`` characters; UTF-8 bytes are cut where their text would be (a page of more
    bytes than the limit may still be within it in characters)."""
    if len(html) <= limit:
        return html
    if isinstance(html, bytes):
        text = html.decode("utf-8", "replace")
        return text[:limit].encode() if len(text) > limit else html
    return html[:limit]


def _resiliparse() -> Extractor:
    from resiliparse.extract.html2text import extract_plain_text

    from stages.extract.dom import refuse_deep_nesting

    def run(html: str, url: str | None = None) -> str:
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
    label = "main text extracted"
    needs = ("html",)
    adds = ("text",)
    types = {"text": pa.large_string()}  # the Arrow type of what it adds, and what it removes
    drops = ("html",)
    reasons = ("no_text", "extract_timeout", "extract_error")

    def __init__(self, config: ExtractConfig | None = None):
        self.config = config or ExtractConfig()
        self.extract = make_extractor(self.config)
        #: the extractor parses UTF-8 bytes as they are: the batch's pages reach it without a ``str`` decoded
        #: (and encoded again by lexbor): ~0.2 s per 100 MB of HTML, measured
        self.takes_bytes = getattr(self.extract, "takes_bytes", False)
        self.counters: Counter = Counter()  # errors by kind, refusals, timeouts
        self._helper = None  # KillableExtractor, started on the first page large enough to need it

    def close(self) -> None:
        """Stop the helper process, if one was started."""
        if self._helper is not None:
            self._helper.close()
            self._helper = None

    def one(self, html: str | bytes | None, url: str | None = None) -> tuple[str | None, str | None, str | None]:
        """(text, reason, details) for one page fetched from ``url`` (text, or UTF-8 bytes if :attr:`takes_bytes`)."""
        if not html:
            return None, "no_text", "empty html"
        html = _cut(html, self.config.max_html_chars)
        limit = self.config.isolate_tags
        if limit is not None and tag_count(html) > limit:
            text, reason, details = self._isolated().extract(html, url)
            self.counters["isolated"] += 1
            if reason is not None:
                return None, reason, details
        else:
            try:
                with time_limit(self.config.timeout_s):
                    text = self.extract(html, url)
            except TimeLimitExceeded:
                self.counters["timeout"] += 1
                return None, "extract_timeout", f"> {self.config.timeout_s}s"
            except ExtractionError as e:  # a page the extractor refuses (nested too deep)
                self.counters["refused"] += 1
                return None, "extract_error", f"{type(e).__name__}: {e}"[:200]
            except Exception as e:  # one page's parser failure must not stop the file; a bug must still show
                from stages.base import note_error

                kind = note_error("extract", e, log)
                self.counters[f"error.{kind}"] += 1
                return None, "extract_error", f"{kind}: {e}"[:200]
        text = (text or "").strip()
        if len(text) < max(self.config.min_text_chars, 1):
            return None, "no_text", None
        return text, None, None

    def _isolated(self):
        if self._helper is None:
            from stages.extract.helper import KillableExtractor

            self._helper = KillableExtractor(self.config.model_dump_json(), hard_limit_s=1.5 * self.config.timeout_s)
        return self._helper

    def drain_counters(self) -> Counter:
        """Counts since the last call: pages per extraction path (the cascade's slow-path
        share), errors by kind, refusals, timeouts, pages extracted in the helper."""
        out = Counter(self.counters)
        self.counters.clear()
        stats = getattr(self.extract, "stats", None)
        if stats:
            out.update(stats)
            stats.clear()
        if self._helper is not None:
            out.update(self._helper.counters)
            self._helper.counters.clear()
        return +out

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        from stages.base import add_rejections, set_column

        column = batch.column("html")
        if self.takes_bytes:  # the same buffers, read as bytes
            column = column.cast(pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary())
        htmls = column.to_pylist()
        urls = batch.column("url").to_pylist() if "url" in batch.column_names else [None] * len(htmls)
        results = [self.one(h, u) for h, u in zip(htmls, urls, strict=False)]
        texts = [r[0] for r in results]
        batch = set_column(batch.drop_columns(["html"]), "text", pa.array(texts, pa.large_string()))
        return add_rejections(batch, [r[1] for r in results], [r[2] for r in results])
