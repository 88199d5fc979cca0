"""Train the demonstration SentencePiece model on the text our extractor gets from samples/.

    python samples/tokenizer_sp/train.py          # writes samples/tokenizer_sp/tokenizer.model

The texts are what phase ``extracted`` keeps from samples/*.warc.gz with
jobs/sample.yaml's settings (run here through the CLI into a temporary
folder, or read from ``--documents``, an earlier run's
``documents/extracted/*.parquet``), in id order, split into lines (the
trainer's sentences).  The trainer settings are Llama 2's (BPE, byte fallback,
digits split, no normalization, a dummy prefix), at an 8k vocabulary; one
thread and every sentence, so the same texts give the same bytes.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

VOCAB_SIZE = 8000
#: What the card calls it (it tells the model by its sha256, whatever its path: classifiers/demonstration.py).
WHAT = (
    "the demonstration SentencePiece model (an 8k BPE trained, as Llama 2's was, on the text phase extracted "
    "keeps from the sample WARCs, samples/tokenizer_sp/)"
)

#: Llama 2's trainer spec (its tokenizer.model's trainer_spec), but for the size and a pad piece (as Gemma has).
TRAINER = dict(
    model_type="bpe",
    byte_fallback=True,  # every string encodes: unseen characters become <0xNN> byte pieces
    split_digits=True,
    allow_whitespace_only_pieces=True,
    normalization_rule_name="identity",
    add_dummy_prefix=True,
    remove_extra_whitespaces=False,
    character_coverage=0.9995,
    max_sentence_length=4192,
    unk_id=0,
    bos_id=1,
    eos_id=2,
    pad_id=3,
    num_threads=1,  # deterministic
    minloglevel=2,
)


def extracted_texts(documents: str | None) -> list[str]:
    """Texts of phase ``extracted``'s parts (run now over samples/ when no folder is given), by id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if documents is None:
        with tempfile.TemporaryDirectory() as out:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pipeline.cli",
                    "run",
                    "jobs/sample.yaml",
                    "--output",
                    out,
                    "--phases",
                    "extracted",
                    "--no-progress",
                ],
                cwd=REPO,
                check=True,
            )
            return extracted_texts(f"{out}/documents/extracted")
    parts = sorted(glob.glob(f"{documents}/*.parquet"))
    if not parts:
        raise SystemExit(f"--documents {documents}: no *.parquet there")
    table = pa.concat_tables([pq.read_table(p, columns=["id", "text"]) for p in parts]).sort_by("id")
    return table.column("text").to_pylist()


def train(texts: list[str], vocab_size: int) -> bytes:
    """The serialized model trained on the texts' non-blank lines."""
    import sentencepiece as spm

    lines = [line for text in texts for line in text.split("\n") if line.strip()]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, vocab_size=vocab_size, **TRAINER)
    return model.getvalue()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--documents", help="a folder of phase 'extracted' parts (default: run that phase over samples/ now)"
    )
    ap.add_argument("--vocab-size", type=int, default=VOCAB_SIZE)
    ap.add_argument("--out", default=str(REPO / "samples" / "tokenizer_sp" / "tokenizer.model"))
    args = ap.parse_args(argv)

    from classifiers.demonstration import register, sha256_of

    texts = extracted_texts(args.documents)
    model = train(texts, args.vocab_size)
    before = sha256_of(args.out) if Path(args.out).is_file() else None
    Path(args.out).write_bytes(model)
    # The card tells a demonstration tokenizer by this digest (the shards manifest's), whatever its path.
    register(args.out, WHAT, "python samples/tokenizer_sp/train.py", replaces=before)
    print(
        json.dumps(
            {
                "documents": len(texts),
                "characters": sum(map(len, texts)),
                "texts_sha256_16": hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16],
                "vocab_size": args.vocab_size,
                "model_sha256": hashlib.sha256(model).hexdigest(),
                "out": args.out,
            }
        )
    )


if __name__ == "__main__":
    main()
