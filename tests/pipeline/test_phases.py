"""The phase layer: a phase and a filter defined in a test plug into the plan (run, resume, run.json,
--dry-run and the card read them), --phases, --dry-run, run.json as the run goes, and failures
reported per unit."""

from __future__ import annotations

import json
import random
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import ray.cloudpickle

from pipeline.cli import main
from pipeline.config import parse_config
from pipeline.phase import MapPhase
from pipeline.phases import DEFAULT_PHASES, ExtractedPhase
from pipeline.runner import _check_source, plan_context, run
from stages.base import StageSpec, reject_where, set_column
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
    label = "long enough (a test's stage)"
    needs = ("text",)
    adds = ("n_chars",)
    reasons = ("too_short",)

    def __init__(self, min_chars: int):
        self.min_chars = min_chars

    def __call__(self, batch: pa.Table) -> pa.Table:
        n = pc.utf8_length(batch.column("text"))
        batch = set_column(batch, "n_chars", n)
        return reject_where(batch, pc.less(n, self.min_chars).to_numpy(zero_copy_only=False), "too_short")


class LengthPhase(MapPhase):
    """A phase that exists only in this test module."""

    name = "length"
    label = "documents of 600 characters or more"

    def stages(self, config, prepared=None):
        return [StageSpec(LengthStage, 600)]


def _after(name: str, *phases) -> tuple:
    """The default phases with ``phases`` inserted after the one named ``name``."""
    at = [p.name for p in DEFAULT_PHASES].index(name) + 1
    return (*DEFAULT_PHASES[:at], *phases, *DEFAULT_PHASES[at:])


WITH_LENGTH = _after("deduped", LengthPhase)


@pytest.fixture
def corpus(warc_factory, tmp_path):
    rng = random.Random(3)
    long_a, long_b, short = _prose(rng, 240), _prose(rng, 240), _prose(rng, 30)
    warc_factory(
        "one.warc.gz",
        [
            Page("https://a.example/1", html("A", long_a).encode()),
            Page("https://a.example/2", html("Short", short).encode()),
        ],
    )
    warc_factory(
        "two.warc.gz",
        [
            Page("https://b.example/1", html("B", long_b).encode()),
            Page("https://b.example/copy", html("A again", long_a).encode()),
        ],
    )
    return tmp_path


FILTERS_OFF = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}


#: The phase layer is tested on extracted, deduped and test phases; the later phases have their own tests.
LATER_OFF = {"pii": {"enabled": False}, "shards": {"enabled": False}, "card": {"enabled": False}}


def _config(src, out, **extra):
    return parse_config(
        {
            "inputs": [str(src / "*.warc.gz")],
            "output": str(out),
            "filters": FILTERS_OFF,
            "langid": {"min_score": 0.0},
            **LATER_OFF,
            **extra,
        }
    )


def _config_file(src, out, tmp_path, **extra):
    path = tmp_path / "run.yaml"
    path.write_text(
        json.dumps(
            {
                "inputs": [str(src / "*.warc.gz")],
                "output": str(out),
                "filters": FILTERS_OFF,
                "langid": {"min_score": 0.0},
                **LATER_OFF,
                **extra,
            }
        )
    )
    return str(path)


def test_a_phase_from_a_test_module_runs_after_dedup_and_resumes(ray_local, corpus, tmp_path):
    out = tmp_path / "out"
    record = run(_config(corpus, out), progress=False, pipeline=WITH_LENGTH)
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

    planned = {p["name"]: p for p in record["plan"]["phases"]}  # run.json records the plan, the test's phase in it
    assert list(planned)[:3] == ["extracted", "deduped", "length"]
    assert planned["length"]["reads"] == "deduped" and planned["length"]["label"] == LengthPhase.label
    assert planned["length"]["stages"][0] | {"section": None} == {
        "name": "length",
        "label": LengthStage.label,
        "needs": ["text"],
        "adds": ["n_chars"],
        "reasons": ["too_short"],
        "section": None,
    }

    again = run(_config(corpus, out), progress=False, pipeline=WITH_LENGTH)
    assert again["phases"]["length"]["units_skipped"] == again["phases"]["length"]["units"] == 2
    assert again["phases"]["length"]["kept"] == 2
    assert {p.name: p.stat().st_mtime_ns for p in (out / "_done" / "length").glob("*.json")} == markers

    # a setting of an earlier phase changes: everything after it is redone
    redone = run(_config(corpus, out, dedup={"exact": {"enabled": False}}), progress=False, pipeline=WITH_LENGTH)[
        "phases"
    ]
    assert redone["length"]["units_skipped"] == 0 and redone["length"]["kept"] == 2
    assert redone["extracted"]["units_skipped"] == 2


def test_phases_option_runs_a_subset_and_keeps_the_rest_of_the_record(ray_local, corpus, tmp_path):
    out = tmp_path / "out"
    first = run(_config(corpus, out), progress=False, phases=["extracted"])
    assert list(first["phases"]) == ["extracted"] and not (out / "documents" / "deduped").exists()
    second = run(_config(corpus, out), progress=False, phases=["deduped"])
    assert second["phases_run"] == ["deduped"]
    assert second["phases"]["extracted"] == first["phases"]["extracted"]  # kept from the earlier record
    assert second["phases"]["deduped"]["in"] == first["phases"]["extracted"]["kept"]


def test_checking_the_source_of_a_subset_leaves_no_list_of_units_in_the_driver(ray_local, corpus, tmp_path):
    out = tmp_path / "out"
    run(_config(corpus, out), progress=False, phases=["extracted"])
    ctx = plan_context(_config(corpus, out), progress=False)
    deduped = next(p for p in ctx.phases if p.name == "deduped")
    _check_source(ctx, deduped, [deduped])  # extracted is done: no error
    assert not ctx._units and not ctx._markers  # the phase's task plans its source again (issue 39)


def test_a_phase_whose_source_never_ran_is_a_one_line_error(corpus, tmp_path, capsys):
    # without the check, deduped would read no parts and report 0 documents as a success
    cfg = _config_file(corpus, tmp_path / "out", tmp_path)
    assert main(["run", cfg, "--phases", "deduped"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("config error: --phases: phase 'deduped' reads the documents of phase 'extracted'")
    assert "add 'extracted' to --phases" in err


def _phase_line(lines: list[str], name: str) -> str:
    return next(line for line in lines if line.split()[:1] == [name])


def test_dry_run_prints_the_plan_and_writes_nothing(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    cfg = _config_file(corpus, out, tmp_path)
    assert main(["run", cfg, "--dry-run"]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0] == f"inputs: 2 files; output: {out}"
    assert "2 file units: 0 done (skipped), 2 to do  [run]" in _phase_line(lines, "extracted")
    assert "reads extracted" in _phase_line(lines, "deduped")
    # the plan: each source kind, every stage with its label, dedup's steps, what each phase writes
    for expected in (
        "source warc: HTML responses",
        "then url_filter, decode, extract",
        "source documents: documents read",
        "stage langid: language identified",
        "step signatures: MinHash signatures",
        "step write: kept and removed",
        "writes documents/deduped/",
        "disabled by the config",
    ):
        assert expected in printed, expected
    assert not out.exists()
    assert main(["run", cfg, "--dry-run", "--phases", "deduped"]) == 0
    assert "[not selected]" in _phase_line(capsys.readouterr().out.splitlines(), "extracted")


def test_dry_run_after_a_run_shows_what_is_done(ray_local, corpus, tmp_path, capsys):
    out = tmp_path / "out"
    run(_config(corpus, out), progress=False, phases=["extracted"])
    capsys.readouterr()
    assert main(["run", _config_file(corpus, out, tmp_path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "2 done (skipped), 0 to do" in _phase_line(lines, "extracted")
    assert "0 done (skipped), 1 to do" in _phase_line(lines, "deduped")


def test_unknown_or_disabled_phase_is_a_one_line_error(corpus, tmp_path, capsys):
    cfg = _config_file(corpus, tmp_path / "out", tmp_path, dedup={"enabled": False})
    assert main(["run", cfg, "--phases", "nope"]) == 2
    assert capsys.readouterr().err.strip().startswith("config error: --phases: unknown phase 'nope'")
    assert main(["run", cfg, "--phases", "deduped"]) == 2
    assert "disabled by the config" in capsys.readouterr().err


class BrokenPhase(MapPhase):
    name = "broken"

    def corpus_wide(self, config):  # asked when the engine lists its units, as the phase starts
        raise RuntimeError("planning bug")


def test_run_json_says_how_far_a_failed_run_got(ray_local, corpus, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="planning bug"):
        run(_config(corpus, out, dedup={"enabled": False}), progress=False, pipeline=_after("extracted", BrokenPhase))
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
    data[start : start + col.total_compressed_size] = b"\xff" * col.total_compressed_size
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
    assert (
        list(deduped["failed_units"]) == ["_corpus"]
        and part.stem.removeprefix("part-") in deduped["failed_units"]["_corpus"]
    )
    assert record["status"] == "failed_units"
    assert not (out / "_done" / "deduped" / "_corpus.json").exists()
    assert not (out / "_done" / "deduped" / f"{part.stem.removeprefix('part-')}.json").exists()


def test_a_filter_that_needs_the_language_fails_at_planning_without_language_id(corpus, tmp_path, capsys):
    cfg = _config_file(
        corpus,
        tmp_path / "out",
        tmp_path,
        langid={"enabled": False},
        filters={**FILTERS_OFF, "gopher_quality": {"enabled": True}},
    )
    assert main(["run", cfg]) == 2
    # Ray forwards an earlier test's worker log lines to this process's stderr ("(_unit_task pid=...) ..."): not ours
    err = "\n".join(
        line
        for line in capsys.readouterr().err.strip().splitlines()
        if not re.match(r"(\x1b\[[0-9;]*m)?\(\w+ pid=\d+", line)
    ).strip()
    assert err == (
        "config error: gopher_quality needs the 'language' column, but no stage before it adds it "
        "(language ID (langid.enabled) is off): turn that stage on or turn gopher_quality off"
    )
    assert not (tmp_path / "out").exists()


class NoDigitsFilter:
    """A filter family that exists only in this test: removes documents with more digits than letters."""

    name = "no_digits"
    label = "mostly digits removed (a test's filter)"
    needs = ("text",)
    adds = ("digit_share",)
    reasons = ("no_digits:digit_share",)

    def __init__(self, config=None):
        self.limit = (config or {}).get("max_share", 0.5)

    def __call__(self, batch: pa.Table) -> pa.Table:
        texts = pc.fill_null(batch.column("text"), "")
        digits = pc.utf8_length(pc.replace_substring_regex(texts, r"[^0-9]", ""))
        share = pc.divide(pc.cast(digits, pa.float64()), pc.max_element_wise(pc.utf8_length(texts), 1))
        batch = set_column(batch, "digit_share", share)
        return reject_where(
            batch, pc.greater(share, self.limit).to_numpy(zero_copy_only=False), "no_digits:digit_share"
        )


class ExtractedWithNoDigits(ExtractedPhase):
    """The input phase with the test's filter after the built-in ones: no edit to the runner, the CLI or the card."""

    def stages(self, config, prepared=None):
        return [*super().stages(config), StageSpec(NoDigitsFilter, {"max_share": 0.05})]


def test_a_filter_family_defined_in_a_test_shows_in_the_plan_the_run_and_the_card(ray_local, warc_factory, tmp_path):
    rng = random.Random(5)
    prose = _prose(rng, 240)
    digits = " ".join(str(rng.randrange(10**6)) for _ in range(400)) + " " + _prose(rng, 120)
    warc_factory(
        "mixed.warc.gz",
        [
            Page("https://a.example/prose", html("Prose", prose).encode()),
            Page("https://a.example/digits", html("Digits", digits).encode()),
        ],
    )
    out = tmp_path / "out"
    pipeline = (ExtractedWithNoDigits, *DEFAULT_PHASES[1:])
    cfg = parse_config(
        {
            "inputs": [str(tmp_path / "*.warc.gz")],
            "output": str(out),
            "filters": FILTERS_OFF,
            "langid": {"min_score": 0.0},
            "pii": {"enabled": False},
            "shards": {"enabled": False},
        }
    )
    record = run(cfg, progress=False, pipeline=pipeline)
    assert record["phases"]["extracted"]["rejected_by_reason"] == {"no_digits:digit_share": 1}
    stages = [s["name"] for s in record["plan"]["phases"][0]["stages"]]
    assert stages[-1] == "no_digits" and stages.index("langid") < stages.index("no_digits")
    kept = pq.read_table(out / "documents" / "extracted")
    assert kept.num_rows == 1 and "digit_share" in kept.column_names
    card = (out / "README.md").read_text()
    stats = json.loads((out / "card" / "stats.json").read_text())
    step = next(r for r in stats["funnel"] if r["stage"] == "no_digits")
    assert step["label"] == NoDigitsFilter.label and step["removed"] == 1 and stats["funnel_adds_up"]
    assert NoDigitsFilter.label in card


def test_a_column_no_stage_adds_is_an_error_at_plan_time(corpus, tmp_path):
    class NeedsScore(NoDigitsFilter):
        name = "needs_score"
        needs = ("toxicity_score",)

    class Extracted(ExtractedPhase):
        def stages(self, config, prepared=None):
            return [*super().stages(config), StageSpec(NeedsScore)]

    from pipeline.config import ConfigError
    from pipeline.runner import plan_context

    with pytest.raises(
        ConfigError, match="needs_score needs the 'toxicity_score' column, but no stage before it adds it"
    ):
        plan_context(_config(corpus, tmp_path / "out"), phases=(Extracted, *DEFAULT_PHASES[1:]))
