"""PII redaction throughput: ours vs presidio's AnalyzerEngine + AnonymizerEngine, same documents, one core each.

    python benchmarks/pii.py               # samples + the extraction dev set; writes benchmarks/results/pii.md
    python benchmarks/pii.py --quick       # the first 150 documents of each set, one repeat; prints, writes nothing
    python benchmarks/pii.py --repeat 3    # fastest of 3 interleaved runs per system

Documents: what phase 1 keeps with ``jobs/sample.yaml``'s settings (decode,
extraction, language ID, the quality filters), from ``samples/*.warc.gz`` and
from the shared extraction dev set of real Common Crawl pages: the text a
``final`` phase would get (before dedup removes copies).

Systems, each in its own child process pinned to one CPU (math libraries
single-threaded), so docs/s is per core:

- **ours**: ``PiiStage(PiiConfig())`` over Arrow batches of 2,048 rows (the
  final phase's batch size) of text, language, url and phase 1's other string
  columns (id, source, content type, charsets): RE2 prefilter, candidate
  windows, presidio on the windows, the redacted text and count columns, the
  url column redacted (``pii.urls``) and the other columns read (stages/pii/fields.py;
  presidio's engine is given the text only);
- **presidio**: ``AnalyzerEngine()`` with its default recognizers on
  ``spacy.blank("en")``, ``analyze(text, language="en")`` on every document,
  then ``AnonymizerEngine().anonymize`` with its default operator (replace with
  ``<ENTITY_TYPE>``).

docs/s = documents / the child's wall seconds for the documents; building the
engines is reported apart (``setup s``, once per actor), imports are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a module in benchmarks/ named like a standard one would shadow it: never import from it as a top-level folder
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from benchmarks._common import (  # noqa: E402
    Measure,
    child_report,
    child_setup,
    machine_info,
    markdown_table,
    pick_cpu,
    run_child,
)

RESULTS = ROOT / "benchmarks" / "results" / "pii.md"
DEVSET = ROOT.parent / "shared" / "data" / "extraction-devset.warc.gz"
SYSTEMS = ("ours", "presidio")
BATCH_ROWS = 2048
QUICK_DOCS = 150
# Processed once before the clock starts, by both systems: first calls compile patterns and load
# phone metadata, which an actor pays once.
WARM_UP = (
    "Call +49 30 1234567 or 030 / 1234 567, mail ada@example.org, host 203.0.113.9 or 2001:db8::1, "
    "card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 "
    "00, SSN 987-65-4321, https://u:p@example.com/ on 2024-03-12."
)


# ---------------------------------------------------------------- documents


def phase1_documents(files: list[str]) -> pa.Table:  # noqa: F821
    """text, language and url of the documents phase 1 keeps (jobs/sample.yaml's settings), in this process."""
    import yaml

    from benchmarks.pii_eval import run_phase1

    data = yaml.safe_load((ROOT / "jobs" / "sample.yaml").read_text())
    return run_phase1(data, files)  # text, language, url and the other string columns the stage reads (id, source...)


def document_sets(args, tmp: Path) -> list[dict]:
    import pyarrow.parquet as pq

    sets = [
        ("samples", "samples: `samples/*.warc.gz`", sorted(str(p) for p in (ROOT / "samples").glob("*.warc.gz"))),
        (
            "devset",
            f"extraction dev set (real Common Crawl pages): `{DEVSET}`",
            [str(DEVSET)] if DEVSET.is_file() else [],
        ),
    ]
    out = []
    for name, title, files in sets:
        if not files:
            out.append({"name": name, "title": title, "skipped": "input not found"})
            continue
        table = phase1_documents(files)
        if args.quick:
            table = table.slice(0, QUICK_DOCS)
        path = tmp / f"{name}.parquet"
        pq.write_table(table, path)
        chars = sum(len(t) for t in table.column("text").to_pylist() if t)
        out.append({"name": name, "title": title, "path": str(path), "docs": table.num_rows, "chars": chars})
    return out


# ---------------------------------------------------------------- children


def child_ours(path: str) -> dict:
    import presidio_analyzer  # noqa: F401  (imports are not timed, for either system)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from stages.pii import PiiConfig, PiiStage

    table = pq.read_table(path)
    t0 = time.perf_counter()
    stage = PiiStage(PiiConfig())
    stage(pa.table({"text": pa.array([WARM_UP], pa.large_string()), "language": ["en"]}))
    stage.drain_counters()
    setup = time.perf_counter() - t0
    found = 0
    with Measure() as m:
        for batch in table.to_batches(BATCH_ROWS):
            out = stage(pa_table(batch))
            found += sum(
                sum(out.column(c).to_pylist()) for c in [*stage.columns.values(), "pii_url"] if c in out.column_names
            )
    counters = stage.drain_counters()
    return {**m.result(), "setup_s": setup, "findings": found, "counters": counters}


def pa_table(batch):
    import pyarrow as pa

    return pa.Table.from_batches([batch])


def child_presidio(path: str) -> dict:
    import presidio_analyzer  # noqa: F401
    import pyarrow.parquet as pq
    from presidio_anonymizer import AnonymizerEngine

    from stages.pii.recognizers import presidio_default_analyzer

    texts = [t for t in pq.read_table(path).column("text").to_pylist()]
    t0 = time.perf_counter()
    analyzer, anonymizer = presidio_default_analyzer(), AnonymizerEngine()
    anonymizer.anonymize(text=WARM_UP, analyzer_results=analyzer.analyze(text=WARM_UP, language="en"))
    setup = time.perf_counter() - t0
    found = 0
    with Measure() as m:
        for text in texts:
            if not text:
                continue
            results = analyzer.analyze(text=text, language="en")
            anonymizer.anonymize(text=text, analyzer_results=results)
            found += len(results)
    return {**m.result(), "setup_s": setup, "findings": found}


def child_main(system: str, path: str) -> None:
    child_setup()
    child_report({"ours": child_ours, "presidio": child_presidio}[system](path))


# ---------------------------------------------------------------- report


def fmt(x: float, nd: int = 1) -> str:
    return f"{x:,.{nd}f}"


def report(sets: list[dict], results: dict, args, info0: dict, load_end) -> str:
    cpu = pick_cpu()
    lines = [
        "# PII redaction throughput: ours vs presidio",
        "",
        f"- {info0['date']} · {info0['nproc']} CPUs ({info0['cpu']}) "
        f"· {info0['mem_gib']} GiB · Python {info0['python']}",
        f"- load average at the start {info0['load_avg']}, at the end {load_end} "
        "(well above 0 means other work shared the machine: compare docs/CPU-s)",
        f"- command: `python benchmarks/pii.py{' --quick' if args.quick else ''}"
        f"{f' --repeat {args.repeat}' if args.repeat > 1 else ''}`",
        f"- each system in its own process, pinned to CPU {cpu}, math libraries "
        f"single-threaded; the fastest of {args.repeat} interleaved run(s)",
        "- **ours**: `PiiStage(PiiConfig())` on Arrow batches of 2,048 "
        "rows; **presidio**: `AnalyzerEngine()` (all default recognizers, "
        '`spacy.blank("en")`) `.analyze(text, language="en")` + `AnonymizerEngine().anonymize` per document',
        "- **docs/s**: documents ÷ wall seconds of the processing (building the engines "
        "and one warm-up paragraph apart: **setup s**, once per actor; imports not counted); "
        "**docs/CPU-s** uses CPU seconds; **× presidio**: ratio of "
        "docs/s (and of docs/CPU-s) to presidio's on the same documents",
        "",
    ]
    for s in sets:
        lines += [f"## {s['title']}", ""]
        if "skipped" in s:
            lines += [f"skipped: {s['skipped']}", ""]
            continue
        lines += [
            f"{s['docs']:,} documents (what phase 1 keeps), {s['chars'] / 1e6:.1f} "
            f"M characters, {s['chars'] / max(1, s['docs']):,.0f} per document.",
            "",
        ]
        rows = []
        base = results[s["name"]].get("presidio", {})
        for system in SYSTEMS:
            r = results[s["name"]].get(system)
            if r is None or "failed" in r:
                rows.append([f"**{system}**", "failed: " + (r or {}).get("failed", "?")] + [""] * 8)
                continue
            dps, dpc = s["docs"] / r["wall_s"], s["docs"] / max(r["cpu_s"], 1e-9)
            ok = base and "failed" not in base
            x = f"**{dps / (s['docs'] / base['wall_s']):.1f}×**" if ok else "–"
            xc = f"{dpc / (s['docs'] / max(base['cpu_s'], 1e-9)):.1f}×" if ok else "–"
            rows.append(
                [
                    f"**{system}**",
                    fmt(r["setup_s"], 2),
                    fmt(r["wall_s"], 2),
                    fmt(r["cpu_s"], 2),
                    fmt(dps),
                    fmt(dpc),
                    x,
                    xc,
                    f"{r['findings']:,}",
                    f"{r['peak_rss_mb']:.0f}",
                ]
            )
        lines += [
            markdown_table(
                [
                    "system",
                    "setup s",
                    "wall s",
                    "CPU s",
                    "docs/s",
                    "docs/CPU-s",
                    "× presidio",
                    "× presidio (CPU)",
                    "findings",
                    "peak RSS MB",
                ],
                rows,
            ),
            "",
        ]
        ours = results[s["name"]].get("ours", {})
        c = ours.get("counters") or {}
        if c:
            lines += [
                f"- ours: {c.get('docs_with_candidates', 0):,} of "
                f"{s['docs']:,} documents had a candidate and went to presidio "
                f"({c.get('presidio_calls', 0):,} calls, "
                f"{c.get('chars_analyzed', 0) / max(1, s['chars']):.1%} of the characters); "
                f"{c.get('docs_changed', 0):,} documents changed; findings by type: "
                + ", ".join(f"{k.split('.', 1)[1]} {v:,}" for k, v in sorted(c.items()) if k.startswith("found.")),
                "",
            ]
            if "url.read" in c:
                lines += [
                    f"- URLs: {c['url.read']:,} of {s['docs']:,} passed "
                    "the RE2 prefilter and were read value by value, "
                    f"{c.get('url.changed', 0):,} changed; findings by type: "
                    + (
                        ", ".join(
                            f"{k.split('.', 2)[2]} {v:,}" for k, v in sorted(c.items()) if k.startswith("url.found.")
                        )
                        or "none"
                    ),
                    "",
                ]
        lines += [
            "- findings differ by design: presidio's default engine "
            "also reports DATE_TIME, URL, UUID, US_DRIVER_LICENSE, ... "
            "and look-alikes (see benchmarks/results/pii_eval.md for what is right)",
            "",
        ]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--quick", action="store_true", help=f"the first {QUICK_DOCS} documents of each set; print, write nothing"
    )
    ap.add_argument("--repeat", type=int, default=1, help="interleaved runs per system; the fastest counts")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds before a child is stopped")
    ap.add_argument("--child", nargs=2, metavar=("SYSTEM", "PARQUET"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child_main(*args.child)
        return
    info0 = machine_info()
    cpu = pick_cpu()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        sets = document_sets(args, tmp)
        for s in sets:
            if "skipped" in s:
                continue
            results[s["name"]] = {}
            for rep in range(args.repeat):
                for system in SYSTEMS:
                    r = run_child(
                        [str(Path(__file__).resolve()), "--child", system, s["path"]],
                        cpu,
                        tmp / f"{s['name']}-{system}-{rep}.log",
                        args.timeout,
                        cwd=ROOT,
                    )
                    print(
                        f"{s['name']} {system} run {rep + 1}: "
                        f"{json.dumps({k: v for k, v in r.items() if k != 'counters'})}",
                        flush=True,
                    )
                    best = results[s["name"]].get(system)
                    if (
                        best is None
                        or ("failed" in best and "failed" not in r)
                        or ("failed" not in r and r["wall_s"] < best["wall_s"])
                    ):
                        results[s["name"]][system] = r
    text = report(sets, results, args, info0, tuple(round(x, 2) for x in os.getloadavg()))
    print(text)
    if not args.quick:
        RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
