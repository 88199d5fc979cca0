"""The card phase on the sample run (samples/, every phase on, rejected text kept): every number of
stats.json recomputed from the outputs, the plots are well-formed SVG, the funnel adds up, no planted PII
value is shown, a rerun skips the card and a change rebuilds it, Ray and in-process agree."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from pipeline.card import collect, hosts, names as N, sources
from pipeline.card.build import compute
from pipeline.card.plan import plan_from_context
from pipeline.cli import main as curate
from pipeline.config import RunConfig, load_config, parse_config
from pipeline.phases import card as card_phase
from pipeline.runner import plan_context, run
from tests.conftest import REPO, SAMPLES
from tests.pipeline.card.test_card_expected import expected, numbers
from tests.pipeline.card.test_card_svg import parse_svg

pytestmark = pytest.mark.ray

TRUTH = [json.loads(line) for line in (SAMPLES / "ground_truth.jsonl").read_text().splitlines()]


def sample_config(out, **changes) -> RunConfig:
    data = load_config(REPO / "jobs" / "sample.yaml", inputs=[str(SAMPLES / "*.warc.gz")], output=str(out)).model_dump(
        mode="json"
    )
    data["output"]["rejected_text"] = True
    data["classifiers"] = [
        {
            "name": "quality",
            "model": str(SAMPLES / "quality" / "model.ftz"),
            "label": "hq",
            "filter": {"threshold": 0.5},
        }
    ]
    data.update(changes)
    return parse_config(data)


@pytest.fixture(scope="module")
def sample(ray_local, tmp_path_factory):
    out = tmp_path_factory.mktemp("card")
    record = run(sample_config(out), progress=False)
    return out, record


def _card(out) -> dict:
    return json.loads((out / "card" / "stats.json").read_text())


def test_the_sample_card_matches_an_independent_recount(sample):
    out, record = sample
    assert record["status"] == "ok" and record["phases"]["card"]["funnel_adds_up"]
    card = _card(out)
    assert numbers(card) == numbers(expected(out, card))  # every number, and no number it did not recount
    assert card["funnel_adds_up"] and all(c["ok"] for c in card["checks"]), card["checks"]
    assert card["run"]["parts_by"] == "fingerprints"
    # the sample's known shape: 6 files, 1045 responses, duplicates removed, scores present
    assert card["summary"]["responses"] == len(TRUTH) and card["sources"]["files"] == 6
    assert card["dedup"]["exact_duplicate"] > 0 and card["dedup"]["near_duplicate"] > 0
    assert card["classifiers"]["present"] and card["summary"]["documents"] > 0
    assert card["classifiers"]["entries"][0]["demonstration"]  # told by the model's sha256, whatever its path
    for name in card["plots"]:
        parse_svg((out / "card" / name).read_bytes())
    readme = (out / "README.md").read_text()
    assert readme.startswith("---\npretty_name: sample") and "![funnel](card/funnel.svg)" in readme
    assert f"**{card['summary']['documents']:,} documents**" in readme
    # no mix: documents and samples are one number, no mix plot, and the shards phase's units are its groups
    assert card["summary"]["samples"] == card["summary"]["documents"] and card["summary"]["repeats"] == 0
    assert "mix.svg" not in card["plots"] and not (out / "card" / "mix.svg").exists()
    groups = len(json.loads((out / "shards" / "manifest.json").read_text())["groups"])
    assert groups == 4 and f"### shards: ran ({groups} groups)" in readme


def test_the_sample_card_never_shows_a_planted_pii_value(sample):
    out, _ = sample
    card = _card(out)
    assert sum(e["text"] is not None for e in card["examples"]) >= 10  # rejected text was kept: the examples show text
    shown = (out / "README.md").read_text() + (out / "card" / "stats.json").read_text()
    leaks = sorted({p["value"] for t in TRUTH for p in t["pii"] if p["value"] in shown})
    assert leaks == []


def test_a_rerun_skips_the_card_a_change_rebuilds_it_and_report_agrees(sample, tmp_path):
    out, _ = sample
    marker = (out / "_done" / "card" / "run.json").stat().st_mtime_ns
    again = run(sample_config(out), progress=False)
    assert (
        again["phases"]["card"]["units_skipped"] == 1
        and (out / "_done" / "card" / "run.json").stat().st_mtime_ns == marker
    )
    before = _card(out)
    assert (
        curate(["report", str(out)]) == 0
    )  # the same card from the output alone (run: the record of the last invocation)
    after = _card(out)
    assert {k: v for k, v in after.items() if k != "run"} == {k: v for k, v in before.items() if k != "run"}
    assert after["run"]["command"] == again["command"]
    renamed = run(sample_config(out, name="sample-renamed"), progress=False)
    assert renamed["phases"]["card"]["units_skipped"] == 0 and renamed["phases"]["extracted"]["units_skipped"] == 6
    assert _card(out)["run"]["name"] == "sample-renamed"


def test_aggregates_on_ray_equal_those_in_process(sample, monkeypatch):
    out, _ = sample
    ctx = plan_context(sample_config(out), progress=False)
    plan = plan_from_context(ctx, json.loads((out / "run.json").read_text()))
    here = compute(plan, ctx.storage)
    monkeypatch.setattr(collect, "LOCAL_MAX_PARTS", 0)
    on_ray = compute(plan, ctx.storage, config=ctx.config, workers=2, ray=True)
    assert on_ray == here
    # the hosts added up by a Ray Data aggregation (a snapshot's tens of millions of hosts), as by one task
    monkeypatch.setattr(hosts, "PARTITION_ROWS", 50)
    assert compute(plan, ctx.storage, config=ctx.config, workers=2, ray=True) == here
    assert here["hosts"]["kept"] and here["hosts"]["removed_distinct"] > 50
    assert not ctx.storage.exists(*hosts.FOLDER)  # the tasks' host rows are deleted once added up


def test_parts_added_up_in_tasks_of_several_give_the_aggregates_of_one_task_per_part(sample, monkeypatch):
    """A card task adds up its parts in name order (issue 39: a task per part was 90,000 tasks for a snapshot's
    card): the examples, the counts and each kind's are those of one part per task."""
    out, _ = sample
    ctx = plan_context(sample_config(out), progress=False)
    plan = plan_from_context(ctx, json.loads((out / "run.json").read_text()))
    monkeypatch.setattr(collect, "PARTS_PER_TASK", 1)
    one = compute(plan, ctx.storage)
    monkeypatch.setattr(collect, "PARTS_PER_TASK", 4)
    assert len(collect.tasks(plan, [])) == -(-len(plan.phase("extracted").parts) // 4) > 1
    assert compute(plan, ctx.storage) == one


def test_the_per_file_counts_never_reach_the_driver(sample):
    """Each phase's documents per input file leave the card tasks' aggregates as rows (90,000 files in a snapshot:
    six dicts of them in the driver, issue 39); the stats' table of files adds them up from the rows."""
    out, _ = sample
    ctx = plan_context(sample_config(out), progress=False)
    plan = plan_from_context(ctx, json.loads((out / "run.json").read_text()))
    aggs, _ = collect.aggregate(ctx.storage, collect.tasks(plan, []))
    assert aggs["final/documents"]["rows"] and not [k for k, agg in aggs.items() if "sources" in agg]
    assert ctx.storage.list(*sources.FOLDER)  # the tasks' rows, for the process that builds the stats
    stats = compute(plan, ctx.storage)
    assert not ctx.storage.exists(*sources.FOLDER)  # deleted once added up
    kept = Counter(
        s
        for f in sorted((out / "documents" / "final").glob("*.parquet"))
        for s in pq.read_table(f)[N.SOURCE].to_pylist()
    )
    per_file = stats["sources"]["per_file"]
    assert len(per_file) == 6 and sorted(f["kept"]["final"] for f in per_file if f["kept"]["final"]) == sorted(
        kept.values()
    )


def test_the_card_is_computed_off_the_driver(sample, monkeypatch):
    """The card reads every phase's units, markers and per-file counts (90,000 of each in a snapshot: issue 39):
    one Ray task computes it from the run's context, so the driver never plans it.  Here the driver's own card
    code fails if it is called; the card is rebuilt all the same, and a failure in the task is the driver's line."""

    def in_the_driver(*args, **kwargs):
        raise AssertionError("the card was computed in the driver")

    out, _ = sample
    monkeypatch.setattr(card_phase, "write_card", in_the_driver)
    monkeypatch.setattr(card_phase, "plan_from_context", in_the_driver)
    again = run(sample_config(out, name="sample-off-the-driver"), progress=False)
    assert again["status"] == "ok" and again["phases"]["card"]["units_skipped"] == 0
    assert _card(out)["run"]["name"] == "sample-off-the-driver"
    run(sample_config(out), progress=False)  # the card of the sample again, for the tests after this one


def test_the_plan_holds_a_part_name_once_for_every_phase(sample):
    """Each phase's part names (and its parts with rejected files) were new strings: at 90,000 parts, tens of MB
    of the card's plan (issue 39).  A part deduplication keeps is the same name object in every later phase."""
    out, _ = sample
    ctx = plan_context(sample_config(out), progress=False)
    plan = plan_from_context(ctx, json.loads((out / "run.json").read_text()))
    first, last = plan.phase("extracted"), plan.phase("final")
    by_name = {n: n for n in first.parts}
    assert last.parts and all(by_name[n] is n for n in last.parts)
    assert first.rejected and set(first.rejected) <= set(first.parts)
    assert all(by_name[n] is n for n in first.rejected)
    # and the units of a map phase over parts share their params (one dict per source, not one per part)
    final = next(p for p in ctx.phases if p.name == "final")
    assert len({id(u.params) for u in ctx.units_of(final)}) == 1 < len(ctx.units_of(final))
