"""The card phase at the edges, on real runs: no document survives, one input file with dedup off
and no shards (each absent step says so, the last phase is the default config), a malformed current
marker and an unreadable part in the run's context, and a card failure costs only the card."""

from __future__ import annotations

import json

import pytest
import yaml

from pipeline.card.report import main as report_main
from pipeline.config import RunConfig, parse_config
from pipeline.runner import run
from tests.conftest import Page, html
from tests.pipeline.card.test_card_expected import expected, numbers
from tests.pipeline.card.test_card_svg import parse_svg

pytestmark = pytest.mark.ray

FILTERS_OFF = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}
PROSE = (
    "The harbor bridge opened in the winter after years of work by the city. Crews painted the silver towers "
    "while ferries kept running below. Residents crossed on foot the first morning and filled the garden by the water."
)


def _config(src, out, **extra) -> RunConfig:
    data = {
        "inputs": [str(src / "*.warc.gz")],
        "output": str(out),
        "filters": FILTERS_OFF,
        "langid": {"min_score": 0.0},
        **extra,
    }
    for section in ("shards", "pii"):  # phases switched off unless a test asks for them
        if section in RunConfig.model_fields and section not in extra:
            data[section] = {"enabled": False}
    return parse_config(data)


def _check(out) -> dict:
    card = json.loads((out / "card" / "stats.json").read_text())
    assert numbers(card) == numbers(expected(out, card))
    assert card["funnel_adds_up"] and all(c["ok"] for c in card["checks"]), card["checks"]
    for name in card["plots"]:
        parse_svg((out / "card" / name).read_bytes())
    return card


def test_a_run_where_no_document_survives_gets_a_sensible_card(ray_local, warc_factory, tmp_path):
    warc_factory(
        "a.warc.gz",
        [
            Page("https://a.example/missing", b"not found", status="404 Not Found"),
            Page("https://a.example/data.json", b"{}", content_type="application/json"),
        ],
    )
    warc_factory("b.warc.gz", [Page("https://b.example/", b"<html><body></body></html>")])
    out = tmp_path / "out"
    record = run(_config(tmp_path, out, pii={"enabled": True}, shards={"enabled": True}), progress=False)
    assert record["status"] == "ok", record
    card = _check(out)
    assert card["summary"]["documents"] == 0 and card["summary"]["responses"] == 3
    assert (
        card["tokens"]["present"]
        and card["tokens"]["documents"] == 0
        and card["tokens"]["tokens_per_document"] is None
    )
    assert card["summary"]["languages"] == 0 and card["length"]["after"]["mean_chars"] is None
    readme = (out / "README.md").read_text()
    assert "**0 documents**" in readme and "size_categories:\n- n<1K" in readme


def test_one_input_file_with_dedup_off_says_what_did_not_run(ray_local, warc_factory, tmp_path):
    warc_factory(
        "one.warc.gz",
        [
            Page(f"https://one.example/{i}", html(f"Page {i}", PROSE, PROSE[::-1] if i % 2 else PROSE).encode())
            for i in range(3)
        ],
    )
    out = tmp_path / "out"
    record = run(_config(tmp_path, out, dedup={"enabled": False}), progress=False)
    assert record["status"] == "ok" and list(record["phases"])[-1] == "card"
    card = _check(out)
    assert card["sources"]["files"] == 1 and card["summary"]["documents"] == 3
    assert card["dedup"] == {"status": "disabled"}
    steps = {r["phase"]: r for r in card["funnel"]}
    assert steps["deduped"]["status"] == "disabled" and steps["deduped"]["removed"] == 0
    assert steps["final"]["status"] == steps["shards"]["status"] == "disabled"
    readme = (out / "README.md").read_text()
    assert "Deduplication did not run (disabled)." in readme
    assert "PII was not detected or redacted" in readme and "No shards were written" in readme
    assert "not run: disabled by the config" in readme
    configs = yaml.safe_load(readme[4:].split("\n---\n", 1)[0])["configs"]  # pii off, final disabled: the last phase
    assert [c["data_files"][0]["path"] for c in configs] == ["documents/extracted/*.parquet"]
    # a marker the card uses (current) but malformed: `curate report` names it, exit 2
    marker = next((out / "_done" / "extracted").glob("*.json"))
    good = marker.read_text()
    marker.write_text(
        json.dumps({**json.loads(good), "totals": {**json.loads(good)["totals"], "records_by_type": "many"}})
    )
    assert report_main([str(out)]) == 2
    marker.write_text(good)
    # a part the card cannot read: the card is written without it and names it, but the unit fails (no marker),
    # the data phases stay done, a rerun retries it
    part = next((out / "documents" / "extracted").glob("*.parquet"))
    part.write_bytes(b"not parquet")
    (out / "_done" / "card" / "run.json").unlink()
    again = run(_config(tmp_path, out, dedup={"enabled": False}), progress=False)
    assert again["status"] == "failed_units" and list(again["phases"]["card"]["failed_units"]) == ["run"]
    assert f"documents/extracted/{part.name}" in again["phases"]["card"]["failed_units"]["run"]
    assert again["phases"]["extracted"]["units_skipped"] == 1 and not (out / "_done" / "card" / "run.json").exists()
    assert f"documents/extracted/{part.name}" in (out / "README.md").read_text()
    assert report_main([str(out)]) == 1 and not (out / "_done" / "card" / "run.json").exists()


def test_paragraph_dedup_is_reported_in_the_card(ray_local, warc_factory, tmp_path):
    """dedup.paragraphs: the card says how many paragraphs and
    characters went, and shows the repeated one, redacted."""
    shared = (
        "Write to press.office@harbor.example for photographs of the bridge, the towers and the ferries; "
        "the office answers every request within two working days."
    )
    own = [
        "The museum reopened its east wing with a collection of ship models carved by local families over a century.",
        "A new bakery near the station sells rye bread from a recipe the owner's grandmother brought from the north.",
        "The school choir sang at the harbor festival and raised money for new instruments and a trip to the capital.",
        "Volunteers planted four hundred oak trees along the river path during a cold and windy weekend in March.",
    ]
    warc_factory(
        "p.warc.gz",
        [Page(f"https://p{i}.example/news", html(f"News {i}", text, shared).encode()) for i, text in enumerate(own)],
    )
    out = tmp_path / "out"
    config = _config(tmp_path, out, dedup={"paragraphs": {"enabled": True, "min_chars": 20}}, pii={"enabled": True})
    assert run(config, progress=False)["status"] == "ok"
    record = json.loads((out / "run.json").read_text())
    para = record["phases"]["deduped"]["paragraphs"]
    assert para["removed"] == 3 and para["documents_edited"] == 3 and para["chars_removed"] >= 3 * len(shared)
    card = json.loads((out / "card" / "stats.json").read_text())
    assert card["dedup"]["paragraphs"]["removed"] == 3
    readme = (out / "README.md").read_text()
    section = readme.split("## Deduplication", 1)[1].split("\n## ", 1)[0]
    assert (
        "**Repeated paragraphs**" in section
        and "3 of " in section
        and f"{para['chars_removed']:,} characters" in section
    )
    assert "press.office" not in section  # the shown paragraph is redacted
    assert "| 4 |" in section  # four copies of the shared paragraph in the corpus


def test_the_card_never_prints_the_folders_of_the_machine_that_ran_the_job(
    ray_local, warc_factory, tmp_path, tmp_path_factory, monkeypatch
):
    """Before, the card and stats.json printed the output root, the command's and the config's absolute paths (models,
    tokenizer) and shards/manifest.json the tokenizer's.  Now: relative to the working directory the run read them
    from, or (outside it) by name, the tokenizer with its sha256."""
    import shutil

    from pipeline.config import load_config
    from tests.conftest import REPO

    work = tmp_path  # the working directory: inputs and the model inside it
    monkeypatch.chdir(work)
    warc_factory("a.warc.gz", [Page(f"https://a.example/{i}", html(f"Page {i}", PROSE).encode()) for i in range(3)])
    (work / "models").mkdir()
    shutil.copy(REPO / "samples" / "classifiers" / "edu.ftz", work / "models" / "edu.ftz")
    elsewhere = tmp_path_factory.mktemp("elsewhere")  # the tokenizer and the output root outside it
    shutil.copy(REPO / "samples" / "tokenizer" / "tokenizer.json", elsewhere / "my-tokenizer.json")
    tokenizer = elsewhere / "my-tokenizer.json"
    tokenizer.write_text(tokenizer.read_text() + "\n")  # not the demonstration's bytes
    out = elsewhere / "runs" / "out"
    cfg = work / "job.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "inputs": ["*.warc.gz"],
                "output": str(out),
                "filters": FILTERS_OFF,
                "langid": {"min_score": 0.0},
                "classifiers": [{"name": "edu", "model": "models/edu.ftz", "label": "edu"}],
                "shards": {"tokenize": {"tokenizer": str(tokenizer)}},
            }
        )
    )
    config = load_config(cfg)
    command = ["curate", "run", "job.yaml", "-o", str(out), f"--input={work}/a.warc.gz"]
    record = run(config, progress=False, command=command)
    assert record["status"] == "ok"
    published = [
        out / "README.md",
        out / "shards" / "manifest.json",
        *(out / "card").iterdir(),
        *(out / "shards").glob("*/index.json"),
    ]
    for path in published:
        text = path.read_text(errors="replace")
        assert str(tmp_path) not in text and str(elsewhere) not in text, path
    readme = (out / "README.md").read_text()
    assert "`models/edu.ftz`" in readme and "curate run job.yaml -o out --input=a.warc.gz" in readme
    assert "the tokenizer `my-tokenizer.json` (sha256 " in readme
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    assert manifest["tokenizer"]["path"] == "my-tokenizer.json"
    assert record["working_dir"] == str(work)  # run.json keeps it (it is not published)
