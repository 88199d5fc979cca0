"""Assemble benchmarks/README.md from the latest results/*.md.

Each benchmark script writes its own table to results/<name>.md; this puts
them together in a fixed order so README.md never drifts from the results.

    python benchmarks/report.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

SECTIONS = [
    ("e2e", "python benchmarks/e2e.py --parallel --scale 4", "The whole pipeline end to end (WARC → … → tokens) against DataTrove's FineWeb pipeline"),
    ("startup", "python benchmarks/startup.py --before 1d3bd25", "Fixed costs of a run: start-up and each phase's set-up"),
    ("phase1", "python benchmarks/phase1.py --repeat 3", "Phase 1 end to end (WARC → text → filters → Parquet) against DataTrove"),
    ("extraction", "python benchmarks/extraction.py", "Main-text extraction: accuracy and speed on the shared dev set"),
    ("filters", "python benchmarks/filters.py", "Heuristic filters against DataTrove's"),
    ("dedup_signatures", "python benchmarks/dedup_signatures.py", "MinHash signatures against datasketch"),
    ("dedup_samples", "python benchmarks/dedup_samples.py --sweep", "Deduplication quality on samples/"),
    ("filters_stages", "python benchmarks/filters_stages.py", "Heuristic filters: CPU time per filter, before and after the speed-up"),
    ("filters_verdicts", "python benchmarks/filters_verdicts.py", "Heuristic filters: same verdicts before and after the speed-up"),
    ("dedup_scale", "python benchmarks/dedup_scale.py --docs 100000 1000000", "Deduplication at scale against DataTrove"),
    ("dedup_scale_distributed", "python benchmarks/dedup_scale.py --docs 100000 --distributed --no-datatrove --results benchmarks/results/dedup_scale_distributed.md",
     "Deduplication at scale: the distributed connected-components path"),
    ("dedup_scale_sim", "python benchmarks/dedup_scale.py --docs 1000000 2000000 4000000 --distributed --no-datatrove --cpu --results benchmarks/results/dedup_scale_sim.md",
     "Deduplication at scale: the distributed path at 1M, 2M and 4M documents (the simulation behind [scale.md](scale.md), the plan for a whole snapshot)"),
    ("dedup_boilerplate", "python benchmarks/dedup_boilerplate.py", "Deduplication precision on pages that share a site's boilerplate"),
    ("quality", "python benchmarks/quality.py", "Quality scoring (fastText) against DataTrove's FastTextClassifierFilter"),
    ("pii", "python benchmarks/pii.py --repeat 3", "PII redaction speed against presidio's default engine"),
    ("pii_eval", "python benchmarks/pii_eval.py", "PII detection quality against presidio's default engine"),
    ("tokenize", "python benchmarks/tokenization.py", "Tokenization and shard writing"),
    ("big_warc", "python benchmarks/big_warc.py",
     "A 1 GB Common-Crawl-sized WARC through `curate run`: memory of the defaults (see also [scale.md](scale.md))"),
]

INTRO = """# Benchmarks

Every figure here is measured against a baseline in the same run on the same
input (DataTrove 0.10, trafilatura, resiliparse, datasketch; see
`../shared/BASELINES.md` for how they run offline). Throughput is docs/s per
core (one process pinned to one CPU unless a table says otherwise), memory is
peak RSS. The machine is the project's CI kind: 2 cores, 24 GiB. Baselines are
installed with the `bench` extra: `pip install -e '.[bench]'` (never a runtime
dependency).

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
