"""Assemble benchmarks/README.md from the latest results/*.md.

Each benchmark script writes its own table to results/<name>.md; this puts
them together in a fixed order so README.md never drifts from the results.

    python benchmarks/report.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

SECTIONS = [
    (
        "e2e",
        "python benchmarks/e2e.py --systems ours datatrove nemo --cpu 1 --repeat 2",
        "The whole pipeline end to end (WARC → … → tokens) against "
        "DataTrove's FineWeb pipeline and NeMo Curator's CPU pipeline",
    ),
    (
        "e2e_wcxb",
        "python benchmarks/e2e.py --corpus wcxb --systems ours datatrove nemo",
        "The whole pipeline end to end on large real pages of seven types (WCXB's dev split)",
    ),
    (
        "startup",
        "python benchmarks/startup.py --before acd01ff",
        "Fixed costs of a run: start-up and each phase's set-up",
    ),
    (
        "phase1",
        "python benchmarks/phase1.py --repeat 3",
        "Phase 1 end to end (WARC → text → filters → Parquet) against DataTrove",
    ),
    (
        "extraction",
        "python benchmarks/extraction.py",
        "Main-text extraction: accuracy and speed on the shared dev set",
    ),
    ("filters", "python benchmarks/filters.py", "Heuristic filters against DataTrove's"),
    ("dedup_signatures", "python benchmarks/dedup_signatures.py", "MinHash signatures against datasketch"),
    ("dedup_samples", "python benchmarks/dedup_samples.py --sweep", "Deduplication quality on samples/"),
    (
        "filters_stages",
        "python benchmarks/filters_stages.py",
        "Heuristic filters: CPU time per filter, before and after the speed-up",
    ),
    (
        "filters_verdicts",
        "python benchmarks/filters_verdicts.py",
        "Heuristic filters: same verdicts before and after the speed-up",
    ),
    (
        "dedup_scale",
        "python benchmarks/dedup_scale.py --docs 100000 1000000",
        "Deduplication at scale against DataTrove",
    ),
    (
        "dedup_scale_datajuicer",
        "python benchmarks/dedup_scale.py --docs 100000 1000000 --no-datatrove "
        "--cpu --results benchmarks/results/dedup_scale_datajuicer.md",
        "Deduplication at scale against Data-Juicer's Ray MinHash (until `dedup_scale.py` above is re-run with it)",
    ),
    (
        "dedup_scale_distributed",
        "python benchmarks/dedup_scale.py --docs 100000 --distributed "
        "--no-datatrove --results benchmarks/results/dedup_scale_distributed.md",
        "Deduplication at scale: the distributed connected-components path",
    ),
    (
        "dedup_scale_sim",
        "python benchmarks/dedup_scale.py --docs 1000000 2000000 4000000 --distributed --no-datatrove --cpu "
        "--results benchmarks/results/dedup_scale_sim.md",
        "Deduplication at scale: the distributed path at 1M, 2M and 4M documents "
        "(the simulation behind [scale.md](scale.md), the plan for a whole snapshot)",
    ),
    (
        "snapshot_recurring",
        "python benchmarks/snapshot.py --shape recurring --files 8000",
        "A snapshot's shape, every phase: 8,000 small WARC files whose pages recur across files (issue 39)",
    ),
    (
        "snapshot_same",
        "python benchmarks/snapshot.py --shape same --files 8000",
        "A snapshot's shape, every phase: one WARC given 8,000 times (every record id 8,000 times)",
    ),
    (
        "snapshot_heavy",
        "python benchmarks/snapshot.py --shape heavy --files 2000",
        "A snapshot's shape, every phase: heavy-tailed duplicate clusters (one of 3,000 copies) in 2,000 small files",
    ),
    (
        "snapshot_heavy_20000",
        "python benchmarks/snapshot.py --shape heavy --files "
        "--base /tmp/snapshot-bench/heavy/out-2000 --dedup-parts 20000 "
        "--results benchmarks/results/snapshot_heavy_20000.md",
        "A snapshot's shape, dedup alone: 20,000 parts cloned from the heavy-tailed run "
        "(clusters grow with the clones)",
    ),
    (
        "dedup_boilerplate",
        "python benchmarks/dedup_boilerplate.py",
        "Deduplication precision on pages that share a site's boilerplate",
    ),
    (
        "paragraph_dedup",
        "python benchmarks/paragraph_dedup.py --scale 1000000",
        "Paragraph dedup: exactness, placement against document dedup, cost at 1M documents",
    ),
    (
        "dedup_against",
        "python benchmarks/dedup_against.py",
        "Dedup against an earlier run's index: the second snapshot's cost and the index's size",
    ),
    (
        "quality",
        "python benchmarks/quality.py --repeat 1",
        "Classifier scoring (fastText, one to three models) against DataTrove's FastTextClassifierFilter",
    ),
    (
        "decontam",
        "python benchmarks/decontam.py",
        "Decontamination against eval sets: throughput and the index's cost",
    ),
    ("pii", "python benchmarks/pii.py --repeat 3", "PII redaction speed against presidio's default engine"),
    ("pii_eval", "python benchmarks/pii_eval.py", "PII detection quality against presidio's default engine"),
    ("tokenize", "python benchmarks/tokenization.py", "Tokenization and shard writing"),
    (
        "megatron_writer",
        "python benchmarks/megatron_writer.py --docs 3000 --repeats 3",
        "Megatron IndexedDataset writing against megatron-core's builder",
    ),
    (
        "big_warc",
        "python benchmarks/big_warc.py",
        "A 1 GB Common-Crawl-sized WARC through `curate run`: memory of the defaults (see also [scale.md](scale.md))",
    ),
    (
        "plan_checks",
        "python benchmarks/plan_checks.py",
        "Plan-time checks: what `validate` and `run` read of models, eval sets and document inputs before any work",
    ),
    (
        "install",
        "python3.11 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/pytest",
        "The test environment: size and time (the README's test command)",
    ),
]

INTRO = """# Benchmarks

Every figure here is measured against a baseline in the same run on the same
input (DataTrove 0.10, NeMo Curator 1.4, Data-Juicer 1.6, trafilatura,
resiliparse, datasketch, rensa, marin-dupekit; see `../shared/BASELINES.md`
for how they run offline). Throughput is docs/s per core (one process pinned
to one CPU unless a table says otherwise), memory is peak RSS. The machine is
the project's CI kind: 2 cores, 24 GiB. Baselines are never runtime
dependencies. DataTrove comes with the `bench` extra:
`pip install -e '.[bench]'`; the two others need their own venvs (their
pins clash with ours), from the package registry only, with nothing
downloaded at run time:

```
# Data-Juicer 1.6 (benchmarks/dedup_scale.py finds .venv-dj/bin/python; ~1.0 GB)
python3.11 -m venv .venv-dj
.venv-dj/bin/pip install 'py-data-juicer==1.6.1' 'ray[default,data]==2.60.0' psutil
# NeMo Curator 1.4, CPU text stages (benchmarks/e2e.py finds .venv-nemo/bin/python; ~2.3 GB)
python3.11 -m venv .venv-nemo
.venv-nemo/bin/pip install torch==2.13.0        # the CPU build (this machine's pip cap)
.venv-nemo/bin/pip install 'nemo-curator[text-cpu]==1.4.0' torch==2.13.0 lxml_html_clean psutil
# the Rust MinHash kernels, in the venv that runs benchmarks/dedup_signatures.py (~17 MB)
pip install 'rensa==0.5.0' 'marin-dupekit==0.1.1'
```

NeMo Curator needs `lxml_html_clean` beside its `text-cpu` extra (jusText
imports `lxml.html.clean`, a separate distribution since lxml 5.2). Its exact
and fuzzy deduplication are cuDF stages that ask Ray for a GPU: they cannot
run on a CPU machine, here or on a CPU cluster.

This file is assembled from `results/*.md` by `python benchmarks/report.py`;
each section names the command that reproduces it. The main README's
"Performance" section sums it up in one table.
"""


def main() -> None:
    parts = [INTRO]
    for name, command, title in SECTIONS:
        path = HERE / "results" / f"{name}.md"
        if not path.exists():
            continue
        lines = path.read_text().strip().splitlines()
        if lines and lines[0].startswith("# "):
            lines = lines[1:]  # the section title replaces the file's own
        # Demote the result file's other headings under this section.
        body = "\n".join("#" + line if line.startswith("#") else line for line in lines).strip()
        parts.append(f"## {title}\n\nReproduce: `{command}`\n\n{body}\n")
    (HERE / "README.md").write_text("\n".join(parts))


if __name__ == "__main__":
    main()
