"""PublicRedactor: what the card and stats.json may show, whatever the run's pii settings (each case an attack)."""

from __future__ import annotations

import json

import pytest

from stages.pii.public import IP_HOST, IP_TOKEN, MASK, NO_HOST, PublicRedactor, ip_host

# the run switched e-mails to annotate, IBANs off, and set the lowest digit limit
HOSTILE_RUN = {
    "max_candidate_digits": 100,
    "entities": {"email_address": "annotate", "iban_code": False, "us_ssn": False},
}


@pytest.fixture(scope="module")
def public() -> PublicRedactor:
    return PublicRedactor(HOSTILE_RUN)


def _leaks(shown: str, values: list[str]) -> list[str]:
    return [v for v in values if v in shown]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("mail john.smith%40gmail.com now", "mail <EMAIL_ADDRESS> now"),
        ("ssn 536%2D22%2D1974 here", "ssn <US_SSN> here"),
        ("card 4111%201111%201111%201111 here", "card <CREDIT_CARD> here"),
        ("double john.smith%2540gmail.com", "double <EMAIL_ADDRESS>"),
        ("IBAN DE89 3704 0044 0532 0130 00 ok", "IBAN <IBAN_CODE> ok"),
        ("lower de89 3704 0044 0532 0130 00 ok", "lower <IBAN_CODE> ok"),
        ("write john (at) gmail (dot) com", "write <EMAIL_ADDRESS>"),
        ("full-width ａｄａ＠ｅｘａｍｐｌｅ．ｏｒｇ end", "full-width <EMAIL_ADDRESS> end"),
        ("nothing to see", "nothing to see"),
    ],
)
def test_texts_replace_whole_values(public, text, expected):
    assert public.texts([text]) == [expected]


def test_leftovers_are_masked_as_whole_tokens(public):
    # no public suffix: presidio's e-mail check refuses it; the name must not stay
    out = public.texts(["write to user@host.dom today", "IBAN-ish XX12 ABCD EFGH IJKL MN done", "ref 0491 570 156."])
    assert out[0] == f"write to {MASK} today"
    assert out[1] == f"IBAN-ish {MASK} done"  # every group of an IBAN shape, not the first 12 characters
    assert "0491" not in out[2] and "156" not in out[2]


def test_a_dense_text_is_masked_whole_never_shown(public):
    dump = " ".join(f"555-{i:04d}-{i:03d}" for i in range(3000)) + " mail john.doe@example.org"
    assert public.texts([dump]) == [MASK]
    # a text under the run's own 100-digit limit but over it in candidates is still read
    names = "; ".join(
        f"{n}.smith@example.org +1 212 555 01{i:02d}" for i, n in enumerate(["ann", "bob", "cy", "di", "ed", "flo"])
    )
    shown = public.texts([names])[0]
    assert "smith" not in shown and "212" not in shown


def test_urls(public):
    urls = [
        "https://user:pass@host.example/peter.parker@yahoo.com/?ssn=536-22-1974&cc=4111%201111%201111%201111&iban=DE89370400440532013000",
        "https://admin:hunter2secret@203.0.113.9/login?next=3",
        "https://ex.example/u/john.smith%2540gmail.com#top",
        "https://ex.example/p?x=user@host.dom&page=2",
        "https://ex.example/news/2024/05/12/title",
        None,
    ]
    out = public.urls(urls)
    assert out[0] == "https://host.example/<EMAIL_ADDRESS>/?ssn=<US_SSN>&cc=<CREDIT_CARD>&iban=<IBAN_CODE>"
    assert out[1] == f"https://{IP_TOKEN}/login?next=3"
    assert out[2] == "https://ex.example/u/<EMAIL_ADDRESS>#top"
    assert out[3] == f"https://ex.example/p?x={MASK}&page=2"
    assert out[4] == urls[4] and out[5] is None
    assert (
        _leaks(
            " ".join(o or "" for o in out),
            ["pass", "hunter2", "parker", "536-22", "4111", "DE89", "john.smith", "user@"],
        )
        == []
    )


@pytest.mark.parametrize(
    "host",
    [
        "81.2.69.161",
        "81.2.69.161.",
        "1359103393",
        "0x51024599",
        "0x51.0x2.0105.161",
        "0121.02.0105.0241",
        "81.2.17825",
        "[2001:db8::7]",
        "2001:db8::7",
        "[::ffff:81.2.69.161]",
        "８１．２．６９．１６１",
        "%38%31.2.69.161",
        "81.2.69.161:8080",
    ],
)
def test_every_ip_spelling_is_the_ip_label(public, host):
    assert ip_host(host)
    assert public.hosts([host]) == [IP_HOST]


def test_hosts(public):
    hosts = [
        "536-22-1974.example",
        "call-5551234567.example.org",
        "example.com",
        "news.example",
        "",
        None,
        IP_HOST,
        "2024.example",
    ]
    out = public.hosts(hosts)
    assert out[0] == "<US_SSN>.example"
    assert out[1] == f"{MASK}.example.org"
    assert out[2:] == ["example.com", "news.example", NO_HOST, NO_HOST, IP_HOST, "2024.example"]
    assert not ip_host("example.com") and not ip_host("2024.example") and not ip_host("v1.example.org")


def test_details(public):
    details = [
        '{"kept_id": "urn:uuid:1", "cluster_size": 3}',
        "12 < 50",
        '{"url": "https://u:p@x.example/a@b.com", "n": 4111111111111111, "note": ["mail john@example.org"]}',
        "contact john@example.org",
        None,
    ]
    out = public.details(details)
    assert out[0] == details[0] and out[1] == "12 < 50" and out[4] is None
    assert json.loads(out[2]) == {
        "url": "https://x.example/<EMAIL_ADDRESS>",
        "n": MASK,
        "note": ["mail <EMAIL_ADDRESS>"],
    }
    assert out[3] == "contact <EMAIL_ADDRESS>"


def test_default_run_settings_and_no_presidio_for_clean_strings():
    fresh = PublicRedactor()
    assert fresh.texts(["a plain sentence"]) == ["a plain sentence"] and fresh.hosts(["example.org"]) == [
        "example.org"
    ]
    assert "stage" not in fresh.__dict__  # presidio was never built


def test_the_runs_ner_model_reads_texts_of_unknown_language(tmp_path):
    # a real spaCy pipeline saved to disk (an entity ruler: nothing to download); examples carry no language
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "PERSON", "pattern": "Ada Lovelace"}])
    nlp.to_disk(tmp_path / "ner")
    public = PublicRedactor({"ner_models": {"en": str(tmp_path / "ner")}, "entities": {"person": "annotate"}})
    assert public.texts(["Ada Lovelace wrote to ada@example.org", "no names"]) == [
        "<PERSON> wrote to <EMAIL_ADDRESS>",
        "no names",
    ]
    assert public.texts(["Ada Lovelace again"], languages=["de"]) == [
        "<PERSON> again"
    ]  # no model for de: every model reads it


# --------------------------------------------------------------------------- issue 38, items 3 and 5


def test_hosts_are_read_whole_and_label_by_label(public):
    out = public.hosts(
        [
            "maria.kowalski%40gmail.com.example.net",
            "81.2.69.161.dyn.example.org",
            "%3cus_ssn%3e.ssn.example.com",
            "%3cemail_address%3a0123456789abcdef%3e.example.org",
        ]
    )
    # the stage's tokens are shown as tokens (a hash token's digits look like a number: masked, never shown)
    assert out == [
        "<EMAIL_ADDRESS>",
        "<IP_ADDRESS>.dyn.example.org",
        "<US_SSN>.ssn.example.com",
        f"{MASK}.example.org",
    ]


CC = "CC-MAIN-20260112000513-20260112030513-00000.warc.gz"
SHA = "3f2a9c0d1e4b5a6978877665544332211000ffeeddccbbaa9988776655443322"


@pytest.mark.parametrize(
    "name, expected",
    [
        (CC, CC),
        (f"s3://commoncrawl/crawl-data/CC-MAIN-2026-04/segments/1768110000000.0/warc/{CC}", None),
        (
            "crawl-data/CC-MAIN-2013-20/segments/1368696381249/warc/"
            "CC-MAIN-20130516092621-00000-ip-10-60-113-184.ec2.internal.warc.gz",
            None,
        ),
        (SHA, SHA),
        (f"sha256 {SHA} of tokenizer.json", None),
        ("documents/final/part-enwiki-2024-10-a-00000000.parquet", None),
        ("/data/<MASKED>.jsonl#12345678", None),
        # the same places with PII: still redacted
        ("CC-MAIN-4158675309-20260112030513-00000.warc.gz", MASK),  # a phone number where a timestamp goes
        ("CC-MAIN-20261312000513-20260112030513-00000.warc.gz", MASK),  # month 13: no crawl's timestamp
        (f"/home/maria.kowalski@gmail.com/{CC}", None),
        ("0123456789012345678901234567890123456789012345678901234567890123", MASK),  # 64 digits: no digest
        ("part-4158675309-1a2b3c4d.parquet", MASK),
    ],
)
def test_names_keep_crawl_names_and_digests_and_nothing_else(public, name, expected):
    (shown,) = public.names([name], urls="://" in name)
    if expected is None:  # kept as it is, unless it holds PII elsewhere
        if "kowalski" in name:
            assert "kowalski" not in shown and "gmail" not in shown
        else:
            assert shown == name
    else:
        assert shown == expected or shown.startswith(expected) and "4158675309" not in shown
    assert public.texts([CC]) == [MASK]  # data strings are no names: a crawl's name in a page's text is masked
