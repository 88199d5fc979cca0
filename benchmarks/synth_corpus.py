"""A synthetic web-like corpus with planted near-duplicate clusters of known sizes.

    python benchmarks/synth_corpus.py OUT_ROOT --docs 100000 [--parts 10] [--dup-fraction 0.1]

Writes what phase 1 would have written (``documents/extracted/part-*.parquet``
and ``_done/extracted/*.json``) plus ``truth.parquet`` (``id``, ``cluster``:
null for a unique document).  Documents are 5 paragraphs, ~300 words, drawn
from a Zipf-distributed vocabulary of 50,000 made-up words, each with a
site template (a header and footer shared by the site's pages).  A cluster
is an original and 1..9 copies; each copy is published on another site
(other template) and gets one or more of: a few edited words, a dropped
paragraph, an added paragraph, a changed date line.
Generation is vectorized (numpy + Arrow string kernels): 1M documents in about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.storage import Storage  # noqa: E402

VOCAB = 50_000
PARAS = 5
PARA_WORDS = 60
SITES = 500
TEMPLATE_WORDS = 12


def vocabulary(rng: np.random.Generator) -> pa.Array:
    """Pronounceable made-up words (letters only: digits would be normalized away)."""
    cons, vows = np.array(list("bcdfghjklmnprstvwz")), np.array(list("aeiou"))
    syll = rng.integers(1, 4, VOCAB)
    words = []
    for n in syll.tolist():
        c = rng.choice(cons, n)
        v = rng.choice(vows, n)
        words.append("".join(a + b for a, b in zip(c, v, strict=False)))
    return pa.array(words)


def zipf_words(rng: np.random.Generator, n: int) -> np.ndarray:
    ranks = np.arange(1, VOCAB + 1)
    p = 1.0 / ranks**1.05
    return rng.choice(VOCAB, size=n, p=p / p.sum())


def join_words(vocab: pa.Array, ids: np.ndarray, per: int) -> pa.Array:
    """Rows of ``per`` words each, joined by spaces (Arrow kernels, no Python loop)."""
    # large types: 2M documents' paragraphs pass the 2 GiB a plain string array can hold
    words = vocab.cast(pa.large_string()).take(pa.array(ids.ravel()))
    lists = pa.LargeListArray.from_arrays(pa.array(np.arange(0, len(ids.ravel()) + 1, per, dtype=np.int64)), words)
    return pc.binary_join(lists, pa.scalar(" ", pa.large_string()))


def generate(docs: int, dup_fraction: float, seed: int = 0) -> tuple[pa.Table, np.ndarray]:
    """(table of id, url, text, cluster) with ``docs`` rows; cluster = -1 for unique docs."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng)
    # cluster plan: sizes 2..10 (geometric-ish), until dup_fraction of the corpus is in clusters
    sizes = []
    while sum(sizes) < dup_fraction * docs:
        sizes.append(int(min(10, 2 + rng.geometric(0.45) - 1)))
    n_copies = sum(sizes) - len(sizes)
    n_orig = docs - n_copies
    paras = join_words(vocab, zipf_words(rng, n_orig * PARAS * PARA_WORDS), PARA_WORDS).to_numpy(zero_copy_only=False)
    paras = paras.reshape(n_orig, PARAS)
    extra = join_words(vocab, zipf_words(rng, n_copies * PARA_WORDS), PARA_WORDS).to_numpy(zero_copy_only=False)
    headers = join_words(vocab, zipf_words(rng, SITES * TEMPLATE_WORDS), TEMPLATE_WORDS).to_numpy(zero_copy_only=False)
    footers = join_words(vocab, zipf_words(rng, SITES * TEMPLATE_WORDS), TEMPLATE_WORDS).to_numpy(zero_copy_only=False)
    months = np.array("january february march april may june july august september october november december".split())

    cluster = np.full(docs, -1, np.int64)
    source = np.arange(docs)  # which original each doc copies
    start = n_orig
    for c, size in enumerate(sizes):
        cluster[c] = c
        cluster[start : start + size - 1] = c
        source[start : start + size - 1] = c
        start += size - 1
    site = rng.integers(0, SITES, docs)
    texts = []
    edit_vocab = vocab.to_numpy(zero_copy_only=False)
    for i in range(docs):
        body = list(paras[source[i]])
        if i >= n_orig:  # a copy: vary it
            k = i - n_orig
            change = rng.random(3)
            if change[0] < 0.5:  # a few edited words in one paragraph
                j = rng.integers(0, len(body))
                w = body[j].split(" ")
                for pos in rng.choice(len(w), 3, replace=False):
                    w[pos] = edit_vocab[rng.integers(0, VOCAB)]
                body[j] = " ".join(w)
            if change[1] < 0.3:
                del body[rng.integers(0, len(body))]
            elif change[1] < 0.6:
                body.insert(int(rng.integers(0, len(body) + 1)), extra[k])
        date = f"{months[rng.integers(0, 12)]} {rng.integers(1, 29)} {rng.integers(2015, 2026)}"
        texts.append("\n\n".join([headers[site[i]], date, *body, footers[site[i]]]))
    order = rng.permutation(docs)  # clusters spread over all parts
    ids = np.array([f"<urn:uuid:synth-{i:08d}>" for i in range(docs)])
    table = pa.table(
        {
            "id": pa.array(ids[order]),
            "url": pa.array([f"https://site{s}.example/{i}" for s, i in zip(site[order], order, strict=False)]),
            "text": pa.array(np.array(texts, dtype=object)[order], pa.large_string()),
        }
    )
    return table, cluster[order]


def write_parts(storage: Storage, table: pa.Table, parts: int, first: int = 0) -> None:
    """``table`` as ``parts`` phase-1 parts with their markers
    (units ``synth-<first + p>``), as phase 1 leaves them."""
    per = -(-len(table) // parts)
    for p in range(parts):
        chunk = table.slice(p * per, per)
        unit = f"synth-{first + p:05d}"
        n = len(chunk)
        chunk = chunk.append_column("source", pa.array([unit] * n)).append_column("language", pa.array(["en"] * n))
        storage.write_parquet(chunk, "documents", "extracted", f"part-{unit}.parquet")
        storage.write_json({"unit": unit, "kept": n}, "_done", "extracted", f"{unit}.json")


def write(root: str, docs: int, parts: int, dup_fraction: float, seed: int = 0) -> dict:
    table, cluster = generate(docs, dup_fraction, seed)
    storage = Storage(root)
    write_parts(storage, table, parts)
    truth = pa.table({"id": table.column("id"), "cluster": pa.array(cluster, mask=cluster < 0)})
    storage.write_parquet(truth, "truth.parquet")
    sizes = np.bincount(cluster[cluster >= 0])
    return {
        "docs": docs,
        "parts": parts,
        "clusters": int(len(sizes)),
        "in_clusters": int(sizes.sum()),
        "to_remove": int(sizes.sum() - len(sizes)),
        "cluster_sizes": {int(k): int(v) for k, v in zip(*np.unique(sizes, return_counts=True), strict=False)},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--parts", type=int, default=10)
    ap.add_argument(
        "--dup-fraction", type=float, default=0.1, help="fraction of documents that are in a planted cluster"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(json.dumps(write(args.root, args.docs, args.parts, args.dup_fraction, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
