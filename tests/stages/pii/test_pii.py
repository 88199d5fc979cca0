"""PiiStage on Arrow batches: exact redaction, untouched documents, actions, entity switches, long documents."""

from __future__ import annotations

import re
import socket
import time

import pyarrow as pa
import pytest

from stages.pii import PiiConfig, PiiStage
from stages.pii.config import ENTITIES, count_column
from stages.pii.stage import DENSE_REASON

SALT = "test-salt-0123456789"


def batch(*texts: str | None, lang: str = "en") -> pa.Table:
    return pa.table(
        {
            "id": [f"d{i}" for i in range(len(texts))],
            "text": pa.array(texts, pa.large_string()),
            "language": [lang] * len(texts),
        }
    )


def run(stage: PiiStage, *texts: str | None, lang: str = "en") -> pa.Table:
    return stage(batch(*texts, lang=lang))


def entities_config(**overrides) -> PiiConfig:
    return PiiConfig.model_validate({"entities": overrides, "hash_salt": SALT})


@pytest.fixture(scope="module")
def stage() -> PiiStage:
    return PiiStage(PiiConfig())


# ---------------------------------------------------------------- exact redaction


def test_placeholders_in_place_and_everything_else_byte_identical(stage):
    text = (
        "Hi Anna,\n\nplease write to anna.schmidt@example.org or call +49 30 12345678 before Friday.  "
        "The attacks came from 203.0.113.77 and from 2001:db8:85a3::8a2e:370:7334 last night.\n"
        "Pay with 4111 1111 1111 1111 or transfer to DE89 3704 0044 0532 0130 00 (IBAN).\n"
        "My SSN 987-65-4321 leaked, and so did https://deploy:S3cret-pw!@git.example.com/repo.git — sorry.\n\tBye"
    )
    expected = (
        "Hi Anna,\n\nplease write to <EMAIL_ADDRESS> or call <PHONE_NUMBER> before Friday.  "
        "The attacks came from <IP_ADDRESS> and from <IP_ADDRESS> last night.\n"
        "Pay with <CREDIT_CARD> or transfer to <IBAN_CODE> (IBAN).\n"
        "My SSN <US_SSN> leaked, and so did https://<URL_CREDENTIALS>@git.example.com/repo.git — sorry.\n\tBye"
    )
    out = run(stage, text)
    assert out.column("text")[0].as_py() == expected
    counts = {e: out.column(count_column(e))[0].as_py() for e in ENTITIES if count_column(e) in out.column_names}
    assert counts == {
        "EMAIL_ADDRESS": 1,
        "PHONE_NUMBER": 1,
        "IP_ADDRESS": 2,
        "CREDIT_CARD": 1,
        "IBAN_CODE": 1,
        "US_SSN": 1,
        "URL_CREDENTIALS": 1,
    }


def test_german_french_spanish_sentences(stage):
    cases = [
        (
            "de",
            "Rufen Sie uns unter der Telefonnummer 030 / 1234 567 an oder schreiben Sie an info@firma-beispiel.de.",
            "Rufen Sie uns unter der Telefonnummer <PHONE_NUMBER> an oder schreiben Sie an <EMAIL_ADDRESS>.",
        ),
        (
            "fr",
            "Appelez le standard au 01 99 00 12 34, ou virement sur FR14 2004 1010 0505 0001 3M02 606.",
            "Appelez le standard au <PHONE_NUMBER>, ou virement sur <IBAN_CODE>.",
        ),
        (
            "es",
            "Llámanos al +34 91 123 45 67 desde las 9:30, el pedido A-2024-123456 ya salió.",
            "Llámanos al <PHONE_NUMBER> desde las 9:30, el pedido A-2024-123456 ya salió.",
        ),
    ]
    for lang, text, expected in cases:
        assert run(stage, text, lang=lang).column("text")[0].as_py() == expected, lang


def test_document_without_pii_is_the_same_arrow_value(stage):
    plain = "A quiet paragraph about gardening, without a single number or address in it."
    lookalike = "Version 2.4.57 shipped on 2024-03-12 at 14:30; ISBN 978-3-16-148410-0 costs $39.90."
    inp = batch(plain, lookalike, None, "")
    stage.drain_counters()
    out = stage(inp)
    counters = stage.drain_counters()
    assert out.column("text").equals(inp.column("text"))  # byte-identical values, nulls kept
    assert (
        counters["docs_with_candidates"] == 1 and counters["docs_changed"] == 0
    )  # only the look-alike needed presidio
    for e in ENTITIES:
        if count_column(e) in out.column_names:
            assert out.column(count_column(e)).to_pylist() == [0, 0, 0, 0]
            assert out.schema.field(count_column(e)).type == pa.int32()


def test_only_changed_rows_change(stage):
    texts = ["no pii here", "mail me: bob@example.com", "still nothing", "call +1 212 555 0147 now"]
    out = run(stage, *texts).column("text").to_pylist()
    assert out == ["no pii here", "mail me: <EMAIL_ADDRESS>", "still nothing", "call <PHONE_NUMBER> now"]


def test_utf8_string_columns_and_a_disabled_stage(stage):
    inp = pa.table({"text": pa.array(["naïve café mail: zoë@example.fr", "rien"], pa.string())})
    out = stage(inp)
    assert out.schema.field("text").type == pa.string()
    assert out.column("text").to_pylist() == ["naïve café mail: <EMAIL_ADDRESS>", "rien"]
    off = PiiStage(PiiConfig(enabled=False))
    assert off(inp) is inp


def test_other_columns_are_kept(stage):
    inp = batch("x@example.com wrote", "nothing").append_column("score", pa.array([0.5, 0.25]))
    out = stage(inp)
    assert out.column_names[: len(inp.column_names)] == inp.column_names
    assert out.column("id").equals(inp.column("id")) and out.column("score").equals(inp.column("score"))


def test_empty_batch_gets_the_count_columns(stage):
    out = stage(batch())
    assert len(out) == 0 and count_column("EMAIL_ADDRESS") in out.column_names


# ---------------------------------------------------------------- actions


def test_each_action():
    text = "Contact: ada@example.org, card 5555 5555 5555 4444, server 198.51.100.23, phone +44 20 7946 0958."
    stage = PiiStage(
        entities_config(email_address="mask", credit_card="hash", ip_address="annotate", phone_number="replace")
    )
    out = run(stage, text)
    red = out.column("text")[0].as_py()
    token = re.search(r"<CREDIT_CARD:([0-9a-f]{16})>", red)
    assert token, red
    assert red == (
        f"Contact: {'*' * len('ada@example.org')}, card {token.group(0)}, server 198.51.100.23, phone <PHONE_NUMBER>."
    )
    assert out.column(count_column("IP_ADDRESS"))[0].as_py() == 1  # annotate counts, changes nothing


def test_hash_is_stable_within_a_run_and_salted():
    text = "Write to ops@example.net, or again ops@example.net; not to dev@example.net."
    a = PiiStage(entities_config(email_address="hash"))
    first = run(a, text).column("text")[0].as_py()
    tokens = re.findall(r"<EMAIL_ADDRESS:[0-9a-f]{16}>", first)
    assert len(tokens) == 3 and tokens[0] == tokens[1] != tokens[2]
    assert run(a, text).column("text")[0].as_py() == first  # same value, same token, batch after batch
    other = PiiStage(
        PiiConfig.model_validate({"entities": {"email_address": "hash"}, "hash_salt": "another-salt-0123456"})
    )
    assert re.findall(r"<EMAIL_ADDRESS:[0-9a-f]{16}>", run(other, text).column("text")[0].as_py())[0] != tokens[0]


def test_placeholder_and_mask_char_are_configurable():
    cfg = PiiConfig.model_validate({"placeholder": "[{entity}]", "mask_char": "#", "entities": {"ip_address": "mask"}})
    out = run(PiiStage(cfg), "from 10.20.30.40 to eve@example.com").column("text")[0].as_py()
    assert out == "from ########### to [EMAIL_ADDRESS]"


# ---------------------------------------------------------------- entity switches

SWITCH_TEXT = {
    "EMAIL_ADDRESS": "write to ada@example.org please",
    "PHONE_NUMBER": "call us on +1 415 555 0132 please",
    "IP_ADDRESS": "the host 203.0.113.9 answered",
    "CREDIT_CARD": "paid with card 4012 8888 8888 1881 yesterday",
    "IBAN_CODE": "transfer to GB82 WEST 1234 5698 7654 32 soon",
    "US_SSN": "his social security number 987-65-4322 leaked",
    "URL_CREDENTIALS": "see ftp://backup:hunter2x@ftp.example.org/ for files",
}


@pytest.mark.parametrize("entity", sorted(SWITCH_TEXT))
def test_each_entity_switch(entity):
    text = " and ".join(SWITCH_TEXT.values())
    off = PiiStage(entities_config(**{entity.lower(): False}))
    out = run(off, text)
    red = out.column("text")[0].as_py()
    assert count_column(entity) not in out.column_names
    assert f"<{entity}>" not in red
    for other in SWITCH_TEXT:
        if other != entity:
            assert f"<{other}>" in red, (entity, other, red)
    on = run(PiiStage(entities_config(**{entity.lower(): True})), SWITCH_TEXT[entity]).column("text")[0].as_py()
    assert f"<{entity}>" in on


# ---------------------------------------------------------------- long documents


def test_entity_across_a_chunk_edge_is_found():
    # one long window (digit runs every few characters keep the windows merged) cut into pieces of 1000 characters
    cfg = PiiConfig(chunk_chars=1000, context_chars=20)
    stage = PiiStage(cfg)
    filler = " ".join(f"row {i:07d}" for i in range(400))  # candidates everywhere, none of them PII
    overlap = stage.overlap
    step = cfg.chunk_chars - overlap
    for cut in (step, 2 * step, cfg.chunk_chars):  # the second piece's start, the third's, the first's end
        email = "crossing.the.edge@example.org"
        pos = cut - len(email) // 2
        text = filler[:pos] + " " + email + " " + filler[pos:]
        red = run(stage, text).column("text")[0].as_py()
        assert red == filler[:pos] + " <EMAIL_ADDRESS> " + filler[pos:], cut
        assert stage.drain_counters()["presidio_calls"] >= 1


def test_five_megabyte_document_neither_stalls_nor_crashes(stage):
    para = "The committee met again on Tuesday and agreed to publish the minutes later this month. " * 150
    parts = [para + f"Questions go to member{i}@example.org, thanks. " for i in range(400)]
    text = "".join(parts)
    assert len(text) > 5_000_000
    t0 = time.monotonic()
    out = run(stage, text)
    assert time.monotonic() - t0 < 300  # hang guard only; benchmarks/pii.py measures speed
    assert out.column(count_column("EMAIL_ADDRESS"))[0].as_py() == 400
    assert out.column("text")[0].as_py() == "".join(
        para + "Questions go to <EMAIL_ADDRESS>, thanks. " for _ in range(400)
    )


def test_dense_number_dump_is_rejected_quickly(stage):
    rows = "".join(
        f"{i % 28 + 1:02d}.03.2024 {1000000 + i * 7919} 555-{i % 10000:04d} 10.0.{i % 250}.{i % 200 + 1}\n"
        for i in range(120_000)
    )
    assert len(rows) > 5_000_000
    t0 = time.monotonic()
    out = run(stage, rows, "ok text by ada@example.org")
    assert time.monotonic() - t0 < 300  # hang guard only
    assert out.column("reason").to_pylist() == [DENSE_REASON, None]
    assert out.column("text")[1].as_py() == "ok text by <EMAIL_ADDRESS>"


# ---------------------------------------------------------------- offline


def test_no_network_is_touched(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    fresh = PiiStage(PiiConfig())  # builds the engines; tldextract must not fetch its suffix list
    out = run(fresh, "mail x.y@example.co.uk or z@sub.example.com.au")
    assert out.column("text")[0].as_py() == "mail <EMAIL_ADDRESS> or <EMAIL_ADDRESS>"


# ---------------------------------------------------------------- context


def test_negative_context_stays_in_its_sentence(stage):
    cases = [
        (
            "Firmware 5.7.12.123 adds the sensor.",
            "Firmware 5.7.12.123 adds the sensor.",
        ),  # a version, said so before it
        ("Our host 5.7.12.123 answers again.", "Our host <IP_ADDRESS> answers again."),
        (
            "Scan the barcode 4006381330060 at the till.",
            "Scan the barcode 4006381330060 at the till.",
        ),  # an EAN-13 that passes Luhn too
        # "commit" ends the sentence before: it says nothing about the address
        (
            "The bug came with commit 6478c5cf6d7c. The firewall now "
            "blocks 2a02:3459:83d9:29ca:c042:716e:5d71:d711 for good.",
            "The bug came with commit 6478c5cf6d7c. The firewall now blocks <IP_ADDRESS> for good.",
        ),
    ]
    out = run(stage, *[c for c, _ in cases]).column("text").to_pylist()
    assert out == [e for _, e in cases]


def test_phone_scoring_by_how_it_is_written(stage):
    cases = [
        (
            "The seed was 1652342830 that day.",
            "The seed was 1652342830 that day.",
        ),  # a bare run of digits: no phone without context
        ("Call 1652342830 now.", "Call <PHONE_NUMBER> now."),  # ... unless a context word says so
        ("Reception: 020 7946 0321, all day.", "Reception: <PHONE_NUMBER>, all day."),  # grouped the British way
        (
            "It ended on 05.12.2022 at noon.",
            "It ended on 05.12.2022 at noon.",
        ),  # a date, even where 0512 2022 could be dialled
    ]
    out = run(stage, *[c for c, _ in cases]).column("text").to_pylist()
    assert out == [e for _, e in cases]


def test_an_email_whose_local_part_holds_a_long_number_is_redacted(stage):
    """Arrow's RE2 scan has no look-behind: the number run in the local part was a candidate of its own (glued to
    a word, so never analyzed) that took the character before the @ from the e-mail's candidate."""
    texts = [
        "mail jane604280994@gmail.com ok",
        "mail jane.doe604280994@gmail.com ok",
        "mail 604280994@gmail.com and call 415 555 1234",
    ]
    out = stage(pa.table({"id": ["a", "b", "c"], "text": texts, "language": ["en"] * 3}))
    assert out.column("text").to_pylist() == [
        "mail <EMAIL_ADDRESS> ok",
        "mail <EMAIL_ADDRESS> ok",
        "mail <EMAIL_ADDRESS> and call <PHONE_NUMBER>",
    ]


def test_the_tokenizer_vocabulary_does_not_grow_with_the_documents(stage):
    """spaCy adds a string for every new token (each number, address, id): without a memory zone a worker's
    vocabulary grows with every document it ever analyzed."""
    import random

    rng = random.Random(1)
    nlp = stage.analyzer.nlp_engine.nlp["en"]

    def batch(n):
        texts = [
            f"Call +1 415 555 {rng.randint(1000, 9999)} or "
            f"jane{rng.randint(0, 10**9)}@mail{rng.randint(0, 10**6)}.com, "
            f"ref {rng.randint(0, 10**12)}."
            for _ in range(n)
        ]
        return pa.table({"id": [str(i) for i in range(n)], "text": texts, "language": ["en"] * n})

    stage(batch(50))
    before = len(nlp.vocab.strings)
    for _ in range(3):
        out = stage(batch(200))
    assert len(nlp.vocab.strings) == before
    assert all("<EMAIL_ADDRESS>" in t and "<PHONE_NUMBER>" in t for t in out.column("text").to_pylist())


def test_presidio_is_imported_without_the_sdks_of_its_remote_recognizers():
    """transformers, torch and the Azure SDK come with presidio's optional recognizers when they are installed
    (seconds and tens of MB in every worker); a run never calls them, and other code still imports them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from stages.pii.recognizers import import_presidio\n"
        "import_presidio()\n"
        "assert 'presidio_analyzer' in sys.modules\n"
        "print(sorted(m for m in ('azure', 'transformers', 'torch') if m in sys.modules))\n"
        "import importlib.util\n"
        "print(importlib.util.find_spec('azure') is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "[]" and out[1] == "True"  # hidden for presidio's import only: azure is installed here
