"""Examples of removed documents per reason: URL, details and the first characters, with PII redacted.

The card is meant to be published, so nothing in an example may carry PII,
whatever the run's own PII settings:

- the text (when ``output.rejected_text`` kept it) goes through the project's
  PII stage (stages.pii.PiiStage) with every pattern entity on and every
  action ``replace``, so what it finds shows as ``<EMAIL_ADDRESS>``...;
- then whatever still looks like PII in the text, the URL or the details (the
  PII stage's own candidate pattern: runs of 7+ digits, ``x@y.z``, dotted
  quads, ``::``, IBAN shapes, ``://user:pass@``) is masked as ``<MASKED>``:
  a date or an order number may be masked too, a missed phone number is never
  shown (URLs and details skip presidio: building it costs seconds, and the
  mask alone covers them);
- the text is cut after redaction, and never within the last 300 characters
  of what the task read (a value cut there could be left half-detected).

Without stored rejected text the examples show the URL and the details only:
a filtered document's text exists nowhere else, and a duplicate's text is its
kept copy's (``kept_id`` in its details), which is in the dataset.
"""

from __future__ import annotations

import functools
import json
import logging

import pyarrow as pa

from pipeline.card.parts import EXAMPLE_READ_CHARS

log = logging.getLogger(__name__)

#: Characters of text an example shows.
SHOW_CHARS = 300
#: Never show the last characters of a truncated read (a PII value may straddle the cut).
TAIL_GUARD = 300
MASK = "<MASKED>"
#: Keys of the details JSON shown as they are (our own ids and counts, never PII).
SAFE_DETAILS = ("kept_id", "cluster_size")


def _pii_config(run_pii: dict | None):
    """The run's PII settings (thresholds, phone regions, NER models) with every pattern entity on and replaced."""
    from pydantic import ValidationError

    from stages.pii.config import PATTERN_ENTITIES, PiiConfig

    raw = dict(run_pii or {})
    raw.pop("enabled", None)
    try:
        config = PiiConfig.model_validate(raw)
    except ValidationError as e:  # e.g. a NER model not installed here
        log.warning("card: the run's pii settings do not validate here (%s); redacting examples with the defaults",
                    str(e).splitlines()[0])
        config = PiiConfig()
    for entity in PATTERN_ENTITIES:
        config.entities.of(entity).enabled = True
    for entity in config.entities.enabled():
        config.entities.of(entity).action = "replace"
    return config


@functools.lru_cache(maxsize=2)
def _stage(config_json: str):
    from stages.pii import PiiConfig, PiiStage

    return PiiStage(PiiConfig.model_validate_json(config_json))


@functools.lru_cache(maxsize=1)
def _backstop():
    from stages.pii.candidates import candidate_pattern
    from stages.pii.config import PATTERN_ENTITIES, PiiConfig

    return candidate_pattern(PiiConfig(), list(PATTERN_ENTITIES)).python


def mask(text: str | None) -> str | None:
    """Anything that looks like PII (the PII stage's candidate pattern) as MASK."""
    return None if text is None else _backstop().sub(MASK, text)


def redact(texts: list[str | None], run_pii: dict | None = None) -> list[str | None]:
    """Each text with PII replaced by the PII stage, then any leftover candidate masked."""
    ner = bool((run_pii or {}).get("ner_models"))  # names and places have no pattern: every text goes through
    todo = [i for i, t in enumerate(texts) if t and (ner or _backstop().search(t))]
    out = list(texts)
    if todo:  # building presidio costs seconds: only when something looks like PII
        stage = _stage(_pii_config(run_pii).model_dump_json())
        batch = pa.table({"text": pa.array([texts[i] for i in todo], pa.large_string()),
                          "language": pa.nulls(len(todo), pa.string())})
        for i, t in zip(todo, stage(batch).column("text").to_pylist()):
            out[i] = mask(t)
    return out


def _details(details: str | None) -> tuple[str | None, bool]:
    """(details to show, whether they need redaction)."""
    if details is None:
        return None, False
    try:
        parsed = json.loads(details)
    except ValueError:
        return details, True
    if isinstance(parsed, dict) and set(parsed) <= set(SAFE_DETAILS):
        return details, False
    return details, True


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
    texts = redact([e["text"] for e in rows], run_pii)
    out = []
    for e, text in zip(rows, texts):
        details, sensitive = _details(e["details"])
        out.append({"phase": e["phase"], "stage": e["stage"], "reason": e["reason"], "id": e["id"], "url": mask(e["url"]),
                    "details": mask(details) if sensitive else details, "text": show_text(text, e["text_chars"]),
                    "text_chars": e["text_chars"]})
    return out
