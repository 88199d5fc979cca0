"""PII detection and redaction with presidio: a cheap candidate pass, presidio on windows, per-entity actions.

    from stages.pii import PiiConfig, PiiStage
    stage = PiiStage(PiiConfig())          # once per actor: builds the presidio engines
    batch = stage(batch)                   # text redacted, pii_<entity> int32 count columns added

Modules: ``config`` (PiiConfig), ``candidates`` (the regex pass, windows,
chunks), ``recognizers`` (the presidio engines, context words, offline
tldextract), ``redact`` (overlaps, presidio-anonymizer operators), ``stage``
(PiiStage).  See docs/pii.md.
"""

from stages.pii.config import ENTITIES, EntityConfig, PiiConfig, count_column
from stages.pii.stage import PiiStage

__all__ = ["ENTITIES", "EntityConfig", "PiiConfig", "PiiStage", "count_column"]
