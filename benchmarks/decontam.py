"""Decontamination: docs/s per core on sample-sized documents, against the PII stage (the same phase),
and the cost of a 100k-item eval set (build time, index size, memory).

    python benchmarks/decontam.py           # writes benchmarks/results/decontam.md
    python benchmarks/decontam.py --quick   # 14k items only, one pass, prints only

Documents: what decode + extract keep from ``samples/*.warc.gz`` (the texts
benchmarks/documents_read.py uses), 1% of them with an eval item's question
planted, so the positive path runs too (each must be removed).  Eval sets:
MMLU-shaped JSON lines (``question`` of 10-90 words and four ``choices`` of
1-8 words, an ``id``; words drawn from the samples' vocabulary), 14,042 items
(MMLU's test split) and 100,000; read from the file by ``build_index``.

Every measurement runs in its own child process pinned to one CPU, math
libraries single-threaded: **build** reads the file and builds the index
(CPU seconds; peak RSS of the process over its RSS before; the bytes shipped
to a worker and their pickled size); **stage** unpickles that index as a Ray
worker would, runs one warm-up batch, then the documents in batches of 256,
best of ``--repeats`` passes (the machine is shared: the least disturbed pass);
**pii** is ``PiiStage(PiiConfig())`` on the same documents the same way.
Docs/s per core is documents over CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import Measure, child_report, child_setup, machine_info, markdown_table, pick_cpu, run_child  # noqa: E402

BATCH_ROWS = 256
MMLU_TEST_ITEMS = 14_042
PLANTED_SHARE = 0.01


# ---------------------------------------------------------------- inputs (parent)


def write_inputs(folder: Path, sizes: list[int]) -> tuple[Path, dict[int, Path], int]:
    """The documents (Parquet, some planted) and one MMLU-shaped eval file per size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from benchmarks.documents_read import sample_texts

    texts = sample_texts()
    vocab = sorted({w for t in texts for w in t.split() if w.isascii() and w.isalpha() and len(w) > 1})
    evals = {}
    for size in sizes:
        path = folder / f"mmlu_{size}.jsonl"
        rng = random.Random(22)  # every set starts with the same items
        with open(path, "w") as f:
            for i in range(size):
                question = " ".join(rng.choices(vocab, k=rng.randint(10, 90)))
                choices = [" ".join(rng.choices(vocab, k=rng.randint(1, 8))) for _ in range(4)]
                f.write(json.dumps({"id": f"q{i}", "question": question, "choices": choices, "answer": i % 4}) + "\n")
        evals[size] = path
    # Plant questions of the first items (every set holds them).
    with open(evals[min(sizes)]) as f:
        questions = [json.loads(line)["question"] for _, line in zip(range(64), f, strict=False)]
    planted = rng.sample(range(len(texts)), max(1, round(PLANTED_SHARE * len(texts))))
    for k, i in enumerate(planted):
        texts[i] = texts[i] + "\n" + questions[k % len(questions)]
    docs = folder / "docs.parquet"
    pq.write_table(pa.table({"text": pa.array(texts, pa.large_string())}), docs)
    return docs, evals, len(planted)


# ---------------------------------------------------------------- children


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_build(kind: str, eval_path: str, out: str) -> dict:
    from stages.decontam import DecontamConfig, build_index

    config = DecontamConfig(
        eval_sets=[{"path": eval_path, "fields": ["question", "choices"], "id_field": "id"}], index=kind
    )
    before = _rss_mb()
    with Measure() as m:
        index = build_index(config)
    data = pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL)
    Path(out).write_bytes(data)
    s = index.stats
    return {
        **m.result(),
        "rss_before_mb": before,
        "items": sum(e.items for e in s.eval_sets),
        "pairs": sum(e.ngrams for e in s.eval_sets),
        "keys": s.keys,
        "index_mb": s.nbytes / 1e6,
        "pickle_mb": len(data) / 1e6,
        "bloom_fpr": s.bloom_fpr,
        "bloom_hashes": s.bloom_hashes,
    }


def _batches(docs: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(docs)
    return [pa.Table.from_batches([b]) for b in table.to_batches(BATCH_ROWS)], table


def _timed(stage, batches, repeats: int) -> dict:
    best = None
    for _ in range(repeats):
        with Measure() as m:
            for b in batches:
                stage(b)
        counters = stage.drain_counters()
        if best is None or m.cpu_s < best["cpu_s"]:
            best = {**m.result(), "counters": {k: v for k, v in counters.items() if "." not in k}}
    return best


def child_stage(kind: str, index_path: str, docs: str, repeats: int) -> dict:
    from stages.decontam import DecontamConfig, DecontamStage

    index = pickle.loads(Path(index_path).read_bytes())  # what a worker receives
    batches, table = _batches(docs)
    config = DecontamConfig(eval_sets=["unused.jsonl"], index=kind)
    stage = DecontamStage(config, index)
    t0 = time.perf_counter()
    stage(batches[0])  # warm-up: the hash's prefix tables grow to the batch size once per process
    stage.drain_counters()
    setup = time.perf_counter() - t0
    return {**_timed(stage, batches, repeats), "docs": table.num_rows, "setup_s": setup}


def child_pii(docs: str, repeats: int) -> dict:
    from stages.pii import PiiConfig, PiiStage

    batches, table = _batches(docs)
    t0 = time.perf_counter()
    stage = PiiStage(PiiConfig())
    stage(batches[0])
    stage.drain_counters()
    setup = time.perf_counter() - t0
    return {**_timed(stage, batches, repeats), "docs": table.num_rows, "setup_s": setup}


def child_main(args: list[str]) -> None:
    child_setup()
    what, rest = args[0], args[1:]
    if what == "build":
        child_report(child_build(*rest))
    elif what == "stage":
        child_report(child_stage(rest[0], rest[1], rest[2], int(rest[3])))
    else:
        child_report(child_pii(rest[0], int(rest[1])))


# ---------------------------------------------------------------- report (parent)


def run(argv: list[str], folder: Path, name: str) -> dict:
    r = run_child(
        [str(Path(__file__).resolve()), "--child", *argv], pick_cpu(), folder / f"{name}.log", timeout_s=3600
    )
    if "failed" in r:
        raise SystemExit(f"{name}: {r['failed']}")
    print(name, {k: v for k, v in r.items() if k != "counters"}, flush=True)
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="14k items only, one pass, print only")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args.child)
        return 0
    sizes = [MMLU_TEST_ITEMS] if args.quick else [MMLU_TEST_ITEMS, 100_000]
    repeats = 1 if args.quick else args.repeats
    info0 = machine_info()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        docs, evals, planted = write_inputs(folder, sizes)
        import pyarrow.parquet as pq

        meta = pq.read_metadata(docs)
        n_docs = meta.num_rows
        chars = sum(len(t) for t in pq.read_table(docs).column("text").to_pylist())
        pii = run(["pii", str(docs), str(repeats)], folder, "pii")
        pii_rate = n_docs / pii["cpu_s"]
        rows, cost = [], []
        for size in sizes:
            for kind in ("exact", "bloom"):
                index_path = folder / f"index_{kind}_{size}.pkl"
                b = run(["build", kind, str(evals[size]), str(index_path)], folder, f"build_{kind}_{size}")
                s = run(["stage", kind, str(index_path), str(docs), str(repeats)], folder, f"stage_{kind}_{size}")
                removed = s["counters"].get("documents", 0)
                assert removed == planted, f"{kind} {size}: {removed} documents matched, {planted} planted"
                rate = n_docs / s["cpu_s"]
                rows.append(
                    [
                        f"decontam {kind}",
                        f"{size:,}",
                        f"{rate:,.0f}",
                        f"{n_docs / s['wall_s']:,.0f}",
                        f"{rate / pii_rate:.1f}x",
                        f"{removed} / {planted}",
                        f"{s['counters'].get('false_hits', 0):,}",
                        f"{s['peak_rss_mb']:,.0f}",
                    ]
                )
                fpr = f"{b['bloom_fpr']:.1e} ({b['bloom_hashes']} hashes)" if b["bloom_fpr"] is not None else "-"
                cost.append(
                    [
                        kind,
                        f"{size:,}",
                        f"{b['pairs']:,}",
                        f"{b['cpu_s']:.1f}",
                        f"{b['wall_s']:.1f}",
                        f"{b['index_mb']:.1f}",
                        f"{b['pickle_mb']:.1f}",
                        f"{b['peak_rss_mb'] - b['rss_before_mb']:,.0f}",
                        fpr,
                    ]
                )
        rows.append(
            [
                "pii (PiiConfig())",
                "-",
                f"{pii_rate:,.0f}",
                f"{n_docs / pii['wall_s']:,.0f}",
                "1.0x",
                "-",
                "-",
                f"{pii['peak_rss_mb']:,.0f}",
            ]
        )
    info = machine_info()
    report = "\n".join(
        [
            "# Decontamination throughput and the cost of the eval index",
            "",
            f"- {info['date']} · {info['nproc']} CPUs ({info['cpu']}) "
            f"· {info['mem_gib']} GiB · Python {info['python']}",
            f"- load average at the start {info0['load_avg']}, at the end {info['load_avg']} "
            "(2 CPUs shared with other work: compare docs per CPU-second, not wall)",
            f"- command: `python benchmarks/decontam.py{' --quick' if args.quick else ''}`; "
            f"each row in its own process pinned to one CPU, best of {repeats}",
            f"- documents: {n_docs:,} texts decode + extract keep from "
            f"`samples/*.warc.gz` ({chars / n_docs:,.0f} characters each on average), "
            f"{planted} of them with an eval question planted; batches of {BATCH_ROWS}",
            "- eval sets: MMLU-shaped JSON lines (question of 10-90 words + four "
            "choices of 1-8 words, random words of the samples' vocabulary), "
            f"{MMLU_TEST_ITEMS:,} items (MMLU's test split) and 100,000; n-grams of 13 words",
            "",
            "## Throughput (the final phase: decontamination sits before PII)",
            "",
            markdown_table(
                [
                    "stage",
                    "eval items",
                    "docs/s per core (CPU)",
                    "docs/s (wall)",
                    "vs PII",
                    "matched / planted",
                    "false hits",
                    "peak RSS MB",
                ],
                rows,
            ),
            "",
            "## Building the index (on the driver, once per run)",
            "",
            "`pairs`: distinct (13-gram, item) pairs; `index MB`: "
            "the arrays and the normalized item text a worker holds; "
            "`build RSS MB`: the build process's peak RSS over its RSS before reading the file.",
            "",
            markdown_table(
                [
                    "index",
                    "eval items",
                    "pairs",
                    "build CPU s",
                    "build wall s",
                    "index MB",
                    "pickled MB",
                    "build RSS MB",
                    "Bloom FPR",
                ],
                cost,
            ),
            "",
        ]
    )
    print(report)
    if not args.quick:
        (ROOT / "benchmarks" / "results" / "decontam.md").write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
