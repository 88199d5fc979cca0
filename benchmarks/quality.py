"""Quality scoring throughput: ours vs DataTrove's fastText filter, and the share of phase-1 time it adds.

    .venv/bin/python benchmarks/quality.py --repeat 3     # writes benchmarks/results/quality.md
    .venv/bin/python benchmarks/quality.py --quick        # one samples file, demonstration model only; prints only

(or with .venv-bench/bin/python; from .venv the DataTrove child runs in .venv-bench.)

Every measurement runs in its own child process pinned to one CPU (math
libraries single-threaded), so docs/s is per core:

- **phase 1 + quality**: phase 1's ``FileWorker`` over the sample WARCs with
  ``jobs/sample.yaml``'s settings and ``QualityScoreStage`` appended after the
  heuristic filters (where it runs in the pipeline); the stage's own seconds
  against the rest of phase 1 is the share it adds.  Its kept documents are
  the documents every scoring system below scores.
- **ours**: ``QualityScoreStage`` on Arrow batches of ``--batch`` documents;
  **ours, max_chars**: the same with ``max_chars`` set (``--max-chars``), and
  how far its scores move from the whole-text scores; **fastText alone**: the binding's
  ``multilinePredict`` on lines prepared beforehand (the floor: what fastText
  itself costs); **DataTrove**: ``FastTextClassifierFilter`` (one ``predict``
  per document, as its pipeline runs it), same model, newlines to spaces.
- Two models: the committed demonstration model (``samples/quality/model.ftz``,
  dim 16, 0.5 MB) and a large one trained here on the sample texts with
  dim 256, word bigrams and 2,000,000 buckets (2.1 GB, the size class of DCLM's
  2.39 GB OH-2.5+ELI5 bigram model, so its lookups miss the caches the same way).
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
DEMO_MODEL = ROOT / "samples" / "quality" / "model.ftz"
RESULTS = ROOT / "benchmarks" / "results" / "quality.md"
TARGET = 5000  # docs/s per core, the issue's target on sample-sized documents
LARGE_ARGS = ["--dim", "256", "--word-ngrams", "2", "--bucket", "2000000", "--epoch", "1", "--lr", "0.1", "--seed", "0"]


# ---------------------------------------------------------------- children


def child_phase1(spec: dict) -> dict:
    """Phase 1 over the files with the quality stage appended; per-stage seconds."""
    import yaml

    from pipeline.config import parse_config
    from pipeline.phases.extracted import ExtractedPhase, FileWorker
    from pipeline.runner import plan_context
    from stages.quality import QualityConfig, QualityScoreStage

    data = copy.deepcopy(yaml.safe_load(JOB.read_text()))
    data.pop("quality", None)  # the quality stage is added below, with the model under test
    data["inputs"] = spec["files"]
    data["output"] = {"root": spec["out"]}
    config = parse_config(data)
    worker = FileWorker(config)  # builds the stages and loads the models, as each actor does once
    t0 = time.perf_counter()
    stage = QualityScoreStage(QualityConfig(enabled=True, model=spec["model"]))
    load_s = time.perf_counter() - t0
    worker.stages = [s for s in worker.stages if getattr(s, "name", "") != "quality"] + [stage]
    t0, cpu0 = time.perf_counter(), time.process_time()
    stats = [worker.process(u) for u in ExtractedPhase().units(plan_context(config))]
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    seconds: dict[str, float] = {}
    for s in stats:
        if s.get("failed"):
            raise RuntimeError(f"{s.get('source')}: {s['failed']}")
        for k, v in s.get("stage_seconds", {}).items():
            seconds[k] = seconds.get(k, 0.0) + v
    return {"wall_s": wall, "cpu_s": cpu, "load_s": load_s, "stage_seconds": seconds,
            "responses": sum(s["responses"] for s in stats), "kept": sum(s["kept"] for s in stats),
            "scored": sum(s.get("stage_docs_in", {}).get("quality", 0) for s in stats)}  # fmt: skip


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
    if kind in ("ours", "fasttext"):
        from classifiers.quality import prepare_texts
        from stages.quality import QualityConfig, QualityScoreStage

        max_chars = spec.get("max_chars")
        stage = QualityScoreStage(QualityConfig(enabled=True, model=spec["model"], max_chars=max_chars))
        load_s = time.perf_counter() - t0
        tables = [pa.table({"text": pa.array(texts[lo : lo + batch], pa.large_string())}) for lo in range(0, n, batch)]
        if kind == "fasttext":  # the binding alone, on lines prepared outside the timing
            f = stage.scorer.model.f
            lines = [t + "\n" for t in prepare_texts(pa.array(texts, pa.large_string())).to_pylist()]
            timing = _timed_passes(lambda lo, hi: f.multilinePredict(lines[lo:hi], -1, 0.0, "replace"), n, batch, spec["min_s"])
        else:
            timing = _timed_passes(lambda lo, hi: stage(tables[lo // batch]), n, batch, spec["min_s"])
        if max_chars:  # how far the cut moves the scores (untimed)
            full = QualityScoreStage(QualityConfig(enabled=True, model=spec["model"]))
            a = np.concatenate([stage(t).column("quality_score").to_numpy() for t in tables])
            b = np.concatenate([full(t).column("quality_score").to_numpy() for t in tables])
            long_docs = np.array([len(t) > max_chars for t in texts])
            extra = {"max_abs_diff": float(np.abs(a - b).max()), "mean_abs_diff_long": float(np.abs(a - b)[long_docs].mean()) if long_docs.any() else 0.0,
                     "same_side_of_half": float(((a >= 0.5) == (b >= 0.5)).mean()), "long_docs": int(long_docs.sum())}  # fmt: skip
    else:  # DataTrove's filter, model handed over directly (its loader would copy it into a download cache)
        from datatrove.data import Document
        from datatrove.pipeline.filters import FastTextClassifierFilter
        from fasttext.FastText import _FastText

        filt = FastTextClassifierFilter(spec["model"], newline_replacement=" ")
        filt._model = _FastText(spec["model"])
        load_s = time.perf_counter() - t0
        docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
        timing = _timed_passes(lambda lo, hi: sum(1 for _ in filt.run(iter(docs[lo:hi]))), n, batch, spec["min_s"])
    chars = np.array([len(t) for t in texts])
    return {**timing, **extra, "docs": n, "load_s": load_s, "mean_chars": float(chars.mean()), "median_chars": float(np.median(chars))}


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
    argv = ["-m", "classifiers.train_quality", "--positives", str(tmp / "pos.parquet"), "--negatives", str(tmp / "neg.parquet"),
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


def systems(max_chars: list[int]) -> dict[str, dict]:
    """name -> (label, child spec) of every scoring measurement."""
    out = {"ours": {"label": "ours (`QualityScoreStage`)", "kind": "ours"}}
    for mc in max_chars:
        out[f"ours-{mc}"] = {"label": f"ours, `max_chars: {mc}`", "kind": "ours", "max_chars": mc}
    out["fasttext"] = {"label": "fastText alone (`multilinePredict`)", "kind": "fasttext"}
    out["datatrove"] = {"label": "DataTrove `FastTextClassifierFilter`", "kind": "datatrove"}
    return out


def render(args, machine, cpu, models: dict, phase1: dict, scoring: dict, names: dict[str, dict]) -> str:
    cmd = " ".join(["python benchmarks/quality.py", *sys.argv[1:]])
    out = [
        "# Quality scoring: throughput and share of phase 1",
        "",
        f"- {machine['date']} · {machine['nproc']} CPUs ({machine['cpu']}) · {machine['mem_gib']} GiB · Python {machine['python']}",
        f"- load average at the start {machine['load_avg']}, at the end {machine['load_avg_end']} "
        "(well above 0 means other work shared the machine: compare docs/CPU-s)",
        f"- command: `{cmd}`",
        f"- each measurement in its own process, {'pinned to CPU ' + str(cpu) if cpu is not None else 'not pinned'}, "
        f"math libraries single-threaded; {'the fastest of ' + str(args.repeat) + ' interleaved runs' if args.repeat > 1 else 'one run each'}; scoring in batches of {args.batch} documents, whole passes over the "
        f"documents for at least {args.min_seconds} s; docs/s = documents scored ÷ wall seconds (model loading excluded, "
        "shown apart)",
        "",
        "## Models",
        "",
    ]
    rows = [[f"`{m['label']}`", m["what"], fmt(m["bytes"] / 1e6, 1)] for m in models.values()]
    out += [markdown_table(["model", "what", "MB"], rows, "llr"), ""]
    first = next(iter(scoring.values()))
    some = next((r for r in first.values() if not r.get("failed")), {})
    out += [
        "## Scoring throughput (one core)",
        "",
        f"The {some.get('docs', '?')} documents phase 1 keeps from `samples/*.warc.gz` (the sample run's documents: "
        f"{fmt(some.get('mean_chars'))} characters on average, median {fmt(some.get('median_chars'))}). Target: "
        f"≥ {TARGET:,} docs/s per core.",
        "",
    ]
    rows = []
    for mname, results in scoring.items():
        base = results.get("datatrove", {})
        ok = base and not base.get("failed")
        base_rate = base["docs_scored"] / base["wall_s"] if ok else None
        base_cpu = base["docs_scored"] / max(base["cpu_s"], 1e-9) if ok else None
        for sname, r in results.items():
            label = names[sname]["label"]
            if r.get("failed"):
                rows.append([label, f"`{models[mname]['label']}`", "failed: " + r["failed"], *[""] * 7])
                continue
            rate = r["docs_scored"] / max(r["wall_s"], 1e-9)
            cpu_rate = r["docs_scored"] / max(r["cpu_s"], 1e-9)
            rows.append([label, f"`{models[mname]['label']}`", fmt(rate), fmt(cpu_rate),
                         f"**{rate / base_rate:.2f}×**" if base_rate else "–", f"{cpu_rate / base_cpu:.2f}×" if base_cpu else "–",
                         fmt(1e6 / cpu_rate, 0), fmt(r["load_s"], 2), fmt(r.get("tree_pss_mb")),
                         "yes" if max(rate, cpu_rate) >= TARGET else "no"])  # fmt: skip
    headers = ["system", "model", "docs/s", "docs/CPU-s", "× DataTrove", "× DataTrove (CPU)", "CPU µs/doc", "load s",
               "peak PSS MB", f"≥ {TARGET:,}/s"]  # fmt: skip
    out += [markdown_table(headers, rows, "llrrrrrrrl"), ""]
    for mname, results in scoring.items():
        for sname, r in results.items():
            if "max_chars" in names[sname] and not r.get("failed"):
                out.append(
                    f"- `max_chars: {names[sname]['max_chars']}` with `{models[mname]['label']}`: {r['long_docs']} of {r['docs']} "
                    f"documents are longer; their scores move by {r['mean_abs_diff_long']:.4f} on average (at most "
                    f"{r['max_abs_diff']:.4f}), and {r['same_side_of_half']:.1%} of all documents stay on the same side of 0.5."
                )
    out += [""]
    out += ["## Share of phase 1", "",
            "Phase 1's `FileWorker` over the sample WARCs with `jobs/sample.yaml`'s settings and the quality stage last; "
            "**phase 1 s** is the run's wall time without the quality stage, **share** = quality s ÷ phase 1 s, the "
            "time scoring adds to phase 1 (model loading is once per actor, apart).", ""]  # fmt: skip
    rows = []
    for mname, r in phase1.items():
        if r.get("failed"):
            rows.append([f"`{models[mname]['label']}`", "failed: " + r["failed"], *[""] * 6])
            continue
        q = r["stage_seconds"].get("quality", 0.0)
        rest = r["wall_s"] - q
        rows.append([f"`{models[mname]['label']}`", r["responses"], r["scored"], fmt(rest, 2), fmt(q, 3),
                     f"**{q / rest:.1%}**", fmt(1e6 * q / max(r["scored"], 1), 1), fmt(r["load_s"], 2)])  # fmt: skip
    out += [markdown_table(["model", "responses", "scored", "phase 1 s", "quality s", "share", "µs/scored doc", "load s"], rows, "lrrrrrrr"), ""]
    stage_rows = []
    for mname, r in phase1.items():
        if not r.get("failed"):
            parts = " · ".join(f"{k} {v:.2f}" for k, v in r["stage_seconds"].items())
            stage_rows.append([f"`{models[mname]['label']}`", fmt(r["wall_s"], 2), parts])
    out += ["Seconds by stage:", "", markdown_table(["model", "wall s", "seconds by stage"], stage_rows, "lrl"), ""]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one samples file, the demonstration model only; print only")
    parser.add_argument("--no-large", action="store_true", help="skip the large (2 GB) model")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement, interleaved; the fastest is reported")
    parser.add_argument("--batch", type=int, default=64, help="documents per scoring batch (default 64)")
    parser.add_argument("--min-seconds", type=float, default=3.0, help="scoring time per measurement (default 3)")
    parser.add_argument("--max-chars", type=int, nargs="*", default=[10_000, 3_000], help="max_chars of the 'ours, max_chars' rows (default 10000 3000)")
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin the children to (default: the last one)")
    parser.add_argument("--no-pin", action="store_true", help="let the OS schedule the children")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a child is killed")
    parser.add_argument("--out", default=None, help="markdown output (default benchmarks/results/quality.md; none with --quick)")
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
        models = {"demo": {"label": "samples/quality/model.ftz", "path": str(DEMO_MODEL), "bytes": DEMO_MODEL.stat().st_size,
                           "what": "the committed demonstration model: dim 16, word bigrams in 50k buckets, quantized"}}  # fmt: skip
        if not (args.quick or args.no_large):
            large = tmp / "large.bin"
            info = train_large_model(large, tmp, args.timeout)
            models["large"] = {"label": "large.bin", "path": str(large), "bytes": info["bytes"],
                               "what": f"trained here (`{' '.join(LARGE_ARGS)}`, {info['train_s']:.0f} s) on the same data"}  # fmt: skip
        phase1, scoring, names = {}, {}, systems(args.max_chars)
        for mname, m in models.items():
            docs = str(tmp / "out-demo")  # every model scores the same documents: those phase 1 keeps
            runs: dict[str, list[dict]] = {}
            for i in range(args.repeat):  # interleaved, so a busy spell does not hit one system only
                spec = {"kind": "phase1", "files": files, "out": str(tmp / f"out-{mname}"), "model": m["path"]}
                runs.setdefault("phase1", []).append(run(spec, f"phase1-{mname}-{i}", cpu, tmp, args.timeout))
                for sname, sspec in names.items():
                    spec = {**sspec, "docs": docs, "model": m["path"], "batch": args.batch, "min_s": min_s}
                    runs.setdefault(sname, []).append(run(spec, f"{sname}-{mname}-{i}", cpu, tmp, args.timeout))
            phase1[mname] = fastest(runs.pop("phase1"), "wall_s")
            scoring[mname] = {sname: fastest(rs, "rate") for sname, rs in runs.items()}
        machine["load_avg_end"] = machine_info()["load_avg"]
        report = render(args, machine, cpu, models, phase1, scoring, names)
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
