"""Issue 38, item 1: the columns besides text and url that are published (id, source, metadata, any other string)
are redacted by the PII stage, and input file names become PII-free part names and sources."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pytest

from pipeline.inputs import unit_name
from stages.pii import PiiConfig, PiiStage
from stages.pii.names import public_name

EMAIL, PHONE, SSN, CARD, IBAN, IP = (
    "maria.kowalski@gmail.com",
    "(415) 867-5309",
    "536-22-1974",
    "4111 1111 1111 1111",
    "DE89 3704 0044 0532 0130 00",
    "81.2.69.160",
)
SALT = "test-salt-0123456789"
CC = "CC-MAIN-20260112000513-20260112030513-00000"
META = {
    "author": {"name": "M. K.", "contact": {"email": EMAIL, "phone": PHONE}},
    "list": ["x", f"call {PHONE}", [CARD]],
    "ssn": 536221974,
    "tel": 4158675309,
    "iban": IBAN,
    "ip": IP,
    EMAIL: "as a key",
    "note": f"ssn {SSN}",
    "ids": [536221974],
    "version": "4.1.1.1",
    "n": 3,
    "ok": True,
    "none": None,
    "ratio": 0.5,
}


@pytest.fixture(scope="module")
def stage() -> PiiStage:
    return PiiStage(PiiConfig())


def batch(**columns) -> pa.Table:
    n = len(next(iter(columns.values())))
    base = {"text": ["plain text"] * n, "url": ["https://ex.example/"] * n, "language": ["en"] * n}
    return pa.table({**base, **columns})


def test_metadata_every_key_and_value_at_any_depth(stage):
    raw = [json.dumps(META), json.dumps({"title": "nothing here", "year": 2024}), None, "not json: mail " + EMAIL]
    out = stage(batch(id=["a", "b", "c", "d"], metadata=pa.array(raw, pa.large_string())))
    meta = out.column("metadata").to_pylist()
    got = json.loads(meta[0])
    assert got == {
        "author": {"name": "M. K.", "contact": {"email": "<EMAIL_ADDRESS>", "phone": "<PHONE_NUMBER>"}},
        "list": ["x", "call <PHONE_NUMBER>", ["<CREDIT_CARD>"]],
        "ssn": "<US_SSN>",
        "tel": "<PHONE_NUMBER>",
        "iban": "<IBAN_CODE>",
        "ip": "<IP_ADDRESS>",
        "<EMAIL_ADDRESS>": "as a key",
        "note": "ssn <US_SSN>",
        "ids": [536221974],
        "version": "4.1.1.1",
        "n": 3,
        "ok": True,
        "none": None,
        "ratio": 0.5,
    }
    assert list(got) == [("<EMAIL_ADDRESS>" if k == EMAIL else k) for k in META]  # the order kept, a key in its place
    assert meta[1] == raw[1] and meta[2] is None  # untouched: the same value
    assert meta[3] == "not json: mail <EMAIL_ADDRESS>"


def test_ids_are_redacted_and_stay_distinct(stage):
    ids = [
        EMAIL,
        EMAIL,
        f"tel {PHONE}",
        "<urn:uuid:12345678-1234-1234-1234-123456789012>",
        "urn:uuid:41586753-0912-4123-8123-415867530912",
        "doc-4158675",
        "wiki:42",
    ]
    texts = ["one", "two", "three", "four", "five", "six", "seven"]
    stage.drain_counters()
    out = stage(batch(id=ids, text=texts))
    got = out.column("id").to_pylist()
    assert re.fullmatch(r"<EMAIL_ADDRESS>#[0-9a-f]{8}", got[0]) and re.fullmatch(
        r"<EMAIL_ADDRESS>#[0-9a-f]{8}", got[1]
    )
    assert got[0] != got[1] and re.fullmatch(r"tel <PHONE_NUMBER>#[0-9a-f]{8}", got[2])
    assert got[3:] == ids[3:]  # a WARC record id is never read (the reader's form or in brackets); look-alikes stay
    assert stage.drain_counters()["fields.read"] == 4  # the record ids were not read: the others were
    again = stage(batch(id=ids, text=texts)).column("id").to_pylist()
    assert again == got  # stable


def test_other_string_columns_and_exempt_ones(stage):
    t = batch(
        content_type=[f"text/html; name={EMAIL}", "text/html"],
        quality_label=["hq", None],
        source_name=[f"crawl {PHONE}"] * 2,
        url_original=[f"https://x.example/{EMAIL}"] * 2,
    )
    out = stage(t)
    assert out.column("content_type").to_pylist() == ["text/html; <EMAIL_ADDRESS>", "text/html"]
    assert out.column("quality_label").to_pylist() == ["hq", None]
    assert out.column("source_name").equals(t.column("source_name"))  # the config's name: the mix draws by it
    assert out.column("url_original").equals(t.column("url_original"))  # kept raw on purpose (keep_original)


def test_sources_become_their_published_names(stage):
    sources = [
        f"/data/{EMAIL}_{PHONE}.jsonl",
        f"/data/{EMAIL}_{PHONE}.jsonl",
        "s3://commoncrawl/crawl-data/CC-MAIN-2026-04/segments/1768110000000.0/warc/"
        "CC-MAIN-20260112000513-20260112030513-00000.warc.gz",
        None,
    ]
    out = stage(batch(source=sources)).column("source").to_pylist()
    assert out[0] == out[1] == public_name(sources[0]) and re.fullmatch(r"/data/<MASKED>\.jsonl#[0-9a-f]{8}", out[0])
    assert out[2:] == sources[2:]


def test_actions_apply_to_fields_as_to_text():
    stage = PiiStage(
        PiiConfig.model_validate(
            {"hash_salt": SALT, "entities": {"email_address": "hash", "phone_number": "annotate", "us_ssn": "mask"}}
        )
    )
    raw = json.dumps({"email": EMAIL, "phone": PHONE, "ssn": SSN})
    out = stage(batch(id=[EMAIL], text=[f"write to {EMAIL}"], metadata=pa.array([raw], pa.large_string())))
    token = re.search(r"<EMAIL_ADDRESS:[0-9a-f]{16}>", out.column("text")[0].as_py()).group()
    meta = json.loads(out.column("metadata")[0].as_py())
    assert meta == {"email": token, "phone": PHONE, "ssn": "*" * len(SSN)}  # the text's hash; annotate leaves it
    assert out.column("id")[0].as_py().startswith(f"{token}#")
    counters = stage.drain_counters()
    assert counters["fields.found.EMAIL_ADDRESS"] == 2 and counters["fields.found.PHONE_NUMBER"] == 1


def test_a_dense_field_is_masked_and_a_batch_without_candidates_is_the_same(stage):
    dense = PiiStage(PiiConfig(max_candidate_digits=100))
    dump = " ".join(f"555{i:07d}" for i in range(30))
    out = dense(batch(id=["x"], metadata=pa.array([json.dumps({"dump": dump, "ok": "fine"})], pa.large_string())))
    assert json.loads(out.column("metadata")[0].as_py()) == {"dump": "<MASKED>", "ok": "fine"}
    clean = batch(
        id=["a", "b"], metadata=pa.array(['{"a":1}', None], pa.large_string()), content_type=["text/html", None]
    )
    out = stage(clean)
    for c in ("id", "metadata", "content_type"):
        assert out.column(c).equals(clean.column(c))


@pytest.mark.parametrize(
    "uri, stem",
    [
        (f"/data/{EMAIL}.jsonl", "MASKED"),
        (f"/data/{PHONE}.jsonl.gz", "MASKED"),
        ("/data/415_867_5309.parquet", "MASKED"),
        ("/data/maria (at) gmail (dot) com.jsonl", "MASKED"),
        ("/data/maria.kowalski%40gmail.com.jsonl", "MASKED"),
        ("s3://b/maria.kowalski＠gmail.com.jsonl", "MASKED"),
        ("/data/CC-MAIN-4158675309-20260112030513-00000.warc.gz", "MASKED"),
        (f"s3://commoncrawl/crawl-data/CC-MAIN-2026-04/segments/1768110000000.0/warc/{CC}.warc.gz", CC),
        ("/data/enwiki-20240101-pages.jsonl", "enwiki-20240101-pages"),
        ("/data/c4-train.00000-of-01024.json.gz", "c4-train.00000-of-01024"),
    ],
)
def test_part_names_hold_no_pii_and_stay_unique_and_stable(uri, stem):
    name = unit_name(uri)
    assert re.fullmatch(rf"{re.escape(stem)}-[0-9a-f]{{8}}", name), name
    assert unit_name(uri) == name and unit_name(uri + "x") != name
    for needle in ("kowalski", "gmail", "867", "5309", "4158675309"):
        assert needle not in name
