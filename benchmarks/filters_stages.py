"""CPU time of each heuristic filter: this tree against an earlier revision, same texts, same run.

    python benchmarks/filters_stages.py                # against d5994fe (before the speed-up);
                                                       # writes benchmarks/results/filters_stages.md
    python benchmarks/filters_stages.py --ref HEAD~3   # against any revision; prints only
    python benchmarks/filters_stages.py --quick        # 200 dev-set pages + samples; prints only

The texts are those of ``benchmarks/filters.py`` (the shared extraction dev set
and ``samples/``, extracted with phase 1's stages before timing).  Each side
runs in its own child process pinned to one CPU: the revision's ``stages/``
comes from ``git archive`` into a temporary folder, first on the child's
path.  A child runs the default chain (Gopher quality -> Gopher repetition ->
C4 -> FineWeb, rejected rows removed between filters as ``run_chain`` does)
in batches of 256 documents (as ``benchmarks/filters.py``) and of 64 (as
phase 1 reads WARCs), three times each, and keeps the fastest run; each
filter's time is the CPU time of its calls.

A second table times the three ways to split the words of the same texts
(``re.findall``, RE2 in Arrow, the numpy code-point scan the filters use)
and checks that they agree on every document.
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from filters import vm_mb  # noqa: E402

from _common import child_report, child_setup, machine_info, markdown_table, pick_cpu, run_child  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "filters_stages.md"
BEFORE = "d5994fe"  # the last revision before the filters were vectorized
BATCH = 256  # as benchmarks/filters.py
BATCHES = (256, 64)  # ... and as phase 1 (WARC batches of 64 records)
REPEATS = 3
FILTERS = ["gopher_quality", "gopher_repetition", "c4", "fineweb"]


# ---------------------------------------------------------------- child: one revision, one CPU
def child_main(spec_path: str) -> None:
    child_setup()
    spec = json.loads(Path(spec_path).read_text())
    if spec["root"]:
        sys.path.insert(0, spec["root"])
    import pyarrow as pa

    import stages.filters
    from stages.base import split_rejected
    from stages.filters import FiltersConfig, build_filters

    docs = json.loads(Path(spec["docs"]).read_text())
    result: dict = {"module": stages.filters.__file__, "corpora": {}}
    rss_before = vm_mb("VmRSS")
    for corpus in sorted({d["corpus"] for d in docs}):
        rows = [{k: d[k] for k in ("id", "url", "text", "language")} for d in docs if d["corpus"] == corpus]
        table = pa.Table.from_pylist(rows)
        result["corpora"][corpus] = {"docs": len(rows), "seconds": {}}
        for size in BATCHES:
            batches = [table.slice(i, size) for i in range(0, len(table), size)]
            chain = build_filters(FiltersConfig())
            best: dict | None = None
            for _ in range(REPEATS + 1):  # the first run warms up (imports, ICU, regex caches)
                seconds = dict.fromkeys(FILTERS, 0.0)
                for batch in batches:
                    for stage in chain:
                        t0 = time.process_time()
                        batch = stage(batch)
                        seconds[stage.name] += time.process_time() - t0
                        batch, _ = split_rejected(batch, stage.name)
                if best is None or sum(seconds.values()) < sum(best.values()):
                    best = seconds
            result["corpora"][corpus]["seconds"][str(size)] = best
    result["growth_mb"] = vm_mb("VmHWM") - rss_before
    if spec.get("words"):
        result["words"] = time_word_splitters([d["text"] for d in docs])
    child_report(result)


def time_word_splitters(texts: list[str]) -> dict:
    """Seconds (best of 3) of three word splitters over the same batches, and whether they agree."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from stages.filters.charclasses import ALNUM_RANGES, MARK_RANGES, SPACE_RANGES, re2_class
    from stages.filters.words import NO_SPACE_RE, WORD_RE, word_lists

    # WORD_RE for RE2, with Python's classes spelled out; each word marked with NULs, then split.
    alnum, space, mark = (re2_class(r) for r in (ALNUM_RANGES, SPACE_RANGES, MARK_RANGES))
    word_re2 = f"[{alnum}](?:[^{space}]*[{alnum}])?[{mark}]*"

    def re2_words(batch: pa.Array) -> pa.Array:
        marked = pc.replace_substring_regex(batch, word_re2, "\x00\\0\x00")
        return pc.list_slice(pc.split_pattern(marked, "\x00"), 1, None, 2)

    # Only texts without ICU segmentation and without NUL: all three define their words alike.
    plain = [t for t in texts if not NO_SPACE_RE.search(t) and "\x00" not in t]
    batches = [pa.array(plain[i : i + BATCH], pa.large_string()) for i in range(0, len(plain), BATCH)]
    ways = {
        "Python `re.findall` (one call per document)": lambda b: [WORD_RE.findall(t) for t in b.to_pylist()],
        "RE2 in Arrow (`replace_substring_regex` + `split_pattern`)": re2_words,
        "numpy code points (`words.word_lists`, used by the filters)": word_lists,
    }
    out: dict = {"docs": len(plain), "chars": sum(map(len, plain)), "seconds": {}, "agree": True}
    results = {}
    for name, split in ways.items():
        best = np.inf
        for _ in range(3):
            t0 = time.process_time()
            got = [split(b) for b in batches]
            best = min(best, time.process_time() - t0)
        out["seconds"][name] = best
        results[name] = [w for g in got for w in (g if isinstance(g, list) else g.to_pylist())]
    first = next(iter(results.values()))
    out["agree"] = all(r == first for r in results.values())
    return out


# ---------------------------------------------------------------- parent
def archive(ref: str, into: Path) -> None:
    """``stages/`` of a git revision, unpacked under ``into``."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, "stages"], check=True,
                         capture_output=True).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(into, filter="data")


def report(docs: list[dict], ref: str, results: dict[str, dict]) -> str:
    info = machine_info()
    before, after = results["before"], results["after"]
    parts = [
        "# Heuristic filters: CPU time per filter, before and after",
        f"{info['date']} · {info['cpu']} · {info['nproc']} CPUs · Python {info['python']} · load {info['load_avg']}",
        (
            f"Same {len(docs)} documents for both sides (texts as in `benchmarks/filters.py`); **before** = revision "
            f"`{ref}`, **after** = this tree; each side in one process pinned to one CPU, default chain, rejected "
            f"rows removed between filters, fastest of {REPEATS} runs. "
            "Re-run: `python benchmarks/filters_stages.py`. Milliseconds of CPU per document; (256), (64): "
            "documents per batch (`benchmarks/filters.py` uses 256, phase 1 reads WARCs 64 records at a time)."
        ),
    ]
    if "failed" in before or "failed" in after:
        return "\n\n".join(parts + [f"failed: {before.get('failed') or after.get('failed')}"]) + "\n"
    for corpus, b in before["corpora"].items():
        a = after["corpora"][corpus]
        rows = []
        for name in [*FILTERS, "all four"]:
            row = [f"**{name}**" if name == "all four" else name]
            for size in map(str, BATCHES):
                sb, sa = (sum(x["seconds"][size].values()) if name == "all four" else x["seconds"][size][name]
                          for x in (b, a))  # fmt: skip
                row += [
                    f"{1000 * sb / b['docs']:.2f}",
                    f"{1000 * sa / a['docs']:.2f}",
                    f"{sb / sa:.1f}×" if sa else "–",
                ]
            rows.append(row)
        headers = ["filter"] + [f"{h} ({size})" for size in BATCHES for h in ("before", "after", "speed-up")]
        parts += [f"## {corpus} ({b['docs']} documents)", markdown_table(headers, rows)]
    parts.append(
        f"Peak RSS growth while filtering (both corpora, all runs): before {before['growth_mb']:.0f} MB, "
        f"after {after['growth_mb']:.0f} MB."
    )
    w = after.get("words")
    if w:
        base = w["seconds"]["Python `re.findall` (one call per document)"]
        rows = [[name, f"{s:.3f}", f"{base / s:.1f}×"] for name, s in w["seconds"].items()]
        parts += [
            "## Word splitting",
            (
                f"The words of the {w['docs']} documents without scripts that need ICU ({w['chars']:,} characters), "
                f"batches of {BATCH}, CPU seconds (best of 3). The three agree on every word: **{w['agree']}**."
            ),
            markdown_table(["splitter", "CPU s", "vs re.findall"], rows),
        ]
    return "\n\n".join(parts) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default=BEFORE, help=f"the revision to compare with (default {BEFORE})")
    ap.add_argument("--quick", action="store_true", help="200 dev-set pages + samples; print only")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args.child)
        return 0

    from filters import DEVSET, SAMPLES, extract_texts

    t0 = time.perf_counter()
    docs: list[dict] = []
    if DEVSET.is_file():
        docs += extract_texts([DEVSET], "devset", 200 if args.quick else None, None)
    docs += extract_texts(sorted(Path(p) for p in glob.glob(str(SAMPLES / "*.warc.gz"))), "samples", None, None)
    print(f"{len(docs)} documents extracted in {time.perf_counter() - t0:.0f}s", file=sys.stderr)

    cpu = pick_cpu()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-filter-stages-") as tmp:
        Path(tmp, "docs.json").write_text(json.dumps(docs))
        archive(args.ref, Path(tmp, "ref"))
        for side, root in (("before", str(Path(tmp, "ref"))), ("after", "")):
            spec = Path(tmp, f"{side}.spec.json")
            spec.write_text(json.dumps({"docs": str(Path(tmp, "docs.json")), "root": root, "words": side == "after"}))
            print(f"running {side} ...", file=sys.stderr)
            results[side] = run_child([str(Path(__file__).resolve()), "--child", str(spec)], cpu,
                                      Path(tmp, f"{side}.log"), args.timeout, cwd=ROOT)  # fmt: skip
        for side, r in results.items():  # the right code ran on each side
            if "module" in r and (side == "before") != r["module"].startswith(tmp):
                r.clear()
                r["failed"] = f"{side}: imported stages.filters from the wrong tree"
    text = report(docs, args.ref, results)
    print(text)
    if not args.quick and args.ref == BEFORE:
        RESULTS.write_text(text)
        print(f"written to {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0 if all("failed" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
