"""Phase 2 end to end on Ray: accounting, the removed set, determinism, resume."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.storage import Storage
from pipeline.config import parse_config
from tests.conftest import Page, html
from tests.dedup_standalone import run_dedup

pytestmark = pytest.mark.ray

WORDS = [
    w
    for w in (
        "time person year way day thing man world life hand part "
        "child eye woman place work week case point government "
        "company number group problem fact river mountain garden "
        "window kitchen letter music market island forest doctor "
        "teacher village engine bridge harbor castle desert planet "
        "silver orange purple yellow winter summer autumn spring "
        "morning evening ocean valley meadow candle pencil rocket "
        "violin camera basket ladder mirror pillow jacket wallet"
    ).split()
]


def prose(rng: random.Random, n: int = 220) -> str:
    sentences = []
    while sum(len(s.split()) for s in sentences) < n:
        sentences.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + ".")
    return " ".join(sentences)


def edit(rng: random.Random, text: str, k: int) -> str:
    words = text.split()
    for i in rng.sample(range(len(words)), k):
        words[i] = rng.choice(WORDS)
    return " ".join(words)


def corpus():
    """Documents over three parts, with planted clusters; returns (parts, expected removed id -> (reason, kept id))."""
    rng = random.Random(11)
    docs = [{"id": f"doc-{i:03d}", "text": prose(rng)} for i in range(60)]
    expected = {}
    # exact copies (whitespace differs) of doc-001; near copies of doc-002 (a few edited words, an added sentence)
    docs.append({"id": "doc-101", "text": docs[1]["text"].replace(". ", ".\n\n")})
    docs.append({"id": "doc-102", "text": "  " + docs[1]["text"] + " "})
    expected.update({"doc-101": ("exact_duplicate", "doc-001"), "doc-102": ("exact_duplicate", "doc-001")})
    docs.append({"id": "doc-103", "text": edit(rng, docs[2]["text"], 3)})
    docs.append({"id": "doc-104", "text": docs[2]["text"] + " " + prose(rng, 10)})
    expected.update({"doc-103": ("duplicate", "doc-002"), "doc-104": ("duplicate", "doc-002")})
    # the kept one is the smallest id even when it comes last: doc-000 copies doc-150
    docs.append({"id": "doc-150", "text": edit(rng, docs[0]["text"], 2)})
    expected["doc-150"] = ("duplicate", "doc-000")
    rng.shuffle(docs)
    parts = {"unit-a": docs[:30], "unit-b": docs[30:], "unit-c": []}
    return parts, expected


def write_phase1(root, parts) -> None:
    write_phase1_to(Storage(str(root)), parts)


def write_phase1_to(storage: Storage, parts) -> None:
    for unit, docs in parts.items():
        table = pa.table(
            {
                "id": pa.array([d["id"] for d in docs], pa.string()),
                "url": pa.array([f"https://example.com/{d['id']}" for d in docs], pa.string()),
                "source": pa.array([unit] * len(docs), pa.string()),
                "text": pa.array([d["text"] for d in docs], pa.large_string()),
                "language": pa.array(["en"] * len(docs), pa.string()),
            }
        )
        storage.write_parquet(table, "documents", "extracted", f"part-{unit}.parquet")
        storage.write_json({"unit": unit}, "_done", "extracted", f"{unit}.json")


def config(root, **dedup):
    return parse_config({"inputs": ["unused"], "output": str(root), "dedup": dedup})


def outputs(root) -> tuple[dict, dict]:
    storage = Storage(str(root))
    kept, rejected = {}, {}
    for name in storage.list("documents", "deduped", suffix=".parquet"):
        kept[name] = pq.read_table(storage.path("documents", "deduped", name))
    for name in storage.list("rejected", "deduped", suffix=".parquet"):
        rejected[name] = pq.read_table(storage.path("rejected", "deduped", name))
    return kept, rejected


def removed(root) -> dict:
    _, rejected = outputs(root)
    out = {}
    for t in rejected.values():
        for r in t.to_pylist():
            out[r["id"]] = (r["reason"], json.loads(r["details"])["kept_id"])
    return out


def test_removes_planted_duplicates_and_accounts_for_every_row(ray_local, tmp_path):
    parts, expected = corpus()
    write_phase1(tmp_path, parts)
    summary = run_dedup(config(tmp_path), Storage(str(tmp_path)), workers=2, progress=False)
    assert removed(tmp_path) == expected
    kept, rejected = outputs(tmp_path)
    assert sorted(kept) == [f"part-{u}.parquet" for u in sorted(parts)]  # one output per input part, the empty one too
    for unit, docs in parts.items():
        k = kept[f"part-{unit}.parquet"]
        r = rejected.get(f"part-{unit}.parquet")
        assert len(k) + (len(r) if r is not None else 0) == len(docs)
        # kept rows keep their columns and their order
        ids = [d["id"] for d in docs if d["id"] not in expected]
        assert k.column("id").to_pylist() == ids
        assert {"id", "url", "source", "text", "language", "dup_cluster_size"} <= set(k.column_names)
        marker = json.loads((tmp_path / "_done" / "deduped" / f"{unit}.json").read_text())
        assert marker["in"] == len(docs) and marker["kept"] == len(k)
    sizes = {
        r["id"]: r["dup_cluster_size"] for t in kept.values() for r in t.select(["id", "dup_cluster_size"]).to_pylist()
    }
    assert sizes["doc-001"] == 3 and sizes["doc-002"] == 3 and sizes["doc-000"] == 2 and sizes["doc-005"] == 1
    assert summary["in"] == 65 and summary["rejected"] == len(expected)
    assert summary["rejected_by_reason"] == {"duplicate": 3, "exact_duplicate": 2}


def test_same_result_with_one_or_two_workers_and_either_components_path(ray_local, tmp_path):
    parts, expected = corpus()
    runs = {
        "w1": {"workers": 1},
        "w2": {"workers": 2},
        # many small shuffle partitions and the distributed large-star/small-star path
        "dist": {"workers": 2, "dedup": {"partition_rows": 200, "components": {"local_max_edges": 0}}},
        # exact Jaccard verification of candidate pairs, and URL keys (all URLs differ here)
        "exact": {"workers": 2, "dedup": {"minhash": {"verify": "exact"}, "exact": {"urls": True}}},
        "off": {"workers": 2, "dedup": {"minhash": {"verify": "off"}}},
    }
    results = {}
    for name, opts in runs.items():
        root = tmp_path / name
        write_phase1(root, parts)
        summary = run_dedup(
            config(root, **opts.get("dedup", {})), Storage(str(root)), workers=opts["workers"], progress=False
        )
        kept, _ = outputs(root)
        results[name] = (removed(root), {k: t.to_pylist() for k, t in kept.items()})
        if name == "dist":
            assert summary["components_path"] == "distributed" and summary["bucket_partitions"] > 1
    assert results["w1"][0] == expected
    assert results["w1"] == results["w2"] == results["dist"] == results["exact"] == results["off"]


def test_input_order_does_not_matter(ray_local, tmp_path):
    parts, expected = corpus()
    # the same documents, parts written in the other order and rows reversed inside each part
    reordered = {u: list(reversed(d)) for u, d in reversed(list(parts.items()))}
    write_phase1(tmp_path, reordered)
    run_dedup(config(tmp_path), Storage(str(tmp_path)), workers=2, progress=False)
    assert removed(tmp_path) == expected


def test_rerun_is_skipped_until_inputs_or_config_change(ray_local, tmp_path):
    parts, expected = corpus()
    write_phase1(tmp_path, parts)
    storage = Storage(str(tmp_path))
    first = run_dedup(config(tmp_path), storage, workers=2, progress=False)
    again = run_dedup(config(tmp_path), storage, workers=2, progress=False)
    assert again["skipped"] is True and again["rejected"] == first["rejected"]
    # exact dedup off: only the near copies go (the exact copies still match by MinHash)
    changed = run_dedup(config(tmp_path, exact={"enabled": False}), storage, workers=2, progress=False)
    assert "skipped" not in changed
    assert {k: v[1] for k, v in removed(tmp_path).items()} == {k: v[1] for k, v in expected.items()}
    assert {v[0] for v in removed(tmp_path).values()} == {"duplicate", "exact_duplicate"}


def test_runner_runs_dedup_after_extraction(ray_local, warc_factory, tmp_path):
    from pipeline.runner import run

    rng = random.Random(5)
    paras = [prose(rng, 60) for _ in range(6)]
    original = html("Harbor report", *paras)
    near = html("Harbor report (updated)", *paras[:5], edit(rng, paras[5], 2))
    other = html("Forest notes", *[prose(rng, 60) for _ in range(6)])
    warc_factory(
        "one.warc.gz", [Page("https://a.example/1", original.encode()), Page("https://b.example/2", other.encode())]
    )
    warc_factory("two.warc.gz", [Page("https://c.example/3", near.encode())])
    filters_off = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}
    results = []
    for order, out in ((["one.warc.gz", "two.warc.gz"], "a"), (["two.warc.gz", "one.warc.gz"], "b")):
        cfg = parse_config(
            {
                "inputs": [str(tmp_path / f) for f in order],
                "output": str(tmp_path / out),
                "filters": filters_off,
                "pii": {"enabled": False},
                "shards": {"enabled": False},
                "card": {"enabled": False},
            }
        )
        record = run(cfg, progress=False)
        assert record["phases"]["deduped"]["in"] == 3
        assert record["phases"]["deduped"]["rejected_by_reason"] == {"duplicate": 1}
        results.append(removed(tmp_path / out))
    assert results[0] == results[1] and len(results[0]) == 1


def test_unreadable_part_stops_dedup_with_a_clear_report(ray_local, tmp_path):
    parts, _ = corpus()
    write_phase1(tmp_path, parts)
    (tmp_path / "documents" / "extracted" / "part-unit-b.parquet").write_bytes(b"not parquet")
    summary = run_dedup(config(tmp_path), Storage(str(tmp_path)), workers=2, progress=False)
    assert list(summary["failed_parts"]) == ["unit-b"]
    assert not (tmp_path / "documents" / "deduped").exists()
    assert not (tmp_path / "_done" / "deduped" / "_phase.json").exists()


@pytest.mark.s3
def test_dedup_on_s3_with_shuffles(ray_local, s3_server):
    import pyarrow.fs as pafs

    from core.storage import S3Options

    fs = pafs.S3FileSystem(
        endpoint_override=s3_server.split("//")[1],
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    )
    fs.create_dir("dedup-test")
    root = "s3://dedup-test/run"
    parts, expected = corpus()
    storage = Storage(root, S3Options(endpoint_url=s3_server))
    write_phase1_to(storage, parts)
    # small partitions and distributed components: every Ray Data read/write goes through S3
    cfg = parse_config(
        {
            "inputs": ["unused"],
            "output": root,
            "storage": {"endpoint_url": s3_server},
            "dedup": {"partition_rows": 200, "components": {"local_max_edges": 0}},
        }
    )
    summary = run_dedup(cfg, storage, workers=2, progress=False)
    assert summary["rejected"] == len(expected) and summary["in"] == 65
    rejected = pq.read_table("dedup-test/run/rejected/deduped", filesystem=fs)
    assert sorted(rejected.column("id").to_pylist()) == sorted(expected)
    names = [
        i.path
        for i in fs.get_file_info(pafs.FileSelector("dedup-test/run", recursive=True))
        if i.type == pafs.FileType.File
    ]
    assert not any(".tmp" in n for n in names)
