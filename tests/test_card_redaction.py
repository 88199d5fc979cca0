"""Strings of the card that come from the run record or the data (not hosts nor examples, which the PII code
redacts where it reads them) go through PublicRedactor: the run's name, input file names, the config, the
command, language labels, stages and reasons, the tokenizer and quality-model paths, quoted errors."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from pipeline.card.redaction import redact_stats
from pipeline.card.report import main as report_main
from tests.test_card_fixture import make_output

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
    assert any(e["stage"] == "stage of <EMAIL_ADDRESS>" for e in card["examples"])  # examples stay grouped with their step
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


def test_labels_that_redact_alike_add_their_counts():
    stats = {"run": {"name": "r", "parts_by": "fingerprints", "command": None, "config": {}}, "classifiers": {"present": False, "entries": []},
             "tokens": {"present": False}, "sources": {"per_file": []},
             "languages": {"final": {"en": 5, "123": 2, "456": 3}},
             "funnel": [{"step": "p:9", "phase": "p", "stage": "9", "label": "l", "by_reason": {"111": 1, "222": 4, "ok": 2}}],
             "phases": {}}
    redactor = Recording()
    out = redact_stats(stats, redactor)
    assert out["languages"]["final"] == {"en": 5, "<N>": 5}
    assert out["funnel"][0]["by_reason"] == {"<N>": 5, "ok": 2}
    assert out["funnel"][0]["step"] == "p:<N>" and out["funnel"][0]["stage"] == "<N>"
    assert out["classifiers"]["entries"] == []
    assert {"en", "123", "9", "l", "r", "fingerprints"} <= set(redactor.seen)
