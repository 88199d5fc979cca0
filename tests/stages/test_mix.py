"""The training mix's pure parts (stages/mix.py): tallies, the plan's cut, the draw, rehydration.

The shares are checked on what :func:`draw` actually gives (the copies of every document, their tokens
added up per source), for sources of very different raw sizes in both directions (one subsampled, one
repeated), and the draw is checked to be a function of each document alone: any batching or order of
the documents gives the same samples.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

from stages.mix import (
    ALL,
    COPY,
    FINEWEB2,
    MixConfig,
    MixError,
    MixPlan,
    RehydrateConfig,
    Tally,
    add_tallies,
    copies,
    draw,
    group_totals,
    manifest_section,
    plan_mix,
    repeated_sources,
    tally,
)


def card_text(out) -> str:
    """The dataset card's text: README.md at the output root (card/README.md in outputs before issue 20)."""
    root = out / "README.md"
    return (root if root.exists() else out / "card" / "README.md").read_text()


def corpus(sizes: dict[str, tuple[int, int]], seed: int = 0, clusters: bool = False) -> pa.Table:
    """Documents of named sources: {name: (documents, mean tokens)}, token counts spread 1..2*mean."""
    rng = np.random.default_rng(seed)
    tables = []
    for name, (n, mean) in sizes.items():
        cols = {
            "id": [f"{name}-{i}" for i in range(n)],
            "source_name": [name] * n,
            "num_tokens": rng.integers(1, 2 * mean, n),
        }
        if clusters:
            cols["dup_cluster_size"] = rng.choice([1, 1, 1, 2, 3, 4, 7, 150, 2000], n)
        tables.append(pa.table(cols))
    return pa.concat_tables(tables)


def planned(t: pa.Table, config: MixConfig) -> MixPlan:
    tokens = t.column("num_tokens").to_numpy()
    return plan_mix(tally(t, tokens, np.ones(len(t), bool), config), config)


def shares_of(samples: pa.Table) -> dict[str, float]:
    totals = group_totals(samples)
    total = sum(v["tokens"] for v in totals.values())
    return {k: v["tokens"] / total for k, v in totals.items()}


@pytest.mark.parametrize(
    "sizes",
    [
        {"crawl": (4000, 400), "wiki": (150, 900)},  # the 70% source is tiny: repeated ~10 times
        {"crawl": (150, 900), "wiki": (4000, 400)},  # the 70% source is large: subsampled
        {"crawl": (800, 300), "wiki": (800, 300)},
        {"crawl": (60, 2000), "wiki": (30000, 50)},  # few long documents against many short ones
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shares_within_half_a_percent_whatever_the_raw_sizes(sizes, seed):
    t = corpus(sizes, seed)
    config = MixConfig(weights={"crawl": 0.3, "wiki": 0.7}, seed=seed)
    plan = planned(t, config)
    samples = draw(t, plan)
    got = shares_of(samples)
    assert abs(got["crawl"] - 0.3) <= 0.005 and abs(got["wiki"] - 0.7) <= 0.005, got
    assert sum(group_totals(samples)[s]["tokens"] for s in ("crawl", "wiki")) == plan.drawn_tokens  # the plan is exact
    assert plan.drawn_tokens == pytest.approx(
        t.column("num_tokens").to_numpy().sum(), rel=0.002
    )  # default: the sources' size


def test_output_tokens_and_a_zero_weight():
    t = corpus({"a": (500, 300), "b": (500, 300), "c": (100, 300)})
    config = MixConfig(weights={"a": 1, "b": 3, "c": 0}, tokens=100_000)  # weights are normalized
    samples = draw(t, planned(t, config))
    totals = group_totals(samples)
    assert "c" not in totals
    assert sum(v["tokens"] for v in totals.values()) == pytest.approx(100_000, rel=0.005)
    assert shares_of(samples)["b"] == pytest.approx(0.75, abs=0.005)


def test_epochs_repeat_whole_documents_and_subsample_exactly():
    t = corpus({"wiki": (300, 500), "crawl": (2000, 500)})
    plan = planned(t, MixConfig(epochs={"wiki": 2, "crawl": 0.25}))
    n = copies(t, plan)
    wiki = np.array(t.column("source_name").to_pylist()) == "wiki"
    assert set(n[wiki].tolist()) == {2}  # every wiki document exactly twice
    assert set(n[~wiki].tolist()) <= {0, 1}
    crawl_tokens = t.column("num_tokens").to_numpy()[~wiki]
    assert (n[~wiki] * crawl_tokens).sum() == pytest.approx(0.25 * crawl_tokens.sum(), rel=0.005)
    assert plan.source("wiki").epochs == 2.0


def test_repeats_are_new_samples_and_rejected_rows_are_kept_once():
    t = corpus({"wiki": (50, 100), "crawl": (50, 100)})
    t = t.append_column("reason", pa.array(["no_tokens"] + [None] * (len(t) - 1), pa.string()))
    plan = planned(t, MixConfig(epochs={"wiki": 3, "crawl": 1}))
    samples = draw(t, plan)
    ids = samples.column("id").to_pylist()
    assert len(ids) == len(set(ids))  # every sample its own id, so the shuffle places each repeat on its own
    assert {"wiki-1", "wiki-1#1", "wiki-1#2"} <= set(ids) and "wiki-1#3" not in ids
    assert ids.count("wiki-0") == 1 and "wiki-0#1" not in ids  # rejected: reported once, never drawn
    assert samples.column(COPY).to_pylist()[ids.index("wiki-1#2")] == 2


def test_the_draw_does_not_depend_on_batching_or_order():
    t = corpus({"wiki": (200, 300), "crawl": (3000, 300)})
    plan = planned(t, MixConfig(weights={"wiki": 0.5, "crawl": 0.5}))
    whole = sorted(draw(t, plan).column("id").to_pylist())
    rng = np.random.default_rng(5)
    shuffled = t.take(pa.array(rng.permutation(len(t))))
    pieces = [draw(shuffled.slice(i, 97), plan) for i in range(0, len(t), 97)]
    assert sorted(x for p in pieces for x in p.column("id").to_pylist()) == whole
    assert draw(t, MixPlan.from_json(plan.to_json())).equals(draw(t, plan))  # the plan survives JSON


def test_another_seed_draws_other_documents():
    t = corpus({"a": (1000, 200), "b": (1000, 200)})
    first = set(draw(t, planned(t, MixConfig(weights={"a": 0.2, "b": 0.8}, seed=0))).column("id").to_pylist())
    other = set(draw(t, planned(t, MixConfig(weights={"a": 0.2, "b": 0.8}, seed=1))).column("id").to_pylist())
    assert first != other


def test_tallies_add_up_part_by_part():
    t = corpus({"a": (700, 200), "b": (300, 400)}, clusters=True)
    config = MixConfig(weights={"a": 0.5, "b": 0.5}, rehydrate=RehydrateConfig(enabled=True))
    tokens = t.column("num_tokens").to_numpy()
    ok = np.ones(len(t), bool)
    whole = tally(t, tokens, ok, config)
    parts: dict[str, Tally] = {}
    for i in range(0, len(t), 128):
        piece = t.slice(i, 128)
        parts = add_tallies(
            parts,
            {
                k: Tally.from_json(v.to_json())
                for k, v in tally(piece, tokens[i : i + 128], ok[i : i + 128], config).items()
            },
        )
    for name in whole:
        assert whole[name].to_json() == parts[name].to_json()


def test_rehydration_weights_are_fineweb2s():
    sizes = np.array([1, 2, 3, 4, 5, 99, 100, 999, 1000, 50_000, 0])
    assert RehydrateConfig(enabled=True).copies(sizes).tolist() == [1, 2, 3, 3, 5, 5, 8, 8, 1, 1, 1]
    assert FINEWEB2 == {1: 1, 2: 2, 3: 3, 5: 5, 100: 8, 1000: 1}


def test_rehydration_alone_repeats_documents_by_cluster_size():
    t = corpus({ALL: (400, 200)}, clusters=True).drop_columns(["source_name"])
    plan = planned(t, MixConfig(rehydrate=RehydrateConfig(enabled=True)))
    n = copies(t, plan)
    expected = RehydrateConfig(enabled=True).copies(t.column("dup_cluster_size").to_numpy())
    assert n.tolist() == expected.tolist()  # no mix by source: each document exactly its weight
    section = manifest_section(plan, group_totals(draw(t, plan)))
    assert section["rehydration"]["documents_by_weight"] == {
        str(k): int(v) for k, v in zip(*np.unique(expected, return_counts=True), strict=False)
    }
    assert section["sources"]["(all)"]["samples"] == int(expected.sum())


def test_rehydration_with_a_mix_draws_the_shares_of_the_rehydrated_pool():
    t = corpus({"a": (2000, 200), "b": (300, 200)}, clusters=True)
    config = MixConfig(weights={"a": 0.6, "b": 0.4}, rehydrate=RehydrateConfig(enabled=True, weights={1: 1, 2: 4}))
    samples = draw(t, planned(t, config))
    got = shares_of(samples)
    assert abs(got["a"] - 0.6) <= 0.005 and abs(got["b"] - 0.4) <= 0.005


def test_a_source_without_tokens_and_a_share_that_cannot_be_met_are_errors():
    t = corpus({"a": (100, 200)})
    with pytest.raises(MixError, match=r"mix.weights.b: source 'b' has no tokens"):
        planned(t, MixConfig(weights={"a": 0.5, "b": 0.5}))
    few = corpus({"a": (3, 5000), "b": (3, 5000)})  # three long documents a source: no cut lands near 13%
    with pytest.raises(MixError, match="max_share_error"):
        planned(few, MixConfig(weights={"a": 0.13, "b": 0.87}))


def test_a_draw_past_max_epochs_is_an_error_before_anything_is_drawn():
    t = corpus({"ten": (10, 300)})  # ~3,000 tokens
    tracemalloc.start()
    try:
        with pytest.raises(
            MixError,
            match=r"^mix.tokens: the mix would repeat source 'ten' [\d,]+\.\d times .* more "
            r"than mix.max_epochs \(100\)",
        ):
            planned(t, MixConfig(weights={"ten": 1}, tokens=10**12))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # the histogram, never 10^8 copies of anything
    tokens = int(t.column("num_tokens").to_numpy().sum())
    plan = planned(t, MixConfig(weights={"ten": 1}, tokens=50 * tokens))  # 50 epochs: allowed
    epochs = plan.source("ten").epochs
    assert epochs == pytest.approx(50, rel=0.01) and repeated_sources(plan) == {"ten": epochs}
    with pytest.raises(MixError, match="mix.rehydrate.weights: the mix would repeat source 'all'"):
        planned(
            corpus({"": (10, 300)}, clusters=True),
            MixConfig(rehydrate={"enabled": True, "weights": {1: 900}}, max_epochs=5),
        )
    assert repeated_sources(planned(t, MixConfig(epochs={"ten": 4}))) == {}  # at 4 epochs: no warning


def test_documents_of_a_source_the_plan_does_not_know_are_an_error_not_a_loss():
    t = corpus({"a": (100, 200), "b": (100, 200)})
    plan = planned(t.filter(pa.compute.equal(t.column("source_name"), "a")), MixConfig(epochs={"a": 1}))
    with pytest.raises(MixError, match="does not know"):
        draw(t, plan)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"weights": {"a": 1}, "epochs": {"a": 1}}, "not both"),
        ({"weights": {"a": 0}}, "more than 0"),
        ({"weights": {"a": -1}}, "from 0 to 1000"),
        ({"tokens": 10, "epochs": {"a": 1}}, "tokens sets the output size"),
        ({"rehydrate": {"weights": {2: 2}}}, "cluster size 1"),
        ({"epochs": {"a": 1, "wiki": 200}}, r"epochs.wiki: 200 epochs is more than max_epochs \(100\)"),
        ({"epochs": {"a": 20}, "max_epochs": 10}, "more than max_epochs"),
    ],
)
def test_config_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        MixConfig.model_validate(bad)
