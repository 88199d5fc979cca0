"""Stop-word lists per language for the Gopher stop-word rule.

English is Gopher's own list; the other languages come from FineWeb-2's
per-language configs (sources in ``data/stopwords.json``).  Entries are
normalised the way words are (lower case, punctuation trimmed), so the list
and the text agree on what a word is.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from stages.filters.words import WORD_RE

DATA = Path(__file__).parent / "data" / "stopwords.json"


def normalise(entries: list[str]) -> frozenset[str]:
    """Lower-case, trim punctuation; entries that are only punctuation drop out."""
    out = set()
    for e in entries:
        m = WORD_RE.search(e.lower())
        if m:
            out.add(m.group())
    return frozenset(out)


@lru_cache(maxsize=1)
def bundled() -> dict[str, frozenset[str]]:
    """The bundled lists, by lid.176 language code."""
    lists = json.loads(DATA.read_text(encoding="utf-8"))["lists"]
    return {lang: normalise(words) for lang, words in lists.items()}
