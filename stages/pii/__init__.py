"""PII detection and redaction with presidio: a cheap candidate pass, presidio on windows, per-entity actions.

    from stages.pii import PiiConfig, PiiStage
    stage = PiiStage(PiiConfig())          # once per actor: builds the presidio engines
    batch = stage(batch)                   # text and url redacted, pii_<entity> and pii_url int32 counts added

Modules: ``config`` (PiiConfig), ``candidates`` (the regex pass, windows,
chunks), ``normalize`` (the views that read obfuscated forms: NFKC, (at)/(dot),
dotted cards, lower-case IBANs, percent-encoding), ``recognizers`` (the presidio
engines, context words, offline tldextract), ``redact`` (overlaps,
presidio-anonymizer operators), ``urls`` (the url column), ``stage`` (PiiStage),
``public`` (PublicRedactor: strings the dataset card publishes).  See docs/pii.md.
"""

from stages.pii.config import ENTITIES, EntityConfig, PiiConfig, count_column
from stages.pii.stage import PiiStage

__all__ = ["ENTITIES", "EntityConfig", "PiiConfig", "PiiStage", "count_column"]
