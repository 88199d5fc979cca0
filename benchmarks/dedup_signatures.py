"""MinHash signature throughput, one core: ours (vectorized) vs datasketch, rensa and marin-dupekit.

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

The Rust kernels (benchmark-only: ``pip install rensa marin-dupekit``; left
out when absent) are timed on the same documents, each from the raw text and
as a bare kernel, against ours the same way: rensa 0.5 (word 5-grams: its
``RMinHash`` fed Python shingle lists, or our shingle hashes) and
marin-dupekit 0.1's Arrow ``transform`` (``CleanText`` + ``MinHash``: char
5-grams of its own normalization), the latter also on CJK text (no spaces,
3-byte characters), where ``shingle: char`` is the setting.  Their
signatures are not datasketch's (other permutations), so only speed compares.

The process is pinned to one CPU with ``RAYON_NUM_THREADS=1`` (the Rust
kernels would otherwise start a thread per CPU); each row reports wall and
CPU seconds.  Best of ``--repeat`` runs; the table goes to
benchmarks/results/dedup_signatures.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before rensa or dupekit start their thread pools

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import datasketch  # noqa: E402
import regex  # noqa: E402
from synth_corpus import join_words, vocabulary, zipf_words  # noqa: E402

from stages.dedup.config import MinHashConfig  # noqa: E402
from stages.dedup.minhash import datasketch_hashfunc, minhash_from_hashes, shingle_hashes, signatures  # noqa: E402
from stages.dedup.normalize import _NUMBER, _PUNCT, _UNICODE_SPACES, normalize_batch  # noqa: E402

from _common import machine_info, pick_cpu, pin_to_cpu  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dedup_signatures.md"


def documents(n: int, words: int) -> pa.Array:
    rng = np.random.default_rng(1)
    vocab = vocabulary(rng)
    sentences = join_words(vocab, zipf_words(rng, n * words), 20).to_numpy(zero_copy_only=False)
    per = words // 20
    # sentences with capitals and punctuation, so that normalization has work to do
    return pa.array(
        [". ".join(s.capitalize() for s in sentences[i * per : (i + 1) * per]) + "." for i in range(n)],
        pa.large_string(),
    )


def shingles(text: str, n: int = 5) -> list[bytes]:
    w = text.split(" ")
    return [" ".join(w[i : i + n]).encode() for i in range(len(w) - n + 1)]


_NUMBER_RE = regex.compile(_NUMBER)
# RE2 writes code points as \x{85}; Python's regex module as \u0085
_SPACES_RE = regex.compile(
    regex.sub(r"\\x\{([0-9A-F]+)\}", lambda m: f"\\u{int(m.group(1), 16):04x}", f"[{_PUNCT}{_UNICODE_SPACES}]+")
)


def py_normalize(text: str) -> str:
    """Our default normalization, in Python (for the datasketch pipeline)."""
    text = _SPACES_RE.sub(" ", _NUMBER_RE.sub("0", text.lower()))
    return " ".join(text.split())


def cjk_documents(n: int, chars: int) -> pa.Array:
    """Text without spaces: Zipf-drawn CJK ideographs in sentences of 40, each ending in '。'."""
    rng = np.random.default_rng(2)
    alphabet = np.array([chr(c) for c in range(0x4E00, 0x4E00 + 3000)])
    p = 1.0 / np.arange(1, len(alphabet) + 1)
    drawn = alphabet[rng.choice(len(alphabet), size=(n, chars), p=p / p.sum())]
    return pa.array(
        ["。".join("".join(row[i : i + 40]) for i in range(0, chars, 40)) + "。" for row in drawn], pa.large_string()
    )


def best(fn, repeat: int) -> float:
    """CPU seconds of the fastest call: on one pinned CPU that is the wall time of an idle core, and other
    load on a shared machine inflates it far less than the wall time."""
    return timed(fn, repeat)[1]


def timed(fn, repeat: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest of ``repeat`` calls."""
    runs = []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        runs.append((time.perf_counter() - t0, time.process_time() - c0))
    return min(runs)


def rust_kernels(texts: pa.Array, num_perm: int, repeat: int) -> list[str]:
    """rensa and marin-dupekit against ours, each from raw text and as a bare kernel (see the docstring)."""
    try:
        import dupekit
        import rensa
    except ImportError as e:
        return ["", f"Rust kernels left out: {e} (`pip install rensa marin-dupekit`)."]
    word, char = MinHashConfig(num_perm=num_perm), MinHashConfig(num_perm=num_perm, shingle="char")
    n = len(texts)

    def word_shingles() -> list[list[str]]:
        data, offsets = normalize_batch(texts, word.normalize)
        words = [data[offsets[i] : offsets[i + 1]].tobytes().decode().split(" ") for i in range(n)]
        return [[" ".join(w[j : j + 5]) for j in range(len(w) - 4)] for w in words]

    def rensa_per_doc(sets: list[list[str]]) -> None:
        for s in sets:
            m = rensa.RMinHash(num_perm, 1)
            m.update(s)
            m.digest()

    sets = word_shingles()
    data, offsets = normalize_batch(texts, word.normalize)
    counts, hashes = shingle_hashes(data, offsets, word)
    rows_offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.uint64)
    cjk = cjk_documents(n, 800)
    T = dupekit.Transformation

    def dupekit_char(batch_texts: pa.Array):
        batch = pa.RecordBatch.from_arrays([batch_texts.cast(pa.string())], ["text"])
        return lambda: dupekit.transform(
            batch, [T.CleanText("text", "clean"), T.MinHash("clean", "sig", num_perm, 5, 1)]
        )

    rows = [
        ("word 5-grams", "raw text -> signature", "**ours** (`shingle: word`, datasketch-compatible)",
         lambda: signatures(texts, word)),
        ("word 5-grams", "raw text -> signature", "rensa `RMinHash` per doc (our vectorized "
            "normalization; shingle lists built in Python)",
         lambda: rensa_per_doc(word_shingles())),
        ("word 5-grams", "raw text -> signature", "rensa `digest_matrix_from_token_sets` (same inputs)",
         lambda: rensa.RMinHash.digest_matrix_from_token_sets(word_shingles(), num_perm, 1)),
        ("word 5-grams", "shingles given (not timed)", "rensa `RMinHash` per doc", lambda: rensa_per_doc(sets)),
        ("word 5-grams", "shingles given (not timed)", "rensa `digest_matrix_from_token_sets`",
         lambda: rensa.RMinHash.digest_matrix_from_token_sets(sets, num_perm, 1)),
        ("word 5-grams", "shingle hashes given: permutations + min only", "**ours** `minhash_from_hashes` (numpy)",
         lambda: minhash_from_hashes(hashes, counts, word)),
        ("word 5-grams", "shingle hashes given: permutations + min only", "rensa "
            "`digest_matrix_from_flat_token_hashes` "
            "(our hashes)",
         lambda: rensa.RMinHash.digest_matrix_from_flat_token_hashes(hashes, rows_offsets, num_perm, 1)),
        ("char 5-grams", "raw text -> signature", "**ours** (`shingle: char`, datasketch-compatible)",
         lambda: signatures(texts, char)),
        ("char 5-grams", "raw text -> signature", "**ours** (`shingle: char`, `scheme: "
            "affine64`: 64-bit values like dupekit's)",
         lambda: signatures(texts, MinHashConfig(num_perm=num_perm, shingle="char", scheme="affine64"))),
        ("char 5-grams", "raw text -> signature", "marin-dupekit `transform(CleanText, "
            "MinHash)` (Arrow in, Arrow out)", dupekit_char(texts)),
        ("char 5-grams, CJK text", "raw text -> signature", "**ours** (`shingle: char`)",
         lambda: signatures(cjk, char)),
        ("char 5-grams, CJK text", "raw text -> signature", "marin-dupekit `transform(CleanText, MinHash)`",
         dupekit_char(cjk)),
    ]  # fmt: skip
    lines = [
        "",
        f"## Rust kernels: rensa {_version('rensa')}, marin-dupekit {_version('marin-dupekit')}",
        "",
        f"Same {n:,} documents ({len(cjk):,} for the CJK rows: 800 "
        f"ideographs each, sentences of 40), {num_perm} permutations, "
        "one pinned CPU, `RAYON_NUM_THREADS=1`; best of "
        f"{repeat}. **× ours** compares docs per CPU-second with ours' first row of the same shingles and input "
        "(– where ours has no such row: ours never takes Python shingle lists).",
        "",
        "| shingles | input | implementation | docs/s | docs/CPU-s | × ours (CPU) |",
        "|---|---|---|---:|---:|---:|",
    ]
    ours: dict[tuple[str, str], float] = {}
    for shingles, given, name, fn in rows:
        wall, cpu = timed(fn, repeat)
        rate = n / cpu
        if name.startswith("**ours**"):
            ours.setdefault((shingles, given), rate)  # the group's first ours row is its reference
        ref = ours.get((shingles, given))
        lines.append(
            f"| {shingles} | {given} | {name} | {n / wall:,.0f} | "
            f"{rate:,.0f} | {f'{rate / ref:.2f}x' if ref else '–'} |"
        )
    return lines


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--words", type=int, default=400)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    pin_to_cpu(pick_cpu())
    machine = machine_info()
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
        f"{args.docs:,} documents of {args.words} words, word 5-grams, "
        f"{args.num_perm} permutations, seed 1, scheme affine32; "
        f"best of {args.repeat}; docs per CPU-second of the pinned process (= docs/s on an idle core). "
        "Signatures checked equal to datasketch's before timing.",
        "",
        "| implementation | docs/CPU-s | vs datasketch update_batch, "
        "pre-normalized text | vs datasketch update_batch, raw text |",
        "|---|---:|---:|---:|",
    ]
    for name, t in rows:
        lines.append(f"| {name} | {rate(t):,.0f} | {rate(t) / base:.1f}x | {rate(t) / base_raw:.1f}x |")
    # what the settings cost: ours at other signature lengths and shingle kinds
    lines += [
        "",
        "Cost of the settings (ours, `hash: poly`, same documents):",
        "",
        "| shingles | num_perm | docs/CPU-s |",
        "|---|---:|---:|",
    ]
    for shingle, n in (("word", 3), ("word", 5), ("char", 5)):
        for num_perm in (64, 128, 256):
            cfg = MinHashConfig(num_perm=num_perm, shingle=shingle, ngram=n)
            lines.append(
                f"| {shingle} {n}-grams | {num_perm} | "
                f"{rate(best(lambda cfg=cfg: signatures(texts, cfg), args.repeat)):,.0f} |"
            )
    lines += rust_kernels(texts, args.num_perm, args.repeat)
    load_end = os.getloadavg()
    lines[1:1] = [
        "",
        f"- {machine['date']} · {machine['nproc']} CPUs ({machine['cpu']}) · Python {machine['python']} · one process "
        f"pinned to one CPU · load average at the start {machine['load_avg']}, at the end "
        f"{tuple(round(x, 2) for x in load_end)} (above ~1 other work shared the machine: compare docs/CPU-s)",
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
