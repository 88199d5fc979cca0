"""Near-duplicate precision when the pages of a site share a long block (issue 12).

    python benchmarks/dedup_boilerplate.py [--pages 40] [--keep DIR]

Corpus: benchmarks/dedup_boilerplate_corpus.py (three sites whose articles
carry a block of 30-60% of their words: an English legal disclaimer, a German
privacy notice, an author bio; true copies of some bodies on other sites, on
another block site and on their own site; unrelated articles), written as
WARC files.  Phase 1 runs on them twice, with the heuristic filters on (as
configured by default: C4's policy rule deletes the English disclaimer) and
off (FineWeb-style: every block reaches phase 2); phase 2 then runs on each
output with:

* *before*: the checks of the previous release (pairs checked on their full
  signatures only, no check against the kept document);
* *keeper check only*: the check against the kept document, without the
  host boilerplate;
* *boilerplate only*: the host boilerplate (left out of the checks, and the
  content candidates of step 2c), without the keeper check;
* *no content candidates*: both, without the content rows of step 2c
  (``boilerplate.content_candidates: false``: the first release of the fix);
* *after*: the defaults.

Scoring as benchmarks/dedup_samples.py (a removed document is right when a
member of its ground-truth cluster is kept); *linked*: the same recall
counting only removed documents whose ``kept_id`` is a member of their own
true cluster (a copy removed into a cluster of unrelated pages is right by the
first rule when its original happens to be kept elsewhere, but it was not
found); *largest cluster*: the largest ``dup_cluster_size`` in the output (the
largest true cluster has 4 pages).
Then, filters off: sweeps of ``boilerplate.min_docs`` and
``identical_threshold``, and corpora with larger blocks (to 80% of the words)
to show where the fix stops holding.  Writes benchmarks/results/dedup_boilerplate.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0]).resolve() == ROOT / "benchmarks":
    sys.path[0] = str(ROOT)  # a module here named like a standard one would shadow it

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402

import pyarrow.parquet as pq  # noqa: E402

from benchmarks.dedup_boilerplate_corpus import generate, truth_rows, write_warcs  # noqa: E402
from benchmarks.dedup_samples import read_ids, score  # noqa: E402
from core.storage import Storage  # noqa: E402
from pipeline.config import parse_config  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dedup_boilerplate.md"

BEFORE = {"minhash": {"verify_kept": False, "boilerplate": {"enabled": False}}}
VARIANTS = {
    "before": BEFORE,
    "keeper check only": {"minhash": {"boilerplate": {"enabled": False}}},
    "boilerplate only": {"minhash": {"verify_kept": False}},
    "no content candidates": {"minhash": {"boilerplate": {"content_candidates": False}}},
    "after (defaults)": {},
}


def make_corpus(folder: Path, pages: int, seed: int = 0, share=(0.3, 0.6)) -> tuple[list[str], dict]:
    """WARC files and the ground truth (id -> row) of one generated corpus."""
    generated = generate(pages, seed, share=share)
    warcs = write_warcs(generated, folder)
    return [str(p) for p in warcs], {r["id"]: r for r in truth_rows(generated)}


def config(warcs: list[str], out: Path, filters: bool, dedup: dict | None = None):
    data = {"inputs": warcs, "output": str(out), "langid": {"keep": [], "min_score": 0.5}, "dedup": dedup or {}}
    if not filters:
        data["filters"] = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}
    return parse_config(data)


def largest_cluster(out: Path) -> int:
    files = sorted((out / "documents" / "deduped").glob("*.parquet"))
    return max(
        (max(pq.read_table(f, columns=["dup_cluster_size"]).column(0).to_pylist(), default=1) for f in files),
        default=0,
    )


def run_phase1(warcs: list[str], out: Path, filters: bool) -> None:
    from pipeline.runner import run

    if not (out / "_done" / "deduped" / "_corpus.json").exists():  # phase 2 done: phase 1 too
        run(config(warcs, out, filters), progress=False)


def run_dedup(warcs: list[str], out: Path, filters: bool, dedup: dict, truth: dict) -> dict:
    from tests.dedup_standalone import run_dedup as phase2

    t0 = time.perf_counter()
    summary = phase2(config(warcs, out, filters, dedup), Storage(str(out)), 2, progress=False)
    s = score(Storage(str(out)), truth)
    return {
        **s,
        **linked(Storage(str(out)), truth),
        "largest": largest_cluster(out),
        "seconds": time.perf_counter() - t0,
        "summary": summary,
    }


def linked(storage: Storage, truth: dict) -> dict:
    """Recall counting only removed documents whose kept document
    is in their own true cluster, overall and per variation.

    Per variation, as in ``score``: every member of a true cluster but one kept
    member (the smallest id when none is kept) is to be removed.
    """
    reached = {r["id"] for r in read_ids(storage, "documents", "extracted")}
    kept = {r["id"] for r in read_ids(storage, "documents", "deduped")}
    removed = {
        r["id"]: json.loads(r["details"])["kept_id"]
        for r in read_ids(storage, "rejected", "deduped", columns=("id", "details"))
    }
    clusters = defaultdict(list)
    for doc_id, t in truth.items():
        if t.get("dup_cluster") and doc_id in reached:
            clusters[t["dup_cluster"]].append(doc_id)

    def hit(m, members):
        return removed.get(m) in members

    should = sum(len(m) - 1 for m in clusters.values())
    tp = sum(hit(m, members) for members in clusters.values() for m in members)
    by_var, by_var_hit = Counter(), Counter()
    for members in clusters.values():
        kept_members = [m for m in members if m in kept]
        skip = kept_members[0] if kept_members else min(members)
        for m in members:
            if m != skip:
                for v in truth[m].get("dup_variation") or ["original"]:
                    by_var[v] += 1
                    by_var_hit[v] += hit(m, members)
    return {
        "recall_linked": tp / should if should else 1.0,
        "linked_by_variation": {v: f"{by_var_hit[v]}/{by_var[v]}" for v in sorted(by_var)},
    }


def row(label: str, s: dict, *cells) -> str:
    byvar = ", ".join(f"{k} {v}" for k, v in s["recall_by_variation"].items() if k != "original")
    linkvar = ", ".join(f"{k} {v}" for k, v in s["linked_by_variation"].items() if k != "original")
    return (
        f"| {label} | {' | '.join(str(c) for c in cells)} | {s['reached']} | {s['should_remove']} | {s['removed']} | "
        f"{s['precision']:.3f} | {s['recall']:.3f} | {s['recall_linked']:.3f} | {s['largest']} | {byvar} | {linkvar} |"
    )


HEADER = (
    "| phase 1 | settings | docs in | should remove | removed "
    "| precision | recall | recall, linked | largest cluster | "
    "recall by variation | linked by variation |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
)


def main(argv=None) -> int:
    from pipeline.runner import init_ray

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=40, help="articles per block site")
    ap.add_argument("--keep", help="keep corpora and outputs in this folder")
    ap.add_argument("--no-sweeps", dest="sweeps", action="store_false")
    args = ap.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dedup-boilerplate-"))
    warcs, truth = make_corpus(work / "corpus", args.pages)
    init_ray(config(warcs, work / "unused", True))
    lines = [
        "# Deduplication when the pages of a site share a long block",
        "",
        f"Corpus: benchmarks/dedup_boilerplate_corpus.py, {args.pages} "
        "articles on each of 3 block sites (block = 30-60% "
        "of the words), true copies of a quarter of them (other site, other block site, own site) plus one body per "
        f"site posted 4 times, 30 unrelated articles: {len(truth)} pages; the largest true cluster has 4 pages. "
        "Phase 1 with the heuristic filters on (defaults) and off; default extractor. "
        "`python benchmarks/dedup_boilerplate.py`.",
        "",
        "*recall*: as benchmarks/dedup_samples.py (a removed page is right when a member of its true cluster is "
        "kept, wherever); *recall, linked*: only removed pages whose kept page is in their own true cluster (a copy "
        "removed into a cluster of unrelated pages is not found). *no content candidates*: the defaults with "
        "`boilerplate.content_candidates: false` (the first release of the boilerplate fix).",
        "",
        *HEADER,
    ]
    for filters in (True, False):
        out = work / ("filters" if filters else "nofilters")
        run_phase1(warcs, out, filters)
        for label, dedup in VARIANTS.items():
            s = run_dedup(warcs, out, filters, dedup, truth)
            lines.append(row("filters" if filters else "no filters", s, label))
            print(lines[-1], f"false positives: {s['false_positives'][:5]}", flush=True)
    if args.sweeps:
        out = work / "nofilters"
        lines += ["", "## Settings (filters off)", "", *HEADER]
        for min_docs in (2, 3, 4, 6, 8):
            s = run_dedup(warcs, out, False, {"minhash": {"boilerplate": {"min_docs": min_docs}}}, truth)
            lines.append(row("no filters", s, f"min_docs {min_docs}"))
            print(lines[-1], flush=True)
        for identical in (0.6, 0.8, 0.9):
            s = run_dedup(warcs, out, False, {"minhash": {"boilerplate": {"identical_threshold": identical}}}, truth)
            lines.append(row("no filters", s, f"identical_threshold {identical}"))
            print(lines[-1], flush=True)
        lines += [
            "",
            "## Block share (filters off)",
            "",
            "Other corpora from the same generator, the block's share of an "
            "article's words drawn from the range given.",
            "",
            HEADER[0].replace("| phase 1 |", "| block share |"),
            HEADER[1],
        ]
        for lo in (0.3, 0.4, 0.5, 0.6, 0.7):
            share = (lo, round(lo + 0.1, 1))
            folder = work / f"share-{lo}"
            w, t = make_corpus(folder / "corpus", args.pages, share=share)
            run_phase1(w, folder / "out", False)
            for label in ("before", "no content candidates", "after (defaults)"):
                s = run_dedup(w, folder / "out", False, VARIANTS[label], t)
                lines.append(row(f"{share[0]:.1f}-{share[1]:.1f}", s, label))
                print(lines[-1], flush=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
