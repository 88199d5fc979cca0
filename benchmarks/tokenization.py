"""Tokens/s per core through tokenize + shard writing, next to bare ``Tokenizer.encode_batch``;
native MDS writing next to ``streaming.MDSWriter``.

    python benchmarks/tokenization.py            # writes benchmarks/results/tokenize.md
    python benchmarks/tokenization.py --quick    # a quarter of the texts, one run each; prints only

The texts are what phase 1 keeps from ``samples/*.warc.gz`` (529 documents,
2.65 M characters, 11 languages), tokenized with the demonstration tokenizer
(``samples/tokenizer/tokenizer.json``, 8k byte-level BPE).  Every row of the
first table runs in one child process pinned to one CPU (benchmarks/_common.py),
interleaved: an untimed round (the BPE word cache then is as warm for every
row), then ``REPEATS`` rounds of one pass each over batches of ``BATCH``
documents, the fastest pass of each row kept (the machine is shared: the
minimum is the least disturbed).  Tokens/s is tokens over CPU seconds.

* ``encode_batch`` / ``encode_batch_fast``: the bare library call, ids unread;
* ``tokenize stage``: TokenizeStage (Arrow in, ``tokens``/``num_tokens`` out);
* ``+ MDS`` / ``+ WebDataset`` / ``+ both``: the stage, the document layout and
  the writers into a local folder (MDS with zstd, as by default);
* ``packed + MDS``: the stage, packing into 2,048-token sequences, MDS;
* ``threads=2``: the bare call with the library's Rust pool at 2 threads on
  the one pinned CPU (what an actor with num_cpus=1 gets without the budget;
  the other rows run with ``TOKENIZERS_PARALLELISM=false``, i.e. threads=1).

The second table writes the same pre-tokenized samples with this project's
MDS writer and with ``streaming.MDSWriter`` (samples handed over as the dicts
it takes, built before timing), with and without zstd.  Needs the test venv
(it has mosaicml-streaming): ``.venv/bin/python benchmarks/tokenization.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

# This file's name is the standard library's tokenize module's (inspect imports it):
# keep its folder off the import path and load _common by file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_spec = importlib.util.spec_from_file_location("_common", _HERE / "_common.py")
_common = sys.modules["_common"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_common)
child_report, child_setup, machine_info = _common.child_report, _common.child_setup, _common.machine_info
markdown_table, pick_cpu, run_child = _common.markdown_table, _common.pick_cpu, _common.run_child

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "tokenize.md"
RAW = RESULTS.with_suffix(".json")  # the measurements report() renders (--report re-renders them)
INSTALL = RESULTS.parent / "tokenize_install.json"  # venv sizes and times, measured by the commands it lists
BATCH = 256
REPEATS = 5
MODES = [
    "encode_batch",
    "encode_batch_fast",
    "stage",
    "stage+mds",
    "stage+wds",
    "stage+both",
    "packed+mds",
    "threads=2",
]
LABELS = {
    "encode_batch": "bare `Tokenizer.encode_batch`",
    "encode_batch_fast": "bare `Tokenizer.encode_batch_fast`",
    "stage": "tokenize stage (Arrow out)",
    "stage+mds": "tokenize + MDS (document, zstd)",
    "stage+wds": "tokenize + WebDataset (document)",
    "stage+both": "tokenize + MDS + WebDataset",
    "packed+mds": "tokenize + pack 2048 + MDS",
    "threads=2": "bare `encode_batch`, Rust pool 2 threads",
}


def load_texts(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_table(path).column("text").to_pylist()


# ---------------------------------------------------------------- child: every mode, one CPU
def child_main(spec_path: str) -> None:
    """All tokenization modes in one process, interleaved round by round (fastest pass of each kept).

    Interleaving puts every mode under the same machine load; the tokenizers
    library reads TOKENIZERS_PARALLELISM at each call, so the 2-thread mode
    runs here too (its pool is sized by RAYON_NUM_THREADS=2, set first).
    """
    child_setup()
    spec = json.loads(Path(spec_path).read_text())
    sys.path.insert(0, str(ROOT))
    import os

    import pyarrow as pa

    from stages.tokenize import SAMPLE_TOKENIZER, TokenizeConfig, TokenizeStage

    os.environ["RAYON_NUM_THREADS"] = "2"
    texts = load_texts(Path(spec["texts"]))
    if spec["mode"].startswith("mds-"):
        return child_report(mds_write(spec, texts))
    stage = TokenizeStage(TokenizeConfig(tokenizer=str(ROOT / SAMPLE_TOKENIZER), threads=1))
    batches = [texts[i : i + BATCH] for i in range(0, len(texts), BATCH)]
    tables = [pa.table({"id": [f"d{i + j}" for j in range(len(b))],
    "url": ["https://example.org/"] * len(b), "text": b})
              for i, b in zip(range(0, len(texts), BATCH), batches, strict=False)]  # fmt: skip
    runs = {m: make_run(m, stage, batches, tables) for m in MODES}
    best: dict[str, dict] = {}
    for rnd in range(spec["repeats"] + 1):  # round 0 warms up: BPE cache, imports
        for mode, run in runs.items():
            os.environ["TOKENIZERS_PARALLELISM"] = "true" if mode == "threads=2" else "false"
            out = tempfile.mkdtemp()
            t0, c0 = time.perf_counter(), time.process_time()
            tokens = run(out)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if rnd and (mode not in best or cpu < best[mode]["cpu_s"]):
                best[mode] = {"cpu_s": cpu, "wall_s": wall, "tokens": tokens}
    child_report(best)


def make_run(mode, stage, batches, tables):
    import pyarrow as pa

    from stages.pack import LayoutConfig, Packer, document_samples
    from stages.writers import LocalSink, MDSConfig, MDSWriter, WebDatasetConfig, WebDatasetWriter, mds_columns

    tok = stage.tokenizer
    if mode in ("encode_batch", "threads=2"):  # threads=2: the same call, the pool on
        return lambda _: sum(len(e) for b in batches for e in tok.encode_batch(b, add_special_tokens=False))
    if mode == "encode_batch_fast":
        return lambda _: sum(len(e) for b in batches for e in tok.encode_batch_fast(b, add_special_tokens=False))

    def run(out: str) -> int:
        writers, packer, n = [], None, 0
        layout = LayoutConfig(kind="packed") if mode == "packed+mds" else LayoutConfig()
        if mode == "packed+mds":
            packer = Packer(2048, "drop", None, stage.dtype)
            schema = packer.add(pa.array([], pa.list_(pa.uint16())), pa.array([], pa.string())).schema
        else:
            schema = None
        for t in tables:
            batch = stage(t).drop_columns(["reason", "details"])
            n += sum(batch.column("num_tokens").to_pylist())
            if mode == "stage":
                continue
            samples = (
                packer.add(batch.column("tokens"), batch.column("id")) if packer else document_samples(batch, layout)
            )
            if not writers:
                schema = schema or samples.schema
                if "mds" in mode or mode == "stage+both":
                    cols = mds_columns(schema, layout.fixed_len())
                    writers.append(MDSWriter(f"{out}/stage-mds", cols, MDSConfig(), LocalSink(f"{out}/mds")))
                if "wds" in mode or mode == "stage+both":
                    writers.append(
                        WebDatasetWriter(f"{out}/stage-wds", WebDatasetConfig(), LocalSink(f"{out}/wds"), "00000")
                    )
            for w in writers:
                w.write(samples)
        for w in writers:
            w.finish()
        return n

    return run


def mds_write(spec: dict, texts: list[str]) -> dict:
    """Write the same samples with the native writer or streaming.MDSWriter; CPU seconds of the writing alone."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from stages.pack import LayoutConfig, document_samples
    from stages.tokenize import SAMPLE_TOKENIZER, TokenizeConfig, TokenizeStage
    from stages.writers import LocalSink, MDSConfig, MDSWriter, mds_columns

    stage = TokenizeStage(TokenizeConfig(tokenizer=str(ROOT / SAMPLE_TOKENIZER)))
    ids = [f"urn:uuid:{i:08d}" for i in range(len(texts))]
    table = document_samples(
        stage(pa.table({"id": ids, "url": [f"https://example.org/{i}" for i in range(len(texts))], "text": texts})),
        LayoutConfig(),
    )
    table = pa.concat_tables([table] * spec["copies"])  # more samples: writing is fast
    cols = mds_columns(table.schema)
    compression = spec["compression"]
    which = spec["mode"].split("-", 1)[1]
    rows = None
    if which == "streaming":
        from streaming import MDSWriter as StreamingWriter

        rows = table.to_pylist()
        for r in rows:
            r["tokens"] = np.array(r["tokens"], np.uint16)
    best = None
    for _ in range(spec["repeats"]):
        out = tempfile.mkdtemp()
        c0, t0 = time.process_time(), time.perf_counter()
        if which == "native":
            w = MDSWriter(f"{out}/stage", cols, MDSConfig(compression=compression, hashes=[]), LocalSink(f"{out}/mds"))
            for start in range(0, len(table), BATCH):
                w.write(table.slice(start, BATCH))
            w.finish()
        else:
            with StreamingWriter(out=f"{out}/mds", columns=cols, compression=compression) as sw:
                for r in rows:
                    sw.write(r)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        size = sum(f.stat().st_size for f in Path(out, "mds").iterdir())
        if best is None or cpu < best["cpu_s"]:
            best = {"cpu_s": cpu, "wall_s": wall, "samples": len(table), "out_bytes": size}
    # Sizes from one copy: repeated copies would let zstd find whole documents again.
    one = table.slice(0, len(table) // spec["copies"])
    out = tempfile.mkdtemp()
    if which == "native":
        w = MDSWriter(f"{out}/stage", cols, MDSConfig(compression=compression, hashes=[]), LocalSink(f"{out}/mds"))
        w.write(one)
        w.finish()
    else:
        with StreamingWriter(out=f"{out}/mds", columns=cols, compression=compression) as sw:
            for r in rows[: len(one)]:
                sw.write(r)
    best["copies"] = spec["copies"]
    best["one_copy_bytes"] = sum(f.stat().st_size for f in Path(out, "mds").iterdir() if f.name != "index.json")
    best["one_copy_token_bytes"] = (
        int(pc.sum(pc.list_value_length(one.column("tokens"))).as_py()) * stage.dtype.itemsize
    )
    return best


# ---------------------------------------------------------------- parent
def extract_texts(path: Path, quick: bool) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = importlib.util.spec_from_file_location("train", ROOT / "samples" / "tokenizer" / "train.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    texts = mod.sample_texts(sorted(str(p) for p in (ROOT / "samples").glob("*.warc.gz")))
    if quick:
        texts = texts[: len(texts) // 4]
    pq.write_table(pa.table({"text": texts}), path)
    return {"documents": len(texts), "characters": sum(map(len, texts))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a quarter of the texts, one run each; print only")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--report", action="store_true", help=f"only re-render {RESULTS.name} from {RAW.name}")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args.child)
        return 0
    if args.report:
        raw = json.loads(RAW.read_text())
        RESULTS.write_text(report(raw["results"], raw["repeats"], raw["machine"]))
        return 0
    cpu = pick_cpu()
    repeats = 1 if args.quick else REPEATS
    work = Path(tempfile.mkdtemp(prefix="bench-tokenize-"))
    texts = work / "texts.parquet"
    results = {"texts": extract_texts(texts, args.quick)}
    jobs = [("tokens", {})] + [(f"mds-{w}-{c or 'none'}", {"compression": c, "copies": 1 if args.quick else 8})
                               for c in (None, "zstd") for w in ("native", "streaming")]  # fmt: skip
    for mode, extra in jobs:
        spec = work / f"{mode}.spec.json"
        spec.write_text(
            json.dumps(
                {
                    "mode": mode.rsplit("-", 1)[0] if mode.startswith("mds-") else mode,
                    "texts": str(texts),
                    "repeats": repeats,
                    **extra,
                }
            )
        )
        res = run_child([__file__, "--child", str(spec)], cpu, work / f"{mode}.log", args.timeout, cwd=ROOT)
        print(mode, json.dumps(res), flush=True)
        if mode == "tokens":
            results.update({m: res.get(m, res) for m in MODES})
        else:
            results[mode] = res
    info = machine_info()
    text = report(results, repeats, info)
    print(text)
    if not args.quick:
        RAW.write_text(json.dumps({"results": results, "repeats": repeats, "machine": info}, indent=1) + "\n")
        RESULTS.write_text(text)
        print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


def summary(results: dict) -> list[str]:
    """The rows the target is about, in words (target: >= 70% of bare encode_batch)."""
    rate = {m: results[m]["tokens"] / results[m]["cpu_s"] for m in MODES if "failed" not in results[m]}
    if not all(m in rate for m in ("encode_batch", "encode_batch_fast", "stage+mds", "stage+wds", "stage+both")):
        return []
    worst = min(rate[m] for m in ("stage+mds", "stage+wds", "stage+both", "packed+mds") if m in rate)
    return [
        f"Tokenize + write, the slowest format row: {worst / rate['encode_batch']:.0%} of bare `encode_batch` and "
        f"{worst / rate['encode_batch_fast']:.0%} of `encode_batch_fast` (target: at least 70%). The stage calls "
        "`encode_batch_fast` (no character offsets); reading the ids, the numpy buffers and the shard encoding cost "
        "less than the run-to-run noise of this shared machine. With 2 Rust threads on one pinned CPU, `encode_batch` "
        f"takes {results['threads=2']['cpu_s'] / results['encode_batch']['cpu_s']:.0%} of its 1-thread CPU time: "
        "no gain, so `threads: 1` in one-CPU actors.",
        "",
    ]


def install_section() -> list[str]:
    if not INSTALL.is_file():
        return []
    m = json.loads(INSTALL.read_text())
    venvs = (("runtime (`pip install .`)", "runtime"), ("runtime + mosaicml-streaming", "with_streaming"))
    rows = [
        [
            name,
            m[key]["packages"],
            f"{m[key]['size_mb'] / 1024:.1f} GB",
            f"{m[key]['wall_s'] / 60:.1f} min",
            f"{m[key]['cpu_s'] / 60:.1f} min",
        ]
        for name, key in venvs
    ]
    return [
        "## Install: the runtime venv with and without mosaicml-streaming",
        "",
        f"From `{INSTALL.name}` ({m['date']}): " + "; ".join(f"`{c}`" for c in m["commands"]) + ".",
        "",
        markdown_table(["venv", "packages", "size", "wall", "CPU"], rows),
        "",
        f"streaming adds: {m['with_streaming']['adds']}. {m['note']}.",
        "",
    ]


def report(results: dict, repeats: int, info: dict) -> str:
    base = results["encode_batch"]
    fast = results["encode_batch_fast"]
    rows = []
    for m in MODES:
        r = results[m]
        if "failed" in r:
            rows.append([LABELS[m], r["failed"], "", "", "", ""])
            continue
        rate = r["tokens"] / r["cpu_s"]
        rows.append([LABELS[m], f"{r['tokens']:,}", f"{r['cpu_s']:.2f}", f"{r['wall_s']:.2f}", f"{rate / 1e3:,.0f}k",
                     f"{rate / (base['tokens'] / base['cpu_s']):.0%} "
                         f"/ {rate / (fast['tokens'] / fast['cpu_s']):.0%}"])  # fmt: skip
    mds_rows = []
    for c in ("none", "zstd"):
        nat, st = results[f"mds-native-{c}"], results[f"mds-streaming-{c}"]
        for name, r in (("native (this project)", nat), ("`streaming.MDSWriter`", st)):
            if "failed" in r:
                mds_rows.append([name, c, r["failed"], "", "", "", "", ""])
                continue
            mds_rows.append([name, c, f"{r['samples']:,}", f"{r['cpu_s']:.3f}", f"{r['samples'] / r['cpu_s']:,.0f}",
                             f"{r['one_copy_token_bytes'] * r['copies'] / r['cpu_s'] / 2**20:,.0f}",
                             f"{r['one_copy_bytes'] / 2**20:.2f}",
                             f"{r['one_copy_bytes'] / r['one_copy_token_bytes']:.2f}"])  # fmt: skip
        if "failed" not in nat and "failed" not in st:
            mds_rows.append(
                ["**native / streaming**", c, "", "", f"**{st['cpu_s'] / nat['cpu_s']:.1f}x**", "", "", ""]
            )
    return "\n".join(
        [
            "# Tokenization and shard writing",
            "",
            "Generated by `benchmarks/tokenization.py` (see its docstring for the method). "
            f"{info['date']}, {info['cpu']}, {info['nproc']} CPUs (each row one process pinned to one CPU), "
            f"Python {info['python']}, load average {tuple(info['load_avg'])} "
            f"at the end. Fastest of {repeats} runs after a warm-up.",
            "",
            "## Tokens per second per core",
            "",
            f"Texts: what phase 1 keeps from `samples/` ({results['texts']['documents']:,} "
            f"documents, {results['texts']['characters']:,} characters), "
            f"tokenized with the 8k demonstration BPE, batches of {BATCH} documents.",
            "The last column is the row's tokens/s over bare `encode_batch`'s "
            "/ `encode_batch_fast`'s, measured in the same run.",
            "",
            markdown_table(["what", "tokens", "CPU s", "wall s", "tokens/s/core", "vs bare"], rows),
            "",
            *summary(results),
            "## MDS writing: native vs `streaming.MDSWriter`",
            "",
            "The same document-layout samples (tokens, id, url, num_tokens), "
            "pre-tokenized, the texts 8 times over; only the writing is timed.",
            "Shard sizes are from one copy of the texts (repeated copies "
            "would let zstd find whole documents again); the last column is",
            "their size over the bytes of the token ids alone. Both use "
            "zstd level 3 (this project: `zstandard`; streaming: `zstd`).",
            "",
            markdown_table(
                [
                    "writer",
                    "compression",
                    "samples",
                    "CPU s",
                    "samples/s",
                    "token MiB/s",
                    "shards MiB, 1 copy",
                    "over token bytes",
                ],
                mds_rows,
            ),
            "",
            *install_section(),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
