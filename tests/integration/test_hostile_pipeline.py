"""Hostile input end to end (issue 13): `run(config)` on Ray over samples/broken/.

Every file gets its completion marker (none fails, so the run exits 0), every
intact page of the hostile files is kept, each hostile response is rejected
with its named reason, and the counts add up in the run record.
"""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

from pipeline.config import parse_config
from pipeline.runner import run
from tests.conftest import SAMPLES

pytestmark = pytest.mark.ray

BROKEN = SAMPLES / "broken"
#: Not WARC files by content (an S3 error body, a zero-byte file): refused before the run, by name.
NOT_WARCS = ("not-a-warc.warc.gz", "empty.warc.gz")
EXPECTED = {k: v for k, v in json.loads((BROKEN / "expected.json").read_text()).items() if k not in NOT_WARCS}
NO_TEXT_FILTERS = {name: {"enabled": False} for name in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}


@pytest.fixture(scope="module")
def hostile_run(ray_local, tmp_path_factory):
    src = tmp_path_factory.mktemp("in")
    for name in EXPECTED:
        shutil.copy(BROKEN / name, src / name)
    out = tmp_path_factory.mktemp("out")
    cfg = parse_config(
        {
            "inputs": [str(src / "*")],
            "output": str(out),
            "langid": {"min_score": 0.3},
            "filters": NO_TEXT_FILTERS,
            "dedup": {"enabled": False},
            "extract": {"timeout_s": 2.0},
            "shards": {"enabled": False},
            "card": {"enabled": False},  # PII runs on the survivors; shards have their own tests
        }
    )
    return out, run(cfg, progress=False)


GIVE = "(give WARC files, plain or gzipped; JSON lines, plain, gzip or zstd; or Parquet)"


def test_files_that_are_not_warcs_are_refused_by_name_before_the_run(tmp_path):
    from pipeline.config import ConfigError
    from pipeline.runner import plan_context

    for name in ("truncated.warc.gz", *NOT_WARCS):
        shutil.copy(BROKEN / name, tmp_path / name)
    cfg = parse_config({"inputs": [str(tmp_path / "*.warc.gz")], "output": str(tmp_path / "out")})
    with pytest.raises(ConfigError) as e:
        plan_context(cfg)
    assert str(e.value).splitlines() == [
        f"input error: input {tmp_path / 'empty.warc.gz'} is not a "
        f"WARC, JSON lines or Parquet file: it is an empty file {GIVE}",
        f"input error: input {tmp_path / 'not-a-warc.warc.gz'} is not "
        f"a WARC, JSON lines or Parquet file: it is an XML file {GIVE}",
    ]
    assert not (tmp_path / "out").exists()


def _rows(out, kind):
    return pq.read_table(out / kind / "extracted").to_pylist()


def test_every_file_is_done_and_none_failed(hostile_run):
    out, record = hostile_run
    phase = record["phases"]["extracted"]
    assert phase["files"] == len(EXPECTED) and phase["failed_units"] == {}
    markers = {
        json.loads(m.read_text())["outputs"]["source"].rsplit("/", 1)[-1]: json.loads(m.read_text())["totals"]
        for m in (out / "_done" / "extracted").glob("*.json")
    }
    assert set(markers) == set(EXPECTED)
    for name, info in EXPECTED.items():
        if "malformed_records" in info:
            assert markers[name]["malformed_records"] == info["malformed_records"], name
    assert phase["responses"] == phase["kept"] + phase["rejected"]
    assert phase["malformed_records"] == sum(m["malformed_records"] for m in markers.values())


def test_intact_pages_are_kept_and_hostile_ones_rejected_with_their_reason(hostile_run):
    out, record = hostile_run
    kept = {(r["source"].rsplit("/", 1)[-1], r["url"].rsplit("/", 1)[1]) for r in _rows(out, "documents")}
    rejected = {
        (r["source"].rsplit("/", 1)[-1], r["url"].rsplit("/", 1)[1]): r["reason"] for r in _rows(out, "rejected")
    }
    for name, info in EXPECTED.items():
        for page, reason in info.get("expect", {}).items():
            after = info.get("expect_after_extraction", {}).get(page)
            if after is not None:
                assert rejected.get((name, page)) in after, (name, page, rejected.get((name, page)))
            elif reason is None:
                assert (name, page) in kept, (name, page, rejected.get((name, page)))
            else:
                assert rejected.get((name, page)) == reason, (name, page)
    by_reason = record["phases"]["extracted"]["rejected_by_reason"]
    for reason in ("too_large", "decompression_bomb", "bad_http", "duplicate_record_id", "truncated_record"):
        assert by_reason.get(reason, 0) >= 1, (reason, by_reason)


def test_decoding_fixes_survive_the_whole_phase(hostile_run):
    out, _ = hostile_run
    docs = {r["url"].rsplit("/", 1)[1]: r for r in _rows(out, "documents") if "hostile-records" in r["source"]}
    assert "UTF-16 page" in docs["utf16.html"]["text"] and docs["utf16.html"]["charset"] == "utf-16-le"
    assert (
        "Grüße aus Köln" in docs["latin1-over-utf8.html"]["text"]
        and docs["latin1-over-utf8.html"]["charset"] == "utf-8"
    )
    ids = [r["id"] for r in _rows(out, "documents") + _rows(out, "rejected") if "hostile-records" in r["source"]]
    assert len(ids) == len(set(ids))  # the repeated WARC-Record-ID got its own id
