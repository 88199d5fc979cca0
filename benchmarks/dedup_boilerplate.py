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
* *keeper check only* / *boilerplate only*: one of the two parts of the fix;
* *after*: the defaults (both).

Scoring as benchmarks/dedup_samples.py (a removed document is right when a
member of its ground-truth cluster is kept); *largest cluster*: the largest
``dup_cluster_size`` in the output (the largest true cluster has 4 pages).
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

import pyarrow.parquet as pq  # noqa: E402

from benchmarks.dedup_boilerplate_corpus import generate, truth_rows, write_warcs  # noqa: E402
from benchmarks.dedup_samples import score  # noqa: E402
from pipeline.config import parse_config  # noqa: E402
from pipeline.storage import Storage  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dedup_boilerplate.md"

BEFORE = {"minhash": {"verify_kept": False, "boilerplate": {"enabled": False}}}
VARIANTS = {
    "before": BEFORE,
    "keeper check only": {"minhash": {"boilerplate": {"enabled": False}}},
    "boilerplate only": {"minhash": {"verify_kept": False}},
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
    return max((max(pq.read_table(f, columns=["dup_cluster_size"]).column(0).to_pylist(), default=1) for f in files), default=0)


def run_phase1(warcs: list[str], out: Path, filters: bool) -> None:
    from pipeline.runner import run

    if not (out / "_done" / "deduped" / "_phase.json").exists():
        run(config(warcs, out, filters), progress=False)


def run_phase2(warcs: list[str], out: Path, filters: bool, dedup: dict, truth: dict) -> dict:
    from pipeline.phase2 import run_phase2 as phase2

    t0 = time.perf_counter()
    summary = phase2(config(warcs, out, filters, dedup), Storage(str(out)), 2, progress=False)
    s = score(Storage(str(out)), truth)
    return {**s, "largest": largest_cluster(out), "seconds": time.perf_counter() - t0, "summary": summary}


def row(label: str, s: dict, *cells) -> str:
    byvar = ", ".join(f"{k} {v}" for k, v in s["recall_by_variation"].items() if k != "original")
    return (f"| {label} | {' | '.join(str(c) for c in cells)} | {s['reached']} | {s['should_remove']} | {s['removed']} | "
            f"{s['precision']:.3f} | {s['recall']:.3f} | {s['largest']} | {byvar} |")


HEADER = ("| phase 1 | settings | docs in | should remove | removed | precision | recall | largest cluster | recall by variation |",
          "|---|---|---:|---:|---:|---:|---:|---:|---|")


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
    lines = ["# Deduplication when the pages of a site share a long block", "",
             f"Corpus: benchmarks/dedup_boilerplate_corpus.py, {args.pages} articles on each of 3 block sites (block = 30-60% "
             "of the words), true copies of a quarter of them (other site, other block site, own site) plus one body per "
             f"site posted 4 times, 30 unrelated articles: {len(truth)} pages; the largest true cluster has 4 pages. "
             "Phase 1 with the heuristic filters on (defaults) and off; default extractor. "
             "`python benchmarks/dedup_boilerplate.py`.", "", *HEADER]
    for filters in (True, False):
        out = work / ("filters" if filters else "nofilters")
        run_phase1(warcs, out, filters)
        for label, dedup in VARIANTS.items():
            s = run_phase2(warcs, out, filters, dedup, truth)
            lines.append(row("filters" if filters else "no filters", s, label))
            print(lines[-1], f"false positives: {s['false_positives'][:5]}", flush=True)
    if args.sweeps:
        out = work / "nofilters"
        lines += ["", "## Settings (filters off)", "", *HEADER]
        for min_docs in (2, 3, 4, 6, 8):
            s = run_phase2(warcs, out, False, {"minhash": {"boilerplate": {"min_docs": min_docs}}}, truth)
            lines.append(row("no filters", s, f"min_docs {min_docs}"))
            print(lines[-1], flush=True)
        for identical in (0.6, 0.8, 0.9):
            s = run_phase2(warcs, out, False, {"minhash": {"boilerplate": {"identical_threshold": identical}}}, truth)
            lines.append(row("no filters", s, f"identical_threshold {identical}"))
            print(lines[-1], flush=True)
        lines += ["", "## Block share (filters off)", "", "Other corpora from the same generator, the block's share of an "
                  "article's words drawn from the range given.", "",
                  "| block share | settings | docs in | should remove | removed | precision | recall | largest cluster | recall by variation |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for lo in (0.3, 0.4, 0.5, 0.6, 0.7):
            share = (lo, round(lo + 0.1, 1))
            folder = work / f"share-{lo}"
            w, t = make_corpus(folder / "corpus", args.pages, share=share)
            run_phase1(w, folder / "out", False)
            for label in ("before", "after (defaults)"):
                s = run_phase2(w, folder / "out", False, VARIANTS[label], t)
                lines.append(row(f"{share[0]:.1f}-{share[1]:.1f}", s, label))
                print(lines[-1], flush=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
