"""Every count, size and time of the config is bounded: finite, a lower and an upper bound, each error one
line naming the field.  (`shards.shuffle.groups: 1000000` on 10 documents wrote 523k marker files;
`shards.tokenize.threads: 1000000` spawned threads without end; `extract.timeout_s: .inf` killed the
time-limit thread and the run exited 0 with no time limit.)"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import typing

import annotated_types as at
import pytest
from pydantic import BaseModel

from pipeline.config import ConfigError, RunConfig, parse_config

#: Fields whose bounds another engineer owns (stages/pii: see the PII work); listed so none is forgotten.
PENDING = {"pii.max_candidate_digits"}
#: A list of sections is reached through its first entry, given the fields an entry needs.
LIST_ENTRIES = {
    "classifiers": {
        "name": "q",
        "model": str(__import__("pathlib").Path(__file__).parents[2] / "samples" / "quality" / "model.ftz"),
        "label": "hq",
    }
}


def _numeric_fields(model: type[BaseModel], prefix: str = ""):
    for name, field in model.model_fields.items():
        args = typing.get_args(field.annotation) or (field.annotation,)
        sub = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if sub is not None:  # a section, a map of sections (by language...) or a list of them: reached through a key
            origin = typing.get_origin(field.annotation)
            if origin is list and f"{prefix}{name}" not in LIST_ENTRIES:
                continue
            key = "xx." if origin is dict else "0." if origin is list else ""
            yield from _numeric_fields(sub, f"{prefix}{name}.{key}")
            continue
        kind = next((a for a in args if a in (int, float)), None)
        if kind is not None and typing.get_origin(field.annotation) not in (dict, list):  # maps: see below
            yield f"{prefix}{name}", kind, field.metadata


FIELDS = [(path, kind, meta) for path, kind, meta in _numeric_fields(RunConfig) if path not in PENDING]


def _bounds(meta) -> tuple[float | None, float | None]:
    low = next(
        (
            getattr(m, "ge", None) if isinstance(m, at.Ge) else getattr(m, "gt", None)
            for m in meta
            if isinstance(m, (at.Ge, at.Gt))
        ),
        None,
    )
    high = next(
        (
            getattr(m, "le", None) if isinstance(m, at.Le) else getattr(m, "lt", None)
            for m in meta
            if isinstance(m, (at.Le, at.Lt))
        ),
        None,
    )
    return low, high


def _data(path: str, value) -> dict:
    node: dict = {"inputs": ["x.warc.gz"], "output": "out"}
    here = node
    *parents, leaf = path.split(".")
    for p, nxt in zip(parents, parents[1:] + [leaf], strict=False):
        if nxt == "0":  # a list of sections: one entry with what it needs
            here[p] = [dict(LIST_ENTRIES[p])]
            here = here[p]
        elif p == "0":
            here = here[0]
        else:
            here = here.setdefault(p, {})
    here[leaf] = value
    return node


def _error(path: str, value) -> str:
    with pytest.raises(ConfigError) as e:
        parse_config(_data(path, value))
    return str(e.value)


def test_the_walk_sees_every_section():
    paths = {p for p, _, _ in FIELDS}
    assert len(FIELDS) > 80
    assert {
        "shards.shuffle.groups",
        "shards.tokenize.threads",
        "extract.timeout_s",
        "ray.workers",
        "dedup.minhash.seed",
        "extract.boilerplate.blocks.heading_distance",
        "shards.layout.max_dropped_share",
    } <= paths


@pytest.mark.parametrize("path, kind, meta", FIELDS, ids=[p for p, _, _ in FIELDS])
def test_every_number_has_a_lower_and_an_upper_bound_that_name_the_field(path, kind, meta):
    low, high = _bounds(meta)
    assert low is not None and high is not None, f"{path}: give it a lower and an upper bound (ge/gt and le/lt)"
    step = 1 if kind is int else max(abs(high), 1.0)
    too_big = _error(path, high + step)
    assert too_big.startswith(f"config error: {path}: Input should be less than"), too_big
    too_small = _error(path, low - (1 if kind is int else max(abs(low), 1.0)))
    assert too_small.startswith(f"config error: {path}: Input should be greater than"), too_small


@pytest.mark.parametrize("path", [p for p, _, _ in FIELDS], ids=[p for p, _, _ in FIELDS])
def test_inf_and_nan_are_refused_naming_the_field(path):
    for value in (math.inf, -math.inf, math.nan):
        assert _error(path, value) == f"config error: {path}: must be a finite number (got {value})"


@pytest.mark.parametrize("path", [p for p, kind, _ in FIELDS if kind is float])
def test_inf_and_nan_spelled_as_strings_are_refused_too(path):
    for value in ("inf", "nan", "Infinity"):
        assert _error(path, value).startswith(f"config error: {path}: "), value


@pytest.mark.parametrize("path", ["filters.gopher_repetition.top_n_grams", "filters.gopher_repetition.dup_n_grams"])
def test_maps_of_numbers_are_bounded_too(path):
    n = 2 if "top" in path else 5
    assert _error(path, {n: math.inf}) == f"config error: {path}.{n}: must be a finite number (got inf)"
    above = 100.5 if "top" in path else 1.5  # a top n-gram may cover more than the text (overlaps): up to 100
    assert _error(path, {n: above}).startswith(f"config error: {path}: ")
    assert _error(path, {10**9: 0.1}).startswith(f"config error: {path}: ")


def test_a_huge_integer_is_refused_not_overflowed():
    assert _error("dedup.minhash.seed", 2**64).startswith(
        "config error: dedup.minhash.seed: Input should be less than or equal to 4294967295"
    )
    assert _error("shards.shuffle.groups", 1_000_000).startswith(
        "config error: shards.shuffle.groups: Input should be less than or equal to 65536"
    )


def test_the_time_limit_refuses_what_it_cannot_wait_for():
    from stages.extract.timelimit import TimeLimitExceeded, time_limit

    for bad in (math.inf, math.nan, 1e300):
        with pytest.raises(ValueError, match="time limit"):
            with time_limit(bad):
                pass
    with pytest.raises(TimeLimitExceeded):  # the watchdog still works after the refusals
        with time_limit(0.05):
            while True:
                pass


def test_tokenizer_threads_are_capped_at_the_cpus(monkeypatch):
    from stages.tokenizers.huggingface import set_thread_budget

    monkeypatch.delenv("RAYON_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    set_thread_budget(256)
    assert os.environ["RAYON_NUM_THREADS"] == "4"
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    set_thread_budget(8)
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"


def test_cli_infinite_timeout_is_one_line_and_exit_2(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "inputs: [x.warc.gz]\noutput: out\nextract:\n  timeout_s: .inf\nshards:\n  tokenize:\n    threads: 1000000\n"
    )
    r = subprocess.run([sys.executable, "-m", "pipeline.cli", "validate", str(cfg)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["config error: extract.timeout_s: must be a finite number (got inf)"]
    cfg.write_text("inputs: [x.warc.gz]\noutput: out\nshards:\n  tokenize:\n    threads: 1000000\n")
    r = subprocess.run([sys.executable, "-m", "pipeline.cli", "validate", str(cfg)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "config error: shards.tokenize.threads: Input should be less than or equal to 256 (got 1000000)"
    ]


def test_the_config_reference_shows_the_bounds():
    from pipeline.reference import config_reference

    table = config_reference()
    assert table.splitlines()[0] == "| field | default | allowed | meaning |"
    assert "| `extract.timeout_s` | `2.0` | `(0, 3600]` |" in table
    assert "| `shards.shuffle.groups` | `16` | `[1, 65_536]` |" in table
    assert "| `shards.mds.size_limit` | `67108864` | `[1024, 4_294_967_296)` |" in table


def test_a_deadline_before_the_one_the_watchdog_sleeps_until_still_fires_on_time():
    """The watchdog is not woken for every document, only for a deadline before its planned wake-up."""
    import threading
    import time

    from stages.extract.timelimit import TimeLimitExceeded, time_limit

    armed, release = threading.Event(), threading.Event()

    def long_limit():
        with time_limit(60):  # the watchdog now sleeps until this one
            armed.set()
            release.wait(10)

    other = threading.Thread(target=long_limit)
    other.start()
    try:
        armed.wait(10)
        t0 = time.monotonic()
        with pytest.raises(TimeLimitExceeded):
            with time_limit(0.05):
                while True:
                    pass
        assert time.monotonic() - t0 < 5
        for _ in range(1000):  # arming and disarming many short blocks leaves the limits working
            with time_limit(30):
                pass
        with pytest.raises(TimeLimitExceeded):
            with time_limit(0.05):
                while True:
                    pass
    finally:
        release.set()
        other.join()
