"""Parameters of PII detection and redaction (the ``pii:`` section of a run config).

Every entity is switched and handled on its own (``pii.entities.<name>``); the
entity names are presidio's, lowercased.  How the defaults were chosen, and what
they cost in recall and precision, is in docs/pii.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stages.named_files import ConfigPathOrName

Action = Literal["replace", "mask", "hash", "annotate"]

#: Entities found by pattern recognizers (candidate pass + presidio on windows).
PATTERN_ENTITIES = (
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "IP_ADDRESS",
    "CREDIT_CARD",
    "IBAN_CODE",
    "US_SSN",
    "URL_CREDENTIALS",
)
#: Entities found by a spaCy NER model over whole documents (only with ``ner_models``).
NER_ENTITIES = ("PERSON", "LOCATION")
ENTITIES = PATTERN_ENTITIES + NER_ENTITIES


#: int32 column: findings in the document's URL (every entity, the removed userinfo counted as one)
URL_COUNT_COLUMN = "pii_url"
#: the URL before redaction, only with ``pii.urls.keep_original``
URL_ORIGINAL_COLUMN = "url_original"


def count_column(entity: str) -> str:
    """The per-document count column of an entity: ``pii_email_address``, ..."""
    return f"pii_{entity.lower()}"


class EntityConfig(BaseModel):
    """What to do with one entity type."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="look for this entity")
    action: Action = Field(
        "replace",
        description="replace: a typed placeholder (<EMAIL_ADDRESS>); mask: every character becomes mask_char; "
        "hash: a typed salted hash (<EMAIL_ADDRESS:9f86d081884c7d65>), the same for the same value within a run; "
        "annotate: count only, the text is not changed",
    )
    score_threshold: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="lowest presidio score (after its context-word boost) that counts as a finding",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        # `email_address: hash` sets the action, `email_address: false` switches the entity off
        if isinstance(v, str):
            return {"action": v}
        if isinstance(v, bool):
            return {"enabled": v}
        return v


def _entity(description: str, enabled: bool = True, threshold: float = 0.5) -> Any:
    return Field(
        default_factory=lambda: EntityConfig(enabled=enabled, score_threshold=threshold), description=description
    )


class EntitiesConfig(BaseModel):
    """One section per entity type (a string is a shorthand for the action, a boolean for enabled)."""

    model_config = ConfigDict(extra="forbid")

    email_address: EntityConfig = _entity("e-mail addresses (presidio EmailRecognizer: pattern + public-suffix check)")
    phone_number: EntityConfig = _entity(
        "phone numbers (presidio PhoneRecognizer: python-phonenumbers, valid numbers of phone_regions)", threshold=0.4
    )
    ip_address: EntityConfig = _entity("IPv4 and IPv6 addresses (presidio IpRecognizer: pattern + ipaddress check)")
    credit_card: EntityConfig = _entity("payment card numbers (presidio CreditCardRecognizer: pattern + Luhn)")
    iban_code: EntityConfig = _entity("IBANs (presidio IbanRecognizer: per-country format + mod-97 checksum)")
    us_ssn: EntityConfig = _entity(
        "US social security numbers (presidio UsSsnRecognizer: patterns + SSA rules + context)"
    )
    url_credentials: EntityConfig = _entity("user:password in URLs (scheme://user:password@host)")
    person: EntityConfig = _entity("person names (spaCy NER; needs ner_models)", enabled=False, threshold=0.5)
    location: EntityConfig = _entity("locations (spaCy NER GPE/LOC; needs ner_models)", enabled=False, threshold=0.5)

    def of(self, entity: str) -> EntityConfig:
        return getattr(self, entity.lower())

    def enabled(self) -> list[str]:
        return [e for e in ENTITIES if self.of(e).enabled]


# Regions whose national formats python-phonenumbers reads: "default" (presidio's
# default regions) for every document, plus those of the document's language.
# Numbers in international format (+CC ...) are found whatever the region.
DEFAULT_PHONE_REGIONS = {
    "default": ["US", "GB", "DE", "FR", "IL", "IN", "CA", "BR"],
    "en": ["AU", "IE", "NZ"],
    "de": ["AT", "CH"],
    "fr": ["BE", "CH"],
    "es": ["ES", "MX", "AR", "CO", "CL"],
}


def _is_distribution(name: str) -> bool:
    """spaCy's ``util.is_package`` without importing spaCy (and torch through thinc): every
    process that validates a config pays that import, ~1.5 s each."""
    from importlib import metadata

    try:
        metadata.distribution(name)
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return True


class UrlsConfig(BaseModel):
    """The ``url`` column: redacted like text (stages/pii/urls.py)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True,
        description="redact the url column: the userinfo (user:pass@) "
        "removed, path segments, query keys and values and "
        "the fragment percent-decoded and read by the same recognizers; a value with a finding is replaced whole",
    )
    keep_original: bool = Field(
        False,
        description="also keep the URL as it was in a url_original "
        "column of documents/final (it holds the PII the url "
        "column lost: only for outputs that are not published; the card then does not offer documents/final)",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"enabled": v} if isinstance(v, bool) else v  # `urls: false`


class PiiConfig(BaseModel):
    """PII detection and redaction (presidio), run on the documents that survive dedup."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="detect and redact PII in the final phase")
    entities: EntitiesConfig = Field(
        default_factory=EntitiesConfig, description="per entity: enabled, action, score_threshold"
    )
    placeholder: str = Field(
        "<{entity}>", description="replacement text of the replace action; {entity} is the entity name"
    )
    mask_char: str = Field("*", min_length=1, max_length=1, description="character of the mask action")
    hash_salt: str | None = Field(
        None,
        description="salt of the hash action (at least 16 characters; "
        "required when an entity uses hash): the same value "
        "gets the same token within a run and across runs with the same salt",
    )
    hash_chars: int = Field(16, ge=8, le=64, description="hex characters of the salted SHA-256 kept in a hash token")
    phone_regions: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_PHONE_REGIONS.items()},
        description="regions whose national phone formats are read (ISO 3166 codes): 'default' for every document, "
        "plus the list of the document's language",
    )
    min_phone_digits: int = Field(
        7, ge=4, le=15, description="digits a run needs to be a phone candidate (fewer: years, postcodes, short codes)"
    )
    context_chars: int = Field(
        100,
        ge=20,
        le=2000,
        description="characters of text either side of a candidate that presidio sees (its context words)",
    )
    chunk_chars: int = Field(
        20000,
        ge=1000,
        le=500000,
        description="at most this many characters per presidio call; longer spans go in overlapping chunks",
    )
    max_candidate_digits: int = Field(
        20000,
        ge=100,
        le=10_000_000,
        description="a document whose candidates hold more digits is a "
        "dump (log, directory, number table): it is rejected "
        "with reason pii_dense instead of analyzed, which would take python-phonenumbers minutes",
    )
    urls: UrlsConfig = Field(default_factory=UrlsConfig, description="the url column (enabled, keep_original)")
    ner_models: dict[str, ConfigPathOrName] = Field(
        default_factory=dict,
        description="per document language, an installed spaCy pipeline (package name or path) for PERSON/LOCATION, "
        "e.g. {en: en_core_web_sm}; nothing is downloaded",
    )

    def named_files(self) -> list:
        from stages.named_files import NamedFile, spacy_pipeline  # checked before a run (pipeline.preflight)

        return [NamedFile(f"ner_models.{lang}", name, spacy_pipeline) for lang, name in self.ner_models.items()]

    @field_validator("placeholder")
    @classmethod
    def _placeholder(cls, v: str) -> str:
        try:
            v.format(entity="X")
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"only the field {{entity}} may appear in braces ({e})") from None
        return v

    @field_validator("phone_regions")
    @classmethod
    def _regions(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        import phonenumbers

        known = phonenumbers.SUPPORTED_REGIONS
        for lang, regions in v.items():
            bad = [r for r in regions if r not in known]
            if bad:
                raise ValueError(
                    f"{lang}: unknown region {bad[0]!r} (ISO 3166 alpha-2 codes that python-phonenumbers knows)"
                )
        if "default" not in v:
            raise ValueError("needs a 'default' entry (the regions of every document)")
        return v

    @field_validator("ner_models")
    @classmethod
    def _installed(cls, v: dict[str, str]) -> dict[str, str]:
        for lang, name in v.items():
            if not (_is_distribution(name) or Path(name).is_dir()):
                raise ValueError(
                    f"{lang}: spaCy model {name!r} is not installed (pip "
                    "install it, or give the path of a saved pipeline)"
                )
        return v

    @model_validator(mode="after")
    def _cross_checks(self) -> PiiConfig:
        uses_hash = [e.lower() for e in self.entities.enabled() if self.entities.of(e).action == "hash"]
        if uses_hash and (self.hash_salt is None or len(self.hash_salt) < 16):
            raise ValueError(f"hash_salt: needs at least 16 characters because entities.{uses_hash[0]}.action is hash")
        ner = [e.lower() for e in NER_ENTITIES if self.entities.of(e).enabled]
        if ner and not self.ner_models:
            raise ValueError(f"entities.{ner[0]}: needs ner_models (an installed spaCy pipeline per language)")
        return self
