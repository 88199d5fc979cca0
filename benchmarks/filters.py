"""Heuristic filters: ours vs DataTrove's FineWeb filter chain, on the same texts, in the same run.

    python benchmarks/filters.py           # dev set + samples/; writes benchmarks/results/filters.md
    python benchmarks/filters.py --quick   # 200 dev-set pages + samples; prints, writes nothing
    python benchmarks/filters.py --extractor resiliparse   # texts from another extractor; prints only

The texts are extracted once, before timing, with our phase-1 stages
(decode -> extraction with the pipeline's default extractor -> language ID,
every language kept): the pages of the
shared extraction dev set (real news, blog and reference pages) and of
``samples/`` (with its ground truth).  Then each system runs in its own child
process pinned to one CPU, so docs/s is per core and memory is its own:

- ours: ``build_filters(FiltersConfig())`` (Gopher quality -> Gopher
  repetition -> C4 -> FineWeb) over Arrow batches of 256 documents, and the
  same with ``c4.filter_no_terminal_punct: false`` (FineWeb's C4 setting);
- DataTrove 0.10: ``GopherRepetitionFilter -> GopherQualityFilter ->
  C4QualityFilter(filter_no_terminal_punct=False) -> FineWebQualityFilter``,
  each ``filter(doc)`` called in a loop (no executor, no I/O: only the
  filters are timed, as for ours).  Its English word tokenizer is spaCy's
  (``spacy.blank("en")``, no model download); install ``spacy`` for it.

Agreement is measured on English documents (DataTrove's filters are its
English configuration, as FineWeb runs them after its English language
filter), between DataTrove and ours with the same C4 setting.

See also ``filters_stages.py`` (each filter's time, this tree against an
earlier revision) and ``filters_verdicts.py`` (the same verdicts, document by
document, as that revision).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Measure, child_report, child_setup, machine_info, markdown_table, pick_cpu, run_child  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEVSET = ROOT.parent / "shared" / "data" / "extraction-devset.warc.gz"
SAMPLES = ROOT / "samples"
RESULTS = ROOT / "benchmarks" / "results" / "filters.md"
BATCH = 256
SYSTEMS = {
    "ours": {"kind": "ours", "config": {}},
    "ours, FineWeb's C4 setting": {"kind": "ours", "config": {"c4": {"filter_no_terminal_punct": False}}},
    "DataTrove": {"kind": "datatrove"},
}
BASELINE = "DataTrove"


# ---------------------------------------------------------------- texts (not timed)
def extract_texts(files: list[Path], corpus: str, limit: int | None, extractor: str | None) -> list[dict]:
    """Documents as phase 1 produces them before the filters."""

    from stages.base import ChainStats, run_chain
    from stages.charset import DecodeStage
    from stages.extract import ExtractConfig, ExtractStage
    from stages.langid import LangIdConfig, LangIdStage
    from stages.warc import ReadStats, WarcReader

    extract = ExtractConfig() if extractor is None else ExtractConfig(extractor=extractor)
    stages = [DecodeStage(), ExtractStage(extract), LangIdStage(LangIdConfig(min_score=0.0))]
    rows: list[dict] = []
    for path in files:
        with open(path, "rb") as f:
            for batch in WarcReader().iter_batches(f, str(path), ReadStats()):
                kept, _ = run_chain(stages, batch, ChainStats())
                rows += kept.select(["id", "url", "text", "language"]).to_pylist()
                if limit and len(rows) >= limit:
                    return [dict(r, corpus=corpus) for r in rows[:limit]]
    return [dict(r, corpus=corpus) for r in rows]


# ---------------------------------------------------------------- children (one system, one process, one core)
def vm_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process; unlike ru_maxrss, not inherited across exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measured(m: Measure, rss_before: float, verdicts: dict) -> dict:
    return {**m.result(), "rss_before_mb": rss_before, "peak_mb": vm_mb("VmHWM"), "verdicts": verdicts}


def child_ours(spec: dict, docs: list[dict]) -> dict:
    import pyarrow as pa

    from stages.base import ChainStats, run_chain
    from stages.filters import FiltersConfig, build_filters

    table = pa.Table.from_pylist([{k: d[k] for k in ("id", "url", "text", "language")} for d in docs])
    batches = [table.slice(i, BATCH) for i in range(0, len(table), BATCH)]
    stages = build_filters(FiltersConfig.model_validate(spec["config"]))
    run_chain(stages, batches[0].slice(0, 8), ChainStats())  # warm-up: imports, ICU, regex caches
    verdicts: dict[str, str | None] = {}
    rss_before = vm_mb("VmRSS")
    with Measure() as m:
        for batch in batches:
            kept, rejected = run_chain(stages, batch, ChainStats())
            verdicts.update(dict.fromkeys(kept.column("id").to_pylist()))
            for r in rejected:
                verdicts.update(zip(r.column("id").to_pylist(), r.column("reason").to_pylist(), strict=False))
    return measured(m, rss_before, verdicts)


def child_datatrove(spec: dict, docs: list[dict]) -> dict:
    from datatrove.data import Document
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    chain = [
        ("gopher_repetition", GopherRepetitionFilter()),
        ("gopher_quality", GopherQualityFilter()),
        ("c4", C4QualityFilter(filter_no_terminal_punct=False)),
        ("fineweb", FineWebQualityFilter()),
    ]
    for _, f in chain:  # warm-up: spaCy tokenizer load
        f.filter(Document(text=docs[0]["text"], id="warmup"))
    verdicts: dict[str, str | None] = {}
    rss_before = vm_mb("VmRSS")
    with Measure() as m:
        for d in docs:
            doc = Document(text=d["text"], id=d["id"])
            verdict = None
            for name, f in chain:
                result = f.filter(doc)
                if result is not True:
                    reason = result[1] if isinstance(result, tuple) else "dropped"
                    verdict = f"{name}:{reason}"
                    break
            verdicts[d["id"]] = verdict
    return measured(m, rss_before, verdicts)


def child_main(spec_path: str) -> None:
    child_setup()
    spec = json.loads(Path(spec_path).read_text())
    docs = json.loads(Path(spec["docs"]).read_text())
    child_report((child_ours if spec["kind"] == "ours" else child_datatrove)(spec, docs))


# ---------------------------------------------------------------- report
def pct(num: int, den: int) -> str:
    return f"{100 * num / den:.1f}%" if den else "–"


def speed_table(docs: list[dict], results: dict[str, dict]) -> str:
    base = results.get(BASELINE, {})
    base_rate = len(docs) / base["cpu_s"] if "cpu_s" in base else None
    rows = []
    for name, r in results.items():
        if "failed" in r:
            rows.append([name, "failed", "", "", "", r["failed"]])
            continue
        rate = len(docs) / r["cpu_s"]
        vs = f"{rate / base_rate:.1f}×" if base_rate and name != BASELINE else ""
        kept = sum(v is None for v in r["verdicts"].values())
        grow = r["peak_mb"] - r["rss_before_mb"]
        rows.append(
            [
                name,
                f"{rate:,.0f}",
                vs,
                f"{len(docs) / r['wall_s']:,.0f}",
                f"{r['peak_mb']:,.0f}",
                f"{grow:,.0f}",
                pct(kept, len(docs)),
            ]
        )
    headers = [
        "system",
        "docs/s per core (CPU)",
        f"vs {BASELINE}",
        "docs/s (wall)",
        "peak RSS MB",
        "growth while filtering MB",
        "kept",
    ]
    return markdown_table(headers, rows)


def agreement_table(docs: list[dict], ours: dict, theirs: dict) -> tuple[str, str]:
    en = [d for d in docs if d["language"] == "en"]
    rows = []
    for corpus in sorted({d["corpus"] for d in en}) + ["all"]:
        sel = [d["id"] for d in en if corpus in ("all", d["corpus"])]
        both_keep = sum(ours[i] is None and theirs[i] is None for i in sel)
        both_drop = sum(ours[i] is not None and theirs[i] is not None for i in sel)
        rows.append(
            [corpus, len(sel), pct(both_keep + both_drop, len(sel)), both_keep, both_drop,
             sum(ours[i] is None and theirs[i] is not None for i in sel),
             sum(ours[i] is not None and theirs[i] is None for i in sel)]
        )  # fmt: skip
    table = markdown_table(
        ["English docs", "n", "agreement", "both keep", "both drop", "only DataTrove drops", "only ours drops"], rows
    )
    diffs = collections.Counter(
        (theirs[d["id"]] or "kept", ours[d["id"]] or "kept")
        for d in en
        if (ours[d["id"]] is None) != (theirs[d["id"]] is None)
    )
    diff_table = markdown_table(
        ["DataTrove's verdict", "ours (FineWeb's C4 setting)", "docs"],
        [[a, b, n] for (a, b), n in diffs.most_common()],
    )
    return table, diff_table


def retention_by_language(docs: list[dict], results: dict[str, dict], corpus: str) -> str:
    sel = [d for d in docs if d["corpus"] == corpus]
    counts = collections.Counter(d["language"] for d in sel)
    langs = [lang for lang, n in counts.most_common() if n >= 5]
    rows = []
    for lang in langs + ["other", "all"]:
        group = [
            d
            for d in sel
            if lang == "all" or d["language"] == lang or (lang == "other" and d["language"] not in langs)
        ]
        if not group:
            continue
        row = [lang, len(group)]
        for name, r in results.items():
            if "verdicts" not in r:
                row.append("–")
            elif name == BASELINE and lang not in ("en",):
                row.append("(en only)")
            else:
                row.append(pct(sum(r["verdicts"][d["id"]] is None for d in group), len(group)))
        rows.append(row)
    return markdown_table(["language", "docs", *(f"kept: {n}" for n in results)], rows)


def removals_by_rule(docs: list[dict], verdicts: dict, corpus: str, min_share: float = 0.0) -> str:
    sel = [d for d in docs if d["corpus"] == corpus]
    langs = [lang for lang, n in collections.Counter(d["language"] for d in sel).most_common(2)]
    by_rule = collections.Counter(verdicts[d["id"]] for d in sel if verdicts[d["id"]])
    removed = sum(by_rule.values())
    rows = []
    for rule, n in by_rule.most_common():
        row = [rule, n, pct(n, removed), pct(n, len(sel))]
        for lang in langs:
            group = [d for d in sel if d["language"] == lang]
            row.append(pct(sum(verdicts[d["id"]] == rule for d in group), len(group)))
        rows.append(row)
    rows.append(["**all rules**", removed, pct(removed, removed), pct(removed, len(sel)), *("" for _ in langs)])
    headers = ["rule (ours)", "docs", "share of removals", "share of all", *(f"share of {lang}" for lang in langs)]
    return markdown_table(headers, rows)


def samples_table(docs: list[dict], results: dict[str, dict], truth: dict[str, dict]) -> str:
    sel = [d for d in docs if d["corpus"] == "samples" and d["id"] in truth]
    kinds = collections.Counter(truth[d["id"]]["kind"] for d in sel)
    rows = []
    for kind, n in kinds.most_common():
        group = [d for d in sel if truth[d["id"]]["kind"] == kind]
        en = [d for d in group if d["language"] == "en"]
        expect = collections.Counter(truth[d["id"]]["expect"] for d in group).most_common(1)[0][0]
        row = [kind, expect, n]
        for name, r in results.items():
            if "verdicts" not in r:
                row.append("–")
            elif name == BASELINE:
                row.append(f"{pct(sum(r['verdicts'][d['id']] is None for d in en), len(en))} of {len(en)} en")
            else:
                row.append(pct(sum(r["verdicts"][d["id"]] is None for d in group), n))
        rows.append(row)
    return markdown_table(["kind (ground truth)", "expect", "docs", *(f"kept: {n}" for n in results)], rows)


def prose_by_language(docs: list[dict], verdicts: dict, truth: dict[str, dict]) -> str:
    prose = [d for d in docs if d["corpus"] == "samples" and truth.get(d["id"], {}).get("kind") == "prose"]
    rows = []
    for lang, n in collections.Counter(truth[d["id"]]["language"] for d in prose).most_common():
        group = [d for d in prose if truth[d["id"]]["language"] == lang]
        top = collections.Counter(verdicts[d["id"]] for d in group if verdicts[d["id"]]).most_common(2)
        rows.append(
            [lang, n, pct(sum(verdicts[d["id"]] is None for d in group), n), ", ".join(f"{r} {k}" for r, k in top)]
        )
    return markdown_table(["prose language", "docs", "kept (ours)", "main removals"], rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200 dev-set pages + samples; print only")
    ap.add_argument("--extractor", help="extractor for the texts (default: the pipeline's default)")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args.child)
        return 0

    t0 = time.perf_counter()
    docs: list[dict] = []
    if DEVSET.is_file():
        docs += extract_texts([DEVSET], "devset", 200 if args.quick else None, args.extractor)
    else:
        print(f"note: {DEVSET} not found; dev-set tables skipped", file=sys.stderr)
    sample_files = sorted(Path(p) for p in glob.glob(str(SAMPLES / "*.warc.gz")))
    docs += extract_texts(sample_files, "samples", None, args.extractor)
    truth_path = SAMPLES / "ground_truth.jsonl"
    truth = {r["id"]: r for r in map(json.loads, truth_path.open())} if truth_path.is_file() else {}
    print(f"{len(docs)} documents extracted in {time.perf_counter() - t0:.0f}s", file=sys.stderr)

    cpu = pick_cpu()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-filters-") as tmp:
        docs_path = Path(tmp, "docs.json")
        docs_path.write_text(json.dumps(docs))
        for name, spec in SYSTEMS.items():
            spec_path = Path(tmp, f"{spec['kind']}-{len(results)}.spec.json")
            spec_path.write_text(json.dumps({**spec, "docs": str(docs_path)}))
            print(f"running {name} ...", file=sys.stderr)
            results[name] = run_child(
                [str(Path(__file__).resolve()), "--child", str(spec_path)], cpu,
                Path(tmp, f"{spec['kind']}-{len(results)}.log"), args.timeout, cwd=ROOT,
            )  # fmt: skip

    from stages.extract import ExtractConfig

    extractor = args.extractor or ExtractConfig().extractor
    info = machine_info()
    parts = [
        "# Heuristic filters: ours vs DataTrove",
        f"{info['date']} · {info['cpu']} · {info['nproc']} CPUs · Python {info['python']} · load {info['load_avg']}",
        f"Same {len(docs)} documents for every system ({sum(d['corpus'] == 'devset' for d in docs)} dev-set pages, "
        f"{sum(d['corpus'] == 'samples' for d in docs)} sample pages), extracted with `{extractor}` before timing; "
        "one process pinned to one CPU per system. Re-run: `python benchmarks/filters.py`.",
        "## Speed and memory",
        speed_table(docs, results),
    ]
    ok = all("verdicts" in results.get(n, {}) for n in (BASELINE, "ours, FineWeb's C4 setting"))
    if ok:
        agree, diffs = agreement_table(
            docs, results["ours, FineWeb's C4 setting"]["verdicts"], results[BASELINE]["verdicts"]
        )
        parts += [
            "## Agreement with DataTrove (same C4 setting, English documents)",
            agree,
            "### Where they differ",
            diffs,
        ]
    ours = results["ours"].get("verdicts")
    if ours and any(d["corpus"] == "devset" for d in docs):
        parts += [
            "## Retention on the extraction dev set (real news, blog and reference pages), by language",
            retention_by_language(docs, results, "devset"),
            "### Removals by rule (ours, default settings)",
            removals_by_rule(docs, ours, "devset"),
        ]
    if ours and truth:
        parts += [
            "## Samples: kept fraction by ground-truth kind",
            samples_table(docs, results, truth),
            "### Prose pages by language (ours, default settings)",
            prose_by_language(docs, ours, truth),
            "### Removals by rule on samples (ours, default settings)",
            removals_by_rule(docs, ours, "samples"),
        ]
    report = "\n\n".join(parts) + "\n"
    print(report)
    if not args.quick and args.extractor is None:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report)
        print(f"written to {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0 if all("failed" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
