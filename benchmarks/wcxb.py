"""WCXB's development split: its pages, and its score, as its ``evaluate.py`` computes it.

WCXB (Web Content Extraction Benchmark, github.com/Murrough-Foley/web-content-extraction-benchmark,
CC-BY-4.0) holds 2,008 real pages of seven labelled types with their main text.  Only the
``dev`` split (1,497 pages) is read here: the ``test`` split is held out for the project's
acceptance, so nothing here can load it.  Get a checkout with::

    git clone --filter=blob:none --no-checkout https://github.com/Murrough-Foley/web-content-extraction-benchmark wcxb
    cd wcxb && git sparse-checkout set --no-cone '/dev/' '/evaluate.py' && git checkout

The score is WCXB's word-level F1, reimplemented here (:func:`word_prf`) line for line
from its ``evaluate.py``: lower-cased ``\\w+`` tokens, bag-of-words overlap, precision,
recall and F1 per page, averaged over the pages of a type (and over all pages).  When the
checkout has ``evaluate.py``, :func:`cross_check` scores every page with it as well and
fails on any difference.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

TYPES = ("article", "forum", "product", "collection", "listing", "documentation", "service")
_TOKEN_RE = re.compile(r"\w+")


@dataclass(frozen=True)
class Page:
    file_id: str
    page_type: str
    url: str
    html: str
    reference: str  # the main text


def _page_type(data: dict) -> str:
    """As evaluate.py's get_page_type: ``_internal.page_type.primary``, "category" read as collection."""
    pt = (data.get("_internal") or {}).get("page_type", {})
    if isinstance(pt, dict):
        pt = pt.get("primary", "article")
    elif not isinstance(pt, str):
        pt = "article"
    return "collection" if pt == "category" else pt


def load(root: Path, limit: int | None = None) -> list[Page]:
    """The dev split's pages under a WCXB checkout, decoded as the pipeline decodes HTML."""
    from stages.charset import Decoder

    dev = Path(root) / "dev"
    truth = sorted((dev / "ground-truth").glob("*.json"))
    if not truth:
        raise SystemExit(
            f"no WCXB dev split under {root} (dev/ground-truth/*.json); see benchmarks/wcxb.py for a checkout"
        )
    decoder = Decoder()
    pages = []
    for path in truth[:limit]:
        data = json.loads(path.read_text(encoding="utf-8"))
        gt = data.get("ground_truth")
        if not isinstance(gt, dict):
            continue  # evaluate.py skips these too
        raw = gzip.decompress((dev / "html" / f"{path.stem}.html.gz").read_bytes())
        html, _, _ = decoder.decode(raw, None)
        pages.append(
            Page(path.stem, _page_type(data), data.get("url") or "", html or "", gt.get("main_content") or "")
        )
    return pages


def tokenize(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower()) if text else []


def word_prf(predicted: str, reference: str) -> tuple[float, float, float]:
    """Word-level (precision, recall, F1) of one page, as evaluate.py's word_f1."""
    pred, ref = tokenize(predicted), tokenize(reference)
    if not ref:
        return (1.0, 1.0, 1.0) if not pred else (0.0, 0.0, 0.0)
    if not pred:
        return (0.0, 0.0, 0.0)
    overlap = sum((Counter(pred) & Counter(ref)).values())
    p, r = overlap / len(pred), overlap / len(ref)
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


@dataclass(frozen=True)
class Score:
    pages: int
    precision: float
    recall: float
    f1: float


def score(pages: list[Page], texts: list[str]) -> dict[str, Score]:
    """Mean per-page P/R/F1 per page type, and over all pages ("all")."""
    by_type: dict[str, list[tuple[float, float, float]]] = {}
    for page, text in zip(pages, texts, strict=False):
        prf = word_prf(text or "", page.reference)
        by_type.setdefault(page.page_type, []).append(prf)
        by_type.setdefault("all", []).append(prf)
    return {t: Score(len(v), *(sum(x[i] for x in v) / len(v) for i in range(3))) for t, v in by_type.items()}


def cross_check(root: Path, pages: list[Page], texts: list[str]) -> int:
    """Score each page with the checkout's own evaluate.py too; the number of pages
    checked (0 without evaluate.py), or AssertionError on the first difference."""
    path = Path(root) / "evaluate.py"
    if not path.is_file():
        return 0
    spec = importlib.util.spec_from_file_location("wcxb_evaluate", path)
    theirs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(theirs)
    for page, text in zip(pages, texts, strict=False):
        ours, ref = word_prf(text or "", page.reference), theirs.word_f1(text or "", page.reference)
        assert all(abs(a - b) < 1e-12 for a, b in zip(ours, ref, strict=False)), (
            f"{page.file_id}: {ours} != evaluate.py {ref}"
        )
    return len(pages)
