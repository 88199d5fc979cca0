"""The phase layer: a phase defined in a test runs after dedup and resumes, --phases, --dry-run,
run.json as the run goes, and failures reported per unit."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import ray.cloudpickle

from pipeline.cli import main
from pipeline.config import parse_config
from pipeline.part_phase import PartPhase
from pipeline.phase import register, unregister
from pipeline.runner import run
from stages.base import reject_where, set_column
from tests.conftest import Page, html

pytestmark = pytest.mark.ray

# Ray workers unpickle the test phase; ship this module by value so they need not import it.
ray.cloudpickle.register_pickle_by_value(__import__(__name__))

WORDS = "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver".split()


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(words // 12))


class LengthStage:
    """Adds ``n_chars`` and rejects documents shorter than ``min_chars``."""

    name = "length"

    def __init__(self, min_chars: int):
        self.min_chars = min_chars

    def __call__(self, batch: pa.Table) -> pa.Table:
        n = pc.utf8_length(batch.column("text"))
        batch = set_column(batch, "n_chars", n)
        return reject_where(batch, pc.less(n, self.min_chars).to_numpy(zero_copy_only=False), "too_short")


class LengthPhase(PartPhase):
    """A phase that exists only in this test module."""

    name = "length"

    def settings(self, config):
        return {"min_chars": 600}

    def stages(self, config, prepared):
        return [LengthStage(600)]


@pytest.fixture
def length_phase():
    register(LengthPhase, after="deduped")
    yield LengthPhase
    unregister("length")


@pytest.fixture
def corpus(warc_factory, tmp_path):
    rng = random.Random(3)
    long_a, long_b, short = _prose(rng, 240), _prose(rng, 240), _prose(rng, 30)
    warc_factory("one.warc.gz", [Page("https://a.example/1", html("A", long_a).encode()),
                                 Page("https://a.example/2", html("Short", short).encode())])
    warc_factory("two.warc.gz", [Page("https://b.example/1", html("B", long_b).encode()),
                                 Page("https://b.example/copy", html("A again", long_a).encode())])
    return tmp_path


FILTERS_OFF = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}


#: The phase layer is tested on extracted, deduped and test phases; the later phases have their own tests.
LATER_OFF = {"pii": {"enabled": False}, "shards": {"enabled": False}, "card": {"enabled": False}}


def _config(src, out, **extra):
    return parse_config({"inputs": [str(src / "*.warc.gz")], "output": str(out), "filters": FILTERS_OFF,
                         "langid": {"min_score": 0.0}, **LATER_OFF, **extra})


def _config_file(src, out, tmp_path, **extra):
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps({"inputs": [str(src / "*.warc.gz")], "output": str(out), "filters": FILTERS_OFF,
                                "langid": {"min_score": 0.0}, **LATER_OFF, **extra}))
    return str(path)


def test_a_phase_from_a_test_module_runs_after_dedup_and_resumes(ray_local, length_phase, corpus, tmp_path, capsys):
    out = tmp_path / "out"
    record = run(_config(corpus, out), progress=False)
    assert list(record["phases"]) == ["extracted", "deduped", "length"] and record["status"] == "ok"
    deduped, length = record["phases"]["deduped"], record["phases"]["length"]
    assert deduped["rejected_by_reason"] == {"duplicate": 1}  # the copy has another title
    assert length["in"] == deduped["kept"] == 3
    assert length["rejected_by_reason"] == {"too_short": 1} and length["kept"] == 2
    kept = pq.read_table(out / "documents" / "length")
    assert kept.num_rows == 2 and min(kept.column("n_chars").to_pylist()) >= 600
    assert set(pq.read_table(out / "rejected" / "length").column("stage").to_pylist()) == {"length"}
    markers = {p.name: p.stat().st_mtime_ns for p in (out / "_done" / "length").glob("*.json")}
    assert len(markers) == 2  # one per part (both input files kept documents)

    again = run(_config(corpus, out), progress=False)
    assert again["phases"]["length"]["units_skipped"] == again["phases"]["length"]["units"] == 2
    assert again["phases"]["length"]["kept"] == 2
    assert {p.name: p.stat().st_mtime_ns for p in (out / "_done" / "length").glob("*.json")} == markers

    # a setting of an earlier phase changes: everything after it is redone
    capsys.readouterr()
    assert main(["run", _config_file(corpus, out, tmp_path, dedup={"exact": {"enabled": False}}), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "phase length: " in printed and '"kept": 2' in printed
    redone = json.loads((out / "run.json").read_text())["phases"]
    assert redone["length"]["units_skipped"] == 0 and redone["extracted"]["units_skipped"] == 2


def test_phases_option_runs_a_subset_and_keeps_the_rest_of_the_record(ray_local, corpus, tmp_path):
    out = tmp_path / "out"
    first = run(_config(corpus, out), progress=False, phases=["extracted"])
    assert list(first["phases"]) == ["extracted"] and not (out / "documents" / "deduped").exists()
    second = run(_config(corpus, out), progress=False, phases=["deduped"])
    assert second["phases_run"] == ["deduped"]
    assert second["phases"]["extracted"] == first["phases"]["extracted"]  # kept from the earlier record
    assert second["phases"]["deduped"]["in"] == first["phases"]["extracted"]["kept"]


def test_a_phase_whose_source_never_ran_is_a_one_line_error(corpus, tmp_path, capsys):
    # without the check, deduped would read no parts and report 0 documents as a success
    cfg = _config_file(corpus, tmp_path / "out", tmp_path)
    assert main(["run", cfg, "--phases", "deduped"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("config error: --phases: phase 'deduped' reads the documents of phase 'extracted'")
    assert "add 'extracted' to --phases" in err


def test_dry_run_prints_the_plan_and_writes_nothing(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    cfg = _config_file(corpus, out, tmp_path)
    assert main(["run", cfg, "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"inputs: 2 files; output: {out}"
    assert "extracted" in lines[1] and "2 file units: 0 done (skipped), 2 to do  [run]" in lines[1]
    assert "deduped" in lines[2] and "reads extracted" in lines[2]
    assert not out.exists()
    assert main(["run", cfg, "--dry-run", "--phases", "deduped"]) == 0
    assert "[not selected]" in capsys.readouterr().out.splitlines()[1]


def test_dry_run_after_a_run_shows_what_is_done(ray_local, corpus, tmp_path, capsys):
    out = tmp_path / "out"
    run(_config(corpus, out), progress=False, phases=["extracted"])
    capsys.readouterr()
    assert main(["run", _config_file(corpus, out, tmp_path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "2 done (skipped), 0 to do" in lines[1] and "0 done (skipped), 1 to do" in lines[2]


def test_unknown_or_disabled_phase_is_a_one_line_error(corpus, tmp_path, capsys):
    cfg = _config_file(corpus, tmp_path / "out", tmp_path, dedup={"enabled": False})
    assert main(["run", cfg, "--phases", "nope"]) == 2
    assert capsys.readouterr().err.strip().startswith("config error: --phases: unknown phase 'nope'")
    assert main(["run", cfg, "--phases", "deduped"]) == 2
    assert "disabled by the config" in capsys.readouterr().err


class BrokenPhase(PartPhase):
    name = "broken"

    def units(self, ctx):
        raise RuntimeError("planning bug")


def test_run_json_says_how_far_a_failed_run_got(ray_local, corpus, tmp_path):
    out = tmp_path / "out"
    register(BrokenPhase, after="extracted")
    try:
        with pytest.raises(RuntimeError, match="planning bug"):
            run(_config(corpus, out, dedup={"enabled": False}), progress=False)
    finally:
        unregister("broken")
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "error" and "planning bug" in record["error"]
    assert record["phases"]["extracted"]["kept"] == 4 and "broken" not in record["phases"]
    assert record["finished"] is not None


def _corrupt_column(path, column: str) -> None:
    """Overwrite the data of one column chunk with garbage (the file's footer stays valid)."""
    md = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    rg = md.row_group(0)
    col = next(rg.column(i) for i in range(rg.num_columns) if rg.column(i).path_in_schema == column)
    start = col.dictionary_page_offset or col.data_page_offset
    data[start:start + col.total_compressed_size] = b"\xff" * col.total_compressed_size
    path.write_bytes(bytes(data))


def test_a_failure_while_writing_dedup_outputs_is_a_failed_part(ray_local, corpus, tmp_path, capsys):
    out = tmp_path / "out"
    cfg = _config_file(corpus, out, tmp_path)
    run(_config(corpus, out), progress=False, phases=["extracted"])
    # dedup's signatures read id, text and url; writing the outputs reads every column
    part = next((out / "documents" / "extracted").glob("part-two-*.parquet"))
    _corrupt_column(part, "language")
    capsys.readouterr()
    assert main(["run", cfg, "--phases", "deduped", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "failed: deduped: _corpus:" in err and "rerun the same command" in err
    record = json.loads((out / "run.json").read_text())
    deduped = record["phases"]["deduped"]
    assert list(deduped["failed_parts"]) == [part.stem.removeprefix("part-")]
    assert record["status"] == "failed_units"
    assert not (out / "_done" / "deduped" / "_corpus.json").exists()
    assert not (out / "_done" / "deduped" / f"{part.stem.removeprefix('part-')}.json").exists()


def test_a_filter_that_needs_the_language_fails_at_planning_without_language_id(corpus, tmp_path, capsys):
    cfg = _config_file(corpus, tmp_path / "out", tmp_path, langid={"enabled": False},
                       filters={**FILTERS_OFF, "gopher_quality": {"enabled": True}})
    assert main(["run", cfg]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("config error: gopher_quality needs the 'language' column, but no stage before it adds it "
                   "(language ID (langid.enabled) is off): turn that stage on or turn gopher_quality off")
    assert not (tmp_path / "out").exists()
