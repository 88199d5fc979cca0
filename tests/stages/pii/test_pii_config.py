"""PiiConfig: defaults, shorthands, and a bad value is a one-line error naming the field."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.config import _describe
from stages.pii import PiiConfig
from stages.pii.config import ENTITIES, NER_ENTITIES


class Run(BaseModel):
    """The lead's RunConfig will hold ``pii: PiiConfig``; errors are worded by pipeline.config."""

    model_config = ConfigDict(extra="forbid")
    pii: PiiConfig = PiiConfig()


def error_lines(data: dict) -> list[str]:
    with pytest.raises(ValidationError) as e:
        Run.model_validate({"pii": data})
    return [_describe(err) for err in e.value.errors()]


@pytest.mark.parametrize(
    "data, field, words",
    [
        ({"entities": {"passport": "replace"}}, "pii.entities.passport", "unknown field"),
        (
            {"entities": {"email_address": "blur"}},
            "pii.entities.email_address.action",
            "'replace', 'mask', 'hash' or 'annotate'",
        ),
        ({"entities": {"email_address": {"action": "hash"}}}, "pii", "hash_salt"),
        ({"hash_salt": "short", "entities": {"phone_number": "hash"}}, "pii", "hash_salt"),
        ({"ner_models": {"en": "en_core_web_sm"}}, "pii.ner_models", "not installed"),
        ({"ner_models": {"en": "/no/such/pipeline"}}, "pii.ner_models", "en: spaCy model '/no/such/pipeline'"),
        ({"entities": {"person": True}}, "pii", "entities.person: needs ner_models"),
        ({"phone_regions": {"default": ["US", "XX"]}}, "pii.phone_regions", "unknown region 'XX'"),
        ({"phone_regions": {"en": ["US"]}}, "pii.phone_regions", "'default'"),
        ({"placeholder": "<{kind}>"}, "pii.placeholder", "{entity}"),
        ({"mask_char": "**"}, "pii.mask_char", "at most 1 character"),
        (
            {"entities": {"ip_address": {"score_threshold": 1.5}}},
            "pii.entities.ip_address.score_threshold",
            "less than or equal to 1",
        ),
        ({"min_phone_digits": 2}, "pii.min_phone_digits", "greater than or equal to 4"),
        ({"colour": "red"}, "pii.colour", "unknown field"),
        ({"max_candidate_digits": 10**9}, "pii.max_candidate_digits", "less than or equal to 10000000"),
        ({"urls": {"keep": True}}, "pii.urls.keep", "unknown field"),
        ({"urls": "yes please"}, "pii.urls", "valid dictionary"),
    ],
)
def test_bad_value_is_one_line_naming_the_field(data, field, words):
    lines = error_lines(data)
    assert len(lines) == 1, lines
    line = lines[0]
    assert "\n" not in line and line.startswith(f"config error: {field}:"), line
    assert words in line, line


def test_defaults():
    cfg = PiiConfig()
    assert cfg.entities.enabled() == [e for e in ENTITIES if e not in NER_ENTITIES]
    assert cfg.entities.email_address.action == "replace"
    assert cfg.entities.phone_number.score_threshold == 0.4 and cfg.entities.ip_address.score_threshold == 0.5
    assert "default" in cfg.phone_regions


def test_shorthands():
    assert not PiiConfig.model_validate({"urls": False}).urls.enabled and PiiConfig().urls.enabled
    assert not PiiConfig().urls.keep_original
    cfg = PiiConfig.model_validate({"entities": {"email_address": "annotate", "us_ssn": False}})
    assert cfg.entities.email_address.action == "annotate" and cfg.entities.email_address.enabled
    assert not cfg.entities.us_ssn.enabled and cfg.entities.us_ssn.action == "replace"
    assert "US_SSN" not in cfg.entities.enabled()


def test_every_field_is_described():
    from stages.pii.config import EntitiesConfig, EntityConfig, UrlsConfig

    for model in (PiiConfig, EntitiesConfig, EntityConfig, UrlsConfig):
        for name, f in model.model_fields.items():
            assert f.description, f"{model.__name__}.{name}"
