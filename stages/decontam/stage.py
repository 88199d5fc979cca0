"""DecontamStage: remove (or tag) documents that share a normalized word n-gram with an eval item.

For a batch: the texts are normalized and cut into words in Arrow
(normalize.py), every window of ``ngram`` words (and of each length of the
items matched whole) is hashed from prefix sums, looked up in the index
(index.py), and each hit checked against the eval item's text.  A document
with a verified match gets reason ``contaminated`` and ``set:id`` of its
items in ``details`` (action ``remove``), or keeps its place with them in a
``contaminated`` list column (action ``tag``; null for a clean document).

Counters (``drain_counters``, summed over workers by the chain's stats):
``documents`` (contaminated documents), ``documents.<set>`` (of them, those
matching that set), ``items.<set>.<id>`` (documents matching that item: the
distinct keys per set are the items found), ``ngrams`` looked up,
``candidates`` checked against the eval text and ``false_hits`` (candidates
no item holds: hash collisions, Bloom false positives).  :func:`summarize`
turns them into one row per eval set for the card.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from stages.base import reject_where, set_column
from stages.decontam.config import DecontamConfig
from stages.decontam.index import EvalIndex, Matches
from stages.decontam.normalize import words_of

REASON = "contaminated"
TAG_COLUMN = "contaminated"
TAG_TYPE = pa.list_(pa.string())
MAX_DETAILS_CHARS = 1000


class DecontamStage:
    """A filter (action remove) or a tagger (action tag) over the ``text`` column."""

    name = "decontam"
    label = "decontamination against eval sets"
    needs = ("text",)
    adds: tuple[str, ...] = (TAG_COLUMN,)
    reasons = (REASON,)

    def __init__(self, config: DecontamConfig, index: EvalIndex):
        self.config = config
        self.index = index
        if config.action == "remove":
            self.adds = ()
        else:
            self.reasons = ()
        self._counters: Counter = Counter()

    def __call__(self, batch: pa.Table) -> pa.Table:
        found = self.index.find(words_of(batch.column("text")))
        self._count(found)
        labels = self._labels(found, len(batch))
        if self.config.action == "tag":
            return set_column(batch, TAG_COLUMN, pa.array(labels, TAG_TYPE))
        matched = np.bincount(found.doc, minlength=len(batch))
        details = [None if x is None else _details(x, int(matched[d])) for d, x in enumerate(labels)]
        return reject_where(batch, matched > 0, REASON, details)

    def _labels(self, found: Matches, n_docs: int) -> list[list[str] | None]:
        """Per document, ``set:id`` of its first ``max_details_items`` matched items (None: clean)."""
        out: list[list[str] | None] = [None] * n_docs
        for doc, item in zip(found.doc.tolist(), found.item.tolist(), strict=False):
            if out[doc] is None:
                out[doc] = []
            if len(out[doc]) < self.config.max_details_items:
                out[doc].append(self.index.label(item))
        return out

    def _count(self, found: Matches) -> None:
        c = self._counters
        c["ngrams"] += found.ngrams
        c["candidates"] += found.candidates
        c["false_hits"] += found.false_hits
        c["documents"] += len(np.unique(found.doc))
        sets = self.index.item_set[found.item]
        for s in np.unique(sets).tolist():
            c[f"documents.{self.index.set_names[s]}"] += len(np.unique(found.doc[sets == s]))
        for item in found.item.tolist():
            c[f"items.{self.index.label(item).replace(':', '.', 1)}"] += 1

    def drain_counters(self) -> dict:
        out, self._counters = dict(self._counters), Counter()
        return out


def _details(labels: list[str], matched: int) -> str:
    more = matched - len(labels)
    text = ", ".join(labels) + (f" (+{more} more)" if more > 0 else "")
    return text if len(text) <= MAX_DETAILS_CHARS else text[: MAX_DETAILS_CHARS - 1] + "…"  # long ids


@dataclass(frozen=True)
class EvalSetSummary:
    """One eval set's row of the card's decontamination table."""

    name: str
    items_found: int  # distinct eval items some document matched
    documents: int  # documents removed (action remove) or tagged (action tag) for this set


def summarize(
    counters: dict[str, int], set_names: list[str] | tuple[str, ...], prefix: str = ""
) -> list[EvalSetSummary]:
    """The per-set rows from summed counters (``prefix``: the chain's ``"decontam."`` if the keys carry it)."""
    items: Counter = Counter()
    for key in counters:
        if key.startswith(f"{prefix}items."):
            items[key[len(prefix) + len("items.") :].split(".", 1)[0]] += 1
    return [EvalSetSummary(name, items[name], int(counters.get(f"{prefix}documents.{name}", 0))) for name in set_names]
