#!/usr/bin/env python3
"""Build the demonstration educational-value and toxicity models, samples/classifiers/{edu,toxicity}.ftz.

    .venv/bin/python samples/classifiers/make_data.py     # the forum threads (train.jsonl, comments.jsonl)
    .venv/bin/python samples/classifiers/make_models.py   # from the repository root; ~30 s

Training data, all shipped in samples/:

- **edu** (labels ``edu`` / ``other``, FineWeb-Edu's idea as a binary fastText
  model): positives are the documentation pages of the sample WARCs (ground
  truth kinds ``prose`` and the first copy of each near-duplicate cluster: the
  Python, Apache and Debian manuals); negatives are the forum threads of
  ``train.jsonl``, and the spam, navigation and generated PII pages (contact
  pages, order confirmations, tickets: well-formed but not educational, so the
  edu model disagrees with the quality model on them).
- **toxicity** (labels ``toxic`` / ``non_toxic``, the labels of Dolma's Jigsaw
  models): positives are the toxic threads of ``train.jsonl``; negatives its
  civil threads and every sample page above (so that documentation is not
  taken for toxic for want of known words).

Texts are extracted as samples/quality/make_model.py does (the sample job's
reader, decoder and extractor); training is classifiers/train_quality.py with
the quality model's settings (seeded, one thread, quantized): the same data
gives the same bytes.  Each model's sha256 is registered in
classifiers/demonstrations.json, so a card flags it as a demonstration
whatever path a run gives it.  These models separate the samples' own kinds of
text; they say nothing about real web pages or real comments.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

EDU_POSITIVE_KINDS = ("prose",)  # plus the first copy of each near-duplicate cluster (a section of a manual)
EDU_NEGATIVE_KINDS = ("spam", "nav", "pii")


def quality_maker():
    """samples/quality/make_model.py: its extraction, ground truth and training settings."""
    spec = importlib.util.spec_from_file_location("quality_make_model", ROOT / "samples" / "quality" / "make_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def threads(path: Path):
    """The forum threads of train.jsonl as (toxic, civil) tables of ``id, text``."""
    import pyarrow as pa

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def table(label):
        return pa.table(
            {
                "id": pa.array([r["id"] for r in rows if r["label"] == label], pa.string()),
                "text": pa.array([r["text"] for r in rows if r["label"] == label], pa.large_string()),
            }
        )

    return table("toxic"), table("civil")


def sample_pages(samples: Path):
    """(edu positives, edu negatives) from the sample WARCs, by their ground truth's kinds."""
    import pyarrow as pa

    texts = quality_maker().extract_texts(quality_maker().sample_files(samples))
    truth = {}
    for line in (samples / "ground_truth.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            truth[row["id"]] = row
    rows = [truth[i] for i in texts.column("id").to_pylist()]
    edu = [r["kind"] in EDU_POSITIVE_KINDS or (r["kind"] == "near_duplicate" and r["expect"] == "keep") for r in rows]
    other = [r["kind"] in EDU_NEGATIVE_KINDS for r in rows]
    return texts.filter(pa.array(edu)), texts.filter(pa.array(other))


def training_sets(samples: Path) -> dict:
    """{model: (positives, negatives, positive label, negative label)}, every table ``id, text``."""
    import pyarrow as pa

    toxic, civil = threads(HERE / "train.jsonl")
    pages_edu, pages_other = sample_pages(samples)
    return {
        "edu": (pages_edu, pa.concat_tables([civil, toxic, pages_other]), "edu", "other"),
        "toxicity": (toxic, pa.concat_tables([civil, pages_edu, pages_other]), "toxic", "non_toxic"),
    }


def data_sha256(pos, neg) -> str:
    h = hashlib.sha256()
    for label, table in (("pos", pos), ("neg", neg)):
        for doc_id, text in zip(table.column("id").to_pylist(), table.column("text").to_pylist(), strict=False):
            h.update(f"{label}\0{doc_id}\0{text}\0".encode())
    return h.hexdigest()


WHAT = {
    "edu": "the demonstration educational-value model: the samples' documentation pages against forum threads, spam, "
    "navigation and PII pages (samples/classifiers/)",
    "toxicity": "the demonstration toxicity model: generated insulting "
    "forum threads against civil ones and the sample "
    "pages (samples/classifiers/)",
}


def build(name: str, data: tuple, output: Path) -> int:
    """Train one model into ``output`` (its metrics beside it)."""
    import pyarrow.parquet as pq

    from classifiers import train_quality

    pos, neg, pos_label, neg_label = data
    with tempfile.TemporaryDirectory(prefix=f"{name}-demo-") as tmp:
        pq.write_table(pos, os.path.join(tmp, "positives.parquet"))
        pq.write_table(neg, os.path.join(tmp, "negatives.parquet"))
        argv = [
            "--positives",
            "positives.parquet",
            "--negatives",
            "negatives.parquet",
            "--positive-label",
            pos_label,
            "--negative-label",
            neg_label,
            "--output",
            str(output),
            *quality_maker().TRAIN_ARGS,
        ]
        print("python -m classifiers.train_quality " + " ".join(argv).replace(str(ROOT) + "/", ""))
        cwd = os.getcwd()
        os.chdir(tmp)  # relative input names: the metrics file records no temporary path
        try:
            rc = train_quality.main(argv)
        finally:
            os.chdir(cwd)
    if rc:
        return rc
    metrics_path = train_quality.metrics_path_for(output)
    record = json.loads(metrics_path.read_text())
    record["made_by"] = {
        "command": "python samples/classifiers/make_models.py",
        "what": WHAT[name],
        "training_data_sha256": data_sha256(pos, neg),
    }
    metrics_path.write_text(json.dumps(record, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    from classifiers.demonstration import register, sha256_of

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--samples", type=Path, default=ROOT / "samples", help="folder with the WARCs and ground_truth.jsonl"
    )
    args = parser.parse_args(argv)
    sets = training_sets(args.samples)
    for name, data in sets.items():
        output = HERE / f"{name}.ftz"
        before = sha256_of(output) if output.is_file() else None
        rc = build(name, data, output)
        if rc:
            return rc
        register(output, WHAT[name], "python samples/classifiers/make_models.py", replaces=before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
