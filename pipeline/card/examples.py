"""Examples of removed documents per reason: URL, details and the first characters, with PII redacted.

The card is meant to be published, so nothing in an example may carry PII,
whatever the run's own PII settings: the URL, the details and the text (when
``output.rejected_text`` kept it) go through stages.pii.public.PublicRedactor
(every pattern entity on and replaced whole, percent-encoded and obfuscated
forms decoded, a text too dense to analyze masked whole, whatever still looks
like PII masked as a whole token ``<MASKED>``, the userinfo and an IP host of a
URL removed; see docs/pii.md); details that are JSON keep their structure,
and an id that is not a WARC record id (``urn:uuid:...``, ours) is redacted
like text (a JSON lines source may use anything as its id).  The text is cut
after redaction, and never within the last 300 characters of what the task
read (a value cut there could be left half-detected).

Without stored rejected text the examples show the URL and the details only:
a filtered document's text exists nowhere else, and a duplicate's text is its
kept copy's (``kept_id`` in its details), which is in the dataset.
"""

from __future__ import annotations

import functools
import json
import re

from pipeline.card.parts import EXAMPLE_READ_CHARS
from stages.pii.public import MASK, PublicRedactor

__all__ = ["MASK", "SHOW_CHARS", "examples", "public_redactor", "redact", "show_text"]

#: Characters of text an example shows.
SHOW_CHARS = 300
#: Never show the last characters of a truncated read (a PII value may straddle the cut).
TAIL_GUARD = 300
#: A WARC record id (the reader's ids): shown as it is.
_RECORD_ID = re.compile(r"<?urn:uuid:[0-9A-Fa-f-]{1,36}>?")


@functools.lru_cache(maxsize=2)
def _redactor(run_pii_json: str) -> PublicRedactor:
    return PublicRedactor(json.loads(run_pii_json))


def public_redactor(run_pii: dict | None = None) -> PublicRedactor:
    """The PublicRedactor of a run's pii settings (built once per settings: presidio costs seconds)."""
    return _redactor(json.dumps(run_pii or {}, sort_keys=True))


def redact(texts: list[str | None], run_pii: dict | None = None) -> list[str | None]:
    """Each text as it may be published (PublicRedactor.texts)."""
    return public_redactor(run_pii).texts(texts)


def show_text(redacted: str | None, text_chars: int | None) -> str | None:
    """The first SHOW_CHARS characters, whitespace collapsed; a truncated read keeps clear of its cut."""
    if redacted is None:
        return None
    limit = SHOW_CHARS
    if text_chars is not None and text_chars > EXAMPLE_READ_CHARS:
        limit = max(0, min(limit, len(redacted) - TAIL_GUARD))
    return " ".join(redacted[:limit].split())


def examples(aggs: dict[str, dict], phases: list[str], run_pii: dict | None = None) -> list[dict]:
    """The examples of every phase's rejected rows (capped per reason by the aggregation), redacted."""
    rows = [{"phase": p, **e} for p in phases for e in aggs.get(f"{p}/rejected", {}).get("examples", [])]
    public = public_redactor(run_pii)
    texts = public.texts([e["text"] for e in rows])
    urls = public.urls([e["url"] for e in rows])
    details = public.details([e["details"] for e in rows])  # JSON stays JSON
    ids = [e["id"] if e["id"] is None or _RECORD_ID.fullmatch(e["id"]) else public.texts([e["id"]])[0] for e in rows]
    out = []
    for e, text, url, det, rid in zip(rows, texts, urls, details, ids, strict=False):
        out.append(
            {
                "phase": e["phase"],
                "stage": e["stage"],
                "reason": e["reason"],
                "id": rid,
                "url": url,
                "details": det,
                "text": show_text(text, e["text_chars"]),
                "text_chars": e["text_chars"],
            }
        )
    return out
