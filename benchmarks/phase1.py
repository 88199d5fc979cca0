"""Phase-1 throughput and memory: ours vs DataTrove on the same WARCs, in the same run.

    python benchmarks/phase1.py            # samples/ + the shared extraction dev set, then `curate run` on Ray
    python benchmarks/phase1.py --quick    # one samples file + the first 200 dev-set pages; prints, writes nothing

Every system runs in its own child process pinned to one CPU (math libraries
single-threaded), so docs/s is per core and the memory is that system's alone:

- ours: ``Phase1(config).process(uri, unit)`` over each file in turn, which is
  what one Ray actor does (read the WARC, decode, extract, language ID, the
  heuristic filters, write Parquet), with ``jobs/sample.yaml``'s settings, and
  variants: without the filters, with each other extractor (trafilatura
  without the filters: DataTrove's work with DataTrove's extractor).
- DataTrove (benchmark-only extra): ``WarcReader -> Trafilatura(favour_precision=True,
  timeout=1) -> LanguageFilter`` with our languages and threshold, on
  ``LocalPipelineExecutor(tasks=1, workers=1)``; and the same followed by the
  FineWeb filters (Gopher repetition and quality, C4, FineWeb).

"docs" is the same number for every system: the response records whose
``WARC-Identified-Payload-Type`` is HTML, which is what DataTrove's WarcReader
keeps.  The report goes to stdout and to ``benchmarks/results/phase1.md``.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    Measure,
    TreeMemory,
    child_report,
    child_setup,
    machine_info,
    markdown_table,
    pick_cpu,
    run_child,
    wait_or_kill,
)

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "jobs" / "sample.yaml"
SAMPLES = "samples/*.warc.gz"
DEVSET = ROOT.parent / "shared" / "data" / "extraction-devset.warc.gz"
RESULTS = ROOT / "benchmarks" / "results" / "phase1.md"
HTML_TYPES = ("text/html", "application/xhtml+xml")
QUICK_DEVSET_PAGES = 200
BASELINE = "datatrove"  # the baseline: WarcReader -> Trafilatura -> LanguageFilter
DATATROVE = {
    "datatrove": {"kind": "datatrove", "filters": False},
    "datatrove-fineweb": {"kind": "datatrove", "filters": True},
}


def systems_for(job: dict) -> dict[str, dict]:
    """Every system this script knows: ours with each extractor, with and without filters; DataTrove's two chains."""
    from typing import get_args

    from stages.extract import ExtractConfig

    job_extractor = ExtractConfig(**(job.get("extract") or {})).extractor
    all_extractors = get_args(ExtractConfig.model_fields["extractor"].annotation)
    out = {}
    for ex in [job_extractor, *(e for e in all_extractors if e != job_extractor)]:
        name = "ours" if ex == job_extractor else f"ours-{ex}"
        out[name] = {"kind": "ours", "extractor": ex, "filters": True}
        out[f"{name}-nofilters"] = {"kind": "ours", "extractor": ex, "filters": False}
    return {**out, **DATATROVE}


def default_systems(known: dict[str, dict]) -> list[str]:
    """What runs unless --systems says otherwise."""

    def wanted(name: str, spec: dict) -> bool:
        if spec["kind"] != "ours" or name in ("ours", "ours-nofilters"):
            return True
        # Other extractors with the filters, except trafilatura: without them it does exactly
        # DataTrove's work with DataTrove's extractor, which isolates the framework's own cost.
        return spec["filters"] != (spec["extractor"] == "trafilatura")

    return [name for name, spec in known.items() if wanted(name, spec)]


def same_stage_baseline(spec: dict) -> str:
    """The DataTrove chain doing the same kind of work."""
    return "datatrove-fineweb" if spec["filters"] else "datatrove"


# ---------------------------------------------------------------- inputs


def job_config() -> dict:
    import yaml

    return yaml.safe_load(JOB.read_text())


def count_html_responses(files: list[str]) -> tuple[int, int]:
    """(HTML responses, all responses) in these files."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    html = total = 0
    for f in files:
        for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=False, fsspec_args=False):
            total += 1
            ptype = (rec.headers.get("WARC-Identified-Payload-Type") or "").split(";")[0].strip().lower()
            html += ptype in HTML_TYPES
    return html, total


def warc_head(src: Path, dst: Path, n_records: int) -> None:
    """Copy the first records of a WARC written one gzip member per record (as Common Crawl does)."""
    data = src.read_bytes()
    view = memoryview(data)
    pos = 0
    with open(dst, "wb") as out:
        for _ in range(n_records):
            if pos >= len(data):
                break
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            at, head = pos, b""
            while not d.eof and at < len(data):
                chunk = view[at : at + 65536]
                text = d.decompress(chunk)
                head = head if len(head) >= 5 else head + text[:5]
                at += len(chunk)
            if not d.eof:
                raise ValueError(f"{src}: truncated gzip member at offset {pos}")
            if not head.startswith(b"WARC/"):
                raise ValueError(f"{src}: not one gzip member per WARC record; cannot cut a subset")
            end = at - len(d.unused_data)
            out.write(view[pos:end])
            pos = end


def input_sets(args, tmp: Path) -> list[dict]:
    """The input sets, each with its files and doc count; an absent one carries ``skipped``."""
    pattern = args.samples if os.path.isabs(args.samples) else str(ROOT / args.samples)
    samples = sorted(glob.glob(pattern))[: 1 if args.quick else None]
    sets = [{"name": "samples", "title": f"samples: `{args.samples}`", "files": samples}]
    devset = Path(args.devset)
    if devset.is_file() and args.quick:
        subset = tmp / f"{devset.name.removesuffix('.warc.gz')}-first{QUICK_DEVSET_PAGES}.warc.gz"
        warc_head(devset, subset, QUICK_DEVSET_PAGES)
        title = f"extraction dev set (real pages): the first {QUICK_DEVSET_PAGES} records of `{devset}`"
        sets.append({"name": "devset", "title": title, "files": [str(subset)]})
    else:
        title = f"extraction dev set (real pages): `{devset}`"
        sets.append({"name": "devset", "title": title, "files": [str(devset)] if devset.is_file() else []})
    for s in sets:
        if s["files"]:
            s["docs"], s["responses"] = count_html_responses(s["files"])
        else:
            s["skipped"] = "no input file found"
    return sets


def ground_truth_html(files: list[str]) -> int | None:
    """HTML responses in these files according to samples' ground_truth.jsonl (a cross-check of the scan)."""
    truth = Path(files[0]).parent / "ground_truth.jsonl"
    if not truth.is_file():
        return None
    names = {Path(f).name for f in files}
    rows = (json.loads(line) for line in truth.read_text().splitlines() if line.strip())
    return sum(r.get("file") in names and (r.get("identified_payload_type") or "") in HTML_TYPES for r in rows)


# ---------------------------------------------------------------- children: one system, one process, one core


def _all_filters_off(filters: dict) -> dict:
    from stages.filters import FiltersConfig

    out = dict(filters)
    for name, field in FiltersConfig.model_fields.items():
        if "enabled" in getattr(field.annotation, "model_fields", {}):
            out[name] = {**(out.get(name) or {}), "enabled": False}
    return out


def child_ours(spec: dict, tmp: Path) -> dict:
    from pipeline.config import parse_config
    from pipeline.engine.worker import MapWorker
    from pipeline.phases.extracted import ExtractedPhase
    from pipeline.runner import plan_context

    data = copy.deepcopy(spec["job"])
    data["inputs"] = spec["files"]
    data["output"] = {**(data["output"] if isinstance(data.get("output"), dict) else {}), "root": str(tmp / "out")}
    data.setdefault("extract", {})["extractor"] = spec["extractor"]
    if not spec["filters"]:
        data["filters"] = _all_filters_off(data.get("filters") or {})
    config = parse_config(data)

    with Measure() as m:
        t0 = time.perf_counter()
        phase1 = MapWorker(config, ExtractedPhase)  # builds the stages and loads the models, as each worker does once
        setup_s = time.perf_counter() - t0
        ctx = plan_context(config)
        stats = [phase1.process(u) for u in ctx.units_of(next(p for p in ctx.phases if p.name == ExtractedPhase.name))]
    seconds: dict[str, float] = {"setup": setup_s}
    reasons: dict[str, int] = {}
    for s in stats:  # UnitResult: its stage chain's seconds, its rejections per reason
        for k, v in s.stages.seconds.items():
            seconds[k] = seconds.get(k, 0.0) + v
        for k, v in s.by_reason.items():
            reasons[k] = reasons.get(k, 0) + v
    return {
        **m.result(),
        "kept": sum(s.kept for s in stats),
        "extracted": sum(s.stages.docs_in.get("extract", 0) for s in stats),
        "stage_seconds": seconds,
        "rejected_by_reason": reasons,
        "stages": [getattr(st, "name", type(st).__name__) for st in phase1.stages],
        "failed": "; ".join(f"{s.unit}: {s.failed}" for s in stats if s.failed) or None,
    }


def _step_name(name: str) -> str:
    # "🛢 - EXTRAC: ⛏ Trafilatura" -> "Trafilatura"
    return re.sub(r"[^\x20-\x7e]", "", name.split(":", 1)[-1]).strip() or name


def child_datatrove(spec: dict, tmp: Path) -> dict:
    import datatrove.utils.lid as dt_lid
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.readers import WarcReader

    from classifiers.langid import bundled_model_path

    # Offline: its LanguageFilter would download lid.176.bin; give it the lid.176.ftz we ship (BASELINES.md).
    dt_lid.cached_asset_path_or_download = lambda *a, **k: bundled_model_path()

    folder = os.path.commonpath([os.path.dirname(os.path.abspath(f)) for f in spec["files"]])
    paths = tmp / "paths.txt"
    paths.write_text("".join(os.path.relpath(os.path.abspath(f), folder) + "\n" for f in spec["files"]))
    kept = [0]

    def count_kept(data, rank: int = 0, world_size: int = 1):
        for doc in data:
            kept[0] += 1
            yield doc

    with Measure() as m:
        steps = [
            WarcReader(folder, paths_file=str(paths)),
            Trafilatura(favour_precision=True, timeout=1),
            LanguageFilter(languages=spec["languages"], language_threshold=spec["language_threshold"]),
        ]
        if spec["filters"]:
            steps += [
                GopherRepetitionFilter(),
                GopherQualityFilter(),
                C4QualityFilter(filter_no_terminal_punct=False),
                FineWebQualityFilter(),
            ]
        executor = LocalPipelineExecutor(
            [*steps, count_kept], tasks=1, workers=1, logging_dir=str(tmp / "logs"), skip_completed=False
        )
        executor.run()
    by_step = {_step_name(s["name"]): s for s in json.loads((tmp / "logs" / "stats.json").read_text())}
    extract = by_step.get("Trafilatura", {}).get("stats", {})
    return {
        **m.result(),
        "kept": kept[0],
        "extracted": extract.get("total", 0),
        "extract_timeouts": extract.get("timeout", 0),
        "stage_seconds": {n: s["time_stats"]["total"] for n, s in by_step.items()},
        "stages": list(by_step),
        "failed": None,
    }


def child_main(spec_path: str) -> None:
    child_setup()
    spec = json.loads(Path(spec_path).read_text())
    run = child_ours if spec["kind"] == "ours" else child_datatrove
    child_report(run(spec, Path(spec["tmp"])))


# ---------------------------------------------------------------- parent: runs


def system_spec(spec: dict, job: dict) -> dict:
    spec = dict(spec)
    if spec["kind"] == "ours":
        spec["job"] = job
    else:  # DataTrove decides languages as ours does
        from stages.langid import LangIdConfig

        langid = LangIdConfig(**(job.get("langid") or {}))
        spec["languages"] = langid.keep or None
        spec["language_threshold"] = langid.min_score
    return spec


def run_system(name: str, spec: dict, files: list[str], cpu: int | None, tmp: Path, timeout_s: float) -> dict:
    run_dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp))
    spec_path = run_dir / "spec.json"
    spec_path.write_text(json.dumps({**spec, "files": files, "tmp": str(run_dir)}))
    argv = [str(Path(__file__).resolve()), "--child", str(spec_path)]
    result = run_child(argv, cpu, run_dir / "child.log", timeout_s, cwd=ROOT)
    shutil.rmtree(run_dir / "out", ignore_errors=True)  # the Parquet output is not needed
    return result


def run_ray(files: list[str] | None, tmp: Path, timeout_s: float) -> dict:
    """`curate run jobs/sample.yaml` end to end, Ray start-up included, as a user runs it."""
    curate = Path(sys.executable).with_name("curate")
    args = ["run", str(JOB.relative_to(ROOT)), "-o", str(tmp / "ray-out"), "--no-progress"]
    for f in files or []:
        args += ["-i", f]
    shown = " ".join(["curate", *args]).replace(str(tmp / "ray-out"), "TMP")
    t0 = time.perf_counter()
    with open(tmp / "ray.log", "wb") as log, open(tmp / "ray.out", "wb") as out:
        exe = str(curate) if curate.exists() else "curate"
        proc = subprocess.Popen([exe, *args], stdout=out, stderr=log, cwd=ROOT, start_new_session=True)
        with TreeMemory(proc.pid, interval_s=0.5) as mem:
            rc = wait_or_kill(proc, timeout_s)
    wall = time.perf_counter() - t0
    if rc != 0:
        tail = " / ".join((tmp / "ray.log").read_text(errors="replace").strip().splitlines()[-3:])
        return {"cmd": shown, "failed": f"exit {rc}: {tail[-300:]}".replace("|", "/")}
    lines = (tmp / "ray.out").read_text().splitlines()
    summary = next((json.loads(line) for line in lines if line.startswith("{")), {})
    return {"cmd": shown, "wall_s": wall, "tree_pss_mb": mem.peak_mb, **summary}


def fastest(runs: list[dict]) -> dict:
    ok = [r for r in runs if not r.get("failed")]
    return min(ok, key=lambda r: r["wall_s"]) if ok else runs[-1]


# ---------------------------------------------------------------- parent: report


def fmt(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def results_table(docs: int, results: dict[str, dict], specs: dict[str, dict]) -> str:
    def rate(name: str, key: str = "wall_s") -> float | None:
        r = results.get(name)
        return docs / max(r[key], 1e-9) if r and not r.get("failed") else None

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}×" if a and b else "–"

    rows = []
    for name, r in results.items():
        spec = specs[name]
        head = [f"**{name}**", spec.get("extractor", "trafilatura"), "yes" if spec["filters"] else "no", docs]
        if r.get("failed"):
            rows.append([*head, *[""] * 9, f"failed: {r['failed']}"])
            continue
        rss = fmt(r["peak_rss_mb"], 0) + (f" (+{r['peak_child_rss_mb']:.0f})" if r["peak_child_rss_mb"] >= 1 else "")
        rows.append([
            *head, r["extracted"], r["kept"], fmt(r["wall_s"], 2), fmt(rate(name)), fmt(rate(name, "cpu_s")),
            f"**{ratio(rate(name), rate(BASELINE))}**", ratio(rate(name, "cpu_s"), rate(BASELINE, "cpu_s")),
            ratio(rate(name), rate(same_stage_baseline(spec))), rss, fmt(r["tree_pss_mb"], 0),
        ])  # fmt: skip
    headers = [
        "system", "extractor", "filters", "docs", "extracted", "kept", "wall s", "docs/s", "docs/CPU-s",
        "× DataTrove", "× DataTrove (CPU)", "× DataTrove, same stages", "peak RSS MB", "peak tree PSS MB",
    ]  # fmt: skip
    return markdown_table(headers, rows, "lllrrrrrrrrrrr")


def time_table(results: dict[str, dict]) -> str:
    """Where each system's wall time goes, by its own stages."""
    rows = []
    for name, r in results.items():
        if r.get("failed"):
            continue
        parts = [f"{k} {v:.2f}" for k, v in r["stage_seconds"].items()]
        parts.append(f"other {r['wall_s'] - sum(r['stage_seconds'].values()):.2f}")
        rows.append([f"**{name}**", fmt(r["wall_s"], 2), " · ".join(parts)])
    return markdown_table(["system", "wall s", "seconds by stage"], rows, "lrl")


TIME_LEGEND = (
    "Ours: setup = building the stages and loading the models; other = reading the WARC, writing Parquet and "
    "moving rejected rows. DataTrove: its own step timers (the language model loads inside Language ID); "
    "other = iterating the WARC and the executor."
)


def notes(s: dict) -> list[str]:
    """What a reader needs to judge whether the systems did comparable work."""
    res = s["results"]
    ours, dt = res.get("ours"), res.get(BASELINE)
    lines = []
    if ours and not ours.get("failed"):
        has_filters = any(n not in ("decode", "extract", "langid") for n in ours["stages"])
        reasons = sorted(ours["rejected_by_reason"].items(), key=lambda kv: -kv[1])
        lines.append(
            f"- ours ran {', '.join(ours['stages'])}"
            + ("" if has_filters else " — **no heuristic filters yet** (`build_filters` returned [])")
            + f"; rejected by reason: {', '.join(f'{k} {v}' for k, v in reasons) or 'none'}."
        )
    if ours and dt and not ours.get("failed") and not dt.get("failed") and ours["extracted"] != dt["extracted"]:
        lines.append(
            f"- extracted: {ours['extracted']} (ours) vs {dt['extracted']} (DataTrove). Ours rejects non-2xx, "
            "binary, undecodable and empty responses before extraction; DataTrove's WarcReader extracts every HTML "
            "response (error pages and redirects included) and silently drops those it cannot decode."
        )
    if dt and not dt.get("failed") and dt.get("extract_timeouts"):
        lines.append(f"- DataTrove's Trafilatura hit its 1 s timeout on {dt['extract_timeouts']} documents.")
    return [*lines, ""] if lines else []


def describe(r: dict, spec: dict) -> str:
    if spec["kind"] == "ours":
        stages = " → ".join(["read WARC", *r.get("stages", []), "write Parquet"])
        off = "" if spec["filters"] else ", every filter disabled"
        return f"`Phase1` with `jobs/sample.yaml`, `extract.extractor: {spec['extractor']}`{off}: {stages}"
    langs = spec["languages"] or "None"
    chain = [
        "WarcReader",
        "Trafilatura(favour_precision=True, timeout=1)",
        f"LanguageFilter(languages={langs}, language_threshold={spec['language_threshold']})",
    ]
    if spec["filters"]:
        chain += [
            "GopherRepetitionFilter()",
            "GopherQualityFilter()",
            "C4QualityFilter(filter_no_terminal_punct=False)",
            "FineWebQualityFilter()",
        ]
    return f"DataTrove `{' → '.join(chain)}` on `LocalPipelineExecutor(tasks=1, workers=1)`"


def render(args, machine: dict, cpu: int | None, sets: list[dict], specs: dict, ray: dict | None) -> str:
    cmd = " ".join(["python benchmarks/phase1.py", *sys.argv[1:]])
    pinned = f"pinned to CPU {cpu}" if cpu is not None else "not pinned"
    runs = f"the fastest of {args.repeat} interleaved runs" if args.repeat > 1 else "one run each"
    out = [
        "# Phase 1 throughput: ours vs DataTrove",
        "",
        f"- {machine['date']} · {machine['nproc']} CPUs ({machine['cpu']}) · {machine['mem_gib']} GiB · "
        f"Python {machine['python']}",
        f"- load average at the start {machine['load_avg']}, at the end {machine['load_avg_end']} "
        "(well above 0 means other work shared the machine: compare docs/CPU-s)",
        f"- command: `{cmd}`",
        f"- each system in its own process, {pinned}, math libraries single-threaded; {runs}",
        "- **docs**: response records whose `WARC-Identified-Payload-Type` is HTML, the same number for every system; "
        "**docs/s** = docs ÷ the child's wall seconds (model loading included, imports not); **docs/CPU-s** uses "
        "its CPU seconds (helpers included), which other load inflates less",
        "- **× DataTrove**: docs/s ÷ `datatrove`'s (`WarcReader → Trafilatura → LanguageFilter`, the issue's "
        "baseline); **same stages**: ÷ `datatrove-fineweb`'s for rows with filters, `datatrove`'s for rows without",
        "- **extracted**: documents the extractor ran on; **kept**: documents the system kept; **peak RSS**: the "
        "child's `ru_maxrss` (+ its largest helper's: DataTrove extracts in a forked sandbox); **peak tree PSS**: "
        "the sampled peak of the child and all its helpers together",
        "",
    ]
    for s in sets:
        out += [f"## {s['title']}", ""]
        if s.get("skipped"):
            out += [f"Skipped: {s['skipped']}.", ""]
            continue
        line = f"{len(s['files'])} file(s), {s['responses']} response records, **{s['docs']} HTML docs**"
        truth = ground_truth_html(s["files"]) if s["name"] == "samples" else None
        if truth is not None:
            line += f" (ground_truth.jsonl says {truth}{'' if truth == s['docs'] else ': MISMATCH'})"
        out += [line + ".", "", results_table(s["docs"], s["results"], specs), ""]
        out += notes(s)
        if any(not r.get("failed") for r in s["results"].values()):
            out += ["Where the time goes (wall seconds):", "", time_table(s["results"]), "", TIME_LEGEND, ""]
    if ray:
        out += ray_section(ray, sets[0], machine)
    out += ["## Systems", ""]
    first = next((s["results"] for s in sets if s.get("results")), {})
    out += [f"- **{name}**: {describe(first.get(name, {}), spec)}" for name, spec in specs.items()]
    return "\n".join(out) + "\n"


def ray_section(ray: dict, samples: dict, machine: dict) -> list[str]:
    out = ["## End to end through Ray (samples)", ""]
    if ray.get("failed"):
        return out + [f"`{ray['cmd']}` failed: {ray['failed']}", ""]
    docs = samples["docs"]
    row = [
        f"`{ray['cmd']}`",
        docs,
        ray.get("kept"),
        fmt(ray["wall_s"], 1),
        fmt(docs / ray["wall_s"]),
        fmt(ray["tree_pss_mb"], 0),
    ]
    headers = ["command", "docs", "kept", "wall s (Ray start-up included)", "docs/s", "peak tree PSS MB"]
    return out + [
        markdown_table(headers, [row], "lrrrrr"),
        "",
        f"Embedded Ray, one phase-1 actor per CPU ({machine['nproc']} here). The wall time includes Python start-up, "
        "`ray.init`, starting the actors and loading their models, so on inputs this small it is mostly fixed cost. "
        "PSS covers the driver, Ray's daemons and the workers.",
        "",
    ]


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="one samples file and the first 200 dev-set pages; print only"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per system, interleaved; the fastest is reported")
    parser.add_argument("--systems", nargs="+", metavar="NAME", help="which systems to run (listed below)")
    parser.add_argument(
        "--samples", default=SAMPLES, help=f"samples glob, relative to the repository (default {SAMPLES})"
    )
    parser.add_argument(
        "--devset", default=str(DEVSET), help="the extraction dev set WARC (skipped with a note if absent)"
    )
    parser.add_argument("--no-ray", action="store_true", help="skip the end-to-end `curate run` through Ray")
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin the children to (default: the last one)")
    parser.add_argument("--no-pin", action="store_true", help="let the OS schedule the children")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a child is killed")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (children's logs and stats)")
    parser.add_argument(
        "--out", default=None, help="markdown output (default benchmarks/results/phase1.md; none with --quick)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    job = job_config()
    known = systems_for(job)
    parser.epilog = f"systems: {', '.join(known)}; default: {', '.join(default_systems(known))}"
    args = parser.parse_args()
    if args.child:
        child_main(args.child)
        return 0
    unknown = sorted(set(args.systems or ()) - set(known))
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(known)}")
    systems = [n for n in known if n in args.systems] if args.systems else default_systems(known)
    specs = {n: system_spec(known[n], job) for n in systems}
    machine = machine_info()
    cpu = None if args.no_pin else args.cpu if args.cpu is not None else pick_cpu()

    tmp = Path(tempfile.mkdtemp(prefix="bench-phase1-"))
    try:
        sets = input_sets(args, tmp)
        for s in sets:
            if s.get("skipped"):
                print(f"{s['name']}: skipped ({s['skipped']})", file=sys.stderr)
                continue
            runs: dict[str, list[dict]] = {n: [] for n in systems}
            for i in range(args.repeat):
                for name in systems:  # interleaved, so a busy spell does not hit one system only
                    r = run_system(name, specs[name], s["files"], cpu, tmp, args.timeout)
                    runs[name].append(r)
                    took = f"failed: {r['failed']}" if r.get("failed") else f"{r['wall_s']:.1f} s, kept {r['kept']}"
                    print(f"{s['name']}: {name} run {i + 1}/{args.repeat}: {took}", file=sys.stderr)
            s["results"] = {n: fastest(rs) for n, rs in runs.items()}
        ray = None
        if not args.no_ray and sets[0].get("files"):
            as_configured = not args.quick and args.samples == SAMPLES
            ray = run_ray(None if as_configured else sets[0]["files"], tmp, args.timeout)
            print(f"ray: {ray.get('failed') or format(ray['wall_s'], '.1f') + ' s'}", file=sys.stderr)
        machine["load_avg_end"] = machine_info()["load_avg"]
        report = render(args, machine, cpu, sets, specs, ray)
    finally:
        if args.keep:
            print(f"kept: {tmp}", file=sys.stderr)
        else:
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
