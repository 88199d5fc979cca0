"""Tokens/s written as Megatron .bin/.idx: this project's MegatronWriter next to
megatron-core's own IndexedDatasetBuilder, on the same tokenized documents.

    .venv/bin/python benchmarks/megatron_writer.py [--docs 3000] [--repeats 5]

The documents are tokenized once before timing (the demonstration tokenizer,
texts of 1-1,500 words in several scripts).  Rows, each run in this process,
interleaved, the fastest of ``--repeats`` kept (the machine is shared):

* ``MegatronWriter``: Arrow document samples in batches of 1,024 rows ->
  write + finish (sha256 of every file, index.json, a LocalSink);
* ``IndexedDatasetBuilder (numpy)``: ``add_document(array, [len])`` per
  document, then ``finalize`` (its fastest input);
* ``IndexedDatasetBuilder (lists)``: the same with Python lists of ids, what
  tools/preprocess_data.py hands it.

Tokens/s is tokens over CPU seconds of this process.  The .bin and .idx bytes
of all three are checked equal.  megatron-core is a test-only dependency.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stages.pack import LayoutConfig, document_samples  # noqa: E402
from stages.tokenize import SAMPLE_TOKENIZER, TokenizeConfig, TokenizeStage  # noqa: E402
from stages.writers.megatron import MegatronConfig, MegatronWriter  # noqa: E402
from stages.writers.sink import LocalSink  # noqa: E402

WORDS = (
    "the server module configuration request Konfiguration "
    "Datei serveur fichier сервер файл 設定 ファイル 模块 配置 한국어 설정"
).split()


def samples(n: int) -> tuple[pa.Table, int]:
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, k)) for k in rng.integers(1, 1500, n)]
    stage = TokenizeStage(TokenizeConfig(tokenizer=str(ROOT / SAMPLE_TOKENIZER)))
    docs = stage(pa.table({"id": [str(i) for i in range(n)], "url": [""] * n, "text": texts}))
    return document_samples(docs, LayoutConfig()), stage.vocab_size


def ours(table: pa.Table, vocab_size: int, out: str) -> str:
    writer = MegatronWriter(os.path.join(out, "staging"), MegatronConfig(enabled=True), LocalSink(out), vocab_size)
    for start in range(0, len(table), 1024):
        writer.write(table.slice(start, 1024))
    writer.finish()
    return os.path.join(out, "shard-00000")


def builder(indexed, docs: list, vocab_size: int, out: str) -> str:
    b = indexed.IndexedDatasetBuilder(os.path.join(out, "ref.bin"), dtype=indexed.DType.optimal_dtype(vocab_size))
    for ids in docs:
        b.add_document(ids, [len(ids)])
    b.finalize(os.path.join(out, "ref.idx"))
    return os.path.join(out, "ref")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets import indexed_dataset as indexed
    table, vocab_size = samples(args.docs)
    tokens = int(np.sum(table.column("num_tokens").to_numpy()))
    arrays = [np.asarray(a) for a in table.column("tokens").to_numpy(zero_copy_only=False)]
    lists = [a.tolist() for a in arrays]
    rows = {
        "MegatronWriter": lambda out: ours(table, vocab_size, out),
        "IndexedDatasetBuilder (numpy)": lambda out: builder(indexed, arrays, vocab_size, out),
        "IndexedDatasetBuilder (lists)": lambda out: builder(indexed, lists, vocab_size, out),
    }
    best = {name: float("inf") for name in rows}
    files = {}
    for _ in range(args.repeats):
        for name, run in rows.items():
            out = tempfile.mkdtemp(prefix="megatron-bench-")
            t0 = time.process_time()
            prefix = run(out)
            best[name] = min(best[name], time.process_time() - t0)
            files[name] = [Path(f"{prefix}.{ext}").read_bytes() for ext in ("bin", "idx")]
            shutil.rmtree(out)
    assert all(f == files["MegatronWriter"] for f in files.values()), "the three wrote different bytes"
    print(
        f"{args.docs:,} documents, {tokens:,} tokens (uint16), best of {args.repeats}; load average {os.getloadavg()}"
    )
    print("| writer | CPU s | tokens/s | × builder (numpy) |\n| --- | ---: | ---: | ---: |")
    ref = best["IndexedDatasetBuilder (numpy)"]
    for name, cpu in best.items():
        print(f"| {name} | {cpu:.3f} | {tokens / cpu / 1e6:,.1f} M | {ref / cpu:.2f}× |")


if __name__ == "__main__":
    main()
