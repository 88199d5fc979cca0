"""Classifier scoring throughput with one, two and three fastText models: ours vs DataTrove's filter, the levers
a user has (a prefix, batching, one text preparation for every model), and the share of phase-1 time scoring adds.

    .venv/bin/python benchmarks/quality.py --repeat 2          # writes benchmarks/results/quality.md
    .venv/bin/python benchmarks/quality.py --quick             # one samples file, one model; prints only

(or with .venv-bench/bin/python; from .venv the DataTrove child runs in .venv-bench.)

Every measurement runs in its own child process pinned to one CPU (math
libraries single-threaded), so docs/s is per core.  The documents are those
phase 1 keeps from ``samples/*.warc.gz``; the models are the three committed
demonstration models (quality, edu, toxicity: dim 16, quantized, ~0.5 MB each),
the first one, two or all three of them; optionally (``--large``) a
production-sized model (dim 256, bigrams, 2M buckets, 2.1 GB: DCLM's size class).

- **ours**: ``ClassifyStage`` with the k models (one text preparation, one
  ``multilinePredict`` per model and batch);
  **ours, max_chars**: the same scoring a prefix (DCLM-style ``max_chars``);
  **ours, a stage per model**: k stages of one model each, each preparing the
  text itself (what sharing the preparation saves);
  **ours, one predict per document**: the shared preparation, then fastText's
  ``predict`` per document and model (what batching saves);
  **fastText alone**: ``multilinePredict`` per model on lines prepared outside
  the timing (the floor: what fastText itself costs);
  **DataTrove**: k ``FastTextClassifierFilter`` in a row (each one ``predict``
  per document, newlines to spaces), as its pipeline runs them.
- **phase 1 + classifiers**: phase 1's worker (the engine's ``MapWorker``) over the sample WARCs
  with ``jobs/sample.yaml``'s settings and the k classifiers (where they run in
  the pipeline); their seconds against the rest of phase 1 is the share they add.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Python puts this script's folder first on sys.path, where a benchmark module may shadow a
# standard module (a benchmarks/tokenize.py would hide the stdlib tokenize that pydantic and
# huggingface_hub import): take it off, and load _common by its path.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import argparse  # noqa: E402
import copy  # noqa: E402
import glob  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_common = _load("_common", HERE / "_common.py")
child_report, child_setup, machine_info = _common.child_report, _common.child_setup, _common.machine_info
markdown_table, pick_cpu, run_child = _common.markdown_table, _common.pick_cpu, _common.run_child

ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
JOB = ROOT / "jobs" / "sample.yaml"
DEMO_MODELS = [
    ("quality", ROOT / "samples" / "quality" / "model.ftz", "hq"),
    ("edu", ROOT / "samples" / "classifiers" / "edu.ftz", "edu"),
    ("toxicity", ROOT / "samples" / "classifiers" / "toxicity.ftz", "toxic"),
]
RESULTS = ROOT / "benchmarks" / "results" / "quality.md"
TARGET = 5000  # docs/s per core, the target on sample-sized documents
LARGE_ARGS = [
    "--dim",
    "256",
    "--word-ngrams",
    "2",
    "--bucket",
    "2000000",
    "--epoch",
    "1",
    "--lr",
    "0.1",
    "--seed",
    "0",
]


# ---------------------------------------------------------------- children


def _configs(spec: dict, max_chars: int | None = None) -> list:
    from stages.classify import ClassifierConfig

    engine = spec.get("engine", "auto")
    return [
        ClassifierConfig(name=name, model=path, label=label, max_chars=max_chars, engine=engine)
        for name, path, label in spec["models"]
    ]


def child_phase1(spec: dict) -> dict:
    """Phase 1 over the files with the classifiers last; per-stage seconds."""
    import yaml

    from pipeline.config import parse_config
    from pipeline.engine.worker import MapWorker
    from pipeline.phases.extracted import ExtractedPhase
    from pipeline.runner import plan_context
    from stages.classify import ClassifyStage

    data = copy.deepcopy(yaml.safe_load(JOB.read_text()))
    data.pop("quality", None)  # the classifiers are added below, with the models under test
    data.pop("classifiers", None)
    data["inputs"] = spec["files"]
    data["output"] = {"root": spec["out"]}
    data["classifiers"] = [c.model_dump() for c in _configs(spec)]
    config = parse_config(data)
    t0 = time.perf_counter()
    ClassifyStage(config.classifiers)  # loads the models (once per process: the worker's stage finds them loaded)
    load_s = time.perf_counter() - t0
    worker = MapWorker(config, ExtractedPhase)  # builds the stages, as each worker does once
    t0, cpu0 = time.perf_counter(), time.process_time()
    ctx = plan_context(config)
    results = [worker.process(u) for u in ctx.units_of(next(p for p in ctx.phases if p.name == ExtractedPhase.name))]
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    seconds: dict[str, float] = {}
    for r in results:
        if r.failed:
            raise RuntimeError(f"{r.unit}: {r.failed}")
        for k, v in r.stages.seconds.items():
            seconds[k] = seconds.get(k, 0.0) + v
    return {"wall_s": wall, "cpu_s": cpu, "load_s": load_s, "stage_seconds": seconds,
            "responses": sum(r.totals.get("responses", r.docs_in) for r in results),
            "kept": sum(r.kept for r in results),
            "scored": sum(r.stages.docs_in.get("classifiers", 0) for r in results)}  # fmt: skip


def _texts(spec: dict) -> list[str]:
    import pyarrow.parquet as pq

    files = sorted(glob.glob(str(Path(spec["docs"]) / "documents" / "extracted" / "*.parquet")))
    return [t for f in files for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]


def _timed_passes(run_batch, n_docs: int, batch: int, min_s: float) -> dict:
    """Whole passes over the documents until ``min_s`` has gone by (at least one)."""
    passes, t0, cpu0 = 0, time.perf_counter(), time.process_time()
    while True:
        for lo in range(0, n_docs, batch):
            run_batch(lo, min(lo + batch, n_docs))
        passes += 1
        if time.perf_counter() - t0 >= min_s:
            break
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"passes": passes, "docs_scored": passes * n_docs, "wall_s": wall, "cpu_s": cpu}


def child_score(spec: dict) -> dict:
    import numpy as np
    import pyarrow as pa

    texts = _texts(spec)
    n, batch, kind = len(texts), spec["batch"], spec["kind"]
    t0 = time.perf_counter()
    extra: dict = {}
    tables = [pa.table({"text": pa.array(texts[lo : lo + batch], pa.large_string())}) for lo in range(0, n, batch)]
    if (
        kind == "datatrove"
    ):  # DataTrove's filters, models handed over directly (its loader copies into a download cache)
        from datatrove.data import Document
        from datatrove.pipeline.filters import FastTextClassifierFilter
        from fasttext.FastText import _FastText

        filters = []
        for _, path, _ in spec["models"]:
            f = FastTextClassifierFilter(path, newline_replacement=" ")
            f._model = _FastText(path)
            filters.append(f)
        load_s = time.perf_counter() - t0
        docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]

        def run_batch(lo, hi):
            stream = iter(docs[lo:hi])
            for f in filters:
                stream = f.run(stream)
            return sum(1 for _ in stream)

        timing = _timed_passes(run_batch, n, batch, spec["min_s"])
    else:
        from classifiers.quality import prepared_lines
        from stages.classify import ClassifyStage

        max_chars = spec.get("max_chars")
        configs = _configs(spec, max_chars)
        stages = [ClassifyStage([c]) for c in configs] if kind == "separate" else [ClassifyStage(configs)]
        load_s = time.perf_counter() - t0
        models = [s.model.f for stage in stages for s in stage.scorers if hasattr(s.model, "f")]  # fastText's binding
        if kind == "fasttext":  # the binding alone, on lines prepared outside the timing
            lines = prepared_lines(pa.array(texts, pa.large_string()))
            timing = _timed_passes(
                lambda lo, hi: [m.multilinePredict(lines[lo:hi], -1, 0.0, "replace") for m in models],
                n,
                batch,
                spec["min_s"],
            )
        elif kind == "per_doc":  # one preparation, then one predict per document and model (no batching)

            def run_batch(lo, hi):
                lines = prepared_lines(tables[lo // batch].column("text"))
                return [[m.predict(line, -1, 0.0, "replace") for line in lines] for m in models]

            timing = _timed_passes(run_batch, n, batch, spec["min_s"])
        else:  # ours / separate

            def run_batch(lo, hi):
                t = tables[lo // batch]
                for stage in stages:
                    t = stage(t)
                return t

            timing = _timed_passes(run_batch, n, batch, spec["min_s"])
        if max_chars:  # how far the cut moves the scores (untimed)
            whole = ClassifyStage(_configs(spec))
            cut, full = stages[0], [whole(t) for t in tables]
            cut_t = [cut(t) for t in tables]
            long_docs = np.array([len(t) > max_chars for t in texts])
            moves = {}
            for c in configs:
                a = np.concatenate([t.column(c.score_column).to_numpy() for t in cut_t])
                b = np.concatenate([t.column(c.score_column).to_numpy() for t in full])
                moves[c.name] = {
                    "max_abs_diff": float(np.abs(a - b).max()),
                    "mean_abs_diff_long": float(np.abs(a - b)[long_docs].mean()) if long_docs.any() else 0.0,
                    "same_side_of_half": float(((a >= 0.5) == (b >= 0.5)).mean()),
                }
            extra = {"moves": moves, "long_docs": int(long_docs.sum())}
    chars = np.array([len(t) for t in texts])
    return {
        **timing,
        **extra,
        "docs": n,
        "load_s": load_s,
        "mean_chars": float(chars.mean()),
        "median_chars": float(np.median(chars)),
    }


def child_main(spec_path: str) -> None:
    child_setup()
    spec = json.loads(Path(spec_path).read_text())
    child_report(child_phase1(spec) if spec["kind"] == "phase1" else child_score(spec))


# ---------------------------------------------------------------- parent


BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
#: Replaces the child's interpreter by another one (same pid, so pinning and memory sampling follow).
EXEC = "import os, sys; os.execv(sys.argv[1], sys.argv[1:])"


def child_argv(spec: dict, spec_path: Path) -> list[str]:
    """DataTrove lives in .venv-bench (it cannot share a venv with mosaicml-streaming): its child runs there."""
    argv = [str(Path(__file__).resolve()), "--child", str(spec_path)]
    if spec["kind"] == "datatrove" and importlib.util.find_spec("datatrove") is None and BENCH_PYTHON.exists():
        return ["-c", EXEC, str(BENCH_PYTHON), *argv]
    return argv


def run(spec: dict, name: str, cpu: int | None, tmp: Path, timeout_s: float) -> dict:
    spec_path = tmp / f"{name}.json"
    spec_path.write_text(json.dumps(spec))
    result = run_child(child_argv(spec, spec_path), cpu, tmp / f"{name}.log", timeout_s, cwd=ROOT)
    took = result.get("failed") or f"{result['wall_s']:.1f} s"
    print(f"{name}: {took}", file=sys.stderr)
    return result


def train_large_model(path: Path, tmp: Path, timeout_s: float) -> dict:
    """The large model: the demonstration model's data, a production-sized shape (trained in a child, so
    this process stays small: children inherit its peak RSS through fork)."""
    import subprocess

    import pyarrow.parquet as pq

    make_model = _load("make_model", ROOT / "samples" / "quality" / "make_model.py")
    samples = ROOT / "samples"
    pos, neg = make_model.labeled_sets(make_model.extract_texts(make_model.sample_files(samples)), samples)
    pq.write_table(pos, tmp / "pos.parquet")
    pq.write_table(neg, tmp / "neg.parquet")
    t0 = time.perf_counter()
    argv = ["-m", "classifiers.train_quality", "--positives",
    str(tmp / "pos.parquet"), "--negatives", str(tmp / "neg.parquet"),
            "-o", str(path), *LARGE_ARGS]  # fmt: skip
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode:
        raise SystemExit(f"training the large model failed: {done.stderr.strip()[-500:]}")
    return {"train_s": time.perf_counter() - t0, "bytes": path.stat().st_size}


def fastest(runs: list[dict], key: str) -> dict:
    """The best of interleaved runs: shortest phase-1 wall time, or highest scoring rate."""
    ok = [r for r in runs if not r.get("failed")]
    if not ok:
        return runs[-1]
    if key == "rate":
        return max(ok, key=lambda r: r["docs_scored"] / r["wall_s"])
    return min(ok, key=lambda r: r[key])


def fmt(x, digits: int = 0) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def systems(max_chars: list[int], k: int) -> dict[str, dict]:
    """name -> (label, child spec) of every scoring measurement with k models."""
    auto = "projected" if k > 1 else "fastText"
    out = {"ours": {"label": f"ours (`ClassifyStage`, engine auto: {auto})", "kind": "ours"}}
    for mc in max_chars:
        out[f"ours-{mc}"] = {"label": f"ours, `max_chars: {mc}` ({auto})", "kind": "ours", "max_chars": mc}
    if k > 1:
        out["ours-fasttext"] = {
            "label": "ours, engine fasttext (one preparation, batched)",
            "kind": "ours",
            "engine": "fasttext",
        }
        out["separate"] = {
            "label": "ours, a stage per model (each prepares the text; fastText)",
            "kind": "separate",
            "engine": "fasttext",
        }
    else:
        out["ours-projected"] = {"label": "ours, engine projected", "kind": "ours", "engine": "projected"}
    out["per_doc"] = {
        "label": "ours, one `predict` per document (no batching; fastText)",
        "kind": "per_doc",
        "engine": "fasttext",
    }
    out["fasttext"] = {"label": "fastText alone (`multilinePredict`)", "kind": "fasttext", "engine": "fasttext"}
    out["datatrove"] = {
        "label": f"DataTrove `FastTextClassifierFilter`{' × ' + str(k) if k > 1 else ''}",
        "kind": "datatrove",
    }
    return out


def render(args, machine, cpu, sets: dict, phase1: dict, scoring: dict, names: dict[str, dict]) -> str:
    cmd = " ".join(["python benchmarks/quality.py", *sys.argv[1:]])
    out = [
        "# Classifier scoring: one, two and three fastText models, and the share of phase 1",
        "",
        f"- {machine['date']} · {machine['nproc']} CPUs ({machine['cpu']}) "
        f"· {machine['mem_gib']} GiB · Python {machine['python']}",
        f"- load average at the start {machine['load_avg']}, at the end {machine['load_avg_end']} "
        "(well above 0 means other work shared the machine: compare docs/CPU-s)",
        f"- command: `{cmd}`",
        f"- each measurement in its own process, {'pinned to CPU ' + str(cpu) if cpu is not None else 'not pinned'}, "
        "math libraries single-threaded; "
        f"{'the fastest of ' + str(args.repeat) + ' interleaved runs' if args.repeat > 1 else 'one run each'}; "
        f"scoring in batches of {args.batch} documents, whole passes "
        f"over the documents for at least {args.min_seconds} s; "
        "docs/s = documents scored (by every model of the set) ÷ wall seconds; model loading excluded, shown apart",
        "",
        "## Models",
        "",
    ]
    rows = [
        [
            f"{k}",
            ", ".join(f"`{m['label']}`" for m in v["models"]),
            fmt(sum(m["bytes"] for m in v["models"]) / 1e6, 1),
            v["what"],
        ]
        for k, v in sets.items()
    ]
    out += [markdown_table(["set", "models", "MB", "what"], rows, "llrl"), ""]
    some = next((r for res in scoring.values() for r in res.values() if not r.get("failed")), {})
    out += [
        "## Scoring throughput (one core)",
        "",
        f"The {some.get('docs', '?')} documents phase 1 keeps from `samples/*.warc.gz` (the sample run's documents: "
        f"{fmt(some.get('mean_chars'))} characters on average, "
        f"median {fmt(some.get('median_chars'))}), each scored by "
        f"every model of the set. Target: ≥ {TARGET:,} docs/s per core.",
        "",
    ]
    rows = []
    for sname, results in scoring.items():
        k = len(sets[sname]["models"])
        base = results.get("datatrove", {})
        base_cpu = base["docs_scored"] / max(base["cpu_s"], 1e-9) if base and not base.get("failed") else None
        for kind, r in results.items():
            label = names[sname][kind]["label"]
            if r.get("failed"):
                rows.append([sname, label, "failed: " + r["failed"], *[""] * 7])
                continue
            rate = r["docs_scored"] / max(r["wall_s"], 1e-9)
            cpu_rate = r["docs_scored"] / max(r["cpu_s"], 1e-9)
            rows.append([sname, label, fmt(rate), f"**{fmt(cpu_rate)}**",
            f"{cpu_rate / base_cpu:.2f}×" if base_cpu else "–",
                         fmt(1e6 / cpu_rate), fmt(1e6 / cpu_rate / k), fmt(r["load_s"], 2), fmt(r.get("tree_pss_mb")),
                         "yes" if cpu_rate >= TARGET else "no"])  # fmt: skip
    headers = ["models", "system", "docs/s", "docs/CPU-s",
    "× DataTrove (CPU)", "CPU µs/doc", "µs/doc per model", "load s",
               "peak PSS MB", f"≥ {TARGET:,}/CPU-s"]  # fmt: skip
    out += [markdown_table(headers, rows, "llrrrrrrrl"), ""]
    for sname, results in scoring.items():
        for kind, r in results.items():
            spec = names[sname][kind]
            if "max_chars" in spec and not r.get("failed"):
                moved = "; ".join(
                    f"`{m}` by {v['mean_abs_diff_long']:.4f} on average (at most {v['max_abs_diff']:.4f}), "
                    f"{v['same_side_of_half']:.1%} on the same side of 0.5"
                    for m, v in r["moves"].items()
                )
                out.append(
                    f"- `max_chars: {spec['max_chars']}`, models {sname}: "
                    f"{r['long_docs']} of {r['docs']} documents are "
                    f"longer; their scores move: {moved}."
                )
    out += [""]
    out += ["## Share of phase 1", "",
            "Phase 1's worker (the engine's `MapWorker`) over the sample WARCs with `jobs/sample.yaml`'s settings "
            "and the classifiers last; "
            "**phase 1 s** is the run's wall time without them, "
                "**share** = classifiers s ÷ phase 1 s, the time scoring "
            "adds to phase 1 (model loading is once per worker process, apart).", ""]  # fmt: skip
    rows = []
    for sname, r in phase1.items():
        if r.get("failed"):
            rows.append([sname, "failed: " + r["failed"], *[""] * 6])
            continue
        q = r["stage_seconds"].get("classifiers", 0.0)
        rest = r["wall_s"] - q
        rows.append([sname, r["responses"], r["scored"], fmt(rest, 2), fmt(q, 3), f"**{q / rest:.1%}**",
                     fmt(1e6 * q / max(r["scored"], 1), 1), fmt(r["load_s"], 2)])  # fmt: skip
    out += [
        markdown_table(
            ["models", "responses", "scored", "phase 1 s", "classifiers s", "share", "µs/scored doc", "load s"],
            rows,
            "lrrrrrrr",
        ),
        "",
    ]
    stage_rows = [
        [sname, fmt(r["wall_s"], 2), " · ".join(f"{k} {v:.2f}" for k, v in r["stage_seconds"].items())]
        for sname, r in phase1.items()
        if not r.get("failed")
    ]
    out += ["Seconds by stage:", "", markdown_table(["models", "wall s", "seconds by stage"], stage_rows, "lrl"), ""]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one samples file, one model; print only")
    parser.add_argument(
        "--large", action="store_true", help="also one production-sized (2 GB) model, trained here first"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per measurement, interleaved; the fastest is reported"
    )
    parser.add_argument("--batch", type=int, default=64, help="documents per scoring batch (default 64)")
    parser.add_argument("--min-seconds", type=float, default=3.0, help="scoring time per measurement (default 3)")
    parser.add_argument(
        "--max-chars",
        type=int,
        nargs="*",
        default=[3_000],
        help="max_chars of the 'ours, max_chars' rows (default 3000)",
    )
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin the children to (default: the last one)")
    parser.add_argument("--no-pin", action="store_true", help="let the OS schedule the children")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a child is killed")
    parser.add_argument(
        "--out", default=None, help="markdown output (default benchmarks/results/quality.md; none with --quick)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child)
        return 0
    machine = machine_info()
    cpu = None if args.no_pin else args.cpu if args.cpu is not None else pick_cpu()
    files = sorted(glob.glob(str(ROOT / "samples" / "*.warc.gz")))[: 1 if args.quick else None]
    min_s = 0.5 if args.quick else args.min_seconds
    tmp = Path(tempfile.mkdtemp(prefix="bench-quality-"))
    try:
        demo = [
            {
                "label": str(path.relative_to(ROOT)),
                "name": name,
                "path": str(path),
                "model_label": label,
                "bytes": path.stat().st_size,
            }
            for name, path, label in DEMO_MODELS
        ]
        sets = {
            str(k): {
                "models": demo[:k],
                "what": "the committed demonstration models (dim 16, word bigrams in 50k buckets, quantized)",
            }
            for k in ((1,) if args.quick else (1, 2, 3))
        }
        if args.large:
            large = tmp / "large.bin"
            info = train_large_model(large, tmp, args.timeout)
            sets["1 large"] = {
                "models": [
                    {
                        "label": "large.bin",
                        "name": "large",
                        "path": str(large),
                        "model_label": "hq",
                        "bytes": info["bytes"],
                    }
                ],
                "what": f"trained here (`{' '.join(LARGE_ARGS)}`, "
                f"{info['train_s']:.0f} s) on the quality model's data",
            }
        phase1, scoring, names = {}, {}, {}
        docs = str(tmp / "out-phase1")  # every set scores the same documents: those phase 1 keeps
        for sname, sset in sets.items():
            models = [[m["name"], m["path"], m["model_label"]] for m in sset["models"]]
            names[sname] = systems(args.max_chars, len(models))
            runs: dict[str, list[dict]] = {}
            for i in range(args.repeat):  # interleaved, so a busy spell does not hit one system only
                if sname in ("1", "3") or not Path(docs).exists():
                    spec = {
                        "kind": "phase1",
                        "files": files,
                        "out": docs if not Path(docs).exists() else str(tmp / f"out-{sname}-{i}"),
                        "models": models,
                    }
                    runs.setdefault("phase1", []).append(run(spec, f"phase1-{sname}-{i}", cpu, tmp, args.timeout))
                for kind, sspec in names[sname].items():
                    spec = {**sspec, "docs": docs, "models": models, "batch": args.batch, "min_s": min_s}
                    runs.setdefault(kind, []).append(
                        run(spec, f"{kind}-{sname.replace(' ', '-')}-{i}", cpu, tmp, args.timeout)
                    )
            if "phase1" in runs:
                phase1[sname] = fastest(runs.pop("phase1"), "wall_s")
            scoring[sname] = {kind: fastest(rs, "rate") for kind, rs in runs.items()}
        machine["load_avg_end"] = machine_info()["load_avg"]
        report = render(args, machine, cpu, sets, phase1, scoring, names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(report)
    target = Path(args.out) if args.out else None if args.quick else RESULTS
    if target:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(report)
        print(f"written: {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
