"""The card's data path: examples (URL, details, text, id) and
hosts counted into stats.json go through PublicRedactor."""

from __future__ import annotations

import json

import pyarrow as pa

from pipeline.card.examples import examples
from pipeline.card.parts import IP_HOST, NO_HOST, hosts

SECRETS = [
    "john.smith",
    "536-22-1974",
    "536%2D22",
    "4111",
    "hunter2",
    "peter.parker",
    "81.2.69.161",
    "1359103393",
    "DE89",
    "0491 570 156",
    "user@host",
]


def _aggs(rows: list[dict]) -> dict:
    return {"extracted/rejected": {"examples": rows}}


def test_examples_show_no_pii_whatever_the_run_settings():
    rows = [
        {
            "stage": "gopher_quality",
            "reason": "r1",
            "id": "urn:uuid:0-0001",
            "url": "https://admin:hunter2@81.2.69.161./u/john.smith%2540gmail.com?ssn=536%2D22%2D1974",
            "details": '{"contact": "peter.parker@yahoo.com", "kept_id": "urn:uuid:0-0002"}',
            "text": "Mail john.smith (at) gmail (dot) com or user@host.dom, "
            "IBAN de89 3704 0044 0532 0130 00, call 0491 570 156.",
            "text_chars": 120,
        },
        {
            "stage": "url_filter",
            "reason": "r2",
            "id": "john.smith@gmail.com",
            "url": "http://1359103393/card/4111.1111.1111.1111",
            "details": "blocked: 536-22-1974",
            "text": None,
            "text_chars": None,
        },
    ]
    # the run annotated e-mails, switched SSNs off and set the lowest digit limit
    run_pii = {"max_candidate_digits": 100, "entities": {"email_address": "annotate", "us_ssn": False}}
    out = examples(_aggs(rows), ["extracted"], run_pii)
    shown = json.dumps(out)
    assert [s for s in SECRETS if s in shown] == []
    assert out[0]["url"] == "https://<IP_ADDRESS>/u/<EMAIL_ADDRESS>?ssn=<US_SSN>"
    assert json.loads(out[0]["details"]) == {"contact": "<EMAIL_ADDRESS>", "kept_id": "urn:uuid:0-0002"}
    assert out[0]["text"].startswith("Mail <EMAIL_ADDRESS> or <MASKED>, IBAN <IBAN_CODE>,")
    assert out[0]["id"] == "urn:uuid:0-0001" and out[1]["id"] == "<EMAIL_ADDRESS>"  # only a record id is ours
    assert out[1]["url"] == "http://<IP_ADDRESS>/card/<CREDIT_CARD>" and out[1]["details"] == "blocked: <US_SSN>"


def test_hosts_group_every_ip_spelling_and_redact_pii_labels():
    urls = [
        "https://81.2.69.161/",
        "https://81.2.69.161./",
        "https://1359103393/",
        "https://0x51.0x2.0105.161/x",
        "https://0121.02.0105.0241/",
        "http://[2001:db8::7]:80/",
        "https://８１.２.６９.１６１/",
        "https://%38%31.2.69.161/",
        "https://536-22-1974.example/a",
        "https://www.news.example/a",
        "https://web123.example/",
        "mailto:a@b.example",
        None,
    ]
    got = hosts(pa.chunked_array([pa.array(urls[:6]), pa.array(urls[6:])])).to_pylist()
    assert got == [IP_HOST] * 8 + ["<US_SSN>.example", "news.example", "web123.example", NO_HOST, NO_HOST]
