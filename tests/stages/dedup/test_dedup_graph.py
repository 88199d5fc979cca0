"""LSH banding, star edges, connected components (both paths) and the keep rule."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from datasketch.lsh import _optimal_param

from stages.dedup.components import large_star, local_components, small_star
from stages.dedup.config import MinHashConfig, NormalizeConfig
from stages.dedup.edges import jaccard, signature_agreement, star_edges
from stages.dedup.exact import bucket_key, normalize_urls, text_hashes, url_hashes
from stages.dedup.keep import choose_keepers
from stages.dedup.lsh import band_keys, bands_rows, candidate_probability

# --- lsh -------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.9, 0.95])
@pytest.mark.parametrize("num_perm", [16, 100, 128, 256])
@pytest.mark.parametrize("weights", [(0.5, 0.5), (0.3, 0.7), (0.9, 0.1)])
def test_the_lsh_optimum_is_datasketchs_without_scipy(threshold, num_perm, weights):
    from stages.dedup.lsh import _optimal

    assert _optimal(threshold, num_perm, *weights) == _optimal_param(threshold, num_perm, *weights)


def test_bands_rows_follow_datasketch_and_overrides():
    cfg = MinHashConfig(threshold=0.8, num_perm=128)
    assert bands_rows(cfg) == _optimal_param(0.8, 128, 0.5, 0.5)
    assert bands_rows(MinHashConfig(num_perm=112, bands=14, rows=8)) == (14, 8)
    with pytest.raises(ValueError):
        MinHashConfig(num_perm=64, bands=14, rows=8)


def test_candidate_probability_hand_computed():
    assert candidate_probability(0.5, 2, 2) == pytest.approx(1 - 0.75**2)
    assert candidate_probability(1.0, 3, 5) == 1.0


def test_band_keys_equal_exactly_when_band_values_equal():
    sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [7, 7, 3, 4], [2, 1, 4, 3]], dtype=np.uint32)
    keys = band_keys(sig, 2, 2)
    assert keys[0, 0] == keys[1, 0] and keys[0, 1] != keys[1, 1]
    assert keys[0, 1] == keys[2, 1] and keys[0, 0] != keys[2, 0]
    assert len({*keys[3].tolist(), *keys[0].tolist()}) == 4  # order matters; bands are seeded apart
    same = np.array([[5, 5, 5, 5]], dtype=np.uint32)
    k = band_keys(same, 2, 2)
    assert k[0, 0] != k[0, 1]  # equal values in different bands never share a bucket


# --- edges -----------------------------------------------------------------------------


def test_star_edges_link_each_member_to_bucket_minimum():
    band = np.array([0, 0, 0, 0, 1, 1, 0, 0, -1, -1])
    key = np.array([5, 5, 5, 5, 5, 5, 6, 6, 5, 5], dtype=np.uint64)
    doc = np.array([10, 3, 7, 3, 7, 10, 4, 11, 11, 4])
    src, dst, lsh = star_edges(band, key, doc)
    # bucket (0,5) = {3,7,10} -> 7-3, 10-3; (1,5) = {7,10} -> 10-7; (0,6) = {4,11} -> 11-4,
    # also found by the exact key (band -1), so not a pair to verify
    assert sorted(zip(src.tolist(), dst.tolist(), lsh.tolist(), strict=False)) == [
        (7, 3, True),
        (10, 3, True),
        (10, 7, True),
        (11, 4, False),
    ]


def test_signature_agreement_hand_computed():
    a = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.uint32)
    b = np.array([[1, 2, 0, 0], [5, 6, 7, 8]], dtype=np.uint32)
    assert signature_agreement(a, b).tolist() == [0.5, 1.0]


def test_star_edges_verification_drops_dissimilar_pairs():
    band = np.array([0, 0, 0])
    key = np.array([1, 1, 1], dtype=np.uint64)
    doc = np.array([1, 2, 3])
    sets = pa.array([[1, 2, 3, 4], [1, 2, 3, 5], [7, 8, 9, 4]], pa.large_list(pa.uint64()))
    # J(2,1) = 3/5 = 0.6; J(3,1) = 1/7
    src, dst, _ = star_edges(band, key, doc, sets, 0.5)
    assert list(zip(src.tolist(), dst.tolist(), strict=False)) == [(2, 1)]
    src, _, _ = star_edges(band, key, doc, sets, 0.7)
    assert len(src) == 0


def test_jaccard_hand_computed():
    a = pa.array([[1, 2, 3], [], [4], [1, 2]], pa.large_list(pa.uint64()))
    b = pa.array([[2, 3, 4], [], [5], [1, 2]], pa.large_list(pa.uint64()))
    assert jaccard(a, b).tolist() == [0.5, 1.0, 0.0, 1.0]


# --- components ------------------------------------------------------------------------


def test_local_components_label_is_component_minimum():
    src = np.array([5, 9, 20, 31, 8])
    dst = np.array([2, 5, 10, 20, 7])
    nodes, labels = local_components(src, dst)
    assert dict(zip(nodes.tolist(), labels.tolist(), strict=False)) == {
        2: 2,
        5: 2,
        9: 2,
        10: 10,
        20: 10,
        31: 10,
        7: 7,
        8: 7,
    }


@pytest.mark.parametrize("seed", range(6))
def test_local_components_with_numpy_equal_scipys(seed, monkeypatch):
    from stages.dedup import components

    rng = np.random.default_rng(seed)
    n, m = (400, 380) if seed < 3 else (50, 2000)  # sparse (chains, many components), then dense
    x, y = rng.integers(0, n, m) * 7 + 3, rng.integers(0, n, m) * 7 + 3  # ids not 0..n-1
    keep = x != y
    src, dst = np.maximum(x, y)[keep], np.minimum(x, y)[keep]
    got = local_components(src, dst)
    monkeypatch.setattr(components, "NUMPY_MAX_EDGES", -1)
    expected = local_components(src, dst)
    assert got[0].tolist() == expected[0].tolist() and got[1].tolist() == expected[1].tolist()
    path = np.arange(1, 500)[::-1]  # a long chain, its edges largest first: the worst order for hooking
    monkeypatch.setattr(components, "NUMPY_MAX_EDGES", 100_000)
    assert set(local_components(path, path - 1)[1].tolist()) == {0}


def test_large_star_step_hand_computed():
    # edges 3-1, 5-3, 7-3 (both directions, as the map step emits them)
    a, b = np.array([3, 5, 7]), np.array([1, 3, 3])
    out = large_star(np.concatenate((a, b)), np.concatenate((b, a)))
    got = sorted(
        zip(out.column("a").to_pylist(), out.column("b").to_pylist(), out.column("changed").to_pylist(), strict=False)
    )
    # node 1: larger neighbour 3 -> (3,1) unchanged; node 3: m=1, larger 5,7 -> (5,1),(7,1) new
    assert got == [(3, 1, 0), (5, 1, 1), (7, 1, 1)]


def test_small_star_step_hand_computed():
    # node 9 has smaller neighbours 4 and 6; node 6 has 4
    out = small_star(np.array([9, 9, 6]), np.array([6, 4, 4]))
    got = sorted(
        zip(out.column("a").to_pylist(), out.column("b").to_pylist(), out.column("changed").to_pylist(), strict=False)
    )
    assert got == [(6, 4, 0), (6, 4, 1), (9, 4, 0)]


def _star_fixed_point(src: np.ndarray, dst: np.ndarray) -> dict:
    """Large-star/small-star in one process (one partition): the algorithm, without Ray."""
    a, b = src, dst
    for _ in range(100):
        t = large_star(np.concatenate((a, b)), np.concatenate((b, a)))
        a, b, c1 = (t.column(n).to_numpy() for n in ("a", "b", "changed"))
        t = small_star(a, b)
        a, b, c2 = (t.column(n).to_numpy() for n in ("a", "b", "changed"))
        if c1.sum() == 0 and c2.sum() == 0:
            break
    labels = dict(zip(a.tolist(), b.tolist(), strict=False))
    labels.update({int(r): int(r) for r in np.unique(b)})
    return labels


@pytest.mark.parametrize("seed", range(5))
def test_large_small_star_equals_union_find_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n, m = 300, 260  # sparse: many components, some long chains
    x, y = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = x != y
    src, dst = np.maximum(x, y)[keep], np.minimum(x, y)[keep]
    nodes, labels = local_components(src, dst)
    assert _star_fixed_point(src, dst) == dict(zip(nodes.tolist(), labels.tolist(), strict=False))


def test_large_small_star_on_a_long_path():
    src = np.arange(1, 200)
    dst = np.arange(0, 199)
    assert set(_star_fixed_point(src, dst).values()) == {0}


# --- exact -----------------------------------------------------------------------------


def test_text_hash_ignores_whitespace_only_by_default():
    h = text_hashes(
        pa.array(["a  b\n", "a b", "A b", "a b."]), NormalizeConfig(lowercase=False, punctuation=False, digits=False)
    )
    k = bucket_key(h)
    assert k[0] == k[1] and len({k[1], k[2], k[3]}) == 3


def test_url_normalization():
    urls = pa.array(
        ["HTTPS://Www.Example.com/A/b/#top", "http://www.example.com/A/b", "http://www.example.com/a/b", None]
    )
    assert normalize_urls(urls).to_pylist() == [
        "www.example.com/A/b",
        "www.example.com/A/b",
        "www.example.com/a/b",
        "",
    ]
    k = bucket_key(url_hashes(urls))
    assert k[0] == k[1] != k[2]


# --- keep ------------------------------------------------------------------------------


def _digest(x: int) -> bytes:
    return bytes([x]) * 16


def _members(score=None):
    cols = {
        "doc": [5, 3, 9, 7, 1],
        "comp": [1, 1, 1, 7, 1],
        "id": ["e", "c", "a", "z", "b"],
        "text_hash": pa.array([_digest(1), _digest(2), _digest(1), _digest(3), _digest(1)], pa.binary(16)),
        "url_hash": pa.array([_digest(8), _digest(9), None, None, None], pa.binary(16)),
    }
    if score is not None:
        cols["score"] = pa.array(score, pa.float64())
    return pa.table(cols)


def test_keep_first_id_and_reasons():
    out = {r["doc"]: r for r in choose_keepers(_members(), use_score=False).to_pylist()}
    assert out[9]["reason"] is None  # id "a" is the smallest in cluster 1
    assert out[1]["reason"] == "exact_duplicate" and out[5]["reason"] == "exact_duplicate"
    assert out[3]["reason"] == "duplicate"
    assert json.loads(out[3]["details"]) == {"kept_id": "a", "cluster_size": 4}
    assert out[7]["reason"] is None and out[7]["cluster_size"] == 1


def test_keep_highest_score_ties_by_id_missing_score_last():
    out = {r["doc"]: r for r in choose_keepers(_members([0.2, 0.9, None, 0.5, 0.9]), use_score=True).to_pylist()}
    # docs 3 (id c) and 1 (id b) tie at 0.9: b wins
    assert out[1]["reason"] is None
    assert json.loads(out[3]["details"])["kept_id"] == "b"
    assert out[9]["reason"] == "exact_duplicate"  # no score, same text as b


def test_keep_url_duplicate_reason():
    t = _members().slice(0, 2)  # docs 5 and 3: different text, different url
    t = t.set_column(4, "url_hash", pa.array([_digest(8), _digest(8)], pa.binary(16)))
    out = {r["doc"]: r for r in choose_keepers(t, use_score=False).to_pylist()}
    assert out[5]["reason"] == "url_duplicate" and out[3]["reason"] is None
