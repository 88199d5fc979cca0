"""Paragraph dedup (dedup.paragraphs): exactness on a corpus with known repeats, placement, and cost at scale.

    python benchmarks/paragraph_dedup.py                     # exactness + placement (a few minutes)
    python benchmarks/paragraph_dedup.py --scale 1000000     # + phase 2 at 1M documents, paragraphs on and off

*Exactness.*  Pages of benchmarks/dedup_boilerplate_corpus.py (three sites
whose articles share an in-article block, true copies on other sites, reposts,
unrelated articles; real English words in English sentence patterns) plus
*quotes*: a share of the pages quote one or two paragraphs of another page,
verbatim, between typographic quotes, or lower-cased.  Every paragraph carries
its provenance by construction (a block paragraph of a site, a body paragraph
of an original page, an edited paragraph of a copy, a quote of a source
paragraph), so the truth does not come from the code under test: a paragraph
is repeated when its provenance occurs twice or more in the documents that
document dedup kept; in ``keep_first`` mode every occurrence but the first
(parts by name, then row) must go and nothing else; in ``min_count`` mode
(CCNet's rule) every occurrence of a provenance ``min_count`` documents hold,
and a document's later copies of one fewer hold.  Titles and date
lines are short (below ``min_chars``) and never counted.

*Placement.*  The same corpus with document dedup alone; paragraph dedup run
after document dedup (one phase 2, the pipeline's order); and paragraph dedup
run first (phase 2 with document dedup off, its output fed to a second phase 2
with paragraph dedup off): precision/recall of document dedup against the true
clusters, and time.

*Scale.*  benchmarks/synth_corpus.py (the corpus of benchmarks/dedup_scale.py:
~330 words in 8 paragraphs separated by blank lines, a header and a footer
shared by each of 500 sites, planted copies); phase 2 with paragraphs on and
off in a fresh process each, wall time, peak RSS of the largest process,
paragraph shuffle rows and bytes.  Writes benchmarks/results/paragraph_dedup.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0]).resolve() == ROOT / "benchmarks":
    sys.path[0] = str(ROOT)  # a module here named like a standard one would shadow it

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from benchmarks.dedup_boilerplate_corpus import generate  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "paragraph_dedup.md"
FILTERS_OFF = {k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb")}
#: Document dedup off: phase 2 runs the paragraph step alone.
DOCUMENTS_OFF = {"exact": {"enabled": False}, "minhash": {"enabled": False}}

# ------------------------------------------------------------------------------------------ the corpus


@dataclass
class Doc:
    """A page as phase 1 would have kept it, each line (paragraph) with its provenance."""

    id: str
    url: str
    cluster: str | None  # true duplicate cluster (document level)
    variation: str | None
    lines: list[str] = field(default_factory=list)
    keys: list[tuple | None] = field(
        default_factory=list
    )  # provenance; None: a short line (title, date), never counted

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


QUOTE_STYLES = ("verbatim", "typographic", "lower")


def quoted_corpus(pages: int = 40, seed: int = 0, quote_share: float = 0.3, min_chars: int = 30) -> list[Doc]:
    """The pages of dedup_boilerplate_corpus.generate with
    quotes of other pages' paragraphs (see the module docstring).

    A title is its own provenance (a copy has its original's title; two unrelated pages
    rarely draw the same one), counted when its normalized form reaches ``min_chars``.
    """
    rng = random.Random(seed + 1)
    generated = generate(pages, seed)
    originals = {p.url: p for p in generated if p.kind != "copy"}
    titles = _normalized_chars([p.title for p in generated])
    assert max(_normalized_chars([f"Published {p.date}." for p in generated])) < min_chars  # date lines: never counted
    docs = []
    for p, title_chars in zip(generated, titles, strict=False):
        orig = originals.get(p.cluster) if p.kind == "copy" else None
        body_keys = []
        for k, para in enumerate(p.body):
            if orig is not None and k < len(orig.body) and orig.body[k] == para:
                body_keys.append(("body", orig.url, k))  # a copy's unchanged paragraph is the original's
            else:
                body_keys.append(("body", p.url, k))  # an original's, or a copy's edited paragraph
        title = ("title", p.title) if title_chars >= min_chars else None
        doc = Doc(p.id, p.url, p.cluster, p.variation, [p.title, f"Published {p.date}."], [title, None])
        doc.lines += p.body + p.block
        doc.keys += body_keys + [("block", p.site, k) for k in range(len(p.block))]
        docs.append(doc)
    bodies = [(d, i) for d in docs for i, key in enumerate(d.keys) if key is not None and key[0] == "body"]
    for d in docs:
        if rng.random() >= quote_share:
            continue
        for _ in range(rng.choice((1, 1, 2))):
            src, i = rng.choice(bodies)
            if src is d:
                continue
            text = _quote(src.lines[i], rng.choice(QUOTE_STYLES))
            at = rng.randint(2, len(d.lines))  # after the title and the date line
            d.lines.insert(at, text)
            d.keys.insert(at, src.keys[i])
    return docs


def _normalized_chars(texts: list[str]) -> list[int]:
    """Characters of each text as paragraph dedup normalizes it (defaults)."""
    import pyarrow.compute as pc

    from stages.dedup.config import NormalizeConfig
    from stages.dedup.normalize import collapse_whitespace, normalize_texts

    return pc.utf8_length(
        collapse_whitespace(normalize_texts(pa.array(texts, pa.large_string()), NormalizeConfig()))
    ).to_pylist()


def _quote(text: str, style: str) -> str:
    if style == "typographic":
        return f"\u201c{text}\u201d"
    if style == "lower":
        return text.lower()
    return text


def write_parts(storage, docs: list[Doc], parts: int = 3, seed: int = 0) -> dict[str, list[Doc]]:
    """The documents as phase 1's output, in ``parts`` parts
    (shuffled); returns part name -> documents in row order."""
    order = list(docs)
    random.Random(seed).shuffle(order)
    out = {f"part-{i}": order[i::parts] for i in range(parts)}
    for unit, rows in out.items():
        storage.write_parquet(
            pa.table(
                {
                    "id": pa.array([d.id for d in rows], pa.string()),
                    "url": pa.array([d.url for d in rows], pa.string()),
                    "source": pa.array([unit] * len(rows), pa.string()),
                    "text": pa.array([d.text for d in rows], pa.large_string()),
                    "language": pa.array(["en"] * len(rows), pa.string()),
                }
            ),
            "documents",
            "extracted",
            f"part-{unit}.parquet",
        )
        storage.write_json({"unit": unit}, "_done", "extracted", f"{unit}.json")
    return out


# ------------------------------------------------------------------------------------------ the truth


def expected_removals(
    parts: dict[str, list[Doc]], survivors: set[str], mode: str = "keep_first", min_count: int = 2
) -> dict[str, set[int]]:
    """doc id -> the line positions paragraph dedup must remove, from the provenance alone."""
    seen: dict[tuple, list[tuple[str, int]]] = defaultdict(list)
    for unit in sorted(parts):
        for d in parts[unit]:
            if d.id in survivors:
                for i, key in enumerate(d.keys):
                    if key is not None:
                        seen[key].append((d.id, i))
    out: dict[str, set[int]] = defaultdict(set)
    for occurrences in seen.values():
        if mode == "keep_first":
            gone = occurrences[1:]
        elif len({doc_id for doc_id, _ in occurrences}) >= min_count:  # CCNet: counted once per document
            gone = occurrences
        else:  # a document's own repeats: its first copy stays
            gone = [o for k, o in enumerate(occurrences) if any(o[0] == d for d, _ in occurrences[:k])]
        for doc_id, i in gone:
            out[doc_id].add(i)
    return out


def read_rows(storage, *folder: str, columns: list[str]) -> list[dict]:
    rows = []
    for name in storage.list(*folder, suffix=".parquet"):
        rows += pq.read_table(storage.path(*folder, name), columns=columns).to_pylist()
    return rows


@dataclass
class Outcome:
    """Paragraph dedup against the truth: occurrences counted per line of every surviving document."""

    documents: int = 0
    lines: int = 0
    repeated_keys: int = 0
    to_remove: int = 0
    removed: int = 0
    wrong_unique: int = 0  # removed, and its provenance occurs once
    wrong_first: int = 0  # removed, and it is the occurrence keep_first keeps
    missed: int = 0
    exact_texts: int = 0  # surviving documents whose output text is exactly the expected one
    rejected_after: int = 0


def outcome(storage, parts: dict[str, list[Doc]], mode: str = "keep_first", min_count: int = 2) -> Outcome:
    """Compare documents/deduped (and paragraph_dedup rejections, text kept) with the truth."""
    by_id = {d.id: d for docs in parts.values() for d in docs}
    doc_removed = {
        r["id"] for r in read_rows(storage, "rejected", "deduped", columns=["id", "stage"]) if r["stage"] == "dedup"
    }
    after = {
        r["id"]: r["text"]
        for r in read_rows(storage, "rejected", "deduped", columns=["id", "stage", "text"])
        if r["stage"] == "paragraph_dedup"
    }
    kept = {r["id"]: r["text"] for r in read_rows(storage, "documents", "deduped", columns=["id", "text"])}
    survivors = set(kept) | set(after)
    assert not survivors & doc_removed and len(survivors) + len(doc_removed) == len(by_id)
    expected = expected_removals(parts, survivors, mode, min_count)
    occurrences = Counter(k for i in survivors for k in by_id[i].keys if k is not None)
    firsts = expected_removals(parts, survivors, "keep_first")
    o = Outcome(
        documents=len(survivors),
        rejected_after=len(after),
        repeated_keys=sum(1 for n in occurrences.values() if n > 1),
    )
    for doc_id in sorted(survivors):
        d = by_id[doc_id]
        out = (kept.get(doc_id) if doc_id in kept else after[doc_id]) or ""
        want = [line for i, line in enumerate(d.lines) if i not in expected.get(doc_id, set())]
        o.exact_texts += out == "\n".join(want)
        got = _removed_lines(d.lines, out)
        o.lines += len(d.lines)
        o.to_remove += len(expected.get(doc_id, ()))
        o.removed += len(got)
        for i in got:
            key = d.keys[i]
            o.wrong_unique += key is None or occurrences[key] == 1
            o.wrong_first += (
                mode == "keep_first"
                and key is not None
                and occurrences[key] > 1
                and i not in firsts.get(doc_id, set())
            )
        o.missed += len(expected.get(doc_id, set()) - got)
    return o


def _removed_lines(lines: list[str], out: str) -> set[int]:
    """Positions of ``lines`` missing from ``out`` (kept lines stay in order: a greedy match finds them)."""
    kept = out.split("\n") if out else []
    gone, j = set(), 0
    for i, line in enumerate(lines):
        if j < len(kept) and kept[j] == line:
            j += 1
        else:
            gone.add(i)
    return gone


# ------------------------------------------------------------------------------------------ runs


def run_dedup(root: Path, dedup: dict, workers: int = 2, filters: bool = True) -> tuple[dict, float]:
    from core.storage import Storage
    from pipeline.config import parse_config
    from tests.dedup_standalone import run_dedup as phase2

    data = {"inputs": ["unused"], "output": str(root), "dedup": dedup}
    if not filters:
        data["filters"] = FILTERS_OFF
    t0 = time.perf_counter()
    summary = phase2(parse_config(data), Storage(str(root)), workers, progress=False)
    return summary, time.perf_counter() - t0


def doc_score(docs: list[Doc], removed: set[str]) -> tuple[float, float]:
    """Precision/recall of document dedup against the true clusters (a
    removed page is right when a member of its cluster is kept)."""
    reached = {d.id for d in docs}
    members = defaultdict(list)
    for d in docs:
        if d.cluster:
            members[d.cluster].append(d.id)
    cluster = {d.id: d.cluster for d in docs}
    tp = sum(1 for i in removed if cluster.get(i) and any(m not in removed for m in members[cluster[i]]))
    should = sum(len([m for m in ms if m in reached]) - 1 for ms in members.values())
    return (tp / len(removed) if removed else 1.0), (tp / should if should else 1.0)


def exactness_rows(work: Path, pages: int, workers: int) -> list[str]:
    from core.storage import Storage

    docs = quoted_corpus(pages)
    lines = [
        "| mode | filters | documents after doc dedup | lines | "
        "repeated paragraphs | extra copies to remove | removed | "
        "unique or first removed | missed | output text exact | rejected after the rewrite |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, filters in (("keep_first", True), ("keep_first", False), ("min_count", False)):
        root = work / f"exact-{mode}-{filters}"
        shutil.rmtree(root, ignore_errors=True)
        storage = Storage(str(root))
        parts = write_parts(storage, docs)
        run_dedup(root, {"paragraphs": {"enabled": True, "mode": mode}}, workers, filters)
        o = outcome(storage, parts, mode)
        lines.append(
            f"| {mode} | {'on' if filters else 'off'} | {o.documents} "
            f"| {o.lines} | {o.repeated_keys} | {o.to_remove} | "
            f"{o.removed} | {o.wrong_unique + o.wrong_first} | {o.missed} "
            f"| {o.exact_texts}/{o.documents} | {o.rejected_after} |"
        )
        print(lines[-1], flush=True)
    return lines


def placement_rows(work: Path, pages: int, workers: int, filters: bool) -> list[str]:
    from core.storage import Storage

    docs = quoted_corpus(pages)
    lines = [
        "| placement | filters | document dedup precision | recall | documents removed as duplicates | removed by the "
        "paragraph step (empty or a rule) | paragraphs removed | phase 2 seconds |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]

    def removed(root: Path, stage: str) -> set[str]:
        return {
            r["id"]
            for r in read_rows(Storage(str(root)), "rejected", "deduped", columns=["id", "stage"])
            if r["stage"] == stage
        }

    for label in (
        "document dedup alone",
        "paragraphs after document dedup (pipeline)",
        "paragraphs before document dedup",
    ):
        root = work / f"place-{filters}-{len(lines)}"
        shutil.rmtree(root, ignore_errors=True)
        write_parts(Storage(str(root)), docs)
        if label.startswith("document"):
            summary, seconds = run_dedup(root, {}, workers, filters)
        elif "after" in label:
            summary, seconds = run_dedup(root, {"paragraphs": {"enabled": True}}, workers, filters)
        else:
            first, s1 = run_dedup(root, {"paragraphs": {"enabled": True}, **DOCUMENTS_OFF}, workers, filters)
            second = work / f"place-{filters}-{len(lines)}-then"
            shutil.rmtree(second, ignore_errors=True)
            for sub in ("documents/deduped", "_done/deduped"):
                shutil.copytree(root / sub, second / sub.replace("deduped", "extracted"))
            (second / "_done" / "extracted" / "_corpus.json").unlink()
            summary, s2 = run_dedup(second, {}, workers, filters)
            summary["paragraphs"] = first["paragraphs"]
            para_removed = removed(root, "paragraph_dedup")
            seconds = s1 + s2
            root = second
        dups = removed(root, "dedup")
        if "before" not in label:
            para_removed = removed(root, "paragraph_dedup")
        precision, recall = doc_score(docs, dups)
        p = summary.get("paragraphs", {})
        lines.append(
            f"| {label} | {'on' if filters else 'off'} | {precision:.3f} | {recall:.3f} "
            f"| {len(dups)} | {len(para_removed)} | {p.get('removed', 0)} | "
            f"{seconds:.1f} |"
        )
        print(lines[-1], flush=True)
    return lines


#: Scale runs: (document dedup, paragraph dedup, filters applied again).
VARIANTS = ((True, False, False), (True, True, False), (True, True, True), (False, True, False))


def scale_rows(work: Path, n: int, workers: int, variants: list[int] | None = None) -> list[str]:
    from benchmarks.synth_corpus import write as write_corpus

    root = work / f"synth-{n}"
    if not (root / "truth.parquet").exists():
        write_corpus(str(root), n, max(1, n // 10_000), 0.1)
    lines = [
        "| documents | document dedup | paragraphs | filters again | wall s | CPU s (process "
        "tree) | docs per CPU-s | peak RSS, largest process | paragraph step s | write step s | "
        "pieces counted | shuffle rows | shuffle MiB (Arrow) | partitions | paragraphs removed | chars removed | "
        "documents rejected after | steps | load |",
        "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for i, (docs, on, filters) in enumerate(VARIANTS):
        if variants is not None and i not in variants:
            continue
        for sub in ("documents/deduped", "rejected/deduped", "_done/deduped", "dedup"):
            shutil.rmtree(root / sub, ignore_errors=True)
        r = _measure(root, workers, docs, on, filters)
        s, p = r["summary"], r["summary"].get("paragraphs", {})
        steps = s["step_seconds"]
        lines.append(
            f"| {n:,} | {'on' if docs else 'off'} | {'on' if on else 'off'} "
            f"| {('on' if filters else 'off') if on else ''} | "
            f"{r['wall']:.1f} | {r['cpu']:,.0f} | {n / r['cpu']:,.0f} | "
            f"{r['peak_rss'] / 2**20:,.0f} MiB ({r['peak_name']}) | "
            f"{steps.get('paragraphs', 0)} | {steps.get('write', 0)} | "
            f"{p.get('pieces', 0):,} | {p.get('shuffle_rows', 0):,} | {p.get('shuffle_bytes', 0) / 2**20:,.0f} | "
            f"{p.get('partitions', 0)} | {p.get('removed', 0):,} | {p.get('chars_removed', 0):,} | "
            f"{p.get('documents_rejected', 0):,} | {json.dumps(steps)} | {r['load'][0]} -> {r['load'][1]} |"
        )
        print(lines[-1], flush=True)
    return lines


def _measure(root: Path, workers: int, documents: bool, paragraphs: bool, filters: bool) -> dict:
    """Phase 2 in a fresh process (its process tree is all that is measured)."""
    flags = [str(int(x)) for x in (documents, paragraphs, filters)]
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(root), str(workers), *flags], capture_output=True, text=True
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads([x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1][7:])


def measure_child(root: str, workers: int, documents: bool, paragraphs: bool, filters: bool) -> dict:
    from benchmarks.memory import PeakMemory, TreeCpu
    from core.storage import Storage
    from pipeline.config import parse_config
    from pipeline.runner import init_ray
    from tests.dedup_standalone import run_dedup as phase2

    cfg = parse_config(
        {
            "inputs": ["unused"],
            "output": root,
            "ray": {"num_cpus": workers},
            "dedup": {"paragraphs": {"enabled": paragraphs}, **({} if documents else DOCUMENTS_OFF)},
            **({} if filters else {"filters": FILTERS_OFF}),
        }
    )
    init_ray(cfg)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with PeakMemory() as mem, TreeCpu() as cpu:
        summary = phase2(cfg, Storage(root), workers, progress=False)
    return {
        "wall": time.perf_counter() - t0,
        "cpu": cpu.seconds,
        "peak_rss": mem.peak_rss,
        "peak_name": mem.peak_name,
        "summary": summary,
        "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=40, help="articles per block site (exactness)")
    ap.add_argument("--placement-pages", type=int, default=1000, help="articles per block site (placement)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scale", type=int, nargs="*", default=[], help="documents of the scale runs (e.g. 1000000)")
    ap.add_argument("--no-exactness", dest="exactness", action="store_false")
    ap.add_argument("--variants", type=int, nargs="+", help="only these scale runs (indexes into VARIANTS)")
    ap.add_argument("--workdir", help="keep corpora and outputs here")
    ap.add_argument("--results", default=str(RESULTS))
    ap.add_argument(
        "--measure", nargs=5, help=argparse.SUPPRESS
    )  # internal: ROOT WORKERS DOCUMENTS PARAGRAPHS FILTERS
    args = ap.parse_args(argv)
    if args.measure:
        root, workers, *flags = args.measure
        print(
            "RESULT " + json.dumps(measure_child(root, int(workers), *(f == "1" for f in flags)), default=str),
            flush=True,
        )
        return 0
    work = Path(args.workdir or tempfile.mkdtemp(prefix="paragraph-dedup-"))
    lines = [
        "# Paragraph dedup (`dedup.paragraphs`)",
        "",
        f"`python benchmarks/paragraph_dedup.py` on {os.cpu_count()} CPUs, "
        f"{args.workers} workers; 1-minute load average at start: {os.getloadavg()[0]:.1f}.",
        "",
    ]
    if args.exactness:
        from pipeline.config import parse_config
        from pipeline.runner import init_ray

        init_ray(
            parse_config({"inputs": ["unused"], "output": str(work / "unused"), "ray": {"num_cpus": args.workers}})
        )
        n = len(quoted_corpus(args.pages))
        lines += [
            "## Exactness",
            "",
            f"{n} pages (`--pages {args.pages}`), lines joined by newlines as the extractor writes "
            "them, 3 parts; default settings (`unit: paragraph`, `min_chars: 30`). *unique or first removed*: lines "
            "removed whose provenance occurs once, or (keep_first) the first occurrence itself.",
            "",
        ]
        lines += exactness_rows(work, args.pages, args.workers)
        n = len(quoted_corpus(args.placement_pages))
        lines += [
            "",
            "## Placement relative to document dedup",
            "",
            f"{n:,} pages (`--placement-pages {args.placement_pages}`). "
            "*before*: phase 2 with document dedup off and paragraphs on, its output the input of a phase 2 with "
            "paragraphs off (two runs: the seconds include two fixed costs).",
            "",
        ]
        for filters in (False, True):
            lines += placement_rows(work, args.placement_pages, args.workers, filters)[0 if not filters else 2 :]
        import ray

        ray.shutdown()
    for n in args.scale:
        lines += ["", f"## Scale: {n:,} documents (benchmarks/synth_corpus.py)", ""]
        lines += scale_rows(work, n, args.workers, args.variants)
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
