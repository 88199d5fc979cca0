"""What the plan-time checks of issue 42 cost: models, eval sets, document inputs (run by `validate`, `run`).

    python benchmarks/plan_checks.py           # writes benchmarks/results/plan_checks.md
    python benchmarks/plan_checks.py --quick   # smaller files, prints only

- **fastText models** (stages/named_files.fasttext_model): the check reads a model's headers and dictionary
  (classifiers/quality.read_model_file), never its matrices; against loading the model with fastText, what
  the alternative check would cost.  On the sample quality model (0.5 MB) and on a ~100 MB supervised model
  trained here on synthetic text (600k distinct words, 1M n-gram buckets, dim 16).
- **eval sets** (stages/decontam/evalsets.scan_eval_set): every record read, streaming, against the run's
  own read (read_eval_set, which holds every item), on MMLU-like JSON lines (plain and gzip).
- **document inputs** (pipeline/preflight.check_document_fields): a Parquet footer or a JSON lines file's first
  records per file, on 1,000 local files (16 threads, as the check runs).

Each is timed in this process, best of ``--repeats`` (the machine may be shared).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import machine_info, markdown_table  # noqa: E402


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def rss_mb() -> float:
    """This process's resident memory now."""
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def big_model(folder: Path, words: int) -> Path:
    """A supervised model with ``words`` distinct words and 1M n-gram buckets (~100 MB at 600k words)."""
    import fasttext

    rng = random.Random(0)
    vocab = [f"w{i:x}{rng.randrange(1 << 20):x}" for i in range(words)]
    train = folder / "train.txt"
    with open(train, "w") as f:
        for i in range(0, words, 20):
            label = "__label__hq" if rng.random() < 0.5 else "__label__cc"
            f.write(label + " " + " ".join(vocab[i : i + 20]) + "\n")
    model = fasttext.train_supervised(
        str(train), dim=16, wordNgrams=2, bucket=1_000_000, minCount=1, epoch=1, thread=1, verbose=0
    )
    path = folder / "big.bin"
    model.save_model(str(path))
    return path


def models(folder: Path, words: int, repeats: int) -> list[dict]:
    import fasttext

    from classifiers.quality import check_model_file
    from stages.named_files import fasttext_model

    fasttext.FastText.eprint = lambda *a, **k: None
    rows = []
    for name, path in (
        ("sample quality model", ROOT / "samples" / "quality" / "model.ftz"),
        ("synthetic model", big_model(folder, words)),
    ):
        found = check_model_file(str(path), structure=True, label="hq")
        check = best(lambda path=path: fasttext_model(str(path), lambda p: open(p, "rb"), "hq"), repeats)
        load = best(lambda path=path: fasttext.load_model(str(path)), repeats)
        gc.collect()
        before = rss_mb()
        loaded = fasttext.load_model(str(path))  # noqa: F841 (held while measured)
        held = rss_mb() - before
        del loaded
        rows.append(
            {
                "model": name,
                "MB": round(path.stat().st_size / 1e6, 1),
                "dictionary entries": f"{len(found.labels) + _words(path):,}",
                "check ms": round(check * 1000, 1),
                "fastText load ms": round(load * 1000, 1),
                "loaded model's RSS MB": round(held, 1) if held >= 1 else "< 1",
            }
        )
    return rows


def _words(path: Path) -> int:
    import struct

    with open(path, "rb") as f:
        f.seek(8 + 12 * 4 + 8)
        return struct.unpack("<ii", f.read(8))[1]


def eval_sets(folder: Path, items: int, repeats: int) -> list[dict]:
    from stages.decontam import EvalSetConfig, read_eval_set
    from stages.decontam.evalsets import scan_eval_set

    rng = random.Random(1)
    words = [f"word{i}" for i in range(5000)]
    data = b"".join(
        json.dumps(
            {
                "id": f"q{i}",
                "question": " ".join(rng.choices(words, k=60)),
                "choices": [" ".join(rng.choices(words, k=8)) for _ in range(4)],
                "answer": i % 4,
            }
        ).encode()
        + b"\n"
        for i in range(items)
    )
    rows = []
    for name, body in (("jsonl", data), ("jsonl.gz", gzip.compress(data, 6))):
        path = folder / f"eval.{name}"
        path.write_bytes(body)
        config = EvalSetConfig(path=str(path), fields=["question", "choices"], id_field="id")
        scan = best(lambda config=config: scan_eval_set(config), repeats)
        read = best(lambda config=config: read_eval_set(config), repeats)
        rows.append(
            {
                "eval set": name,
                "items": f"{items:,}",
                "MB (file)": round(len(body) / 1e6, 1),
                "MB (text)": round(len(data) / 1e6, 1),
                "plan-time scan s": round(scan, 2),
                "the run's read s": round(read, 2),
                "scan MB/s": round(len(data) / 1e6 / scan, 1),
            }
        )
    return rows


def document_inputs(folder: Path, files: int, repeats: int) -> list[dict]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.config import parse_config
    from pipeline.preflight import check_document_fields

    records = [{"id": i, "text": f"document {i} " * 50, "url": f"https://x.example/{i}"} for i in range(2000)]
    rows = []
    for kind in ("parquet", "jsonl.gz"):
        sub = folder / kind
        sub.mkdir()
        one = sub / f"0.{kind}"
        if kind == "parquet":
            pq.write_table(pa.Table.from_pylist(records), one, row_group_size=500)
        else:
            one.write_bytes(gzip.compress(b"".join(json.dumps(r).encode() + b"\n" for r in records)))
        for i in range(1, files):
            (sub / f"{i}.{kind}").symlink_to(one)
        inputs = sorted(str(p) for p in sub.iterdir())
        config = parse_config({"inputs": inputs, "output": str(folder / "out")})
        assert check_document_fields(config, inputs) == []
        t = best(lambda config=config, inputs=inputs: check_document_fields(config, inputs), repeats)
        rows.append(
            {
                "inputs": f"{files:,} x {kind} ({round(one.stat().st_size / 1e6, 1)} MB each)",
                "check s": round(t, 2),
                "ms per file": round(t * 1000 / files, 2),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small files; print, write nothing")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    words, items, files = (50_000, 20_000, 100) if args.quick else (600_000, 200_000, 1000)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sections = [
            ("fastText models: the plan-time check against loading the model", models(folder, words, args.repeats)),
            (
                "Eval sets: every record at plan time, against the run's own read",
                eval_sets(folder, items, args.repeats),
            ),
            (
                "Document inputs: Parquet footer / first JSON lines records",
                document_inputs(folder, files, args.repeats),
            ),
        ]
    info = machine_info()
    out = [
        "# Plan-time checks (issue 42)",
        "",
        f"Machine: {info['cpu']}, {info['nproc']} CPUs, {info['mem_gib']} GiB; load average {info['load_avg']} at "
        f"the end (shared: see the load); {info['date']}; best of {args.repeats}. "
        "Command: `python benchmarks/plan_checks.py`.",
        "",
    ]
    for title, rows in sections:
        out += [f"## {title}", "", markdown_table(list(rows[0]), [list(r.values()) for r in rows]), ""]
    text = "\n".join(out)
    print(text)
    if not args.quick:
        (ROOT / "benchmarks" / "results" / "plan_checks.md").write_text(text)


if __name__ == "__main__":
    main()
