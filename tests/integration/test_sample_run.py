"""The sample run (jobs/sample.yaml) on samples/, checked against the ground truth."""

from __future__ import annotations

import codecs
import json
import shutil
from collections import Counter

import pyarrow.parquet as pq
import pytest

from pipeline.config import load_config
from pipeline.runner import run
from tests.conftest import REPO, SAMPLES

pytestmark = pytest.mark.ray

TRUTH = {
    json.loads(line)["id"]: json.loads(line) for line in (SAMPLES / "ground_truth.jsonl").read_text().splitlines()
}


@pytest.fixture(scope="module")
def sample_run(ray_local, tmp_path_factory):
    """One run of jobs/sample.yaml over samples/ plus the broken files."""
    src = tmp_path_factory.mktemp("in")
    refused = {
        "not-a-warc.warc.gz",
        "empty.warc.gz",
    }  # no source reads them: refused at plan time (tests/pipeline/test_input_sniff.py)
    for p in [*SAMPLES.glob("*.warc.gz"), *(SAMPLES / "broken").glob("*.warc.gz")]:
        if p.name not in refused:
            shutil.copy(p, src / p.name)
    out = tmp_path_factory.mktemp("out")
    cfg = load_config(REPO / "jobs" / "sample.yaml", inputs=[str(src / "*.warc.gz")], output=str(out))
    record = run(cfg, progress=False)
    return out, record


def _rows(out, kind, phase="extracted"):
    return pq.read_table(out / kind / phase).to_pylist()


def test_every_sample_response_is_accounted_for(sample_run):
    out, record = sample_run
    phase = record["phases"]["extracted"]
    assert phase["failed_units"] == {}
    kept, rejected = _rows(out, "documents"), _rows(out, "rejected")
    ids = [r["id"] for r in kept + rejected if r["id"] in TRUTH]
    assert sorted(ids) == sorted(TRUTH)  # each ground-truth response exactly once
    assert phase["responses"] == phase["kept"] + phase["rejected"] == len(kept) + len(rejected)
    assert all(r["reason"] for r in rejected)


def test_non_html_and_errors_are_rejected_with_their_reasons(sample_run):
    out, _ = sample_run
    reasons = {r["id"]: r["reason"] for r in _rows(out, "rejected")}
    for rid, t in TRUTH.items():
        if t["kind"] == "non_html":
            assert reasons.get(rid) == "not_html", t["url"]
        if t["kind"] in ("http_error", "redirect"):
            assert reasons.get(rid) == "http_status", t["url"]


def test_other_record_types_are_counted(sample_run):
    out, record = sample_run
    by_type = record["phases"]["extracted"]["records_by_type"]
    responses = sum(1 for _ in TRUTH)
    # samples/: one warcinfo per file and a request + metadata record per capture
    assert by_type["warcinfo"] >= 5 and by_type["request"] >= responses and by_type["metadata"] >= responses


def test_broken_files_are_counted_not_fatal(sample_run):
    out, record = sample_run
    markers = {
        m.name.split("-")[0]: json.loads(m.read_text())["totals"] for m in (out / "_done" / "extracted").glob("*.json")
    }
    assert markers["truncated"]["malformed_records"] == 1 and markers["truncated"]["responses"] == 3
    assert markers["bad"]["responses"] == 5 and markers["bad"]["malformed_records"] == 2


def test_languages_and_charsets_match_the_ground_truth(sample_run):
    out, _ = sample_run
    kept = [r for r in _rows(out, "documents") if r["id"] in TRUTH]
    lang_ok = Counter(r["language"] == TRUTH[r["id"]]["language"] for r in kept if TRUTH[r["id"]]["language"])
    assert lang_ok[True] / sum(lang_ok.values()) >= 0.97
    # Every page in a legacy charset that was kept was decoded as that charset (or a superset).
    supersets = {
        "iso8859-1": {"cp1252"},
        "gb2312": {"gbk", "gb18030"},
        "gbk": {"gb18030"},
        "euc_kr": {"cp949"},
        "iso8859-9": {"cp1254"},
        "shift_jis": {"cp932"},
    }
    for r in kept:
        truth = TRUTH[r["id"]]["charset"]
        if truth and truth not in ("utf-8", "none"):
            truth, got = codecs.lookup(truth).name, codecs.lookup(r["charset"]).name
            # A legacy page that validates as UTF-8 is plain ASCII: same text either way.
            assert got in {truth, "utf-8"} | supersets.get(truth, set()), (r["url"], got, truth)
            assert "\ufffd" not in r["text"]


def test_every_reason_given_is_declared_by_its_stage_in_the_plan(sample_run):
    """Each rejected row names a stage of its phase in the recorded plan, and a reason that stage declares."""
    out, record = sample_run
    plan = {p["name"]: {s["name"]: set(s["reasons"]) for s in p["stages"]} for p in record["plan"]["phases"]}
    given = set()
    for phase_dir in (out / "rejected").iterdir():
        table = pq.read_table(phase_dir, columns=["stage", "reason"])
        given |= {
            (phase_dir.name, s, r)
            for s, r in zip(table.column("stage").to_pylist(), table.column("reason").to_pylist(), strict=False)
        }
    assert given, "the sample run rejects documents"
    undeclared = [(p, s, r) for p, s, r in given if s not in plan[p] or r not in plan[p][s]]
    assert undeclared == []
