"""A team's own components (pipeline/plugins.py, pipeline/exports.py, pipeline/api.py), without Ray: every bad
``use`` is one config line naming the field before any work; the plan places, checks and fingerprints them as
built-ins; the JSON lines export encodes what Python's json reads back.  The example recipe is imported as a
user's package would be, from examples/ on the path (tests/integration/test_recipe_example.py runs it)."""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.cli import main
from pipeline.config import ConfigError, parse_config
from pipeline.phases import DEFAULT_PHASES
from pipeline.plan import build_plan
from tests.conftest import REPO, SAMPLES

EXAMPLES = REPO / "examples"
if str(EXAMPLES) not in sys.path:  # as a user's PYTHONPATH would hold it: never imported from inside the package
    sys.path.insert(0, str(EXAMPLES))

WARC = str(sorted(SAMPLES.glob("*.warc.gz"))[0])
LINKS = {"use": "my_recipe.filters:LinkDensity", "with": {"max_per_100_words": 5}}
EDU = {"use": "my_recipe.taggers:EduWords", "filter": {"threshold": 0.2}}


def _config(tmp_path: Path, **extra):
    return parse_config({"inputs": [WARC], "output": str(tmp_path / "out"), **extra})


def _error(tmp_path: Path, **extra) -> str:
    with pytest.raises(ConfigError) as e:
        _config(tmp_path, **extra)
    return str(e.value)


@pytest.mark.parametrize(
    "extra, expected",
    [
        (
            {"stages": [{"use": "no_such_recipe.filters:X"}]},
            "config error: stages.0.use: module 'no_such_recipe.filters' cannot be imported: "
            "put its folder on PYTHONPATH",
        ),
        (
            {"stages": [{"use": "my_recipe.filters"}]},
            "config error: stages.0.use: 'my_recipe.filters' is not module:Class",
        ),
        (
            {"stages": [{"use": "my_recipe.filters:Nothing"}]},
            "config error: stages.0.use: module 'my_recipe.filters' has no 'Nothing'",
        ),
        (
            {"stages": [{"use": "my_recipe.filters:LINK"}]},
            "config error: stages.0.use: my_recipe.filters:LINK is a str, not a class",
        ),
        (
            {"stages": [{"use": "my_recipe.csv_source:CsvSource"}]},
            "config error: stages.0.use: CsvSource.needs must be a tuple of strings",
        ),
        (
            {"stages": [{"use": "my_recipe.filters:LinkDensity", "with": {"max": 3}}]},
            "config error: stages.0.with: LinkDensity takes no setting 'max' (it takes: max_per_100_words)",
        ),
        (
            {"stages": [{"use": "my_recipe.filters:LinkDensity", "filter": {"threshold": 0.5}}]},
            "config error: stages.0: filter: LinkDensity declares no scores",
        ),
        (
            {"stages": [{"use": "my_recipe.taggers:EduWords", "filter": {"threshold": 0.5, "score": "other"}}]},
            "config error: stages.0: filter.score: 'other' is not a score EduWords declares (edu_score)",
        ),
        (
            {"stages": [{"use": "my_recipe.taggers:EduWords", "phase": "shards"}]},
            "config error: stages.0.phase: Input should be 'extracted' or 'final'",
        ),
        (
            {"readers": [{"use": "my_recipe.filters:LinkDensity"}]},
            "config error: readers.0.use: LinkDensity has no records_label",
        ),
        (
            {"exports": [{"name": "docs", "with": {"compresion": "none"}}]},
            "config error: exports.0.with: JsonlExport takes no setting 'compresion' (it takes: compression, layout)",
        ),
        (
            {"exports": [{"name": "docs", "use": "my_recipe.taggers:EduWords"}]},
            "config error: exports.0.use: EduWords has no suffix",
        ),
        (
            {"exports": [{"name": "docs"}, {"name": "docs", "use": "parquet"}]},
            "config error: exports: two exports are named 'docs'",
        ),
        (
            {"dedup": {"keep": {"score_column": "edu_score"}}},
            "config error: dedup.keep.score_column: no classifier writes 'edu_score' (this run's scores: none): "
            "name one of "
            "them, or add the classifier or a tagger",
        ),
    ],
)
def test_a_bad_component_is_one_config_line_naming_its_field(tmp_path, extra, expected):
    message = _error(tmp_path, **extra)
    assert message.startswith(expected), message
    assert "\n" not in message


def test_curate_validate_says_it_before_any_work(tmp_path, capsys):
    config = tmp_path / "job.yaml"
    config.write_text(
        json.dumps(
            {
                "inputs": [WARC],
                "output": str(tmp_path / "out"),
                "stages": [{"use": "my_recipe.filters:LinkDensity", "with": {"max": 3}}],
            }
        )
    )
    assert main(["validate", str(config)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["config error: stages.0.with: LinkDensity takes no setting 'max' (it takes: max_per_100_words)"]
    assert not (tmp_path / "out").exists()


def test_a_tagger_score_is_a_dedup_keep_column_and_a_filter(tmp_path):
    config = _config(tmp_path, stages=[LINKS, EDU], dedup={"keep": {"score_column": "edu_score"}})
    plan, _ = build_plan(config, DEFAULT_PHASES)
    extracted = [s.name for s in plan.phase("extracted").stages]
    # after the built-in filters, in their order; the classifiers (none here) would come after them
    assert extracted[extracted.index("fineweb") + 1 :] == ["link_density", "edu_words"]
    assert plan.stage("extracted", "link_density").section == "stages.0"
    assert plan.stage("extracted", "edu_words").scores == ("edu_score",)
    assert plan.scores() == ["edu_score"]  # what the card's score section and the dedup keep rule read
    final = plan.phase("final")
    rule = plan.stage("final", "edu_filter")
    assert [s.name for s in final.stages] == ["edu_filter", "pii"]
    assert rule.needs == ("edu_score",) and rule.reasons == ("edu",) and rule.section == "stages.1.filter"


def test_a_final_stage_runs_before_pii_redaction(tmp_path):
    config = _config(tmp_path, stages=[{**LINKS, "phase": "final"}], pii={"enabled": True})
    plan, _ = build_plan(config, DEFAULT_PHASES)
    assert [s.name for s in plan.phase("final").stages] == ["link_density", "pii"]


def test_a_stage_named_as_a_built_in_one_is_refused_at_plan_time(tmp_path, monkeypatch):
    from my_recipe.filters import LinkDensity

    monkeypatch.setattr(LinkDensity, "name", "c4")
    config = _config(tmp_path, stages=[LINKS])
    with pytest.raises(
        ConfigError,
        match=r"^config error: stages.0: the stage name 'c4' is taken by filters.c4 in "
        r"phase extracted: give it its own name$",
    ):
        build_plan(config, DEFAULT_PHASES)


def test_a_stage_needing_a_column_nothing_adds_is_the_column_check_error(tmp_path, monkeypatch):
    from my_recipe.filters import LinkDensity

    monkeypatch.setattr(LinkDensity, "needs", ("text", "links"))
    with pytest.raises(ConfigError, match=r"^config error: link_density needs the 'links' column, but no stage"):
        build_plan(_config(tmp_path, stages=[LINKS]), DEFAULT_PHASES)


def test_exports_are_phases_after_the_phase_they_copy(tmp_path):
    config = _config(
        tmp_path,
        stages=[EDU],
        exports=[
            {"name": "docs", "phase": "final"},
            {"name": "early", "use": "parquet", "phase": "extracted", "columns": ["id", "text", "edu_score"]},
        ],
    )
    plan, _ = build_plan(config, DEFAULT_PHASES)
    names = [p.name for p in plan.phases]
    assert names == ["extracted", "export_early", "deduped", "final", "export_docs", "shards", "card"]
    early = plan.phase("export_early")
    assert early.role == "export" and early.reads == "extracted" and not early.reported and not early.stages
    assert [(s.path, s.role) for s in early.sinks] == [("exports/early/", "export")]
    assert plan.phase("deduped").reads == "extracted" and plan.phase("shards").reads == "final"  # unchanged


@pytest.mark.parametrize(
    "export, expected",
    [
        (
            {"name": "x", "phase": "shards"},
            "config error: exports.0.phase: 'shards' is not a phase that writes documents "
            "(phases: extracted, deduped, final)",
        ),
        (
            {"name": "x", "phase": "extracted", "columns": ["id", "edu_score"]},
            "config error: exports.0.columns: the documents of extracted have no column 'edu_score'",
        ),
    ],
)
def test_an_export_of_nothing_is_a_plan_error(tmp_path, export, expected):
    with pytest.raises(ConfigError) as e:
        build_plan(_config(tmp_path, exports=[export]), DEFAULT_PHASES)
    assert str(e.value).startswith(expected), str(e.value)


def test_fingerprints_cover_use_and_with(tmp_path):
    from core.storage import Storage
    from pipeline.context import RunContext
    from pipeline.engine.units import units

    def fingerprints(**extra):
        config = _config(tmp_path, **extra)
        plan, phases = build_plan(config, DEFAULT_PHASES)
        ctx = RunContext(config, Storage(config.output.root), [WARC], phases, plan, False, None)
        return [u.fingerprint for u in units(ctx, phases[0])]

    base = fingerprints(stages=[LINKS])
    assert fingerprints(stages=[LINKS]) == base
    assert fingerprints(stages=[{**LINKS, "with": {"max_per_100_words": 6}}]) != base
    assert fingerprints(stages=[{**LINKS, "phase": "final"}]) != base
    # a tagger's filter runs after dedup: it does not redo the units that score
    assert fingerprints(stages=[EDU]) == fingerprints(stages=[{**EDU, "filter": {"threshold": 0.9}}])


def test_jsonl_lines_are_what_json_reads_back():
    from stages.writers.jsonl import to_bytes

    text = 'quote " backslash \\ newline\n tab\t nul\x00 bell\x07 unicode é 漢字 \u2028 slash /'
    table = pa.table(
        {
            "id": ["a", "b", "c"],
            "text": [text, None, ""],
            "url": ["https://x.example/a?b=1&c=2", None, "u"],
            "score": pa.array([0.25, float("nan"), float("inf")], pa.float32()),
            "n": pa.array([1, None, -3], pa.int64()),
            "ok": [True, False, None],
            "warc_date": pa.array([0, None, 86400], pa.timestamp("s", tz="UTC")),
            "tags": [["a", "b"], None, []],
        }
    )
    lines = to_bytes(table).decode("utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [list(r) for r in rows] == [["id", "text", "metadata"]] * 3
    assert rows[0]["text"] == text and rows[1]["text"] is None and rows[2]["text"] == ""
    assert rows[0]["metadata"] == {
        "url": "https://x.example/a?b=1&c=2",
        "score": 0.25,
        "n": 1,
        "ok": True,
        "warc_date": "1970-01-01T00:00:00Z",
        "tags": ["a", "b"],
    }
    assert rows[1]["metadata"]["score"] is None and rows[2]["metadata"]["score"] is None  # NaN, inf: null
    assert rows[2]["metadata"]["warc_date"] == "1970-01-02T00:00:00Z" and rows[1]["metadata"]["ok"] is False
    flat = [json.loads(line) for line in to_bytes(table.select(["url", "n"]), "flat").decode().splitlines()]
    assert flat == [{"url": "https://x.example/a?b=1&c=2", "n": 1}, {"url": None, "n": None}, {"url": "u", "n": -3}]
    assert to_bytes(table.slice(0, 0)) == b""


def test_jsonl_export_is_deterministic_gzip(tmp_path):
    from pipeline.exports import JsonlExport

    table = pa.table({"id": ["a"], "text": ["x"]})
    outputs = []
    for _ in range(2):
        path = tmp_path / f"{len(outputs)}.jsonl.gz"
        with open(path, "wb") as out:
            fmt = JsonlExport()
            fmt.write(table, out)
            fmt.finish(out)
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1]  # mtime 0, no file name: the same rows give the same bytes
    assert json.loads(gzip.decompress(outputs[0])) == {"id": "a", "text": "x"}


def test_the_api_makes_the_entries_the_yaml_would(tmp_path):
    from my_recipe.filters import LinkDensity
    from my_recipe.taggers import EduWords

    from pipeline.api import build, export, stage
    from pipeline.paths import resolve_paths

    config = build(
        {"inputs": [WARC], "output": str(tmp_path / "out")},
        stages=[stage(LinkDensity, max_per_100_words=5), stage(EduWords, filter={"threshold": 0.2})],
        exports=[export("docs", use="jsonl")],
    )
    yaml_config = _config(tmp_path, stages=[LINKS, EDU], exports=[{"name": "docs", "use": "jsonl"}])
    resolve_paths(yaml_config)  # as load_config does: the API reads paths from the working directory too
    assert config.model_dump(mode="json") == yaml_config.model_dump(mode="json")


def test_the_api_refuses_what_workers_cannot_rebuild(tmp_path):
    from my_recipe.filters import LinkDensity

    from pipeline.api import build

    with pytest.raises(ConfigError, match="give the class"):
        build({"inputs": [WARC], "output": str(tmp_path / "out")}, stages=[LinkDensity(max_per_100_words=5)])
    local = type("Local", (), {"__module__": "__main__"})
    with pytest.raises(ConfigError, match="defined in __main__: Ray's workers cannot import it"):
        build({"inputs": [WARC], "output": str(tmp_path / "out")}, stages=[local])


def test_a_stage_is_isolated_row_by_row_as_a_built_in_is():
    """run_chain's fault isolation holds for a user stage: a row it raises on is a stage_error, the rest go on."""
    from my_recipe.taggers import EduWords

    from stages.base import ChainStats, StageSpec, run_chain

    stage = StageSpec(EduWords, {"saturation": 0.05}, "stages.0", kwargs=True).build()
    real = stage.__call__

    class Flaky(EduWords):
        def __call__(self, batch):
            if "boom" in batch.column("text").to_pylist():
                raise ValueError("boom")
            return real(batch)

    flaky = StageSpec(Flaky, {"saturation": 0.05}, "stages.0", kwargs=True).build()
    batch = pa.table({"id": ["1", "2"], "text": ["a lesson to learn", "boom"]})
    kept, rejected = run_chain([flaky], batch, ChainStats())
    assert kept.column("id").to_pylist() == ["1"] and not math.isnan(kept.column("edu_score")[0].as_py())
    assert rejected[0].column("reason").to_pylist() == ["stage_error"]
    assert rejected[0].column("stage").to_pylist() == ["edu_words"]


def test_a_reason_a_stage_does_not_declare_is_a_counted_stage_error():
    """The plan and the card show the reasons a stage declares: a row given another one is not silently a new
    reason; it is rejected as the stage's error, counted, as any row the stage fails on."""
    from my_recipe.filters import LinkDensity

    from stages.base import ChainStats, StageSpec, run_chain

    class Undeclared(LinkDensity):
        reasons = ("too_many_links",)  # declares one reason, gives another (link_density)

    stage = StageSpec(Undeclared, {"max_per_100_words": 5}, "stages.0", kwargs=True).build()
    links = " ".join(f"http://x.example/{i}" for i in range(10))
    batch = pa.table({"id": ["1", "2"], "text": ["plain words and no links at all", links]})
    stats = ChainStats()
    kept, rejected = run_chain([stage], batch, stats)
    assert kept.column("id").to_pylist() == ["1"]
    assert rejected[0].column("reason").to_pylist() == ["stage_error"]
    assert "which its reasons do not list (too_many_links)" in rejected[0].column("details")[0].as_py()
    assert stats.counters["link_density.error.UndeclaredReason"] == 1
