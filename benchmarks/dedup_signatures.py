"""MinHash signature throughput, one core: ours (vectorized) vs datasketch.

    python benchmarks/dedup_signatures.py [--docs 5000] [--words 400] [--num-perm 128]

Same documents (benchmarks/synth_corpus.py prose, ``--words`` words each),
same parameters (word 5-grams, ``--num-perm`` permutations, seed 1, scheme
affine32).  datasketch is timed twice: with a head start (the text
normalized for it beforehand, not timed), and from the raw text with the
same normalization rules done in Python (the ``regex`` module, the patterns
of stages/dedup/normalize.py).  It then splits words, builds the 5-gram
shingles and runs ``MinHash.update_batch`` one document at a time (and
``MinHash.bulk``).  Ours is timed from the raw text (normalization
included), with the ``poly`` shingle hash (default) and with ``sha1``
(datasketch's own hash function).
Before timing, a sample of signatures is checked equal to datasketch's.
Best of ``--repeat`` runs; the table goes to benchmarks/results/dedup_signatures.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import datasketch  # noqa: E402
import regex  # noqa: E402

from stages.dedup.config import MinHashConfig  # noqa: E402
from stages.dedup.minhash import datasketch_hashfunc, signatures  # noqa: E402
from stages.dedup.normalize import _NUMBER, _PUNCT, _UNICODE_SPACES, normalize_batch  # noqa: E402
from synth_corpus import join_words, vocabulary, zipf_words  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dedup_signatures.md"


def documents(n: int, words: int) -> pa.Array:
    rng = np.random.default_rng(1)
    vocab = vocabulary(rng)
    sentences = join_words(vocab, zipf_words(rng, n * words), 20).to_numpy(zero_copy_only=False)
    per = words // 20
    # sentences with capitals and punctuation, so that normalization has work to do
    return pa.array([". ".join(s.capitalize() for s in sentences[i * per : (i + 1) * per]) + "." for i in range(n)], pa.large_string())


def shingles(text: str, n: int = 5) -> list[bytes]:
    w = text.split(" ")
    return [" ".join(w[i : i + n]).encode() for i in range(len(w) - n + 1)]


_NUMBER_RE = regex.compile(_NUMBER)
# RE2 writes code points as \x{85}; Python's regex module as \u0085
_SPACES_RE = regex.compile(regex.sub(r"\\x\{([0-9A-F]+)\}", lambda m: "\\u%04x" % int(m.group(1), 16), f"[{_PUNCT}{_UNICODE_SPACES}]+"))


def py_normalize(text: str) -> str:
    """Our default normalization, in Python (for the datasketch pipeline)."""
    text = _SPACES_RE.sub(" ", _NUMBER_RE.sub("0", text.lower()))
    return " ".join(text.split())


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--words", type=int, default=400)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    texts = documents(args.docs, args.words)
    poly = MinHashConfig(num_perm=args.num_perm)
    sha1 = MinHashConfig(num_perm=args.num_perm, hash="sha1")
    data, offsets = normalize_batch(texts, poly.normalize)
    normalized = [data[offsets[i] : offsets[i + 1]].tobytes().decode() for i in range(args.docs)]

    # correctness first: our signatures are datasketch's, from the same normalized text
    raw = texts.to_pylist()
    assert [py_normalize(t) for t in raw[:50]] == normalized[:50]
    for cfg in (poly, sha1):
        sig, _, _ = signatures(texts.slice(0, 20), cfg)
        for i in range(20):
            m = datasketch.MinHash(num_perm=args.num_perm, hashfunc=datasketch_hashfunc(cfg))
            m.update_batch(shingles(normalized[i]))
            assert np.array_equal(m.hashvalues, sig[i]), f"signature {i} differs from datasketch ({cfg.hash})"

    def ds_update_batch():
        for t in normalized:
            m = datasketch.MinHash(num_perm=args.num_perm)
            m.update_batch(shingles(t))

    def ds_raw():
        for t in raw:
            m = datasketch.MinHash(num_perm=args.num_perm)
            m.update_batch(shingles(py_normalize(t)))

    def ds_bulk():
        datasketch.MinHash.bulk([shingles(t) for t in normalized], num_perm=args.num_perm)

    sub = max(1, args.docs // 5)  # datasketch is slow: time a fifth of the documents
    normalized_all, raw_all = normalized, raw
    normalized, raw = normalized_all[:sub], raw_all[:sub]
    t_update = best(ds_update_batch, args.repeat) * args.docs / sub
    t_bulk = best(ds_bulk, args.repeat) * args.docs / sub
    t_raw = best(ds_raw, args.repeat) * args.docs / sub
    normalized, raw = normalized_all, raw_all
    t_poly = best(lambda: signatures(texts, poly), args.repeat)
    t_sha1 = best(lambda: signatures(texts, sha1), args.repeat)
    t_norm = best(lambda: normalize_batch(texts, poly.normalize), args.repeat)

    rate = lambda t: args.docs / t  # noqa: E731
    base, base_raw = rate(t_update), rate(t_raw)
    rows = [
        ("datasketch 2.0 `MinHash.update_batch`, one doc at a time (normalization not timed)", t_update),
        ("datasketch 2.0 `MinHash.bulk` (normalization not timed)", t_bulk),
        ("datasketch 2.0 `MinHash.update_batch`, raw text -> signature (same normalization in Python)", t_raw),
        ("ours, `hash: poly` (default), raw text -> signature", t_poly),
        ("ours, `hash: sha1` (bit-identical to datasketch's default), raw text -> signature", t_sha1),
        ("ours, normalization alone (included in the two rows above)", t_norm),
    ]
    lines = [
        "# MinHash signature throughput (one core)",
        "",
        f"{args.docs:,} documents of {args.words} words, word 5-grams, {args.num_perm} permutations, seed 1, scheme affine32; "
        f"best of {args.repeat}. Signatures checked equal to datasketch's before timing.",
        "",
        "| implementation | docs/s | vs datasketch update_batch, pre-normalized text | vs datasketch update_batch, raw text |",
        "|---|---:|---:|---:|",
    ]
    for name, t in rows:
        lines.append(f"| {name} | {rate(t):,.0f} | {rate(t) / base:.1f}x | {rate(t) / base_raw:.1f}x |")
    # what the settings cost: ours at other signature lengths and shingle kinds
    lines += ["", "Cost of the settings (ours, `hash: poly`, same documents):", "",
              "| shingles | num_perm | docs/s |", "|---|---:|---:|"]
    for shingle, n in (("word", 3), ("word", 5), ("char", 5)):
        for num_perm in (64, 128, 256):
            cfg = MinHashConfig(num_perm=num_perm, shingle=shingle, ngram=n)
            lines.append(f"| {shingle} {n}-grams | {num_perm} | {rate(best(lambda: signatures(texts, cfg), args.repeat)):,.0f} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
