"""Host boilerplate and the keeper check (issue 12): pages of one site sharing a long block are not duplicates.

Unit tests of stages.dedup.boilerplate and stages.dedup.keep, then phase 2 end
to end on the generator of benchmarks/dedup_boilerplate_corpus.py (as text:
what a perfect extractor returns; the benchmark runs the WARC pages through
phase 1 with the filters on and off).
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.dedup_boilerplate_corpus import generate, page_text
from stages.dedup import boilerplate
from stages.dedup.config import MinHashConfig
from stages.dedup.keep import assign_keepers, choose_keepers
from stages.dedup.minhash import signatures

# --- hosts -------------------------------------------------------------------------------


def test_url_hosts_drop_scheme_userinfo_port_case_and_www():
    urls = pa.array(
        [
            "https://WWW.Example.com:8080/a?b",
            "http://user:pw@news.site.org/x",
            "example.net/path",
            "https://www2.shop.example/",
            "",
            None,
            "mailto:x",
        ]
    )
    assert boilerplate.url_hosts(urls).to_pylist() == [
        "example.com",
        "news.site.org",
        "example.net",
        "shop.example",
        "",
        "",
        "mailto",
    ]
    keys = boilerplate.host_keys(urls)
    assert keys[4] == 0 and keys[5] == 0 and len(set(keys[:4].tolist())) == 4
    assert boilerplate.host_keys(pa.array(["https://example.com/1"]))[0] == keys[0]


# --- frequent values -----------------------------------------------------------------------


def test_frequent_values_counts_documents_of_one_host_and_exact_copies_once():
    sig = np.array([[7, 1], [7, 2], [7, 3], [7, 4], [7, 5], [7, 5], [7, 9]], dtype=np.uint32)
    group = np.array([1, 1, 1, 1, 2, 2, 0], dtype=np.uint64)
    text = np.array([10, 11, 12, 13, 14, 14, 15], dtype=np.uint64)
    mask = boilerplate.frequent_values(group, text, sig, min_docs=4)
    # host 1: four texts share 7 at position 0; host 2's two docs are one text; no host: never
    assert mask[:, 0].tolist() == [True, True, True, True, False, False, False]
    assert not mask[:, 1].any()
    assert boilerplate.frequent_values(group, text, sig, min_docs=5)[:4, 0].tolist() == [False] * 4
    # the same value at another position is another value
    sig2 = np.array([[7, 0], [7, 0], [0, 7], [0, 7]], dtype=np.uint32)
    m2 = boilerplate.frequent_values(np.ones(4, np.uint64), np.arange(4, dtype=np.uint64), sig2, min_docs=3)
    assert not m2.any()


def test_pack_unpack_round_trip():
    rng = np.random.default_rng(0)
    mask = rng.random((5, 128)) < 0.3
    assert (boilerplate.unpack(boilerplate.pack(mask), 128) == mask).all()
    assert boilerplate.unpack(boilerplate.pack(np.zeros((0, 128), bool)), 128).shape == (0, 128)


def test_similarity_leaves_out_positions_whose_union_minimum_is_boilerplate():
    a = np.array([[1, 5, 3, 8, 2, 6, 4, 9]], dtype=np.uint32)
    b = np.array([[1, 5, 7, 8, 9, 6, 4, 0]], dtype=np.uint32)
    none = np.zeros((1, 8), bool)
    full, content = boilerplate.similarity(a, b, none, none)
    assert full[0] == content[0] == 5 / 8  # no boilerplate: the plain MinHash estimate
    ma = np.array([[1, 1, 0, 0, 1, 0, 0, 0]], bool)  # a's values at 0, 1 and 4 are host boilerplate
    mb = np.array([[0, 0, 0, 0, 0, 0, 0, 1]], bool)  # b's value at 7 is
    full, content = boilerplate.similarity(a, b, ma, mb)
    # out: 0 and 1 (agree, boilerplate), 4 (a's 2 < b's 9, a's is boilerplate), 7 (b's 0 < a's 9, b's is);
    # counted: 2 (disagree), 3, 5, 6 (agree)
    assert full[0] == 5 / 8 and content[0] == 3 / 4
    # too few counted positions (below num_perm / 16, at least 1): no content estimate
    all_bp = np.ones((1, 8), bool)
    assert boilerplate.similarity(a, b, all_bp, all_bp)[1][0] == 0.0
    assert boilerplate.is_duplicate(a, a, all_bp, all_bp, 0.3, 0.7)[0]  # identical: a duplicate anyway


def _generator_signatures(pages):
    cfg = MinHashConfig()
    sig, _, _ = signatures(pa.array([page_text(p) for p in pages], pa.large_string()), cfg)
    hosts = boilerplate.host_keys(pa.array([p.url for p in pages]))
    texts = np.arange(len(pages), dtype=np.uint64)  # no exact copies in the generator
    return sig, boilerplate.frequent_values(hosts, texts, sig, cfg.boilerplate.min_docs)


def test_generator_pages_sharing_a_block_are_similar_by_text_but_not_without_it():
    pages = generate(pages=40, seed=3)
    sig, mask = _generator_signatures(pages)
    by_site = defaultdict(list)
    for i, p in enumerate(pages):
        if p.kind == "article":
            by_site[p.site].append(i)
    assert len(by_site) == 3 and all(0.28 <= p.block_share <= 0.6 for p in pages if p.kind == "article")
    pairs = np.array([pair for ids in by_site.values() for pair in itertools.combinations(ids, 2)])
    full, content = boilerplate.similarity(sig[pairs[:, 0]], sig[pairs[:, 1]], mask[pairs[:, 0]], mask[pairs[:, 1]])
    assert (full >= 0.3).mean() > 0.3  # what the old check let through
    assert content.max() < 0.2 and full.max() < 0.6
    index = {p.url: i for i, p in enumerate(pages)}
    copies = np.array([(i, index[p.cluster]) for i, p in enumerate(pages) if p.kind == "copy"])
    same = boilerplate.is_duplicate(
        sig[copies[:, 0]], sig[copies[:, 1]], mask[copies[:, 0]], mask[copies[:, 1]], 0.3, 0.7
    )
    assert same.all()


# --- keep rule -----------------------------------------------------------------------------


def test_assign_keepers_breaks_chains_in_rounds():
    # one component sorted by priority: 0 ~ 1, 1 ~ 2, 0 !~ 2, 2 ~ 3; another: 4 ~ 5
    similar = {(1, 0), (2, 1), (3, 2), (5, 4)}

    def check(a, b):
        return np.array(
            [(int(x), int(y)) in similar or (int(y), int(x)) in similar for x, y in zip(a, b, strict=False)], bool
        )

    comp = np.array([0, 0, 0, 0, 1, 1])
    assert assign_keepers(comp, check).tolist() == [0, 0, 2, 2, 4, 4]
    # without the check every member goes under the best one; with too few rounds the rest stays
    assert assign_keepers(comp, lambda a, b: np.ones(len(a), bool)).tolist() == [0, 0, 0, 0, 4, 4]
    assert assign_keepers(comp, check, max_rounds=1).tolist() == [0, 0, 2, 3, 4, 4]


def _members(ids, comp, texts=None):
    n = len(ids)

    def digest(v):
        return bytes([v]) * 16

    return pa.table(
        {
            "doc": pa.array(range(n), pa.int64()),
            "comp": pa.array(comp, pa.int64()),
            "id": pa.array(ids),
            "text_hash": pa.array([digest(t) for t in (texts or range(n))], pa.binary(16)),
            "url_hash": pa.nulls(n, pa.binary(16)),
            "score": pa.nulls(n, pa.float64()),
        }
    )


def test_choose_keepers_names_the_kept_id_in_valid_json_and_keeps_failed_members():
    members = _members(["b\tid", 'a"id', "c\\id", "d\nid"], [0, 0, 0, 0], texts=[1, 1, 2, 3])

    def fails_d(t, a, b):
        return np.array([t.column("id")[int(x)].as_py() != "d\nid" for x in a], bool)

    out = {r["doc"]: r for r in choose_keepers(members, False, fails_d).to_pylist()}
    assert out[1]["reason"] is None and out[3]["reason"] is None  # a"id kept; d\nid fails against it: kept too
    assert out[0]["reason"] == "exact_duplicate" and out[2]["reason"] == "duplicate"
    assert json.loads(out[0]["details"]) == {"kept_id": 'a"id', "cluster_size": 3}
    assert out[1]["cluster_size"] == 3 and out[3]["cluster_size"] == 1
    # equal ids: the smaller document key is kept, whatever the input order
    twins = _members(["x", "x"], [0, 0]).take(pa.array([1, 0]))
    assert [r["reason"] is None for r in choose_keepers(twins, False).sort_by("doc").to_pylist()] == [True, False]


# --- phase 2 on the generator (Ray) ----------------------------------------------------------


def write_generator_parts(root, pages, parts: int = 3) -> None:
    from core.storage import Storage

    storage = Storage(str(root))
    for k in range(parts):
        chunk = pages[k::parts]
        unit = f"site-{k}"
        storage.write_parquet(
            pa.table(
                {
                    "id": [p.id.strip("<>") for p in chunk],
                    "url": [p.url for p in chunk],
                    "source": [unit] * len(chunk),
                    "text": pa.array([page_text(p) for p in chunk], pa.large_string()),
                    "language": ["en"] * len(chunk),
                }
            ),
            "documents",
            "extracted",
            f"part-{unit}.parquet",
        )
        storage.write_json({"unit": unit}, "_done", "extracted", f"{unit}.json")


def score(root, pages) -> dict:
    """Precision and recall of the removed set against the generator's clusters, and the largest kept cluster."""
    kept = pa.concat_tables([pq.read_table(f) for f in sorted((root / "documents" / "deduped").glob("*.parquet"))])
    files = sorted((root / "rejected" / "deduped").glob("*.parquet"))
    removed = pa.concat_tables([pq.read_table(f) for f in files]).to_pylist() if files else []
    kept_ids = set(kept.column("id").to_pylist())
    cluster = {p.id.strip("<>"): p.cluster for p in pages}
    members = defaultdict(set)
    for i, c in cluster.items():
        if c:
            members[c].add(i)
    tp = 0
    for r in removed:
        c = cluster[r["id"]]
        assert json.loads(r["details"])["kept_id"] in kept_ids  # every removed document names a kept one
        tp += bool(c) and json.loads(r["details"])["kept_id"] in members[c]
    should = sum(len(m) - 1 for m in members.values())
    return {
        "removed": len(removed),
        "precision": tp / len(removed) if removed else 1.0,
        "recall": tp / should,
        "largest": max(kept.column("dup_cluster_size").to_pylist()),
    }


def _outputs(root) -> dict:
    return {
        f"{d}/{f.name}": pq.read_table(f).to_pylist()
        for d in ("documents", "rejected")
        for f in sorted((root / d / "deduped").glob("*.parquet"))
    }


@pytest.mark.ray
def test_dedup_on_shared_block_pages_keeps_distinct_bodies_and_finds_copies(ray_local, tmp_path):
    from core.storage import Storage
    from pipeline.config import parse_config
    from tests.dedup_standalone import run_dedup

    pages = generate(pages=20, seed=0)
    runs = {
        "before": {"minhash": {"verify_kept": False, "boilerplate": {"enabled": False}}},
        "after": {},
        # small shuffle partitions (every step but the id check shuffles) and distributed components
        "distributed": {"partition_rows": 1000, "components": {"local_max_edges": 0}},
    }
    results = {}
    for name, dedup in runs.items():
        root = tmp_path / name
        write_generator_parts(root, pages)
        summary = run_dedup(
            parse_config({"inputs": ["unused"], "output": str(root), "dedup": dedup}),
            Storage(str(root)),
            workers=1 if name == "after" else 2,
            progress=False,
        )
        results[name] = (score(root, pages), summary, _outputs(root))
    before, after = results["before"][0], results["after"][0]
    largest_true = max(len([p for p in pages if p.cluster == c]) for c in {p.cluster for p in pages if p.cluster})
    assert before["precision"] < 0.9 and before["largest"] > 2 * largest_true  # the old check chains the sites
    assert after["precision"] >= 0.99 and after["recall"] >= before["recall"] and after["largest"] <= largest_true
    assert (
        results["after"][1]["largest_cluster"] == after["largest"] and results["after"][1]["boilerplate_docs"] >= 60
    )  # every article
    dist = results["distributed"][1]
    assert dist["components_path"] == "distributed" and dist["bucket_partitions"] > 1
    assert results["distributed"][2] == results["after"][2]  # same bytes with 1 or 2 workers, either path
