"""Precision and recall of phase 2 on the samples/ ground truth, per extractor.

    python benchmarks/dedup_samples.py            # default settings, every extractor
    python benchmarks/dedup_samples.py --sweep    # also threshold x n-gram x shingle on one extractor

Phase 1 runs once per extractor (with the heuristic filters on, as a user
runs it, and off, so that every duplicate reaches phase 2); phase 2 then runs
on that output.  Scoring, over the documents that reached phase 2:

* a removed document is a true positive iff it belongs to a ground-truth
  duplicate cluster in which some other member is kept;
* recall is over the members that should go: in each cluster, all but one
  of the members that reached phase 2.

Writes benchmarks/results/dedup_samples.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import typing
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.storage import Storage  # noqa: E402
from pipeline.config import load_config  # noqa: E402
from stages.extract import ExtractConfig  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dedup_samples.md"


def ground_truth(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines()) if r.get("id")}


def read_ids(storage: Storage, *folder: str, columns=("id",)) -> list[dict]:
    rows = []
    for name in storage.list(*folder, suffix=".parquet"):
        rows += pq.read_table(storage.path(*folder, name), columns=list(columns)).to_pylist()
    return rows


def score(storage: Storage, truth: dict[str, dict]) -> dict:
    reached = {r["id"] for r in read_ids(storage, "documents", "extracted")}
    kept = {r["id"] for r in read_ids(storage, "documents", "deduped")}
    removed = {r["id"]: r["reason"] for r in read_ids(storage, "rejected", "deduped", columns=("id", "reason"))}
    clusters = defaultdict(list)
    for doc_id, t in truth.items():
        if t.get("dup_cluster") and doc_id in reached:
            clusters[t["dup_cluster"]].append(doc_id)
    tp = fp = 0
    fp_ids = []
    for doc_id in removed:
        c = truth.get(doc_id, {}).get("dup_cluster")
        if c and any(m in kept for m in clusters[c] if m != doc_id):
            tp += 1
        else:
            fp += 1
            fp_ids.append(doc_id)
    should = sum(len(m) - 1 for m in clusters.values())
    # recall per variation: a cluster member (not the kept one) that carries that variation
    by_var, by_var_hit = Counter(), Counter()
    for members in clusters.values():
        kept_members = [m for m in members if m in kept]
        for m in members:
            if kept_members and m == kept_members[0]:
                continue
            if not kept_members and m == min(members):
                continue
            for v in truth[m].get("dup_variation") or ["original"]:
                by_var[v] += 1
                by_var_hit[v] += m in removed
    return {
        "reached": len(reached),
        "clusters": len([c for c in clusters.values() if len(c) > 1]),
        "should_remove": should,
        "removed": len(removed),
        "tp": tp,
        "fp": fp,
        "precision": tp / len(removed) if removed else 1.0,
        "recall": tp / should if should else 1.0,
        "recall_by_variation": {v: f"{by_var_hit[v]}/{by_var[v]}" for v in sorted(by_var)},
        "false_positives": fp_ids[:10],
    }


SAMPLES = ROOT / "samples"


def _config(extractor: str, out: str, filters: bool, dedup: dict | None = None):
    cfg = load_config(ROOT / "jobs" / "sample.yaml", [str(p) for p in sorted(SAMPLES.glob("*.warc.gz"))], out)
    data = cfg.model_dump(mode="json")
    data["extract"]["extractor"] = extractor
    if not filters:
        for name, section in data["filters"].items():
            if isinstance(section, dict) and "enabled" in section and name != "url":
                section["enabled"] = False
    data["dedup"] = {**data["dedup"], **(dedup or {})}
    return type(cfg).model_validate(data)


def run_one(extractor: str, filters: bool, workdir: Path, truth: dict, dedup: dict | None = None) -> dict:
    from pipeline.runner import init_ray, run

    out = workdir / f"{extractor}-{'filters' if filters else 'nofilters'}"
    cfg = _config(extractor, str(out), filters, dedup)
    init_ray(cfg)
    run(cfg, progress=False)
    return score(Storage(str(out)), truth)


def sweep(extractor: str, workdir: Path, truth: dict) -> list[tuple[dict, dict]]:
    """Phase 2 settings on one phase-1 output (filters on, as users run it)."""
    from tests.dedup_standalone import run_dedup

    out = workdir / f"{extractor}-filters"
    rows = []
    for shingle, ngrams in (("word", (3, 5, 7)), ("char", (5,))):
        for n in ngrams:
            for threshold in (0.4, 0.5, 0.6, 0.7, 0.8):
                minhash = {"shingle": shingle, "ngram": n, "threshold": threshold}
                cfg = _config(extractor, str(out), True, {"minhash": minhash})
                run_dedup(cfg, Storage(str(out)), 2, progress=False)
                rows.append((minhash, score(Storage(str(out)), truth)))
    return rows


def main(argv=None) -> int:
    global SAMPLES
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", action="store_true", help="also sweep threshold, n-gram size and shingle type")
    ap.add_argument(
        "--extractors", nargs="*", default=list(typing.get_args(ExtractConfig.model_fields["extractor"].annotation))
    )
    ap.add_argument("--sweep-extractor", default="trafilatura", help="phase-1 output the sweep runs on")
    ap.add_argument("--keep", help="keep the outputs in this folder (a rerun with the same folder reuses phase 1)")
    ap.add_argument("--samples", default=str(SAMPLES), help="folder with the sample WARCs and ground_truth.jsonl")
    args = ap.parse_args(argv)
    SAMPLES = Path(args.samples)
    truth = ground_truth(SAMPLES / "ground_truth.jsonl")
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dedup-samples-"))
    lines = [
        "# Deduplication on samples/ (ground truth)",
        "",
        "Default dedup settings. *filters*: phase 1 as configured in jobs/sample.yaml; *no filters*: heuristic "
        "filters off, so every duplicate page reaches phase 2. Precision: removed documents that have a kept "
        "twin in their ground-truth cluster; recall: over all cluster members but one that reached phase 2.",
        "",
        "| extractor | phase 1 | docs in | dup clusters | should "
        "remove | removed | precision | recall | recall by variation |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for extractor in args.extractors:
        for filters in (True, False):
            s = run_one(extractor, filters, workdir, truth)
            byvar = ", ".join(f"{k} {v}" for k, v in s["recall_by_variation"].items())
            lines.append(
                f"| {extractor} | {'filters' if filters else 'no filters'} | {s['reached']} | {s['clusters']} | "
                f"{s['should_remove']} | {s['removed']} | {s['precision']:.3f} | {s['recall']:.3f} | {byvar} |"
            )
            print(lines[-1], flush=True)
            if s["false_positives"]:
                print(f"  false positives: {s['false_positives']}", flush=True)
    if args.sweep:
        extractor = args.sweep_extractor
        lines += [
            "",
            f"## Settings sweep ({extractor}, filters on)",
            "",
            "| shingle | n | threshold | removed | precision | recall |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for m, s in sweep(extractor, workdir, truth):
            lines.append(
                f"| {m['shingle']} | {m['ngram']} | {m['threshold']} | "
                f"{s['removed']} | {s['precision']:.3f} | {s['recall']:.3f} |"
            )
            print(lines[-1], flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
