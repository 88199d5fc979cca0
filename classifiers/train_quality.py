"""Train a supervised fastText quality classifier (``curate train-quality``).

Two ways to give the data:

- labeled documents: ``--data FILE...`` with a text column and a label column
  (``--text-column``, ``--label-column``);
- two document sets, as DCLM and FineWeb-Edu distil their classifiers:
  ``--positives FILE...`` (label ``--positive-label``, default ``hq``) and
  ``--negatives FILE...`` (``--negative-label``, default ``cc``).

FILE is Parquet or JSON lines (``.jsonl``, ``.json``, optionally ``.gz``/``.zst``),
a folder of them, or a glob; phase-1 output (``documents/extracted/*.parquet``)
works as it is.  A stratified held-out split (``--valid-fraction``) is scored
with the same code the pipeline scores with; precision, recall and F1 per
label, accuracy and ROC AUC are printed and saved beside the model
(``MODEL.metrics.json``, with the data counts, the settings and the command).

Deterministic: the split and the order of the training lines come from
``--seed``, and fastText itself is deterministic with one thread
(``--threads 1``, the default; more threads train faster with Hogwild updates,
whose result depends on thread timing).  One more condition, see
:func:`zeroed_allocations`: fasttext-numpy2-wheel trains on uninitialized
memory unless every allocation is zeroed, which this module arranges.  ``--quantize`` (or an output ending
in ``.ftz``) writes a quantized model, typically 10-100x smaller.

    python -m classifiers.train_quality --positives good/*.parquet --negatives cc/*.parquet -o model.bin
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from classifiers.quality import LABEL_PREFIX, QualityScorer, prepare_texts

PARQUET = (".parquet", ".pq")
JSONL = (".jsonl", ".json", ".ndjson")
COMPRESSED = (".gz", ".zst", ".bz2")


class TrainError(ValueError):
    """Bad input or settings, worded as one line."""


# ---------------------------------------------------------------- reading documents


def _is_data_file(path: str) -> bool:
    name = path.lower()
    for c in COMPRESSED:
        name = name.removesuffix(c)
    return name.endswith(PARQUET + JSONL)


def expand_paths(specs: list[str]) -> list[str]:
    """Files, folders (every data file below, sorted) and globs -> sorted files; nothing matched is an error."""
    out: list[str] = []
    for spec in specs:
        if os.path.isdir(spec):
            found = sorted(str(p) for p in Path(spec).rglob("*") if p.is_file() and _is_data_file(str(p)))
        elif any(ch in spec for ch in "*?["):
            found = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
        else:
            found = [spec] if os.path.isfile(spec) else []
        if not found:
            raise TrainError(f"no data file matches {spec!r}")
        out += found
    return out


def read_file(path: str, columns: list[str]) -> pa.Table:
    """The given columns of one Parquet or JSON-lines file."""
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    base = path.lower()
    for c in COMPRESSED:
        base = base.removesuffix(c)
    try:
        if base.endswith(PARQUET):
            available = pq.read_schema(path).names
            table = pq.read_table(path, columns=columns) if set(columns) <= set(available) else None
        elif base.endswith(JSONL):
            with pa.input_stream(path, compression="detect") as f:
                table = pj.read_json(f)
            available = table.column_names
        else:
            raise TrainError(f"{path}: not Parquet or JSON lines (by its name)")
    except (pa.ArrowInvalid, OSError) as e:
        raise TrainError(f"{path}: cannot read: {e}".replace("\n", " ")) from None
    missing = [c for c in columns if c not in available]
    if missing:
        raise TrainError(f"{path}: no column {missing[0]!r} (its columns: {', '.join(available)})")
    return table.select(columns)


def read_texts(paths: list[str], text_column: str, label_column: str | None = None) -> pa.Table:
    """``text`` (and ``label`` as strings) of every document in ``paths``."""
    cols = [text_column] + ([label_column] if label_column else [])
    parts = []
    for path in expand_paths(paths):
        t = read_file(path, cols)
        out = {"text": t.column(text_column).cast(pa.large_string())}
        if label_column:
            out["label"] = t.column(label_column).cast(pa.string())
        parts.append(pa.table(out))
    return pa.concat_tables(parts)


def labeled_documents(args) -> pa.Table:
    """``text``, ``label`` from ``--data`` or from ``--positives``/``--negatives``."""
    if args.data:
        table = read_texts(args.data, args.text_column, args.label_column)
        if table.column("label").null_count:
            raise TrainError(f"{table.column('label').null_count} documents have no {args.label_column!r}")
        return table
    sets = []
    for files, label in ((args.positives, args.positive_label), (args.negatives, args.negative_label)):
        t = read_texts(files, args.text_column)
        sets.append(t.append_column("label", pa.array([label] * len(t), pa.string())))
    return pa.concat_tables(sets)


# ---------------------------------------------------------------- split and training file


def split(labels: np.ndarray, valid_fraction: float, seed: int, balance: bool) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, valid): per label a seeded shuffle, the first share held out.

    With ``balance`` every label is first cut to the size of the smallest one.
    The training rows come out shuffled (fastText learns in file order).
    """
    rng = np.random.default_rng(seed)
    names = sorted(set(labels.tolist()))
    by_label = {name: rng.permutation(np.flatnonzero(labels == name)) for name in names}
    if balance:
        smallest = min(len(v) for v in by_label.values())
        by_label = {k: v[:smallest] for k, v in by_label.items()}
    train, valid = [], []
    for rows in by_label.values():
        n_valid = int(round(len(rows) * valid_fraction))
        if valid_fraction > 0 and len(rows) >= 2:
            n_valid = min(max(n_valid, 1), len(rows) - 1)  # every label in both splits
        valid.append(rows[:n_valid])
        train.append(rows[n_valid:])
    return rng.permutation(np.concatenate(train)), np.sort(np.concatenate(valid))


def label_token(label: str, prefix: str = LABEL_PREFIX) -> str:
    """A label as one fastText token (whitespace would split it)."""
    return prefix + "_".join(label.split())


def write_training_file(
    path: Path, texts: pa.Array, labels: list[str], lowercase: bool, max_chars: int | None
) -> None:
    """fastText's format: ``__label__X text`` per line, the text prepared as it will be scored."""
    lines = prepare_texts(texts, lowercase, max_chars)
    # A token starting with __label__ inside a text would be read as a second label; at scoring
    # time fastText ignores such tokens, so they are dropped here too.
    lines = pc.replace_substring_regex(lines, r"(^|[ \t\r\v\f])__label__\S*", r"\1")
    with open(path, "w", encoding="utf-8") as f:
        for label, text in zip(labels, lines.to_pylist(), strict=False):
            f.write(f"{label_token(label)} {text}\n")


@contextlib.contextmanager
def zeroed_allocations():
    """Make every ``malloc`` return zeroed memory while fastText trains (glibc ``M_PERTURB``).

    With fewer than 10 threads fastText initializes only ``threads x 10%`` of
    the input matrix's rows (``DenseMatrix::uniform``); upstream fastText
    0.9.2 leaves the rest at zero, but fasttext-numpy2-wheel does not zero its
    matrices, so those rows hold whatever the heap held before.  In a fresh
    process a large matrix comes from new (zeroed) pages and all is well; in a
    process that has allocated and freed memory (any real program) training
    reads garbage: "Encountered NaN" or a different model on every run
    (measured: 2 of 6 runs NaN and 4 different models, at lr 0.1, after
    importing this package).  ``mallopt(M_PERTURB, 0xFF)`` makes glibc fill
    each allocation with ``0xFF ^ 0xFF = 0`` (and freed memory with 0xFF),
    which restores upstream's zeros: the same model in every process.
    Yields whether it could (False off glibc: training may then be unstable).
    """
    m_perturb = -6  # glibc malloc.h
    try:
        libc = ctypes.CDLL(None)
        ok = bool(libc.mallopt(m_perturb, 0xFF))
    except (OSError, AttributeError):
        ok = False
    try:
        yield ok
    finally:
        if ok:
            libc.mallopt(m_perturb, 0)


# ---------------------------------------------------------------- metrics


def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float | None:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties); None without both classes."""
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    for s, e in zip(starts, ends, strict=False):  # one step per distinct score
        ranks[order[s:e]] = (s + e + 1) / 2.0
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def classification_metrics(truth: list[str], predicted: list[str | None], scores: np.ndarray, positive: str) -> dict:
    """Per-label precision/recall/F1 of the top label, accuracy, and ROC AUC of the positive score."""
    truth_a = np.array(truth, dtype=object)
    pred_a = np.array(["" if p is None else p for p in predicted], dtype=object)
    per_label = {}
    for name in sorted(set(truth) | {p for p in predicted if p}):
        tp = int(((pred_a == name) & (truth_a == name)).sum())
        fp = int(((pred_a == name) & (truth_a != name)).sum())
        fn = int(((pred_a != name) & (truth_a == name)).sum())
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        per_label[name] = {
            "precision": round(p, 4),
            "recall": round(r, 4),
            "f1": round(f1, 4),
            "support": int((truth_a == name).sum()),
        }
    scored = ~np.isnan(scores)
    auc = roc_auc(scores[scored], (truth_a == positive)[scored]) if scored.any() else None
    return {
        "documents": len(truth),
        "accuracy": round(float((pred_a == truth_a).mean()), 4) if len(truth) else None,
        "per_label": per_label,
        "roc_auc": None if auc is None else round(auc, 4),
        "unscored": int((~scored).sum()),
    }


# ---------------------------------------------------------------- main


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options, so ``curate train-quality`` can reuse them."""
    data = p.add_argument_group("data (either --data, or --positives and --negatives)")
    data.add_argument(
        "--data", nargs="+", metavar="FILE", help="labeled documents: Parquet/JSONL files, folders or globs"
    )
    data.add_argument("--positives", nargs="+", metavar="FILE", help="documents of the positive class")
    data.add_argument("--negatives", nargs="+", metavar="FILE", help="documents of the negative class")
    data.add_argument("--text-column", default="text", help="column holding the text (default: text)")
    data.add_argument("--label-column", default="label", help="column holding the label, with --data (default: label)")
    data.add_argument(
        "--positive-label", default="hq", help="the positive label (the score is its probability; default hq, as DCLM)"
    )
    data.add_argument("--negative-label", default="cc", help="the label of --negatives (default cc, as DCLM)")
    data.add_argument("--balance", action="store_true", help="cut every label to the size of the smallest (seeded)")
    data.add_argument(
        "--valid-fraction", type=float, default=0.1, help="share of each label held out for the metrics (default 0.1)"
    )
    data.add_argument("--seed", type=int, default=0, help="seed of the split, the line order and fastText (default 0)")

    text = p.add_argument_group("text preparation (use the same values in the quality config)")
    text.add_argument("--lowercase", action="store_true", help="lowercase the text (then set quality.lowercase: true)")
    text.add_argument(
        "--max-chars", type=int, default=None, help="train on the first characters only (then set quality.max_chars)"
    )

    ft = p.add_argument_group("fastText hyperparameters")
    ft.add_argument("--epoch", type=int, default=5, help="passes over the data (default 5)")
    ft.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    ft.add_argument("--dim", type=int, default=100, help="vector size (default 100)")
    ft.add_argument("--word-ngrams", type=int, default=2, help="word n-grams (default 2, as DCLM's bigram model)")
    ft.add_argument("--min-count", type=int, default=1, help="minimal word count (default 1)")
    ft.add_argument("--minn", type=int, default=0, help="shortest character n-gram (default 0: none)")
    ft.add_argument("--maxn", type=int, default=0, help="longest character n-gram (default 0: none)")
    ft.add_argument("--bucket", type=int, default=2_000_000, help="hash buckets for n-grams (default 2,000,000)")
    ft.add_argument("--loss", choices=["softmax", "hs", "ova", "ns"], default="softmax", help="loss (default softmax)")
    ft.add_argument("--threads", type=int, default=1, help="training threads; only 1 is deterministic (default 1)")

    out = p.add_argument_group("output")
    out.add_argument("--output", "-o", required=True, help="model path (.bin; .ftz quantizes)")
    out.add_argument(
        "--quantize", action="store_true", help="quantize (product quantization; implied by a .ftz output)"
    )
    out.add_argument(
        "--cutoff", type=int, default=0, help="with quantization: keep only this many words and n-grams (0: all)"
    )


def build_parser(prog: str = "python -m classifiers.train_quality") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return p


def _check(args) -> None:
    if bool(args.data) == bool(args.positives or args.negatives):
        raise TrainError("give either --data, or --positives and --negatives")
    if not args.data and not (args.positives and args.negatives):
        raise TrainError("--positives and --negatives go together")
    if not 0 <= args.valid_fraction < 1:
        raise TrainError(f"--valid-fraction: must be in [0, 1), got {args.valid_fraction}")
    if args.max_chars is not None and args.max_chars < 1:
        raise TrainError(f"--max-chars: must be at least 1, got {args.max_chars}")
    for name in ("epoch", "dim", "word_ngrams", "min_count", "threads"):
        if getattr(args, name) < 1:
            raise TrainError(f"--{name.replace('_', '-')}: must be at least 1, got {getattr(args, name)}")
    if args.lr <= 0:
        raise TrainError(f"--lr: must be positive, got {args.lr}")


def train(args) -> dict:
    """Read, split, train, quantize, evaluate and save; returns the metrics record."""
    import fasttext

    _check(args)
    table = labeled_documents(args)
    empty = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(table.column("text"))), 0), True)
    n_empty = int(pc.sum(empty).as_py() or 0)
    table = table.filter(pc.invert(empty))
    labels = np.array(table.column("label").to_pylist(), dtype=object)
    names = sorted(set(labels.tolist()))
    if len(names) < 2:
        raise TrainError(f"need at least two labels with non-empty documents, got {names or 'none'}")
    positive = args.positive_label
    if positive not in names:
        raise TrainError(f"--positive-label {positive!r} is not among the labels {names}")
    train_rows, valid_rows = split(labels, args.valid_fraction, args.seed, args.balance)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    quantize = args.quantize or output.suffix == ".ftz"

    with tempfile.TemporaryDirectory(prefix="train-quality-") as tmp:
        train_file = Path(tmp) / "train.txt"
        texts = table.column("text").combine_chunks()
        write_training_file(
            train_file, texts.take(pa.array(train_rows)), labels[train_rows].tolist(), args.lowercase, args.max_chars
        )
        params = dict(
            lr=args.lr,
            dim=args.dim,
            epoch=args.epoch,
            wordNgrams=args.word_ngrams,
            minCount=args.min_count,
            minn=args.minn,
            maxn=args.maxn,
            bucket=args.bucket,
            loss=args.loss,
            thread=args.threads,
            seed=args.seed,
        )
        fasttext.FastText.eprint = lambda *a, **k: None
        try:
            with zeroed_allocations() as zeroed:
                model = fasttext.train_supervised(input=str(train_file), verbose=0, **params)
                if quantize:
                    model.quantize(
                        input=str(train_file),
                        qnorm=True,
                        retrain=args.cutoff > 0,
                        cutoff=args.cutoff,
                        thread=args.threads,
                        verbose=0,
                    )
        except RuntimeError as e:  # "Encountered NaN": the training diverged
            raise TrainError(f"fastText training failed: {e} (a lower --lr usually helps)") from None
        model.save_model(str(output))

    scorer = QualityScorer(model, positive, args.lowercase, args.max_chars)
    scores, top = (
        scorer.score(texts.take(pa.array(valid_rows)))
        if len(valid_rows)
        else (np.zeros(0, np.float32), pa.array([], pa.string()))
    )
    record = {
        "model": output.name,
        "sha256": hashlib.sha256(output.read_bytes()).hexdigest(),
        "size_bytes": output.stat().st_size,
        "quantized": quantize,
        "labels": [lab.removeprefix(LABEL_PREFIX) for lab in model.labels],
        "positive_label": positive,
        "text": {"lowercase": args.lowercase, "max_chars": args.max_chars},
        "hyperparameters": {k: v for k, v in params.items() if k not in ("thread", "seed")},
        "quantization": {"cutoff": args.cutoff, "qnorm": True} if quantize else None,
        "seed": args.seed,
        "threads": args.threads,
        "deterministic": args.threads == 1 and zeroed,
        "data": {
            "inputs": {"data": args.data, "positives": args.positives, "negatives": args.negatives},
            "documents": int(len(table) + n_empty),
            "empty_skipped": n_empty,
            "balanced": args.balance,
            "valid_fraction": args.valid_fraction,
            "train": _counts(labels[train_rows]),
            "valid": _counts(labels[valid_rows]),
        },
        "valid_metrics": classification_metrics(labels[valid_rows].tolist(), top.to_pylist(), scores, positive),
        "fasttext": _version("fasttext-numpy2-wheel") or _version("fasttext"),
    }
    metrics_path = metrics_path_for(output)
    metrics_path.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    return record


def metrics_path_for(model_path: str | os.PathLike) -> Path:
    """``model.ftz`` -> ``model.metrics.json`` (beside the model)."""
    return Path(model_path).with_suffix(".metrics.json")


def _counts(labels: np.ndarray) -> dict:
    names, counts = np.unique(labels.astype(str), return_counts=True) if len(labels) else ([], [])
    return {str(n): int(c) for n, c in zip(names, counts, strict=False)}


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def report(record: dict, output: str) -> str:
    """What to print: the held-out metrics and the config to score with."""
    m = record["valid_metrics"]
    lines = [
        f"model: {output} ({record['size_bytes']:,} bytes{', quantized' if record['quantized'] else ''})",
        f"train: {record['data']['train']}  held out: {record['data']['valid']} "
        f" empty skipped: {record['data']['empty_skipped']}",
        f"held-out accuracy {m['accuracy']}, ROC AUC of {record['positive_label']!r} {m['roc_auc']}",
        f"{'label':<16} {'precision':>9} {'recall':>7} {'F1':>7} {'support':>8}",
    ]
    for name, v in m["per_label"].items():
        lines.append(f"{name:<16} {v['precision']:>9.4f} {v['recall']:>7.4f} {v['f1']:>7.4f} {v['support']:>8}")
    lines += [
        f"metrics: {metrics_path_for(output)}",
        "score with: classifiers: [{{name: {}, model: {}, label: {}, lowercase: {}, max_chars: {}}}]".format(
            Path(output).stem.replace("-", "_").lower() or "quality",
            output,
            record["positive_label"],
            str(record["text"]["lowercase"]).lower(),
            record["text"]["max_chars"] or "null",
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Train from parsed options (``curate train-quality`` parses them with :func:`add_arguments`)."""
    try:
        record = train(args)
    except TrainError as e:
        print(f"train-quality: {e}", file=sys.stderr)
        return 2
    print(report(record, args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
