#!/usr/bin/env python3
"""Build the demonstration quality model, samples/quality/model.ftz, from the sample WARCs.

    .venv/bin/python samples/quality/make_model.py        # from the repository root; ~15 s
    .venv/bin/python samples/quality/make_model.py --samples DIR   # WARCs and ground truth from elsewhere

1. Extract the text of every HTML response in samples/*.warc.gz with the
   project's own reader, decoder and extractor (jobs/sample.yaml's warc,
   charset and extract settings; no filters, so spam and nav pages keep
   their text).
2. Label it by samples/ground_truth.jsonl: positives (``hq``) are the prose
   pages, the PII pages (pages that carry PII, ``pii`` and ``pii_prose``) and
   the first copy of each near-duplicate cluster; negatives (``cc``) are the spam and nav
   pages.  Exact-duplicate copies, the other near-duplicate copies and the
   odd pages are left out, so no text sits on both sides of the held-out
   split.
3. Train with classifiers/train_quality.py (the command it runs is printed),
   seeded, one thread, quantized with a vocabulary cutoff to stay small.

The result is a demonstration model: it tells real documentation prose from
the samples' generated spam and navigation pages, which is easy (held-out
scores are near perfect and say nothing about the open web).  For real runs
plug in a production model (DCLM's fastText, or one trained with
``curate train-quality`` on your own positives and negatives).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

POSITIVE_KINDS = ("prose", "pii", "pii_prose")  # plus the first copy of each near-duplicate cluster
NEGATIVE_KINDS = ("spam", "nav")
MODEL = HERE / "model.ftz"
#: Small on purpose (the model is committed): 16 dimensions, bigrams in 50k buckets, and a
#: quantized vocabulary cut to 20k entries; 10 epochs (the data set is tiny and easy).
TRAIN_ARGS = [
    "--dim", "16", "--epoch", "10", "--lr", "0.5", "--word-ngrams", "2", "--min-count", "1",
    "--bucket", "50000", "--cutoff", "20000", "--valid-fraction", "0.2", "--seed", "0", "--threads", "1",
]  # fmt: skip


def sample_files(samples: Path) -> list[str]:
    return sorted(glob.glob(str(samples / "*.warc.gz")))


def inputs_sha256(samples: Path) -> str:
    """One digest of the WARCs and the ground truth the model is made from."""
    h = hashlib.sha256()
    for f in [*sample_files(samples), str(samples / "ground_truth.jsonl")]:
        h.update(Path(f).name.encode() + b"\0" + Path(f).read_bytes())
    return h.hexdigest()


def extract_texts(files: list[str]):
    """id and extracted text of every HTML response, with the sample run's reader/decode/extract settings."""
    import pyarrow as pa
    import yaml

    from core.storage import open_input
    from stages.base import ChainStats, run_chain
    from stages.charset import CharsetConfig, DecodeStage
    from stages.extract import ExtractConfig, ExtractStage
    from stages.warc import ReadStats, WarcConfig, WarcReader

    # Only these sections: the job's quality section may point at the model this script builds.
    job = yaml.safe_load((ROOT / "jobs" / "sample.yaml").read_text()) or {}
    reader = WarcReader(WarcConfig(**job.get("warc", {})))
    stages = [
        DecodeStage(CharsetConfig(**job.get("charset", {}))),
        ExtractStage(ExtractConfig(**job.get("extract", {}))),
    ]
    parts = []
    for f in files:
        with open_input(f) as raw:
            for batch in reader.iter_batches(raw, f, ReadStats()):
                kept, _ = run_chain(stages, batch, ChainStats())
                parts.append(kept.select(["id", "text"]))
    return pa.concat_tables(parts)


def labeled_sets(texts, samples: Path):
    """(positives, negatives) tables of ``id, text``, chosen by the ground truth's kinds."""
    import pyarrow as pa

    truth = {}
    for line in (samples / "ground_truth.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            truth[row["id"]] = row

    def positive(row: dict) -> bool:
        return row["kind"] in POSITIVE_KINDS or (row["kind"] == "near_duplicate" and row["expect"] == "keep")

    rows = [truth[i] for i in texts.column("id").to_pylist()]
    pos = texts.filter(pa.array([positive(r) for r in rows]))
    neg = texts.filter(pa.array([r["kind"] in NEGATIVE_KINDS for r in rows]))
    return pos, neg


def training_data_sha256(pos, neg) -> str:
    """One digest of the labeled texts (ids and texts of both sets, in order)."""
    h = hashlib.sha256()
    for label, table in (("hq", pos), ("cc", neg)):
        for doc_id, text in zip(table.column("id").to_pylist(), table.column("text").to_pylist(), strict=False):
            h.update(f"{label}\0{doc_id}\0{text}\0".encode())
    return h.hexdigest()


def build(samples: Path, output: Path, data=None) -> int:
    """Extract, label and train into ``output`` (its metrics beside it); ``data``: (pos, neg) already extracted."""
    import pyarrow.parquet as pq

    from classifiers import train_quality

    pos, neg = data if data is not None else labeled_sets(extract_texts(sample_files(samples)), samples)
    with tempfile.TemporaryDirectory(prefix="quality-demo-") as tmp:
        pq.write_table(pos, os.path.join(tmp, "positives.parquet"))
        pq.write_table(neg, os.path.join(tmp, "negatives.parquet"))
        argv = [
            "--positives",
            "positives.parquet",
            "--negatives",
            "negatives.parquet",
            "--output",
            str(output),
            *TRAIN_ARGS,
        ]
        print("python -m classifiers.train_quality " + " ".join(argv).replace(str(ROOT) + "/", ""))
        cwd = os.getcwd()
        os.chdir(tmp)  # relative input names, so the metrics file does not record a temporary path
        try:
            rc = train_quality.main(argv)
        finally:
            os.chdir(cwd)
    if rc:
        return rc
    metrics_path = train_quality.metrics_path_for(output)
    record = json.loads(metrics_path.read_text())
    record["made_by"] = {
        "command": "python samples/quality/make_model.py",
        "positives": f"kinds {', '.join(POSITIVE_KINDS)} and the first copy of each near_duplicate cluster",
        "negatives": f"kinds {', '.join(NEGATIVE_KINDS)}",
        "samples_sha256": inputs_sha256(samples),
        "training_data_sha256": training_data_sha256(pos, neg),
    }
    metrics_path.write_text(json.dumps(record, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--samples", type=Path, default=ROOT / "samples", help="folder with the WARCs and ground_truth.jsonl"
    )
    parser.add_argument("--output", type=Path, default=MODEL, help=f"model path (default {MODEL.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if not sample_files(args.samples):
        print(f"no *.warc.gz in {args.samples}", file=sys.stderr)
        return 2
    from classifiers.demonstration import register, sha256_of

    before = sha256_of(args.output) if args.output.is_file() else None
    rc = build(args.samples, args.output)
    if rc == 0 and args.output.resolve() == MODEL:  # the committed model: cards tell it by its sha256
        register(
            MODEL,
            "the demonstration quality model trained on the sample WARCs (samples/quality/)",
            "python samples/quality/make_model.py",
            replaces=before,
        )
    return rc


if __name__ == "__main__":
    sys.exit(main())
