"""Named sources in the config and the plan (pipeline/sources.py): each source's effective settings, the
files it owns, its units' fingerprints and what the plan shows.  Nothing here starts Ray."""

from __future__ import annotations

import json

import pytest

from pipeline.config import ConfigError, parse_config
from pipeline.runner import plan_context
from pipeline.sources import merged
from tests.conftest import REPO

WARCS = sorted(str(p) for p in (REPO / "samples").glob("*.warc.gz"))


def config(tmp_path, **extra) -> dict:
    return {
        "output": str(tmp_path / "out"),
        "sources": [
            {"name": "crawl", "inputs": WARCS[:2]},
            {
                "name": "news",
                "inputs": WARCS[2:4],
                "filters": {"c4": {"enabled": False}},
                "langid": {"keep": ["en", "de"]},
            },
        ],
        **extra,
    }


def test_a_source_sees_the_run_settings_with_its_overrides_merged(tmp_path):
    cfg = parse_config(config(tmp_path, langid={"min_score": 0.4}))
    news, crawl = cfg.for_source("news"), cfg.for_source("crawl")
    assert not news.filters.c4.enabled and cfg.filters.c4.enabled and crawl.filters.c4.enabled
    assert news.langid.keep == ["en", "de"] and news.langid.min_score == 0.4  # merged key by key, the rest the run's
    assert news.inputs == WARCS[2:4] and not news.sources
    assert cfg.inputs == WARCS[:4]  # the run reads every source's inputs
    assert cfg.for_source(None) is cfg


def test_a_list_of_named_entries_is_overridden_by_name():
    base = [{"name": "quality", "filter": {"threshold": 0.5, "remove": "below"}}, {"name": "edu", "filter": {}}]
    got = merged(base, {"quality": {"filter": {"threshold": 0.2}}}, "classifiers")
    assert got == [{"name": "quality", "filter": {"threshold": 0.2, "remove": "below"}}, {"name": "edu", "filter": {}}]
    with pytest.raises(ValueError, match="classifiers: no entry named 'toxic'"):
        merged(base, {"toxic": {}}, "classifiers")


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"sources": [{"name": "a", "inputs": ["x"]}, {"name": "a", "inputs": ["y"]}]},
            "sources: two sources have the same name (a)",
        ),
        ({"sources": [{"name": "a b", "inputs": ["x"]}]}, "sources.0.name"),
        (
            {"sources": [{"name": "a", "inputs": ["x"], "filters": {"c4": {"enabld": False}}}]},
            "sources[0] (a): filters.c4.enabld: unknown field",
        ),
        (
            {"sources": [{"name": "a", "inputs": ["x"], "langid": {"min_score": 3}}]},
            "sources[0] (a): langid.min_score: Input should be",
        ),
        ({"sources": [{"name": "a", "inputs": ["x"], "dedup": {"enabled": False}}]}, "sources.0.dedup: unknown field"),
        (
            {"sources": [{"name": "a", "inputs": ["x"]}], "inputs": ["y"]},
            "inputs: with named sources, give each source its inputs",
        ),
        (
            {"sources": [{"name": "a", "inputs": ["x"]}], "mix": {"weights": {"b": 1}}},
            "mix.weights: no weight for source(s) a",
        ),
        ({"inputs": ["x"], "mix": {"epochs": {"b": 1}}}, "mix.epochs: b is not a named source"),
        (
            {"inputs": ["x"], "dedup": {"keep": {"source_priority": ["b"]}}},
            "dedup.keep.source_priority: b is not a named source",
        ),
        (
            {"inputs": ["x"], "mix": {"rehydrate": {"enabled": True}}, "dedup": {"enabled": False}},
            "mix.rehydrate: needs",
        ),
        (
            {"inputs": ["x"], "mix": {"rehydrate": {"enabled": True}}, "shards": {"enabled": False}},
            "mix: the mix is drawn by the shards phase",
        ),
    ],
)
def test_config_errors_name_the_field_and_the_fix(change, message):
    with pytest.raises(ConfigError) as e:
        parse_config({"output": "o", **change})
    assert message in str(e.value) and "(top level)" not in str(e.value)


def test_each_file_belongs_to_its_source_and_a_file_in_two_sources_is_an_error(tmp_path):
    ctx = plan_context(parse_config(config(tmp_path)), progress=False)
    units = {u.params["source"]: u.params["source_name"] for u in ctx.units_of(ctx.phases[0])}
    assert units == {**{w: "crawl" for w in WARCS[:2]}, **{w: "news" for w in WARCS[2:4]}}
    both = config(tmp_path)
    both["sources"][1]["inputs"] = WARCS[1:4]
    with pytest.raises(ConfigError, match=r"is in sources 'crawl' and 'news': give each file to one source"):
        plan_context(parse_config(both), progress=False)  # at plan time (the inputs' fields are checked per source)


def test_a_changed_override_redoes_only_its_source(tmp_path):
    def fingerprints(cfg: dict) -> dict:
        ctx = plan_context(parse_config(cfg), progress=False)
        return {u.params["source_name"] + ":" + u.name: u.fingerprint for u in ctx.units_of(ctx.phases[0])}

    before = fingerprints(config(tmp_path))
    changed = config(tmp_path)
    changed["sources"][1]["filters"] = {"c4": {"enabled": True}}
    after = fingerprints(changed)
    assert {k for k in before if before[k] != after[k]} == {k for k in before if k.startswith("news:")}
    plain = {"output": str(tmp_path / "out"), "inputs": WARCS[:2]}  # without named sources: the fingerprints of before
    ctx = plan_context(parse_config(plain), progress=False)
    assert all("source_name" not in u.params for u in ctx.units_of(ctx.phases[0]))


def test_the_plan_shows_each_source_and_its_overrides(tmp_path, capsys):
    from pipeline.cli import main

    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(config(tmp_path)))
    assert main(["run", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "named source crawl: the run's settings" in out
    assert 'named source news: langid.keep=["en", "de"], filters.c4.enabled=false' in out
    assert "stage source_name: named source recorded (source_name)" in out
    ctx = plan_context(parse_config(config(tmp_path)), progress=False)
    extracted = ctx.plan.phase("extracted")
    assert extracted.overrides["news"] == {"filters.c4.enabled": False, "langid.keep": ["en", "de"]}
    assert [s.name for s in extracted.stages].count("c4") == 1  # a stage some source runs, once


def test_a_source_whose_own_stages_lack_a_column_is_a_plan_error(tmp_path):
    cfg = config(tmp_path, shards={"layout": {"metadata": ["language"]}})
    cfg["sources"][1]["langid"] = {"enabled": False}
    with pytest.raises(ConfigError, match=r"language.*\(in source 'news', with its own settings\)"):
        plan_context(parse_config(cfg), progress=False)
