"""`curate report` on damaged outputs: a truncated or malformed run.json, marker or shards manifest is a
one-line error naming the file (exit 2); a corrupt Parquet part is left out and named (exit 1, no card
marker); the card never offers a phase whose markers are missing, a phase before PII redaction, or
rejected/*."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pipeline.card.report import main as report_main
from pipeline.config import RunConfig
from tests.pipeline.card.test_card_expected import expected, numbers
from tests.pipeline.card.test_card_fixture import make_output

PART = "CC-MAIN-2024-10-a-00000000"


@pytest.fixture
def out(tmp_path) -> Path:
    return make_output(tmp_path / "out")


def validating(
    out: Path,
) -> Path:  # (tests/pipeline/card/test_card_runs.py covers a real run's context with current markers)
    """The fixture's run.json with a config that validates here (the run's context rebuilt, as after a real run)."""
    record = json.loads((out / "run.json").read_text())
    record["config"]["classifiers"] = RunConfig.model_validate({"inputs": ["x"], "output": "x"}).model_dump(
        mode="json"
    )["classifiers"]
    (out / "run.json").write_text(json.dumps(record))
    return out


def one_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def front_matter(out: Path) -> dict:
    return yaml.safe_load((out / "README.md").read_text()[4:].split("\n---\n", 1)[0])


@pytest.mark.parametrize(
    "content",
    [
        None,
        b"",
        b"[1, 2]",
        b"\xff\xfe garbage",
        b'{"inputs": "in/a.warc.gz"}',
        b'{"phases": {"extracted": 3}}',
        b'{"command": ["curate", 7]}',
    ],
)
def test_a_damaged_run_json_is_one_line_naming_it(out, capsys, content):
    path = out / "run.json"
    truncate(path) if content is None else path.write_bytes(content)
    assert report_main([str(out)]) == 2
    assert f"{path}:" in one_error(capsys)
    assert not (out / "card").exists()


@pytest.mark.parametrize(
    "content", [None, b"", b"[]", b'{"records_by_type": "many"}', b'{"records_by_type": {"response": "7"}}']
)
def test_a_damaged_marker_is_one_line_naming_it(out, capsys, content):
    path = out / "_done" / "extracted" / f"{PART}.json"
    truncate(path) if content is None else path.write_bytes(content)
    assert report_main([str(out)]) == 2
    assert str(path) in one_error(capsys)


@pytest.mark.parametrize("phase", ["extracted", "final", "shards"])
def test_a_truncated_marker_is_named_when_the_run_context_reads_it(out, capsys, phase):
    """The recorded config validates: the run's context reads every marker of a phase (without naming a bad one)."""
    validating(out)
    path = sorted((out / "_done" / phase).glob("*.json"))[0]
    truncate(path)
    assert report_main([str(out)]) == 2
    assert str(path) in one_error(capsys)


@pytest.mark.parametrize(
    "content",
    [
        None,
        b"{}",
        b'{"documents": 3, "formats": []}',
        b'{"documents": "three"}',
        b'{"documents": 3, "formats": {"mds": {"shards": [{"tokens": "x"}]}}}',
    ],
)
def test_a_damaged_manifest_is_one_line_naming_it(out, capsys, content):
    path = out / "shards" / "manifest.json"
    truncate(path) if content is None else path.write_bytes(content)
    assert report_main([str(out)]) == 2
    assert str(path) in one_error(capsys)


@pytest.mark.parametrize("damage", ["truncated", "not parquet"])
def test_a_corrupt_part_is_left_out_and_named(out, capsys, damage):
    part = out / "documents" / "final" / f"part-{PART}.parquet"
    good = part.read_bytes()
    truncate(part) if damage == "truncated" else part.write_bytes(b"not parquet at all")
    assert report_main([str(out)]) == 1  # the card is written, a check failed
    err = capsys.readouterr().err
    assert f"warning: documents/final/part-{PART}.parquet could not be read" in err and "Traceback" not in err
    card = json.loads((out / "card" / "stats.json").read_text())
    assert [u["file"] for u in card["unreadable"]] == [f"documents/final/part-{PART}.parquet"]
    assert not next(c for c in card["checks"] if c["check"].startswith("every part file could be read"))["ok"]
    # every other file of that part is still counted: its rejected rows, its deduped and extracted documents
    rejected = [r for r in card["funnel"] if r["step"] == "final:quality_filter"][0]
    assert rejected["removed"] > 0 and card["phases"]["deduped"]["kept"] > 0
    assert next(r for r in card["funnel"] if r["step"] == "final:not_processed")["removed"] > 0
    readme = (out / "README.md").read_text()
    assert f"documents/final/part-{PART}.parquet" in readme and "the card is built without it" in readme
    assert not (out / "_done" / "card").exists()  # no marker: the next run rebuilds the card
    part.write_bytes(good)
    assert report_main([str(out)]) == 0
    card = json.loads((out / "card" / "stats.json").read_text())
    assert card["unreadable"] == [] and numbers(card) == numbers(expected(out, card))


def test_the_card_offers_the_redacted_documents_and_shards_never_rejected(out):
    assert report_main([str(out)]) == 0
    meta = front_matter(out)
    paths = [f["path"] for c in meta["configs"] for f in c["data_files"]]
    assert paths == ["documents/final/*.parquet"]  # the shards are uploaded beside it, outside the configs
    allowed = json.loads((out / "card" / "stats.json").read_text())["publish"]["allow_patterns"]
    assert "shards/webdataset/*.tar" in allowed
    assert not any("rejected" in p or "deduped" in p or "extracted" in p for p in paths + allowed)


def test_without_final_markers_the_card_offers_no_config(out, capsys):
    """PII on, `_done/final/*` deleted: documents/deduped holds unredacted text and must not be the default."""
    for marker in (out / "_done" / "final").glob("*.json"):
        marker.unlink()
    report_main([str(out)])
    meta = front_matter(out)
    assert "configs" not in meta
    card = json.loads((out / "card" / "stats.json").read_text())
    assert card["summary"]["dataset_phase"] == "deduped" and card["publish"]["configs"] == []
    assert "before PII redaction" in card["publish"]["withheld"]
    readme = (out / "README.md").read_text()
    assert "No dataset config is offered" in readme and "documents/deduped/*.parquet" not in readme


def test_pii_off_and_a_later_phase_without_markers_offers_no_config(out):
    record = json.loads((out / "run.json").read_text())
    record["config"]["pii"]["enabled"] = False  # final still runs: the quality filter
    (out / "run.json").write_text(json.dumps(record))
    for marker in (out / "_done" / "final").glob("*.json"):
        marker.unlink()
    report_main([str(out)])
    card = json.loads((out / "card" / "stats.json").read_text())
    assert (
        card["publish"]["configs"] == []
        and "final is enabled but has no finished parts" in card["publish"]["withheld"]
    )


def test_an_unexpected_error_is_one_line_too(out, capsys, monkeypatch):
    from pipeline.card import build

    def broken(*a, **k):
        raise KeyError("something the card did not foresee")

    monkeypatch.setattr(build, "read_manifest", broken)
    assert report_main([str(out)]) == 1
    assert "KeyError" in one_error(capsys)
