"""Strings of the card that come from the run record or the data (not hosts nor examples, which the PII code
redacts where it reads them) go through PublicRedactor: the run's name, input file names, the config, the
command, language labels, stages and reasons, the tokenizer and quality-model paths, quoted errors."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from pipeline.card.redaction import redact_stats
from pipeline.card.report import main as report_main
from tests.pipeline.card.test_card_fixture import make_output

EMAIL, OTHER, CARD, IP = "john.smith@gmail.com", "jane.doe@example.org", "4111 1111 1111 1111", "81.2.69.161"


def test_no_pii_of_the_record_or_the_labels_reaches_the_card(tmp_path):
    out = make_output(tmp_path / "out")
    record = json.loads((out / "run.json").read_text())
    record["name"] = f"crawl for {EMAIL}"
    record["inputs"][2] = f"s3://admin:hunter2@bucket/{OTHER}/empty.warc.gz"
    record["command"] = ["curate", "run", f"/home/{EMAIL}/job.yaml"]
    record["config"]["name"] = f"ask {OTHER}"
    record["config"]["classifiers"][0]["model"] = f"/models/{OTHER}/quality.ftz"
    record["working_dir"] = "/"  # paths are shown relative to it (pipeline/card/public_paths.py): the folders stay
    record["config"]["pii"]["entities"][f"card {CARD}"] = "annotate"  # a key of the config
    (out / "run.json").write_text(json.dumps(record))
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    manifest["tokenizer"]["path"] = f"http://{IP}/tokenizer.json"
    (out / "shards" / "manifest.json").write_text(json.dumps(manifest))
    final = sorted((out / "documents" / "final").glob("*.parquet"))[0]
    rows = pq.read_table(final).to_pylist()
    rows[0]["language"] = f"lang {CARD}"
    pq.write_table(pq.read_table(final).from_pylist(rows, schema=pq.read_schema(final)), final)
    rejected = sorted((out / "rejected" / "extracted").glob("*.parquet"))[0]
    rows = pq.read_table(rejected).to_pylist()
    rows[0].update(stage=f"stage of {EMAIL}", reason=f"reason {CARD}")
    pq.write_table(pq.read_table(rejected).from_pylist(rows, schema=pq.read_schema(rejected)), rejected)

    report_main([str(out)])
    readme = (out / "README.md").read_text()
    stats = (out / "card" / "stats.json").read_text()
    for value in (EMAIL, OTHER, CARD, CARD.replace(" ", ""), IP, "hunter2", "smith"):
        assert value not in readme and value not in stats, value
    card = json.loads(stats)
    assert card["run"]["name"] == "crawl for <EMAIL_ADDRESS>"
    assert card["sources"]["per_file"][2]["file"].startswith("s3://bucket/")
    assert any("<CREDIT_CARD>" in lang for lang in card["languages"]["final"])
    assert card["funnel_adds_up"] and any("<EMAIL_ADDRESS>" in r["stage"] for r in card["funnel"])
    assert any(
        e["stage"] == "stage of <EMAIL_ADDRESS>" for e in card["examples"]
    )  # examples stay grouped with their step
    model = card["classifiers"]["entries"][0]["model"]
    assert model in ("models/<EMAIL_ADDRESS>/quality.ftz", "<MASKED>")  # a whole value or token
    assert card["tokens"]["tokenizer"]["path"] == "http://<IP_ADDRESS>/tokenizer.json"


class Recording:
    """A stand-in redactor that replaces digits runs, to test the bookkeeping without presidio."""

    def __init__(self):
        self.seen: list[str] = []

    def texts(self, texts):
        self.seen += texts
        return ["<N>" if t.isdigit() else t for t in texts]

    def urls(self, urls):
        self.seen += urls
        return urls

    def names(self, names, urls=False):
        return self.urls(names) if urls else self.texts(names)


def test_labels_that_redact_alike_add_their_counts():
    stats = {
        "run": {"name": "r", "parts_by": "fingerprints", "command": None, "config": {}},
        "classifiers": {"present": False, "entries": []},
        "tokens": {"present": False},
        "sources": {"per_file": []},
        "languages": {"final": {"en": 5, "123": 2, "456": 3}},
        "funnel": [
            {"step": "p:9", "phase": "p", "stage": "9", "label": "l", "by_reason": {"111": 1, "222": 4, "ok": 2}}
        ],
        "phases": {},
    }
    redactor = Recording()
    out = redact_stats(stats, redactor)
    assert out["languages"]["final"] == {"en": 5, "<N>": 5}
    assert out["funnel"][0]["by_reason"] == {"<N>": 5, "ok": 2}
    assert out["funnel"][0]["step"] == "p:<N>" and out["funnel"][0]["stage"] == "<N>"
    assert out["classifiers"]["entries"] == []
    assert {"en", "123", "9", "l", "r", "fingerprints"} <= set(redactor.seen)


# --------------------------------------------------------------------------- issue 38, items 2, 4 and 5

#: Paragraphs with PII across their 100th character, as versions before issue 38 recorded them: cut, then redacted.
VALUES = ["maria.kowalski@gmail.com", "(415) 867-5309", "536-22-1974", "81.2.69.160"]
_FILLER = "Please write to our office about any question regarding the accounts, deliveries and refunds at all hours "
PARAGRAPHS = [(_FILLER[: 100 - len(v) // 2 - 1] + " " + v + " today.")[:100] for v in VALUES]


def test_repeated_paragraphs_cut_before_redaction_lose_their_last_word(tmp_path):
    """Item 2 (an output written before the fix): README.md and stats.json showed ``maria.kowalski@gma``,
    ``(415) 867-``, ``536-22-1``, ``81.2.69.`` under a header that says "PII redacted"."""
    out = make_output(tmp_path / "out")
    record = json.loads((out / "run.json").read_text())
    top = [{"hash": f"{i:016x}", "count": 5, "text": t} for i, t in enumerate(PARAGRAPHS)]
    record["phases"]["deduped"]["paragraphs"] = {
        "unit": "paragraph",
        "mode": "keep_first",
        "removed": 8,
        "pieces": 40,
        "top": top,
    }
    (out / "run.json").write_text(json.dumps(record))
    report_main([str(out)])
    assert [p.rsplit(" ", 1)[1] for p in PARAGRAPHS] == ["maria.kowals", "8", "536-2", "81.2."]  # cut in the values
    readme, stats = (out / "README.md").read_text(), (out / "card" / "stats.json").read_text()
    for partial in ("kowal", "(415) 8", "536-2", "81.2.", "415"):
        assert partial not in readme and partial not in stats, partial
    shown = [r["text"] for r in json.loads(stats)["dedup"]["paragraphs"]["top"]]
    assert shown[0] == _FILLER[: 100 - len(VALUES[0]) // 2 - 1].rstrip() + "…"
    assert all(t.endswith("…") for t in shown) and shown[0] in readme.replace("\\", "")


def test_repeated_paragraphs_are_redacted_then_cut():
    from pipeline.dedup.paragraphs import SNIPPET_CHARS, SNIPPET_READ_CHARS, shorten
    from stages.pii.public import PublicRedactor

    assert SNIPPET_READ_CHARS >= SNIPPET_CHARS + 2 * 300  # a value (at most 300 characters) across the cut: read whole
    text = (
        "Please write to our office manager about any question regarding the accounts at "
        "maria.kowalski@gmail.com today."
    )
    assert text.index("@") < SNIPPET_CHARS < len(text)
    redacted = PublicRedactor().texts([text])[0]
    assert shorten(redacted) == (
        "Please write to our office manager about any question regarding the accounts at <EMAIL_ADDRESS>…"
    )
    assert shorten("x" * 90 + " <EMAIL_ADDRESS> tail") == "x" * 90 + "…"  # never inside a placeholder
    assert shorten("short one") == "short one"


def test_keep_original_withholds_the_documents_and_says_why(tmp_path):
    """Item 4: documents/final holds url_original (every URL before redaction): the card offers no config for it and
    leaves it out of the upload; the shards (url only) are offered; with url_original in the shards, nothing."""
    out = make_output(tmp_path / "out")
    record = json.loads((out / "run.json").read_text())
    record["config"]["pii"]["urls"] = {"enabled": True, "keep_original": True}
    (out / "run.json").write_text(json.dumps(record))
    report_main([str(out)])
    stats = json.loads((out / "card" / "stats.json").read_text())
    publish, readme = stats["publish"], (out / "README.md").read_text()
    assert publish["configs"] == [] and publish["withheld"] is None
    assert not any(p.startswith("documents/") for p in publish["allow_patterns"])
    assert "shards/manifest.json" in publish["allow_patterns"] and list(publish["excluded"]) == ["documents/final"]
    assert "url_original" in publish["excluded"]["documents/final"]
    head, plain = readme.split("\n---\n", 1)[0], readme.replace("\\", "")
    assert "configs:" not in head
    assert "`documents/final` is not offered for publishing: it holds the column url_original" in plain
    assert "`documents/final` is not offered: it holds the column url_original" in plain

    record["config"]["shards"]["layout"]["metadata"] = ["url_original"]
    (out / "run.json").write_text(json.dumps(record))
    report_main([str(out)])
    publish = json.loads((out / "card" / "stats.json").read_text())["publish"]
    assert publish["allow_patterns"] == []
    assert "documents/final and shards hold the column url_original" in publish["withheld"]
