"""Dedup against an earlier run (``dedup.against``, issue 21.2): run 2 of N documents against run 1's index of N.

    python benchmarks/dedup_against.py                 # 100k + 100k documents
    python benchmarks/dedup_against.py --docs 1000000 --both-joins  # 1M + 1M (~20 min on 2 cores)

One synthetic corpus of 2N documents (benchmarks/synth_corpus.py: planted near-duplicate clusters spread
over the whole corpus, 500 site templates whose header and footer every page of a site shares) is cut in
two snapshots: the first N rows are run 1, the last N run 2.  A document of run 2 whose cluster has a
member in run 1 is a copy of an earlier document (the truth); run 2 with ``dedup.against: [run 1]``
should remove exactly those with reason ``duplicate_earlier``.  Reports run 1's and run 2's wall time
and peak memory (the largest process of the tree, and the tree's total; psutil every 0.2 s), the
against step's own seconds, run 2 without ``against`` for comparison, precision/recall of
``duplicate_earlier`` and the index's size per million kept documents.  Writes
benchmarks/results/dedup_against.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0]).resolve() == ROOT / "benchmarks":
    sys.path[0] = str(ROOT)

import argparse
import json
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks._common import machine_info  # noqa: E402
from benchmarks.memory import PeakMemory  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dedup_against.md"


def write_snapshot(root: Path, table: pa.Table, parts: int) -> None:
    from benchmarks.synth_corpus import write_parts
    from core.storage import Storage

    write_parts(Storage(str(root)), table, parts)


def timed_run(root: Path, workers: int, against: list[str], **dedup) -> dict:
    from core.storage import Storage
    from pipeline.config import parse_config
    from tests.dedup_standalone import run_dedup

    cfg = parse_config(
        {
            "inputs": ["unused"],
            "output": str(root),
            "dedup": {"against": against, **dedup},
            "ray": {"num_cpus": workers},
        }
    )
    t0 = time.perf_counter()
    with PeakMemory() as mem:
        summary = run_dedup(cfg, Storage(str(root)), workers, progress=False)
    return {
        "wall": time.perf_counter() - t0,
        "peak_rss": mem.peak_rss,
        "peak_name": mem.peak_name,
        "peak_total": mem.peak_total,
        "summary": summary,
    }


def join_path(r: dict) -> str:
    p = r["summary"].get("earlier_partitions", 1)
    return f"step 2d as shuffles, {p} partitions" if p > 1 else "step 2d joined in the driver"


def removed_by_reason(root: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in sorted((root / "rejected" / "deduped").glob("*.parquet")):
        t = pq.read_table(f, columns=["id", "reason"])
        for i, r in zip(t.column("id").to_pylist(), t.column("reason").to_pylist(), strict=False):
            out.setdefault(r, set()).add(i)
    return out


#: Edit classes by the Jaccard of a copy's body to run 1's kept member: one paragraph dropped or added
#: alone gives ~0.8, a few words ~0.9; two copies edited apart (one drops a paragraph, the other adds one) fall below.
CLASSES = (("light", "≥ 0.8", 0.8, 1.01), ("medium", "0.6 - 0.8", 0.6, 0.8), ("heavy", "< 0.6", 0.0, 0.6))


def body_shingles(text: str) -> set[tuple[str, ...]]:
    """Word 5-grams of a synthetic page's body: its paragraphs without the header, the date line and the footer."""
    words = " ".join(text.split("\n\n")[2:-1]).lower().split()
    return {tuple(words[i : i + 5]) for i in range(max(1, len(words) - 4))}


def cluster_members(first: pa.Table, c1: np.ndarray, second: pa.Table, c2: np.ndarray, in_run1: np.ndarray) -> dict:
    """{"run1": {cluster: [(id, text)]}, "run2": [(id, cluster, text)]} of the clusters with members in both runs."""
    run1: dict[int, list] = {}
    wanted = set(c2[in_run1].tolist())
    pick = np.isin(c1, list(wanted))
    for i, c, t in zip(
        first.column("id").filter(pa.array(pick)).to_pylist(),
        c1[pick].tolist(),
        first.column("text").filter(pa.array(pick)).to_pylist(),
        strict=False,
    ):
        run1.setdefault(c, []).append((i, t))
    run2 = list(
        zip(
            second.column("id").filter(pa.array(in_run1)).to_pylist(),
            c2[in_run1].tolist(),
            second.column("text").filter(pa.array(in_run1)).to_pylist(),
            strict=False,
        )
    )
    return {"run1": run1, "run2": run2}


def recall_by_similarity(members: dict, run1_removed: dict[str, set[str]], found: set[str]) -> list[tuple]:
    """(class, span, copies, found) per edit class: each copy against the nearest member run 1 kept."""
    gone = set().union(*run1_removed.values()) if run1_removed else set()
    kept = {c: [body_shingles(t) for i, t in docs if i not in gone] for c, docs in members["run1"].items()}
    counts = {name: [0, 0] for name, *_ in CLASSES}
    for i, c, t in members["run2"]:
        mine = body_shingles(t)
        j = max((len(mine & k) / max(1, len(mine | k)) for k in kept.get(c, [])), default=0.0)
        name = next(name for name, _, lo, hi in CLASSES if lo <= j < hi)
        counts[name][0] += 1
        counts[name][1] += i in found
    return [(name, span, *counts[name]) for name, span, *_ in CLASSES]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000, help="documents per snapshot")
    ap.add_argument("--dup-fraction", type=float, default=0.2)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--results", default=str(RESULTS))
    ap.add_argument("--keep", action="store_true", help="keep the outputs")
    ap.add_argument(
        "--both-joins",
        action="store_true",
        help="when step 2d shuffles, run 2 once more with its joins in the driver (partition_rows raised)",
    )
    args = ap.parse_args(argv)

    from benchmarks import synth_corpus as sc
    from pipeline.config import parse_config
    from pipeline.runner import init_ray

    n = args.docs
    base = Path(tempfile.mkdtemp(prefix="dedup-against-"))
    t0 = time.perf_counter()
    table, cluster = sc.generate(2 * n, args.dup_fraction, seed=0)
    first, second = table.slice(0, n), table.slice(n, n)
    c1, c2 = cluster[:n], cluster[n:]
    in_run1 = np.isin(c2, c1[c1 >= 0]) & (c2 >= 0)  # one set lookup per document, not a set built per document
    truth = set(second.column("id").filter(pa.array(in_run1)).to_pylist())
    members = cluster_members(first, c1, second, c2, in_run1)
    run1, run2, plain = base / "run1", base / "run2", base / "run2-plain"
    write_snapshot(run1, first, args.parts)
    write_snapshot(run2, second, args.parts)
    write_snapshot(plain, second, args.parts)
    print(
        f"corpus: 2 x {n} documents ({time.perf_counter() - t0:.1f} s), {len(truth)} copies of run 1's in run 2",
        flush=True,
    )

    init_ray(parse_config({"inputs": ["unused"], "output": str(base), "ray": {"num_cpus": args.workers}}))
    r1 = timed_run(run1, args.workers, [])
    print(f"run 1: {r1['wall']:.1f} s", flush=True)
    r2p = timed_run(plain, args.workers, [])
    print(f"run 2 alone: {r2p['wall']:.1f} s", flush=True)
    r2 = timed_run(run2, args.workers, [str(run1)])
    print(
        f"run 2 against run 1: {r2['wall']:.1f} s ({r2['summary'].get('earlier_partitions')} partitions)", flush=True
    )
    r2h = None
    if args.both_joins and r2["summary"].get("earlier_partitions", 1) > 1:  # the same run, the joins in the driver
        here = base / "run2-here"
        write_snapshot(here, second, args.parts)
        r2h = timed_run(here, args.workers, [str(run1)], partition_rows=100_000_000)
        print(f"run 2 against run 1, joined in the driver: {r2h['wall']:.1f} s", flush=True)

    removed = removed_by_reason(run2).get("duplicate_earlier", set())
    hit = len(removed & truth)
    precision, recall = hit / max(1, len(removed)), hit / max(1, len(truth))
    by_class = recall_by_similarity(members, removed_by_reason(run1), removed)
    s1 = r1["summary"]
    index_files = sorted((run1 / "dedup_index").glob("*.parquet"))
    index_bytes = sum(f.stat().st_size for f in index_files)
    settings_bytes = (run1 / "dedup_index" / "settings.json").stat().st_size
    per_m = index_bytes / s1["kept"] * 1e6
    columns = {}
    for f in index_files:
        meta = pq.ParquetFile(f).metadata
        for rg in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                col = meta.row_group(rg).column(c)
                name = col.path_in_schema.split(".")[0]
                columns[name] = columns.get(name, 0) + col.total_compressed_size
    gib = 1 << 30
    mem = lambda r: f"{r['peak_rss'] / gib:.2f} GiB ({r['peak_name']}); tree {r['peak_total'] / gib:.2f} GiB"  # noqa: E731
    lines = [
        f"# Dedup against an earlier run: {n:,} + {n:,} documents",
        "",
        f"`python benchmarks/dedup_against.py --docs {n}` ({machine_info()}; {args.workers} workers).",
        "",
        "One synthetic corpus (benchmarks/synth_corpus.py, dup fraction "
        f"{args.dup_fraction}) cut in two snapshots; run 2's copies "
        "of run 1's documents are the documents of a cluster "
        "that has a member in run 1.",
        "",
        "| run | wall s | largest process peak | removed |",
        "|---|---:|---|---:|",
        f"| run 1 (writes its index) | {r1['wall']:.1f} | {mem(r1)} | {s1['rejected']:,} of {s1['in']:,} |",
        f"| run 2 alone | {r2p['wall']:.1f} | {mem(r2p)} | {r2p['summary']['rejected']:,} |",
        f"| run 2 with `against: [run 1]` ({join_path(r2)}) | "
        f"{r2['wall']:.1f} | {mem(r2)} | {r2['summary']['rejected']:,} "
        f"({r2['summary']['rejected_by_reason'].get('duplicate_earlier', 0):,} `duplicate_earlier`) |",
        *(
            [
                f"| run 2 with `against: [run 1]` ({join_path(r2h)}) | {r2h['wall']:.1f} | {mem(r2h)} | "
                f"{r2h['summary']['rejected']:,} "
                f"({r2h['summary']['rejected_by_reason'].get('duplicate_earlier', 0):,} "
                f"`duplicate_earlier`; the against step {r2h['summary']['step_seconds'].get('earlier', 0):.2f} s) |"
            ]
            if r2h
            else []
        ),
        "",
        f"- the against step (2d): {r2['summary']['step_seconds'].get('earlier', 0):.2f} s "
        f"(of which exact matches {r2['summary'].get('duplicate_earlier_exact', 0):,}, through a copy in run 2 "
        f"{r2['summary'].get('duplicate_earlier_through_copy', 0):,}); "
        f"steps of run 2: {json.dumps(r2['summary']['step_seconds'])}",
        f"- `duplicate_earlier` vs the truth ({len(truth):,} copies): precision {precision:.4f}, recall {recall:.4f}",
        "- recall by how much a copy differs from the document run 1 kept of its cluster (Jaccard of the word 5-grams "
        "of the body, without the site's header, footer and the date line; the best of run 1's kept members):",
        "",
        "| edit class | Jaccard to run 1's kept copy | copies | share | found | recall |",
        "|---|---|---:|---:|---:|---:|",
        *[
            f"| {name} | {span} | {n:,} | {n / max(1, len(truth)):.1%} | {f:,} | {f / max(1, n):.4f} |"
            for name, span, n, f in by_class
        ],
        "",
        f"- run 1's index: {index_bytes:,} bytes for {s1['kept']:,} "
        f"kept documents = **{per_m / 1e6:.1f} MB per million "
        f"documents** (zstd Parquet; settings.json {settings_bytes} bytes); by column: "
        + ", ".join(
            f"{k} {v / s1['kept'] * 1e6 / 1e6:.1f} MB/M" for k, v in sorted(columns.items(), key=lambda kv: -kv[1])
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text(text)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
