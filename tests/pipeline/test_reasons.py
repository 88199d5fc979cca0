"""Every stage declares every reason it can give (``reasons``), each written out in its module so that a
grep for a reason finds the stage that gives it, and no stage gives a reason it did not declare.

The sample run's rejected rows are checked against the plan in tests/integration/test_sample_run.py; here every
stage of the plan runs on documents made to trip its rules."""

from __future__ import annotations

import inspect
import random

import pyarrow as pa
import pytest

from pipeline.config import parse_config
from pipeline.phases import DEFAULT_PHASES
from pipeline.plan import build_plan
from stages.base import StageSpec
from stages.filters import text_filter_specs
from stages.sources.kinds import SOURCES

ALL_ON = {
    "inputs": ["x"],
    "output": "x",
    "quality": {"enabled": False},
    "dedup": {"paragraphs": {"enabled": True}},
    "pii": {"enabled": True},
    "filters": {"url": {"enabled": True}},
}


def _stage_classes() -> list[type]:
    config = parse_config(ALL_ON)
    classes = [cls for cls, _ in text_filter_specs(config.filters)]
    for phase in DEFAULT_PHASES:
        classes += [spec.cls for spec in phase().stages(config)]
    for source in SOURCES:
        classes += [spec.cls for spec in source.stages(config)]
    return list(dict.fromkeys(classes))


@pytest.mark.parametrize("cls", _stage_classes(), ids=lambda c: c.name)
def test_each_declared_reason_is_written_out_in_the_stage_s_module(cls):
    source = inspect.getsource(inspect.getmodule(cls))
    assert cls.reasons == tuple(dict.fromkeys(cls.reasons)), "declared twice"
    missing = [r for r in cls.reasons if f'"{r}"' not in source and f"'{r}'" not in source]
    assert missing == [], f"{cls.__name__}: declare these reasons as literals in its module so a grep finds them"


def test_the_plan_declares_every_stage_s_reasons_and_the_sources():
    plan, _ = build_plan(parse_config(ALL_ON), DEFAULT_PHASES)
    first = plan.phases[0]
    assert {s.kind for s in first.sources} == {cls.name for cls in SOURCES}
    read = first.stages[0]
    assert read.name == "read" and set(read.reasons) == {r for cls in SOURCES for r in cls.reasons}
    dedup = plan.phase("deduped")
    assert {"exact_duplicate", "duplicate", "duplicate_id", "paragraph_dedup:empty"} <= {
        r for s in dedup.stages for r in s.reasons
    }


WORDS = "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver".split()


def _hostile_documents() -> list[str]:
    rng = random.Random(11)
    prose = " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(40))
    return [
        "",
        "   ",
        "word",
        prose,
        prose.upper(),
        "\n".join(["• item one two three"] * 30),
        "\n".join(["line that trails off ..."] * 30),
        "# " * 200 + prose,
        "… " * 200 + prose,
        "x" * 5000,
        " ".join(["supercalifragilistic" * 3] * 100),
        "\n\n".join([prose] * 5),
        "\n".join(["the same line again and again"] * 50),
        "lorem ipsum dolor sit amet " + prose,
        "function f() { return 1; } " + prose,
        "click here\nok\nyes\nno\n" * 20,
        "12345 67890 " * 300,
        " ".join(["a"] * 3000),
        prose.replace(".", ""),
        ("javascript must be enabled.\n" * 10) + prose,
        "\n".join(prose.split(". ")),
        "Name (at) example (dot) com wrote: " + prose,
    ]


def test_no_text_filter_gives_a_reason_it_did_not_declare():
    config = parse_config({"inputs": ["x"], "output": "x"})
    texts = _hostile_documents()
    batch = pa.table(
        {
            "id": [str(i) for i in range(len(texts))],
            "url": [f"https://a.example/{i}" for i in range(len(texts))],
            "text": pa.array(texts, pa.large_string()),
            "language": ["en"] * len(texts),
        }
    )
    for cls, cfg in text_filter_specs(config.filters):
        out = StageSpec(cls, cfg).build()(batch)
        given = {r for r in (out.column("reason").to_pylist() if "reason" in out.column_names else []) if r}
        assert given <= set(cls.reasons), (cls.name, given - set(cls.reasons))
