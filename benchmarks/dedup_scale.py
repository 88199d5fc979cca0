"""End-to-end phase 2 on synthetic corpora with planted near-duplicate clusters.

    python benchmarks/dedup_scale.py                       # 100k documents, plus DataTrove on the same corpus
    python benchmarks/dedup_scale.py --docs 100000 1000000 # both sizes (the 1M run takes a while)
    python benchmarks/dedup_scale.py --docs 100000 --distributed --no-datatrove \
        --results benchmarks/results/dedup_scale_distributed.md   # large-star/small-star path

Per size: generate the corpus (benchmarks/synth_corpus.py, not timed), run
phase 2 in an embedded Ray on all cores, and report wall time, docs/s per
core, the peak RSS of the largest process of the run's process tree (driver,
GCS, raylet, workers; sampled every 0.2 s with psutil) and precision/recall
of the removed documents against the planted clusters.  ``--datatrove``
(default on) also runs DataTrove's 4-stage MinHash deduplication
(signatures, buckets, clusters, filter; LocalPipelineExecutor with as many
workers) on the first corpus with the same shingles, bands and rows, and
reports its time, memory, precision/recall and agreement with ours.
``--data-juicer PYTHON`` (default: ``.venv-dj/bin/python`` when it exists) runs
Data-Juicer 1.6's ``ray_bts_minhash_deduplicator`` on every corpus with that
interpreter (benchmarks/dedup_datajuicer.py; its own venv, see
benchmarks/README.md), same Ray CPUs, shingles, bands and rows.  NeMo Curator
1.4 has no CPU path for this: its MinHash, LSH and connected components are
cuDF/GPU stages (``Resources(gpus=1.0)``), and so is its exact deduplication.
Writes benchmarks/results/dedup_scale.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0]).resolve() == ROOT / "benchmarks":
    sys.path[0] = str(ROOT)  # a module here named like a standard one would shadow it

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks._common import machine_info  # noqa: E402
from benchmarks.memory import PeakMemory, TreeCpu  # noqa: E402
from benchmarks.synth_corpus import write as write_corpus  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dedup_scale.md"
DATA_JUICER_PYTHON = ROOT / ".venv-dj" / "bin" / "python"


def score(removed: set[str], truth: pa.Table) -> dict:
    """Precision/recall of a removed set against the planted clusters."""
    cluster = dict(zip(truth.column("id").to_pylist(), truth.column("cluster").to_pylist(), strict=False))
    members: dict[int, list[str]] = {}
    for doc_id, c in cluster.items():
        if c is not None:
            members.setdefault(c, []).append(doc_id)
    tp = 0
    for doc_id in removed:
        c = cluster.get(doc_id)
        if c is not None and any(m not in removed for m in members[c]):
            tp += 1
    should = sum(len(m) - 1 for m in members.values())
    return {
        "removed": len(removed),
        "tp": tp,
        "precision": tp / len(removed) if removed else 1.0,
        "recall": tp / should if should else 1.0,
    }


def agreement(a: set[str], b: set[str], truth: pa.Table) -> str:
    """How far two removed sets agree, allowing each its own keep rule.

    The kept member of a cluster may differ (DataTrove keeps the first by its
    file order, we keep the smallest id), so compare per planted cluster the
    number of members each removed, and outside the clusters the removed ids.
    """
    cluster = dict(zip(truth.column("id").to_pylist(), truth.column("cluster").to_pylist(), strict=False))
    count_a, count_b = {}, {}
    for ids, counts in ((a, count_a), (b, count_b)):
        for i in ids:
            c = cluster.get(i)
            counts[c if c is not None else ("unique", i)] = counts.get(c if c is not None else ("unique", i), 0) + 1
    planted = {c for c in cluster.values() if c is not None}
    same = sum(count_a.get(c, 0) == count_b.get(c, 0) for c in planted)
    stray_a = {k for k in count_a if isinstance(k, tuple)}
    stray_b = {k for k in count_b if isinstance(k, tuple)}
    return (
        f"same number removed in {same:,} of {len(planted):,} planted clusters; "
        f"removed outside planted clusters: ours {len(stray_a)}, DataTrove {len(stray_b)}"
    )


def removed_ids(root: str) -> set[str]:
    folder = Path(root) / "rejected" / "deduped"
    return {
        i for f in sorted(folder.glob("*.parquet")) for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()
    }


def run_ours(root: str, workers: int, distributed: bool, boilerplate: bool = True) -> dict:
    from core.storage import Storage
    from pipeline.config import parse_config
    from pipeline.runner import init_ray
    from tests.dedup_standalone import run_dedup

    dedup = {"components": {"local_max_edges": 0}} if distributed else {}
    if not boilerplate:
        dedup["minhash"] = {"boilerplate": {"enabled": False}}
    cfg = parse_config({"inputs": ["unused"], "output": root, "dedup": dedup, "ray": {"num_cpus": workers}})
    init_ray(cfg)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    with PeakMemory() as mem, TreeCpu() as cpu:
        summary = run_dedup(cfg, Storage(root), workers, progress=False)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    import ray

    ray.shutdown()
    return {
        "wall": wall,
        "peak_rss": mem.peak_rss,
        "peak_name": mem.peak_name,
        "peak_total": mem.peak_total,
        "summary": summary,
        "cpu": cpu.seconds,
        "load": [round(load0[0], 2), round(load1[0], 2)],
    }


def run_datatrove(root: str, workers: int, bands: int, rows: int) -> dict:
    """DataTrove's MinHash deduplication, its 4 stages, on the same parts."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import ParquetWriter
    from datatrove.utils.hashing import HashConfig

    work = Path(root) / "datatrove"
    shutil.rmtree(work, ignore_errors=True)
    config = MinhashConfig(
        n_grams=5, num_buckets=bands, hashes_per_bucket=rows, hash_config=HashConfig(hash_fc="sha1", precision=64)
    )
    inputs = str(Path(root) / "documents" / "extracted")
    tasks = len(list(Path(inputs).glob("*.parquet")))

    def reader():
        return ParquetReader(inputs, text_key="text", id_key="id", glob_pattern="*.parquet")

    stages = [
        ([reader(), MinhashDedupSignature(output_folder=str(work / "sigs"), config=config)], tasks),
        (
            [MinhashDedupBuckets(input_folder=str(work / "sigs"), output_folder=str(work / "buckets"), config=config)],
            bands,
        ),
        (
            [
                MinhashDedupCluster(
                    input_folder=str(work / "buckets"), output_folder=str(work / "remove_ids"), config=config
                )
            ],
            1,
        ),
        (
            [
                reader(),
                MinhashDedupFilter(
                    input_folder=str(work / "remove_ids"), exclusion_writer=ParquetWriter(str(work / "removed"))
                ),
            ],
            tasks,
        ),
    ]
    t0 = time.perf_counter()
    step_seconds = []
    with PeakMemory() as mem:
        for pipeline, n_tasks in stages:
            s0 = time.perf_counter()
            LocalPipelineExecutor(
                pipeline=pipeline, tasks=n_tasks, workers=workers, logging_dir=str(work / f"logs-{len(step_seconds)}")
            ).run()
            step_seconds.append(round(time.perf_counter() - s0, 1))
    wall = time.perf_counter() - t0
    return {
        "wall": wall,
        "peak_rss": mem.peak_rss,
        "peak_name": mem.peak_name,
        "peak_total": mem.peak_total,
        "step_seconds": step_seconds,
    }


def datatrove_removed(root: str) -> set[str]:
    folder = Path(root) / "datatrove" / "removed"
    return {
        i for f in sorted(folder.glob("*.parquet")) for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()
    }


def write_chunked(root: Path, docs: int, per_chunk: int, docs_per_part: int, dup_fraction: float, cache: Path) -> dict:
    """A corpus of ``docs`` documents from chunks of ``per_chunk`` (synth_corpus.generate with seeds 0, 1, ...).

    synth_corpus builds one Arrow string array of all paragraph words, which overflows past ~1M documents
    (2 GB of words) and needs ~3 GB of memory per million documents; chunks keep both bounded.  Every chunk
    uses seed 0's vocabulary (so chunks share their words and chance LSH collisions happen across them), its
    own 500 site templates (host names ``site<chunk>x<s>`` after chunk 0), and ids, parts and cluster numbers offset
    so they do not collide.  Chunk 0 is exactly the one-chunk corpus of the same size.  Chunks are cached in
    ``cache`` (one folder per seed) and hard-linked into ``root``.
    """
    import numpy as np

    from benchmarks import synth_corpus as sc
    from core.storage import Storage

    parts_per_chunk = max(1, per_chunk // docs_per_part)
    storage = Storage(str(root))
    truths, info = [], {"docs": 0, "parts": 0, "clusters": 0, "in_clusters": 0, "to_remove": 0}
    cluster_offset = 0
    for c in range(-(-docs // per_chunk)):
        n = min(per_chunk, docs - c * per_chunk)
        folder = cache / f"seed-{c}-{n}-{parts_per_chunk}"
        same = root.parent / f"corpus-{n}"  # chunk 0 is the one-chunk corpus of its size: reuse it when it is there
        if (
            c == 0
            and not (folder / "truth.parquet").exists()
            and (same / "truth.parquet").exists()
            and len(list((same / "documents" / "extracted").glob("*.parquet"))) == parts_per_chunk
        ):
            for sub in ("documents/extracted", "_done/extracted"):
                (folder / sub).mkdir(parents=True, exist_ok=True)
                for f in (same / sub).iterdir():
                    os.link(f, folder / sub / f.name)
            os.link(same / "truth.parquet", folder / "truth.parquet")
        if not (folder / "truth.parquet").exists():
            shutil.rmtree(folder, ignore_errors=True)
            original = sc.vocabulary
            vocab0 = original(np.random.default_rng(0))
            sc.vocabulary = lambda rng, original=original, vocab0=vocab0: (original(rng), vocab0)[
                1
            ]  # the chunk's rng advances as usual; seed 0's words
            try:
                table, cluster = sc.generate(n, dup_fraction, seed=c)
            finally:
                sc.vocabulary = original
            if c:
                table = table.set_column(0, "id", pc_replace(table.column("id"), "synth-", f"synth{c}-"))
                table = table.set_column(
                    1, "url", pc_replace(table.column("url"), "https://site", f"https://site{c}x")
                )
            chunk_store = Storage(str(folder))
            sc.write_parts(chunk_store, table, parts_per_chunk, first=c * parts_per_chunk)
            chunk_store.write_parquet(
                pa.table({"id": table.column("id"), "cluster": pa.array(cluster, mask=cluster < 0)}), "truth.parquet"
            )
            del table, cluster
        for sub in ("documents/extracted", "_done/extracted"):
            (root / sub).mkdir(parents=True, exist_ok=True)
            for f in (folder / sub).iterdir():
                if not (root / sub / f.name).exists():
                    os.link(f, root / sub / f.name)
        t = pq.read_table(folder / "truth.parquet")
        cl = t.column("cluster").to_numpy(zero_copy_only=False)
        cl = (
            np.where(np.isnan(cl.astype(float)), -1, cl).astype(np.int64)
            if t.column("cluster").null_count
            else cl.astype(np.int64)
        )
        sizes = np.bincount(cl[cl >= 0]) if (cl >= 0).any() else np.zeros(0, np.int64)
        info["clusters"] += int((sizes > 0).sum())
        info["in_clusters"] += int(sizes.sum())
        info["to_remove"] += int(sizes.sum() - (sizes > 0).sum())
        info["docs"] += n
        info["parts"] += parts_per_chunk
        shifted = np.where(cl >= 0, cl + cluster_offset, -1)
        cluster_offset += len(sizes)
        truths.append(pa.table({"id": t.column("id"), "cluster": pa.array(shifted, mask=shifted < 0)}))
    storage.write_parquet(pa.concat_tables(truths), "truth.parquet")
    return {**info, "chunks": -(-docs // per_chunk)}


def pc_replace(column, old: str, new: str):
    import pyarrow.compute as pc

    return pc.replace_substring(column, old, new, max_replacements=1)


def measure(args: list[str], command: list[str] | None = None) -> dict:
    """Run one system in a fresh Python process, so that its process tree is all that is measured."""
    out = subprocess.run(command or [sys.executable, __file__, "--measure", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"measurement {args} failed:\n{out.stderr[-3000:]}")
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("RESULT ")][-1][len("RESULT ") :])


def data_juicer_row(
    python: str, root: Path, n: int, workers: int, sm: dict, truth: pa.Table, ours_removed: set[str]
) -> str:
    """Data-Juicer's Ray MinHash dedup on the same corpus, in its own venv, as one table row."""
    script = str(ROOT / "benchmarks" / "dedup_datajuicer.py")
    d = measure([], [python, script, str(root), str(workers), str(sm["bands"]), str(sm["rows"])])
    removed = set(json.loads((root / "datajuicer" / "removed.json").read_text()))
    s = score(removed, truth)
    agree = agreement(ours_removed, removed, truth).replace("DataTrove", "Data-Juicer")
    mib = 1 << 20
    return (
        "| Data-Juicer 1.6 `ray_bts_minhash_deduplicator` (Ray) | "
        f"{n:,} | {d['wall']:.1f} | {n / d['wall'] / workers:,.0f} | "
        f"{d['peak_rss'] / mib:,.0f} MiB | {d['peak_total'] / mib:,.0f} "
        f"MiB | {s['removed']:,} | {s['precision']:.4f} | "
        f"{s['recall']:.4f} | CPU path: word 5-grams of the "
        f"lower-cased text without `\\p{{P}}`, sha1, 128 permutations, "
        f"{sm['bands']}x{sm['rows']} bands, BTS union-find actors: {max(1, workers // 2)} (its auto: half the CPUs); "
        f"CPU {d['cpu']:,.0f} s ({n / d['cpu']:,.0f} docs per "
        f"CPU-second); largest process: {d['peak_name']}; {agree} |"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, nargs="+", default=[100_000])
    ap.add_argument("--docs-per-part", type=int, default=10_000)
    ap.add_argument("--dup-fraction", type=float, default=0.1)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--distributed", action="store_true", help="force distributed connected components")
    ap.add_argument("--no-datatrove", dest="datatrove", action="store_false")
    ap.add_argument(
        "--data-juicer",
        metavar="PYTHON",
        default=str(DATA_JUICER_PYTHON) if DATA_JUICER_PYTHON.exists() else None,
        help="the Python of a venv with py-data-juicer 1.6 (default: .venv-dj/bin/python when it exists)",
    )
    ap.add_argument("--no-data-juicer", dest="data_juicer", action="store_const", const=None)
    ap.add_argument(
        "--no-boilerplate",
        dest="boilerplate",
        action="store_false",
        help="turn off the host-boilerplate step of the signature checks (dedup.minhash.boilerplate.enabled)",
    )
    ap.add_argument(
        "--chunk-docs",
        type=int,
        default=1_000_000,
        help="a larger corpus is built from chunks of this many documents (synth_corpus overflows past ~1M)",
    )
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="also report the CPU seconds of the run's process tree and the 1-minute load average at start and end",
    )
    ap.add_argument("--results", default=str(RESULTS), help="markdown table output")
    ap.add_argument("--workdir", help="keep corpora and outputs here (default: a temporary folder)")
    ap.add_argument("--measure", nargs="+", help=argparse.SUPPRESS)  # internal: ours|datatrove ROOT WORKERS ...
    args = ap.parse_args(argv)
    if args.measure:
        kind, root, workers, *rest = args.measure
        if kind == "ours":
            result = run_ours(root, int(workers), "distributed" in rest, "no-boilerplate" not in rest)
        else:
            result = run_datatrove(root, int(workers), int(rest[0]), int(rest[1]))
        print("RESULT " + json.dumps(result, default=str), flush=True)
        return 0
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="dedup-scale-"))
    mib = 1 << 20
    m = machine_info()
    lines = [
        "# Phase 2 at scale (synthetic corpora)",
        "",
        f"- {m['date']} · {m['nproc']} CPUs ({m['cpu']}) · "
        f"{m['mem_gib']} GiB · Python {m['python']} · load average at the "
        f"start {m['load_avg']} (well above 0: other work shared the machine, compare CPU seconds)",
        f"- command: `python benchmarks/dedup_scale.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        "Corpus: benchmarks/synth_corpus.py, ~330 words per "
        f"document, {args.dup_fraction:.0%} of documents in planted "
        "clusters of 2-10 (copies on other site templates, with a changed date line, and edited words / a dropped or "
        f"added paragraph). Default dedup settings; {args.workers} workers on this machine. Peak RSS: largest single "
        "process of the run's process tree (psutil, every 0.2 s); total: largest sum over the tree.",
        "",
        "| system | docs | wall s | docs/s per core | peak RSS, largest process "
        "| peak RSS, all processes | removed | precision | recall | notes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    first = None
    for n in args.docs:
        root = workdir / f"corpus-{n}"
        if not (root / "truth.parquet").exists():
            shutil.rmtree(root, ignore_errors=True)
            t0 = time.perf_counter()
            if n > args.chunk_docs:
                info = write_chunked(
                    root, n, args.chunk_docs, args.docs_per_part, args.dup_fraction, workdir / "chunks"
                )
            else:
                info = write_corpus(str(root), n, max(1, n // args.docs_per_part), args.dup_fraction)
            print(f"corpus {n}: {json.dumps(info)} ({time.perf_counter() - t0:.0f}s)", flush=True)
        for folder in ("documents/deduped", "rejected/deduped", "_done/deduped", "dedup"):
            shutil.rmtree(root / folder, ignore_errors=True)
        truth = pq.read_table(root / "truth.parquet")
        r = measure(
            [
                "ours",
                str(root),
                str(args.workers),
                *(["distributed"] if args.distributed else []),
                *([] if args.boilerplate else ["no-boilerplate"]),
            ]
        )
        r["removed"] = removed_ids(str(root))
        s = score(r["removed"], truth)
        sm = r["summary"]
        notes = (
            f"{sm['bands']}x{sm['rows']} bands x rows, {sm['edges']} edges, components {sm['components_path']}, "
            f"steps {json.dumps(sm['step_seconds'])}, largest process: {r['peak_name']}"
        )
        if not args.boilerplate:
            notes = "boilerplate step off, " + notes
        if args.cpu:
            notes += (
                f", CPU {r['cpu']:,.0f} s ({n / r['cpu']:,.0f} docs per "
                f"CPU-second), load average {r['load'][0]} -> {r['load'][1]}"
            )
        lines.append(
            f"| ours (Ray) | {n:,} | {r['wall']:.1f} | "
            f"{n / r['wall'] / args.workers:,.0f} | {r['peak_rss'] / mib:,.0f} MiB | "
            f"{r['peak_total'] / mib:,.0f} MiB | {s['removed']:,} "
            f"| {s['precision']:.4f} | {s['recall']:.4f} | {notes} |"
        )
        print(lines[-1], flush=True)
        if args.data_juicer:
            lines.append(data_juicer_row(args.data_juicer, root, n, args.workers, sm, truth, r["removed"]))
            print(lines[-1], flush=True)
        if first is None:
            first = (root, r, sm)
    if args.datatrove and first:
        root, ours, sm = first
        n = len(pq.read_table(root / "truth.parquet", columns=["id"]))
        truth = pq.read_table(root / "truth.parquet")
        d = measure(["datatrove", str(root), str(args.workers), str(sm["bands"]), str(sm["rows"])])
        d["removed"] = datatrove_removed(str(root))
        s = score(d["removed"], truth)
        agree = agreement(ours["removed"], d["removed"], truth)
        lines.append(
            f"| DataTrove 0.10 MinHash (4 stages) | {n:,} | {d['wall']:.1f} | {n / d['wall'] / args.workers:,.0f} | "
            f"{d['peak_rss'] / mib:,.0f} MiB | {d['peak_total'] / mib:,.0f} "
            f"MiB | {s['removed']:,} | {s['precision']:.4f} | "
            f"{s['recall']:.4f} | sha1 64-bit hashes (its xxhash path fails with xxhash 4: str "
            f"input), same 5-gram shingles and {sm['bands']}x{sm['rows']} bands; stage seconds "
            f"{d['step_seconds']}; {agree} |"
        )
        print(lines[-1], flush=True)
    lines.insert(3, f"- load average at the end {machine_info()['load_avg']}")
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
