"""Train the demonstration tokenizer on the text our extractor gets from samples/.

    python samples/tokenizer/train.py            # writes samples/tokenizer/tokenizer.json

Phase 1 (read, decode, extract, language ID, filters; jobs/sample.yaml's
settings) runs in this process over samples/*.warc.gz; the kept texts, in id
order, train a byte-level BPE.  Same texts, same tokenizer.json.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

VOCAB_SIZE = 8192
# GPT-2's end-of-text token is the default EOS (TokenizeConfig.eos); the others
# let the sample run try BOS and padding.
SPECIAL_TOKENS = ["<|endoftext|>", "<|begin_of_text|>", "<|pad|>"]


def sample_texts(warcs: list[str]) -> list[str]:
    """Texts phase 1 keeps from the given WARC files, sorted by document id."""
    import pyarrow as pa
    import yaml

    from core.storage import Storage
    from pipeline.config import parse_config
    from pipeline.phase1 import Phase1

    cfg = yaml.safe_load((REPO / "jobs" / "sample.yaml").read_text())
    with tempfile.TemporaryDirectory() as out:
        cfg.update(inputs=warcs, output=out)
        phase = Phase1(parse_config(cfg))
        for i, path in enumerate(warcs):
            stats = phase.process(path, f"{i:05d}")
            if "failed" in stats:
                raise RuntimeError(f"{path}: {stats['failed']}")
        storage = Storage(out)
        parts = [
            storage.read_parquet("documents", "extracted", p, columns=["id", "text"])
            for p in storage.list("documents", "extracted")
        ]
    table = pa.concat_tables(parts).sort_by("id")
    return table.column("text").to_pylist()


#: How the dataset card names this tokenizer (classifiers/demonstrations.json).
WHAT = "the demonstration tokenizer (an 8k byte-level BPE trained on the sample WARCs, samples/tokenizer/)"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warcs", default=str(REPO / "samples" / "*.warc.gz"), help="glob of WARC files")
    ap.add_argument("--vocab-size", type=int, default=VOCAB_SIZE)
    ap.add_argument("--out", default=str(REPO / "samples" / "tokenizer" / "tokenizer.json"))
    args = ap.parse_args(argv)

    from stages.tokenize import train_bpe

    texts = sample_texts(sorted(glob.glob(args.warcs)))
    from classifiers.demonstration import register, sha256_of

    before = sha256_of(args.out) if Path(args.out).is_file() else None
    tok = train_bpe(texts, args.vocab_size, SPECIAL_TOKENS)
    Path(args.out).write_text(tok.to_str(pretty=True) + "\n", encoding="utf-8")
    # The card tells a demonstration tokenizer by this digest (the shards manifest's), whatever its path.
    register(args.out, WHAT, "python samples/tokenizer/train.py", replaces=before)
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    print(
        json.dumps(
            {
                "documents": len(texts),
                "characters": sum(map(len, texts)),
                "texts_sha256_16": digest,
                "vocab_size": tok.get_vocab_size(),
                "out": args.out,
            }
        )
    )


if __name__ == "__main__":
    main()
