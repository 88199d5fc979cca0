"""The engine (pipeline/engine): fingerprints taken from the components' own declarations (a changed file a
stage reads redoes what it ran on; settings of how a phase runs do not), a phase of steps declared in this
module run, resumed and failed as declared, a step's empty units in one marker, and the card reading roles
from the plan (a phase that writes no documents is not taken for the shards)."""

from __future__ import annotations

import json
import random
import tracemalloc
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.storage import Storage
from pipeline.config import parse_config
from pipeline.context import RunContext
from pipeline.engine import markers, settings
from pipeline.engine.run import run_phase
from pipeline.phase import FINAL, MAP, PARTS, ROLE_EXPORT, SHUFFLE, Phase, Step
from pipeline.phases import DEFAULT_PHASES
from pipeline.result import UnitResult
from pipeline.runner import plan_context, run
from pipeline.units import UnitWork
from stages.base import ChainStats, StageSpec
from tests.conftest import Page, html
from tests.dedup_standalone import FinishedParts, finished_parts

FILTERS_OFF = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}
WORDS = "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver".split()


def _prose(rng: random.Random, words: int = 240) -> str:
    return " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(words // 12))


# -- fingerprints from declarations ----------------------------------------------------------------------


def _input_fingerprints(tmp_path, **extra) -> dict[str, str]:
    cfg = parse_config({"inputs": [str(tmp_path / "*.warc.gz")], "output": str(tmp_path / "out"), **extra})
    ctx = plan_context(cfg, progress=False)
    return {u.name: u.fingerprint for u in ctx.units_of(ctx.phases[0])}


def test_a_block_list_file_changed_in_place_changes_the_input_files_fingerprints(warc_factory, tmp_path):
    """The URL filter reads its block lists: the engine fingerprints the files its config names, by content
    (the phase's hand-kept settings covered their paths only: a new list at the same path redid nothing)."""
    warc_factory("one.warc.gz", [Page("https://a.example/1", html("A", "text").encode())])
    blocked = tmp_path / "blocked.txt"
    blocked.write_text("nothing.example\n")
    urls = {"filters": {"url": {"block_domains_files": [str(blocked)]}}}
    before = _input_fingerprints(tmp_path, **urls)
    assert _input_fingerprints(tmp_path, **urls) == before  # nothing changed: current
    blocked.write_text("a.example\n")
    after = _input_fingerprints(tmp_path, **urls)
    assert before.keys() == after.keys() and all(before[k] != after[k] for k in before)


def test_settings_of_how_a_phase_runs_leave_its_fingerprints_alone(tmp_path):
    def shards(**over):
        cfg = parse_config({"inputs": ["x"], "output": str(tmp_path / "out"), "shards": over})
        ctx = RunContext(cfg, Storage(str(tmp_path / "out")), [], [FinishedParts("final"), DEFAULT_PHASES[3]()])
        ctx.use_parts("final", [])
        return [u.fingerprint for u in ctx.units_of(ctx.phases[-1])]

    base = shards()
    groups = parse_config({"inputs": ["x"], "output": "o"}).shards.shuffle.groups
    assert len(base) == groups + 1  # the groups, the manifest
    assert shards(local_max_docs=0, trainer="megatron", layout={"max_dropped_share": 0.5}) == base  # run_only
    assert shards(shuffle={"seed": 7}) != base


class Tagger:
    name = "tagger"
    label = "a test's tagger"
    needs = ("text",)
    adds = ("edu_value",)
    reasons = ()
    scores = ("edu_value",)

    def __init__(self, config):
        self.config = config

    @classmethod
    def depends_on(cls, config):
        return {k: v for k, v in config.items() if k != "batch"}  # its batch size changes nothing it writes


def test_a_stage_declares_what_its_fingerprint_covers():
    a = settings.stage(StageSpec(Tagger, {"threshold": 0.5, "batch": 8}), None)
    assert a == settings.stage(StageSpec(Tagger, {"threshold": 0.5, "batch": 64}), None)
    assert a != settings.stage(StageSpec(Tagger, {"threshold": 0.6, "batch": 8}), None)
    assert a["stage"] == f"{__name__}.Tagger" and StageSpec(Tagger, {}).info().scores == ("edu_value",)


# -- a phase of steps, declared here -------------------------------------------------------------------

CALLS: list[tuple[str, str]] = []  # (step, unit) as each ran


def _count(job, todo):
    """MAP: each part's rows (tally_counts/<part>.json), marked by UnitWork where the engine keeps step markers."""
    for unit in todo:
        CALLS.append(("count", unit.name))
        with UnitWork.for_phase(job.storage, job.phase.name, unit) as work:
            try:
                part = job.storage.path("documents", job.source, f"part-{unit.name}.parquet")
                rows = pq.ParquetFile(part).metadata.num_rows
            except Exception as e:  # noqa: BLE001 - the unit fails alone
                yield UnitResult.failure(unit.name, f"{type(e).__name__}: {e}")
                continue
            job.storage.write_json({"rows": rows}, "tally_counts", f"{unit.name}.json")
            yield work.commit(UnitResult(unit.name, totals={"rows": rows}))


def _total(job):
    """SHUFFLE: what the count step wrote (its files, not its markers), times a setting."""
    CALLS.append(("total", ""))
    rows = sum(job.storage.read_json("tally_counts", n)["rows"] for n in job.storage.list("tally_counts"))
    total = rows * job.config.dedup.batch_docs
    job.storage.write_json({"total": total}, "tally", "total.json")
    return {"total": total}


def _done(job, unit):
    CALLS.append(("done", unit.name))
    return UnitResult(unit.name, totals={"total": job.summary["total"], "parts": len(job.parts)})


class TallyPhase(Phase):
    name = "tally"
    unit_kind = "corpus"
    role = ROLE_EXPORT

    def steps(self, config):
        return [
            Step(
                "count",
                "rows per part",
                MAP,
                _count,
                reads=(PARTS,),
                resume=True,
                outputs=lambda config: [("tally_counts",)],
                when=lambda config: config.dedup.keep_intermediate,
            ),
            Step(
                "total",
                "rows x a setting",
                SHUFFLE,
                _total,
                depends=("count",),
                sections=("dedup.batch_docs",),
                outputs=lambda config: [("tally",)],
            ),
            Step("done", "the corpus marked", FINAL, _done, depends=("total",), unit="_all", counted=True),
        ]


def _parts(root, rows: dict[str, int]) -> Storage:
    storage = Storage(str(root))
    for name, n in rows.items():
        table = pa.table({"id": [f"{name}-{i}" for i in range(n)]})
        storage.write_parquet(table, "documents", "extracted", f"part-{name}.parquet")
        storage.write_json({"unit": name, "fingerprint": f"fp-{name}"}, "_done", "extracted", f"{name}.json")
    return storage


def _tally(storage: Storage, batch_docs: int = 1, count: bool = True) -> dict:
    cfg = parse_config(
        {"inputs": ["x"], "output": storage.root_uri, "dedup": {"batch_docs": batch_docs, "keep_intermediate": count}}
    )
    # in this process: the test watches which steps ran (CALLS)
    ctx = RunContext(cfg, storage, [], [FinishedParts("extracted"), TallyPhase()], progress=False, beside=False)
    ctx.use_parts("extracted", finished_parts(storage, "extracted"))
    CALLS.clear()
    return run_phase(ctx, ctx.phases[-1])


def test_a_phase_of_steps_runs_resumes_and_reruns_what_a_setting_changes(tmp_path):
    storage = _parts(tmp_path, {"a": 3, "b": 5})
    first = _tally(storage)
    assert first["total"] == 8 and first["parts"] == 2 and first["units"] == 1 and not first["failed_units"]
    assert sorted(CALLS) == [("count", "a"), ("count", "b"), ("done", "_all"), ("total", "")]
    assert sorted(p.name for p in (tmp_path / "_done" / "tally" / "count").glob("*.json")) == ["a.json", "b.json"]
    assert json.loads((tmp_path / "_done" / "tally" / "_all.json").read_text())["totals"]["total"] == 8

    again = _tally(storage)
    assert again["units_skipped"] == 1 and CALLS == []  # current: nothing runs

    changed = _tally(storage, batch_docs=10)  # a setting of the shuffle step: it and the final step rerun
    assert changed["total"] == 80 and sorted(CALLS) == [("done", "_all"), ("total", "")]  # the parts resumed


def test_a_step_the_config_stops_running_loses_its_outputs_and_its_markers(tmp_path):
    storage = _parts(tmp_path, {"a": 3, "b": 5})
    assert _tally(storage)["total"] == 8
    assert _tally(storage, count=False)["total"] == 0  # the count step off: its files are stale, deleted
    assert not (tmp_path / "tally_counts").exists() and not (tmp_path / "_done" / "tally" / "count").exists()
    again = _tally(storage)  # on again: its units are redone (their outputs are gone), not taken as done
    assert again["total"] == 8 and ("count", "a") in CALLS and ("count", "b") in CALLS


def test_a_failed_unit_stops_the_steps_after_it_and_is_reported_once_on_the_phases_unit(tmp_path):
    storage = _parts(tmp_path, {"a": 3, "b": 5})
    (tmp_path / "documents" / "extracted" / "part-b.parquet").write_bytes(b"not parquet")
    failed = _tally(storage)
    assert list(failed["failed_units"]) == ["_all"] and "b:" in failed["failed_units"]["_all"]
    assert list(failed["failed_steps"]) == ["count"] and list(failed["failed_steps"]["count"]) == ["b"]
    assert ("total", "") not in CALLS and not (tmp_path / "_done" / "tally" / "_all.json").exists()
    _parts(tmp_path, {"b": 5})  # fixed: a rerun redoes that part only, then the steps after it
    fixed = _tally(storage)
    assert fixed["total"] == 8 and sorted(CALLS) == [("count", "b"), ("done", "_all"), ("total", "")]


def test_the_empty_units_of_a_step_share_one_marker(tmp_path):
    storage = Storage(str(tmp_path))
    empty = [UnitResult(f"g{i}", totals={"groups": 1}, empty=True) for i in range(3)]
    markers.record_empty(storage, "p", "groups", True, "fp1", empty[:2])
    markers.record_empty(storage, "p", "groups", True, "fp1", empty[2:])
    found = markers.read(storage, "p")
    assert sorted(found) == ["g0", "g1", "g2"]
    assert [p.name for p in (tmp_path / "_done" / "p").iterdir()] == ["_empty_groups.json"]
    assert all(m.fingerprint == markers.unit_fingerprint("fp1", n) and m.empty for n, m in found.items())
    wanted = {n: m.fingerprint for n, m in found.items()}
    results = list(markers.results(storage, "p", None, wanted))  # their counts: read again when added up
    assert sorted(r.unit for r in results) == ["g0", "g1", "g2"] and all(r.totals == {"groups": 1} for r in results)
    markers.record_empty(storage, "p", "groups", True, "fp2", empty[:1])  # another corpus: the old list goes
    assert sorted(markers.read(storage, "p")) == ["g0"]


# -- the driver holds counts, not a result per unit (issue 39) ------------------------------------------------


def _weighty(job, todo):
    """MAP: a result of ~25 KB in memory per part (300 stage counters, as a long chain of stages reports), marked."""
    for unit in todo:
        with UnitWork.for_phase(job.storage, job.phase.name, unit) as work:
            counters = Counter({f"stage{i}.count": i for i in range(300)})
            yield work.commit(UnitResult(unit.name, docs_in=2, kept=1, stages=ChainStats(counters=counters)))


class WeightyPhase(Phase):
    name = "weighty"
    unit_kind = "part"
    role = ROLE_EXPORT

    def steps(self, config):
        return [Step("each", "a weighty result per part", MAP, _weighty, reads=(PARTS,), counted=True, resume=True)]


def _driver_peak(storage: Storage) -> tuple[dict, int]:
    """The phase's summary and the peak of the Python heap while the driver ran it (units, markers, results)."""
    cfg = parse_config({"inputs": ["x"], "output": storage.root_uri})
    # in this process, as the task beside the driver would run it: its heap is what is measured
    ctx = RunContext(cfg, storage, [], [FinishedParts("extracted"), WeightyPhase()], progress=False, beside=False)
    ctx.use_parts("extracted", finished_parts(storage, "extracted"))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        summary = run_phase(ctx, ctx.phases[-1])
        return summary, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_the_driver_keeps_counts_not_a_result_per_unit_while_a_phase_runs_and_resumes(tmp_path, monkeypatch):
    """A phase's summary is a fold over its units as they finish, and over the markers of the units done before, read
    again a batch at a time: the driver's peak grows by the plan of a unit (its name, fingerprint, marker's state),
    not by its result (a list of results took a snapshot's 90,000 parts' driver to gigabytes)."""
    # markers are read a batch at a time: both sizes read whole batches
    monkeypatch.setattr(markers, "READ_BATCH", 20, raising=False)
    peaks = {}
    for n in (100, 800):
        storage = _parts(tmp_path / str(n), {f"p{i:04d}": 1 for i in range(n)})
        ran, peak_ran = _driver_peak(storage)
        resumed, peak_resumed = _driver_peak(storage)  # every unit current: their markers are added up again
        assert ran["in"] == resumed["in"] == 2 * n and ran["stage_counters"]["stage299.count"] == 299 * n
        assert resumed["units_skipped"] == n and resumed["stage_counters"] == ran["stage_counters"]
        peaks[n] = (peak_ran, peak_resumed)
    per_unit = [(peaks[800][i] - peaks[100][i]) / 700 for i in (0, 1)]
    assert max(per_unit) < 5_000, per_unit  # a result is ~25 KB: kept per unit, this is 25,000 or more


# -- roles: the card reads them from the plan ----------------------------------------------------------


def _export(job, unit):
    """A copy of the final documents' ids, for readers outside the run."""
    files = [job.storage.path("documents", job.source, f"part-{p.name}.parquet") for p in job.parts]
    ids = [i for f in files for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()]
    job.storage.write_json(sorted(ids), "exports", "ids.json")
    return UnitResult(unit.name, totals={"exported": len(ids)})


class IdsExport(Phase):
    """A phase that writes no documents and is not the shards: an export."""

    name = "ids_export"
    label = "the ids of the final documents (a test's export)"
    unit_kind = "run"
    role = ROLE_EXPORT

    def steps(self, config):
        return [
            Step(
                "export",
                "every id",
                FINAL,
                _export,
                reads=(PARTS,),
                unit="ids",
                counted=True,
                outputs=lambda config: [("exports",)],
            )
        ]


@pytest.mark.ray
def test_an_export_phase_is_not_taken_for_the_shards_by_the_card(ray_local, warc_factory, tmp_path):
    rng = random.Random(3)
    pages = [Page(f"https://a.example/{i}", html(f"Page {i}", _prose(rng)).encode()) for i in range(4)]
    warc_factory("one.warc.gz", pages)
    out = tmp_path / "out"
    cfg = parse_config(
        {
            "inputs": [str(tmp_path / "*.warc.gz")],
            "output": str(out),
            "filters": FILTERS_OFF,
            "langid": {"min_score": 0.0},
            "pii": {"enabled": False},
            "shards": {"shuffle": {"groups": 2}},
        }
    )
    pipeline = (*DEFAULT_PHASES[:4], IdsExport, DEFAULT_PHASES[4])  # after the shards, before the card
    record = run(cfg, progress=False, pipeline=pipeline)
    assert record["status"] == "ok" and record["phases"]["ids_export"]["exported"] == 4
    planned = {p["name"]: p for p in record["plan"]["phases"]}
    assert planned["ids_export"]["role"] == "export" and planned["shards"]["role"] == "shards"
    stats = json.loads((out / "card" / "stats.json").read_text())
    assert stats["funnel_adds_up"] and all(c["ok"] for c in stats["checks"]), stats["checks"]
    assert not any(r["step"].startswith("ids_export:") for r in stats["funnel"])  # no shards rows for it
    assert len(json.loads((out / "exports" / "ids.json").read_text())) == 4


@pytest.mark.ray
def test_a_block_list_changed_in_place_redoes_the_files_with_the_new_list(ray_local, warc_factory, tmp_path):
    rng = random.Random(5)
    warc_factory(
        "one.warc.gz",
        [
            Page("https://a.example/1", html("A", _prose(rng)).encode()),
            Page("https://b.example/1", html("B", _prose(rng)).encode()),
        ],
    )
    blocked = tmp_path / "blocked.txt"
    blocked.write_text("nothing.example\n")
    cfg = parse_config(
        {
            "inputs": [str(tmp_path / "*.warc.gz")],
            "output": str(tmp_path / "out"),
            "filters": {**FILTERS_OFF, "url": {"block_domains_files": [str(blocked)]}},
            "langid": {"min_score": 0.0},
        }
    )
    first = run(cfg, progress=False, phases=["extracted"])["phases"]["extracted"]
    assert first["kept"] == 2
    blocked.write_text("b.example\n")
    again = run(cfg, progress=False, phases=["extracted"])["phases"]["extracted"]
    assert again["units_skipped"] == 0 and again["kept"] == 1 and sum(again["rejected_by_reason"].values()) == 1
