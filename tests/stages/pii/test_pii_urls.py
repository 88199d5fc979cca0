"""The url column: userinfo removed, PII in path segments, query keys and values and fragments replaced whole,
percent- and double-encoded values decoded, hostile values costing only their own record."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings, strategies as st

from stages.pii import PiiConfig, PiiStage, urls as url_module
from stages.pii.config import URL_COUNT_COLUMN, URL_ORIGINAL_COLUMN

SALT = "test-salt-0123456789"
ATTACK = (
    "https://user:pass@host.example/peter.parker@yahoo.com/?ssn=536-22-1974&cc=4111%201111%201111%201111"
    "&iban=DE89370400440532013000"
)


@pytest.fixture(scope="module")
def stage() -> PiiStage:
    return PiiStage(PiiConfig())


def run(stage: PiiStage, *urls: str | None, texts: list[str] | None = None) -> pa.Table:
    return stage(
        pa.table(
            {
                "id": [f"d{i}" for i in range(len(urls))],
                "text": texts or ["plain text"] * len(urls),
                "url": pa.array(urls, pa.string()),
                "language": ["en"] * len(urls),
            }
        )
    )


def urls_of(stage: PiiStage, *urls: str | None) -> list[str | None]:
    return run(stage, *urls).column("url").to_pylist()


def test_the_attack_url_keeps_scheme_and_host_and_loses_every_value(stage):
    out = run(stage, ATTACK)
    url = out.column("url")[0].as_py()
    assert url == (
        "https://host.example/%3CEMAIL_ADDRESS%3E/?ssn=%3CUS_SSN%3E&cc=%3CCREDIT_CARD%3E&iban=%3CIBAN_CODE%3E"
    )
    parts, before = urlsplit(url), urlsplit(ATTACK)
    assert (parts.scheme, parts.hostname) == (before.scheme, before.hostname) and parts.username is None
    assert (
        unquote(parts.query) == "ssn=<US_SSN>&cc=<CREDIT_CARD>&iban=<IBAN_CODE>"
    )  # decodes to the text's placeholders
    assert out.column(URL_COUNT_COLUMN).to_pylist() == [5]  # userinfo + 4 values
    assert URL_ORIGINAL_COLUMN not in out.column_names  # only when asked for


@pytest.mark.parametrize(
    "url, expected",
    [
        ("ftp://anonymous@files.example.org/pub", "ftp://files.example.org/pub"),  # a user alone is userinfo too
        ("https://:@host.example/", "https://host.example/"),
        ("https://a@b@host.example/x", "https://host.example/x"),  # the userinfo ends at the last @
        ("https://ex.example/u/john.smith%40gmail.com/edit", "https://ex.example/u/%3CEMAIL_ADDRESS%3E/edit"),
        (
            "https://ex.example/u/john.smith%2540gmail.com",
            "https://ex.example/u/%3CEMAIL_ADDRESS%3E",
        ),  # double-encoded
        ("https://ex.example/u/john.smith%252540gmail.com", "https://ex.example/u/%3CEMAIL_ADDRESS%3E"),  # triple
        ("https://ex.example/?q=536%2D22%2D1974", "https://ex.example/?q=%3CUS_SSN%3E"),
        (
            "https://ex.example/?cc=4111+1111+1111+1111&page=2",
            "https://ex.example/?cc=%3CCREDIT_CARD%3E&page=2",
        ),  # + is a space
        ("https://ex.example/?john.doe@example.org=1", "https://ex.example/?%3CEMAIL_ADDRESS%3E=1"),  # a key
        (
            "https://ex.example/#contact=ada@example.org",
            "https://ex.example/#contact=%3CEMAIL_ADDRESS%3E",
        ),  # a fragment
        ("https://ex.example/p#/users/ada@example.org", "https://ex.example/p#/users/%3CEMAIL_ADDRESS%3E"),
        ("https://ex.example/a;sid=x?tel=%2B49%2030%2012345678", "https://ex.example/a;sid=x?tel=%3CPHONE_NUMBER%3E"),
        (
            "https://ex.example/card/4111.1111.1111.1111",
            "https://ex.example/card/%3CCREDIT_CARD%3E",
        ),  # obfuscated forms too
        ("https://ex.example/?mail=john%20(at)%20gmail%20(dot)%20com", "https://ex.example/?mail=%3CEMAIL_ADDRESS%3E"),
        ("mailto:john@gmail.com", "mailto:%3CEMAIL_ADDRESS%3E"),
        ("http://[::1/x?ssn=536-22-1974", None),  # urlsplit refuses it (and its origin): a published URL always splits
    ],
)
def test_hostile_urls(stage, url, expected):
    assert urls_of(stage, url) == [expected]


def test_lookalike_urls_are_the_same_arrow_values(stage):
    urls = [
        "https://news.example/2024/05/12/some-title-1234567",
        "https://shop.example/item?id=4006381333931&page=2",
        "https://docs.example/v1.2.3.4/install#section-6.2.4.1",
        "https://ex.example/a%20b/c%2Fd?q=caf%C3%A9",
        None,
        "",
        "https://ex.example/?q=%zz%4&r=100%",
    ]
    inp = pa.table({"text": ["t"] * len(urls), "url": pa.array(urls, pa.string()), "language": ["en"] * len(urls)})
    out = stage(inp)
    assert out.column("url").equals(inp.column("url"))
    assert out.column(URL_COUNT_COLUMN).to_pylist() == [0] * len(urls)


def test_nul_cr_and_ten_kilobyte_urls_cost_only_their_own_record(stage):
    long_url = "https://ex.example/" + "/".join(f"seg{i}" for i in range(1500)) + "/ada@example.org?x=" + "a" * 1000
    assert len(long_url) > 10_000
    urls = [
        "https://ex.example/a\x00b/536-22-1974?x=1",
        "https://ex.example/p\r\n/ada@example.org",
        long_url,
        "https://ok.example/plain",
        "https://ex.example/\x00\x00\x00",
    ]
    out = urls_of(stage, *urls)
    assert out[0] == "https://ex.example/a\x00b/%3CUS_SSN%3E?x=1"
    assert out[1] == "https://ex.example/p\r\n/%3CEMAIL_ADDRESS%3E"
    assert "ada@example.org" not in out[2] and out[2].startswith("https://ex.example/seg0/") and len(out[2]) > 10_000
    assert out[3:] == urls[3:]


def test_a_url_that_cannot_be_split_is_cut_to_its_origin_alone(stage, monkeypatch):
    real = url_module.split

    def flaky(url):
        if "boom" in url:
            raise ValueError("bad")
        return real(url)

    monkeypatch.setattr(url_module, "split", flaky)
    out = urls_of(stage, "https://u:p@ex.example/boom/ada@example.org?x=1", "https://ex.example/ada@example.org")
    assert out == ["https://ex.example/", "https://ex.example/%3CEMAIL_ADDRESS%3E"]


def test_a_value_too_dense_to_read_is_masked_not_kept():
    stage = PiiStage(PiiConfig(max_candidate_digits=100))
    dump = "+".join(f"555{i:07d}" for i in range(20))  # 200 digits in one query value
    out = run(stage, f"https://ex.example/?ids={dump}&page=2")
    assert out.column("url")[0].as_py() == "https://ex.example/?ids=%3CMASKED%3E&page=2"
    assert "reason" not in out.column_names or out.column("reason").to_pylist() == [None]  # the record stays


def test_actions_apply_to_url_values_as_to_text():
    stage = PiiStage(
        PiiConfig.model_validate(
            {"hash_salt": SALT, "entities": {"email_address": "hash", "us_ssn": "mask", "phone_number": "annotate"}}
        )
    )
    out = run(
        stage,
        "https://ex.example/u/ada@example.org?ssn=536-22-1974&tel=%2B49%2030%2012345678",
        texts=["write to ada@example.org"],
    )
    url, text = out.column("url")[0].as_py(), out.column("text")[0].as_py()
    token = re.search(r"<EMAIL_ADDRESS:[0-9a-f]{16}>", text).group()
    assert (
        unquote(url) == f"https://ex.example/u/{token}?ssn=***********&tel=+49 30 12345678"
    )  # same hash as the text's
    assert "%2B49%2030%2012345678" in url  # annotate: the value is left exactly as it was ...
    assert out.column(URL_COUNT_COLUMN).to_pylist() == [3]  # ... and counted


def test_keep_original_and_switching_urls_off():
    keep = PiiStage(PiiConfig.model_validate({"urls": {"keep_original": True}}))
    out = run(keep, ATTACK, "https://plain.example/")
    assert out.column(URL_ORIGINAL_COLUMN).to_pylist() == [ATTACK, "https://plain.example/"]
    off = PiiStage(PiiConfig.model_validate({"urls": False}))
    out = run(off, ATTACK)
    assert out.column("url").to_pylist() == [ATTACK] and URL_COUNT_COLUMN not in out.column_names


def test_counters_keep_url_work_apart(stage):
    stage.drain_counters()
    run(stage, ATTACK, "https://plain.example/a")
    c = stage.drain_counters()
    assert (
        c["url.read"] == 1
        and c["url.changed"] == 1
        and c["url.found.URL_CREDENTIALS"] == 1
        and c["url.found.US_SSN"] == 1
    )
    assert "docs_with_candidates" not in c  # the texts had none: the URL values' work is counted as url.*


def test_a_source_without_urls_and_a_wrong_url_type():
    keep = PiiStage(PiiConfig.model_validate({"urls": {"keep_original": True}}))
    out = keep(
        pa.table({"text": ["mail ada@example.org", "x"], "url": pa.nulls(2)})
    )  # e.g. JSON lines without a url field
    assert out.column("text")[0].as_py() == "mail <EMAIL_ADDRESS>" and out.column(URL_COUNT_COLUMN).to_pylist() == [
        0,
        0,
    ]
    assert URL_ORIGINAL_COLUMN in out.column_names
    empty = keep(pa.table({"text": pa.array([], pa.string()), "url": pa.array([], pa.string())}))
    assert {URL_ORIGINAL_COLUMN, URL_COUNT_COLUMN} <= set(empty.column_names)  # the same schema for an empty batch
    with pytest.raises(TypeError, match="pii: the url column must hold strings"):
        keep(pa.table({"text": ["x"], "url": [1]}))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.text(
            alphabet=st.sampled_from(
                list("0123456789 .-/:@()+#%?&=;abcDEFatdoATDO[]{}<>_~") + ["\u00a0", "\uff10", "\uff20", "é"]
            ),
            max_size=50,
        ),
        min_size=1,
        max_size=10,
    )
)
def test_the_url_prefilter_passes_every_url_a_value_of_which_could_hold_a_finding(urls):
    # ASCII classes for speed, so check it is a superset of the text candidates (7+ digits) and view triggers
    from stages.pii.candidates import candidate_pattern
    from stages.pii.config import PATTERN_ENTITIES
    from stages.pii.normalize import PERCENT, TRIGGER

    python = candidate_pattern(PiiConfig(), list(PATTERN_ENTITIES)).python
    hits = pc.match_substring_regex(pa.array(urls, pa.string()), url_module.url_trigger(7)).to_pylist()
    for url, hit in zip(urls, hits, strict=False):
        if python.search(url) or TRIGGER.search(url) or PERCENT.search(url):
            assert hit, url


# --------------------------------------------------------------------------- issue 38, item 3


@pytest.mark.parametrize(
    "url, expected",
    [
        # an address followed by a file extension or a word: read up to its public suffix
        ("https://ex.example/users/maria.kowalski@gmail.com.html", "https://ex.example/users/%3CEMAIL_ADDRESS%3E"),
        (
            "https://ex.example/u/maria.kowalski@gmail.com_profile.php?p=2",
            "https://ex.example/u/%3CEMAIL_ADDRESS%3E?p=2",
        ),
        ("https://ex.example/u/ada@example.co.uk.json", "https://ex.example/u/%3CEMAIL_ADDRESS%3E"),
        # unformatted numbers under a key that names them
        ("https://ex.example/f?ssn=536221974&page=1", "https://ex.example/f?ssn=%3CUS_SSN%3E&page=1"),
        (
            "https://ex.example/f?SocialSecurityNumber=536221974",
            "https://ex.example/f?SocialSecurityNumber=%3CUS_SSN%3E",
        ),
        ("https://ex.example/f?user_ssn=53622-1974", "https://ex.example/f?user_ssn=%3CUS_SSN%3E"),
        ("https://ex.example/f?mobile=5550123456", "https://ex.example/f?mobile=%3CPHONE_NUMBER%3E"),
        # PII written into the host
        ("https://536-22-1974.ssn.example.com/page", "https://%3CUS_SSN%3E.ssn.example.com/page"),
        ("https://415-867-5309.phone.example.com/x", "https://%3CPHONE_NUMBER%3E.phone.example.com/x"),
        ("https://4158675309.example.org/x", "https://%3CMASKED%3E.example.org/x"),
        ("https://maria.kowalski%40gmail.com.example.net/x", "https://%3CEMAIL_ADDRESS%3E/x"),
        ("https://81-2-69-160.dyn.isp.example/x", "https://%3CMASKED%3E.dyn.isp.example/x"),
        ("https://www.81.2.69.160.example.org:8080/x", "https://www.%3CIP_ADDRESS%3E.example.org:8080/x"),
        ("https://u:p@536-22-1974.example/x", "https://%3CUS_SSN%3E.example/x"),
    ],
)
def test_issue_38_url_shapes(stage, url, expected):
    assert urls_of(stage, url) == [expected]


@pytest.mark.parametrize(
    "url",
    [
        "https://81.2.69.160/status",  # the server's address: kept (docs/pii.md)
        "https://[2001:db8::7]:8443/x",
        "https://ex.example/f?id=536221974",  # a 9-digit id under a key that names nothing
        "https://ex.example/f?ssn=123456789",  # the SSA's published placeholder: no SSN
        "https://ex.example/f?tel=12345",  # too short for a phone number
        "https://cdn-2.static.example.com/v1.2.3/app.js",
        "https://ex.example/archive/2024/05/12/report.html",
        "https://ex.example/pkg/@babel/core",
        "https://ex.example/maps/@52.3702,4.8952,15z",
    ],
)
def test_issue_38_lookalikes_stay(stage, url):
    assert urls_of(stage, url) == [url]


def test_host_findings_are_counted_and_follow_the_actions():
    entities = {"us_ssn": "hash", "phone_number": "annotate"}
    stage = PiiStage(PiiConfig.model_validate({"hash_salt": SALT, "entities": entities}))
    out = run(stage, "https://536-22-1974.ssn.example.com/?ssn=536-22-1974", "https://415-867-5309.example.com/")
    first, second = out.column("url").to_pylist()
    token = re.fullmatch(r"https://(%3CUS_SSN%3A[0-9a-f]{16}%3E)\.ssn\.example\.com/\?ssn=(.*)", first)
    assert token and token.group(1) == token.group(2)  # one value, one hash, in the host as in the query
    assert second == "https://415-867-5309.example.com/"  # annotate: counted, left as it was
    assert out.column(URL_COUNT_COLUMN).to_pylist() == [2, 1]


def test_no_host_leftover_without_pattern_entities():
    # every pattern entity off: nothing is read, no label is masked
    from stages.pii.config import PATTERN_ENTITIES

    off = {e.lower(): False for e in PATTERN_ENTITIES}
    stage = PiiStage(PiiConfig.model_validate({"entities": off}))
    assert urls_of(stage, "https://4158675309.example.org/x") == ["https://4158675309.example.org/x"]
