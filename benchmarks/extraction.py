"""Main-text extraction: accuracy and speed of every extractor, side by side.

    python benchmarks/extraction.py                     # whole dev set (949 pages), ~4 min on a quiet core
    python benchmarks/extraction.py --wcxb ../wcxb      # and WCXB's dev split (1,497 pages), ~15 min
    python benchmarks/extraction.py --quick             # 200 pages (and every 7th WCXB page)

WCXB (``--wcxb``, a local checkout: see benchmarks/wcxb.py for how to get one;
its dev split only): seven page types (articles, forums, products, shop
categories, listings, documentation, service pages), scored with WCXB's own
word-level F1 (reimplemented in benchmarks/wcxb.py, and checked page by page
against the checkout's evaluate.py when it has one): per-type precision,
recall and F1 per extractor, and docs per CPU-second, in the same run as the
dev set.

Accuracy is scored on the shared extraction dev set (trafilatura's evaluation
pages, ../shared/data): a ``with`` snippet found in the text (whitespace
normalised) is a true positive, missing a false negative; a ``without``
snippet found is a false positive.  Precision, recall and F1 are over all
snippets of all pages, also per half of the set (even pages: the half the
boilerplate extractor's defaults were tuned on; odd pages: held out) and per
language of the page (fastText lid.176 on the gold snippets).

Speed: each extractor runs in its own child process pinned to one CPU, on
HTML decoded beforehand; only the extraction calls are timed, by the wall
clock (docs/s, per core) and by the process's CPU clock (docs per
CPU-second).  Peak memory is the child's peak RSS, less what it held after
loading the pages.  trafilatura runs twice: as the baselines run it
(``favor_precision``, no comments) and in its default mode.

Errors: pages whose own F1 is below 0.7, per extractor; and for the default
extractor, where each error snippet on those pages comes from (re-running it
untimed with its steps apart): a main-text snippet lost outside the content
root, inside an element marked boilerplate, dropped by the block rules, or in
no block at all (removed with invisible elements, or split across blocks); a
boilerplate snippet leaked inside the content root or with no root found, by
the class the block rules gave it.

Near-duplicates: on ``samples/``, the copies of a near-duplicate cluster whose
only differences are the site template and the date (and maybe the charset)
should extract to the same text; the table gives the mean Jaccard similarity
of word 5-gram sets between each such copy and the cluster's original.

The table is printed and written to benchmarks/results/extraction.md.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0] or ".").resolve() == ROOT / "benchmarks":
    # Run as a script: Python put benchmarks/ first on the path, where a sibling
    # named like a standard module would shadow it.
    sys.path[0] = str(ROOT)
else:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import child_report, child_setup, machine_info, markdown_table, pick_cpu, run_child  # noqa: E402

EXTRACTORS = ["resiliparse", "trafilatura", "trafilatura-default", "boilerplate", "cascade"]
DESCRIPTION = {
    "resiliparse": "resiliparse `extract_plain_text(main_content=True)`",
    "trafilatura": "trafilatura `extract(favor_precision=True)`",
    "trafilatura-default": "trafilatura `extract()` (default mode)",
    "boilerplate": "**boilerplate** (this project's default)",
    "cascade": "cascade: boilerplate, trafilatura when unsure",
}
DEVSET_DIRS = [ROOT.parent / "shared" / "data", Path("/work/shared/data")]
TEMPLATE_ONLY = {"template", "date", "charset"}  # variations that leave the article text as it is
_WS = re.compile(r"\s+")


# ---------------------------------------------------------------- inputs


def devset_dir(arg: str | None) -> Path:
    for d in [Path(arg)] if arg else DEVSET_DIRS:
        if (d / "extraction-devset.warc.gz").is_file():
            return d
    raise SystemExit("extraction dev set not found (extraction-devset.warc.gz); pass --devset DIR")


def read_html(warc: Path) -> dict[str, str]:
    """url -> decoded HTML of every response in a WARC, as the pipeline decodes it."""
    from stages.charset import Decoder
    from stages.warc import open_and_read

    batches, _ = open_and_read(lambda: open(warc, "rb"), warc.name)  # noqa: SIM115 (the reader closes it)
    decoder = Decoder()
    pages = {}
    for batch in batches:
        for row in batch.select(["id", "url", "payload", "http_charset", "reason"]).to_pylist():
            if row["reason"] is None:
                html, _, _ = decoder.decode(row["payload"], row["http_charset"])
                if html is not None:
                    pages[row["id"]] = (row["url"], html)
    return pages


def load_devset(d: Path, limit: int | None) -> tuple[list[str], list[dict]]:
    """(html, gold) in gold order; gold URLs are stripped (9 end in a space, the WARC's do not)."""
    by_url = {url: html for url, html in read_html(d / "extraction-devset.warc.gz").values()}
    lines = (d / "extraction-devset-gold.jsonl").read_text(encoding="utf-8").splitlines()
    gold = [json.loads(line) for line in lines if line.strip()]
    gold = [g for g in gold if g["url"].strip() in by_url][:limit]
    return [by_url[g["url"].strip()] for g in gold], gold


def load_near_duplicates(samples: Path) -> tuple[list[str], list[str], dict]:
    """(ids, html) of the near-duplicate pages in samples/, and their ground-truth rows."""
    truth_path = samples / "ground_truth.jsonl"
    if not truth_path.is_file():
        return [], [], {}
    truth = {}
    for line in truth_path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("kind") == "near_duplicate" and row.get("dup_cluster"):
            truth[row["id"]] = row
    ids, html = [], []
    for warc in sorted(samples.glob("*.warc.gz")):
        for rid, (_, page) in read_html(warc).items():
            if rid in truth:
                ids.append(rid)
                html.append(page)
    return ids, html, truth


# ---------------------------------------------------------------- child: run one extractor


def make(name: str):
    """``(html, url) -> text`` for an extractor name (the URL is used by ours only)."""
    from stages.extract import ExtractConfig, make_extractor

    if name == "resiliparse":
        # The baseline exactly as BASELINES.md runs it (the stage's variant also keeps formatting).
        from resiliparse.extract.html2text import extract_plain_text

        return lambda html, url=None: extract_plain_text(html, main_content=True, alt_texts=False, links=False)
    if name == "trafilatura-default":
        import trafilatura
        from trafilatura.settings import use_config

        config = use_config()
        config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # as the stage's: no alarm of its own
        return lambda html, url=None: trafilatura.extract(html, config=config) or ""
    return make_extractor(ExtractConfig(extractor=name))


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _extract_all(extract, html: list[str], urls: list[str]) -> dict:
    """Texts of the pages, and the wall and CPU seconds of the extraction calls alone."""
    texts, seconds, cpu_seconds, errors = [], 0.0, 0.0, 0
    for page, url in zip(html, urls, strict=False):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            text = extract(page, url or None)
        except Exception:  # a refused page counts as no text, like the stage's extract_error
            text, errors = "", errors + 1
        seconds += time.perf_counter() - t0
        cpu_seconds += time.process_time() - c0
        texts.append(text)
    return {"texts": texts, "seconds": seconds, "cpu_seconds": cpu_seconds, "errors": errors}


def child(name: str, inputs: Path, part: int, parts: int) -> None:
    """Extract every ``parts``-th page of each set from ``part`` (and, in part 0, the near-duplicates)."""
    child_setup()
    with open(inputs, "rb") as f:
        docs = pickle.load(f)  # {"sets": {name: {"html": [...], "url": [...]}}, "near": [...html]}
    sets = {k: (v["html"][part::parts], v["url"][part::parts]) for k, v in docs["sets"].items()}
    near = docs["near"] if part == 0 else []
    del docs
    try:  # reset the peak (VmHWM) so that it covers the extraction only, not the unpickling
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    rss_loaded = _status_mb("VmRSS")
    extract = make(name)
    extract(sets["dev"][0][0], None)  # warm-up: imports, caches
    done = {k: _extract_all(extract, html, urls) for k, (html, urls) in sets.items()}
    peak = _status_mb("VmHWM")
    stats = dict(getattr(extract, "stats", {}))
    near_texts = []
    for html in near:
        try:
            near_texts.append(extract(html, None))
        except Exception:
            near_texts.append("")
    child_report({"sets": done, "peak_mb": peak, "rss_loaded_mb": rss_loaded, "stats": stats, "near": near_texts})


def run_extractor_rounds(names: list[str], inputs: Path, tmp: Path, n_pages: dict[str, int], parts: int) -> dict:
    """Each extractor on each part of the pages, round-robin: load from other jobs
    on a shared machine then falls on every extractor alike."""
    cpu = pick_cpu()
    got: dict[str, list] = {n: [] for n in names}
    for part in range(parts):
        for name in names:
            print(f"round {part + 1}/{parts}: {name} ...", file=sys.stderr, flush=True)
            r = run_child(
                [__file__, "--child", name, str(inputs), str(part), str(parts)], cpu, tmp / f"{name}-{part}.log", 3600
            )
            if "failed" in r:
                print(f"{name}: {r['failed']}", file=sys.stderr)
            got[name].append(r)
    results = {}
    for name, rs in got.items():
        failed = [r["failed"] for r in rs if "failed" in r]
        if failed:
            results[name] = {"failed": failed[0]}
            continue
        stats = Counter()
        for r in rs:
            stats.update(r["stats"])
        slow = stats["slow"] + stats["slow_empty"]
        results[name] = {
            "peak_mb": max(r["peak_mb"] for r in rs),
            "added_mb": max(r["peak_mb"] - r["rss_loaded_mb"] for r in rs),
            "slow_fraction": slow / sum(stats.values()) if stats else None,
            "near": rs[0]["near"],
        }
        for key, n in n_pages.items():  # per set of pages: "dev" at the top level, the others under their name
            texts = [""] * n
            for part, r in enumerate(rs):
                texts[part::parts] = r["sets"][key]["texts"]
            totals = {f: sum(r["sets"][key][f] for r in rs) for f in ("seconds", "cpu_seconds", "errors")}
            (results[name] if key == "dev" else results[name].setdefault(key, {})).update(texts=texts, **totals)
    return results


# ---------------------------------------------------------------- scoring


def norm(s: str) -> str:
    return _WS.sub(" ", s).strip()


def score(texts: list[str], gold: list[dict]) -> tuple[float, float, float]:
    tp = fp = fn = 0
    for text, g in zip(texts, gold, strict=False):
        t = norm(text or "")
        for s in g["with"]:
            if norm(s) in t:
                tp += 1
            else:
                fn += 1
        fp += sum(norm(s) in t for s in g["without"])
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def languages(gold: list[dict]) -> list[str]:
    """Language of each page, from its gold main-text snippets (so it does not depend on an extractor)."""
    from classifiers.langid import LanguageIdentifier

    langs, _ = LanguageIdentifier().predict([" ".join(g["with"]) for g in gold])
    return langs


def shingles(text: str, n: int = 5) -> set:
    words = text.split()
    return {tuple(words[i : i + n]) for i in range(max(len(words) - n + 1, 1))} if words else set()


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


def near_duplicate_similarity(ids: list[str], texts: list[str], truth: dict) -> tuple[float | None, float | None, int]:
    """Mean 5-gram Jaccard copy-to-original: template/date-only copies, and all copies."""
    by_id = dict(zip(ids, texts, strict=False))
    clusters = defaultdict(list)
    for rid in ids:
        clusters[truth[rid]["dup_cluster"]].append(rid)
    template_only, every = [], []
    for members in clusters.values():
        originals = [m for m in members if not truth[m]["dup_variation"]]
        if not originals:
            continue
        orig = by_id[originals[0]]
        for m in members:
            if m == originals[0]:
                continue
            j = jaccard(orig, by_id[m])
            every.append(j)
            if set(truth[m]["dup_variation"]) <= TEMPLATE_ONLY:
                template_only.append(j)
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    return mean(template_only), mean(every), len(template_only)


def error_section(names: list[str], results: dict, gold: list[dict], html: list[str], below: float = 0.7) -> list[str]:
    """Markdown: pages under ``below`` F1 per extractor; the default extractor's errors on them by cause."""
    low = {n: [i for i, f in enumerate(page_scores(results[n]["texts"], gold)) if f < below] for n in names}
    out = [
        "",
        f"Pages whose own F1 is below {below}: " + ", ".join(f"{DESCRIPTION.get(n, n)} {len(low[n])}" for n in names),
    ]
    if "boilerplate" not in low:
        return out
    lost, leaked = error_classes(html, gold, low["boilerplate"])
    rows = [[f"lost: {k}", v] for k, v in lost.most_common()] + [[f"leaked: {k}", v] for k, v in leaked.most_common()]
    out += [
        "",
        f"Where the default extractor's error snippets on its {len(low['boilerplate'])} pages below {below} come "
        "from (see docs/extraction.md for what each class is and what was done about it):",
        "",
        markdown_table(["error snippets", "count"], rows),
    ]
    return out


def page_scores(texts: list[str], gold: list[dict]) -> list[float]:
    """Each page's own F1 (0 for a page with no main-text snippet found)."""
    return [score([t], [g])[2] for t, g in zip(texts, gold, strict=False)]


def error_classes(html: list[str], gold: list[dict], pages: list[int]) -> tuple[Counter, Counter]:
    """Where the boilerplate extractor's errors on ``pages`` come from: (lost, leaked)
    snippet counts by cause, from what its run saw on the way (BoilerplateExtractor.run)."""
    from stages.extract.boilerplate import BoilerplateExtractor
    from stages.extract.classify import GOOD, NEAR, _group_classes

    ex = BoilerplateExtractor()
    lost, leaked = Counter(), Counter()
    for i in pages:
        try:
            result = ex.run(html[i], (gold[i].get("url") or "").strip() or None)
        except Exception:
            lost["page refused"] += len(gold[i]["with"])
            continue
        blocks, chosen, kept, root_found = result.blocks, result.chosen, result.kept, result.root_found
        in_root, in_text = {id(b) for b in chosen}, {id(b) for b in kept}
        cls = {}
        if chosen:
            group_of, classes = _group_classes(chosen, ex.block_rules(result.page_type))
            if GOOD not in classes:
                classes = [GOOD if c == NEAR else c for c in classes]
            cls = {id(b): classes[g] for b, g in zip(chosen, group_of, strict=False)}
        text = norm("\n".join(b.text for b in kept))

        def holding(snippet: str, blocks=blocks):
            s = norm(snippet)
            return next((b for b in blocks if s in b.text or s[:25] in b.text), None)

        for s in gold[i]["with"]:
            if norm(s) in text:
                continue
            b = holding(s)
            if b is None:
                lost["in no block (invisible element, or split across blocks)"] += 1
            elif id(b) in in_root:
                lost[f"dropped by the block rules ({cls[id(b)]})"] += 1
            elif b.skip >= 0:
                lost["in an element marked boilerplate"] += 1
            else:
                lost["outside the content root"] += 1
        for s in gold[i]["without"]:
            if norm(s) not in text:
                continue
            b = holding(s)
            where = "in the content root" if root_found else "no root: whole body"
            leaked[f"{where}, {cls.get(id(b), '?') if b is not None and id(b) in in_text else 'across blocks'}"] += 1
    return lost, leaked


# ---------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the first 200 pages of the dev set")
    ap.add_argument("--devset", help="folder with extraction-devset.warc.gz and -gold.jsonl")
    ap.add_argument("--wcxb", help="a checkout of WCXB (its dev split is read; see benchmarks/wcxb.py)")
    ap.add_argument(
        "--samples", default=str(ROOT / "samples"), help="folder with the sample WARCs and ground_truth.jsonl"
    )
    ap.add_argument("--extractors", default=",".join(EXTRACTORS))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "extraction.md"))
    ap.add_argument(
        "--rounds", type=int, default=4, help="run the extractors round-robin on this many parts of the pages"
    )
    ap.add_argument("--child", nargs=4, metavar=("EXTRACTOR", "INPUTS", "PART", "PARTS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], Path(args.child[1]), int(args.child[2]), int(args.child[3]))

    names = args.extractors.split(",")
    d = devset_dir(args.devset)
    limit = 200 if args.quick else None
    html, gold = load_devset(d, limit)
    sets = {"dev": {"html": html, "url": [g["url"].strip() for g in gold]}}
    wcxb_pages = []
    if args.wcxb:
        from benchmarks import wcxb

        wcxb_pages = wcxb.load(Path(args.wcxb))
        if args.quick:  # every 7th page: all seven types, as many pages as the quick dev set
            wcxb_pages = wcxb_pages[::7]
        sets["wcxb"] = {"html": [p.html for p in wcxb_pages], "url": [p.url for p in wcxb_pages]}
    near_ids, near_html, truth = load_near_duplicates(Path(args.samples))
    langs = languages(gold)
    with tempfile.TemporaryDirectory(prefix="bench-extract-") as tmp:
        inputs = Path(tmp) / "inputs.pkl"
        with open(inputs, "wb") as f:
            pickle.dump({"sets": sets, "near": near_html}, f)
        results = run_extractor_rounds(
            names, inputs, Path(tmp), {k: len(v["html"]) for k, v in sets.items()}, args.rounds
        )
    print(report(names, results, gold, langs, near_ids, truth, args, html, wcxb_pages))


def _speed(results: dict, names: list[str], n_pages: int) -> dict[str, tuple[float, float]]:
    """(docs/s, docs per CPU-second) of each extractor on a set's results."""
    return {n: (n_pages / results[n]["seconds"], n_pages / max(results[n]["cpu_seconds"], 1e-9)) for n in names}


def _ratio(speed: dict, name: str, base: str, i: int = 1) -> str:
    return f"{speed[name][i] / speed[base][i]:.1f}x" if base in speed else ""


def report(names, results, gold, langs, near_ids, truth, args, html, wcxb_pages=()) -> str:
    n_pages = len(html)
    ok = [n for n in names if "failed" not in results[n]]
    speed = _speed(results, ok, n_pages)
    even, odd = gold[0::2], gold[1::2]
    rows = []
    for n in ok:
        r = results[n]
        p, rc, f = score(r["texts"], gold)
        fa = score(r["texts"][0::2], even)[2]
        fb = score(r["texts"][1::2], odd)[2]
        tmpl, every, _ = near_duplicate_similarity(near_ids, r["near"], truth) if near_ids else (None, None, 0)
        rows.append(
            [
                DESCRIPTION.get(n, n),
                f"{speed[n][0]:.0f}",
                f"{speed[n][1]:.0f}",
                _ratio(speed, n, "trafilatura"),
                _ratio(speed, n, "trafilatura-default"),
                f"{r['peak_mb']:.0f} (+{r['added_mb']:.0f})",
                f"{p:.3f}",
                f"{rc:.3f}",
                f"**{f:.3f}**",
                f"{fa:.3f}",
                f"{fb:.3f}",
                "" if r["slow_fraction"] is None else f"{r['slow_fraction']:.1%}",
                "" if tmpl is None else f"{tmpl:.3f}",
                "" if every is None else f"{every:.3f}",
            ]
        )
    n_template = sum(
        1 for rid in near_ids if truth[rid]["dup_variation"] and set(truth[rid]["dup_variation"]) <= TEMPLATE_ONLY
    )
    top = [lang for lang, _ in Counter(langs).most_common(5)]
    lang_rows = []
    for n in ok:
        cells = []
        for lang in top:
            idx = [i for i, x in enumerate(langs) if x == lang]
            cells.append(f"{score([results[n]['texts'][i] for i in idx], [gold[i] for i in idx])[2]:.3f}")
        lang_rows.append([DESCRIPTION.get(n, n), *cells])
    counts = Counter(langs)
    info = machine_info()
    cmd = (
        "python benchmarks/extraction.py"
        + (" --quick" if args.quick else "")
        + (f" --rounds {args.rounds}" if args.rounds != 4 else "")
        + (" --wcxb WCXB" if args.wcxb else "")
    )
    errors = ", ".join(f"{n}: {results[n]['errors']}" for n in ok if results[n]["errors"])
    out = [
        "# Extraction: accuracy and speed",
        "",
        f"`{cmd}` — {n_pages} pages of the shared extraction dev set, each extractor in child processes pinned to one "
        f"core (round-robin over {args.rounds} parts of the pages, so that other load hits every extractor alike), "
        f"HTML decoded first, only the extraction calls timed. Machine: {info['cpu']}, {info['nproc']} cores, "
        f"load average {info['load_avg']} at the end, {info['date']}.",
        "",
        markdown_table(
            [
                "extractor",
                "docs/s",
                "docs/CPU-s",
                "vs trafilatura (per CPU-s)",
                "vs trafilatura default",
                "peak MB",
                "precision",
                "recall",
                "F1",
                "F1 tuning half",
                "F1 held-out half",
                "to slow path",
                "near-dup Jaccard (template/date)",
                "near-dup Jaccard (all copies)",
            ],
            rows,
        ),
        "",
        "F1 per language (lid.176 on the gold snippets; pages: "
        + ", ".join(f"{lang} {counts[lang]}" for lang in top)
        + ")",
        "",
        markdown_table(["extractor", *top], lang_rows),
        "",
        "- F1 tuning half / held-out half: even / odd pages of the set; the boilerplate extractor's defaults were "
        "chosen looking at the even half.",
        "- peak MB: the child's peak RSS while extracting (its "
        "peak is reset after loading the pages), and in brackets "
        "what it added to the RSS it had with the pages loaded (the extractor's own memory: library, DOM, caches).",
        f"- near-dup Jaccard: word 5-gram sets of each copy against its cluster's original, on samples/ "
        f"({len(near_ids)} near-duplicate pages; {n_template} copies differ only by site template, date or charset; "
        "'all copies' also counts those with edited, added or dropped paragraphs).",
        "- 9 gold URLs end in a space that the WARC's URLs do not have; they are matched after stripping it. "
        "The reference figures in shared/data/README.md left these pages unmatched (all their snippets missed), "
        "hence ~0.01 lower recall there.",
    ]
    if errors:
        out.append(f"- pages an extractor refused (scored as empty text): {errors}")
    out += error_section(ok, results, gold, html)
    if wcxb_pages:
        out += wcxb_section(ok, results, list(wcxb_pages), Path(args.wcxb))
    text = "\n".join(out) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    return text


def wcxb_section(names: list[str], results: dict, pages: list, root: Path) -> list[str]:
    """Markdown: per page type precision / recall / F1 of each extractor on WCXB's dev split,
    its speed there, and how the boilerplate extractor's page kinds match WCXB's labels."""
    from benchmarks import wcxb

    ok = [n for n in names if "wcxb" in results[n]]
    scores = {n: wcxb.score(pages, results[n]["wcxb"]["texts"]) for n in ok}
    checked = sum(wcxb.cross_check(root, pages, results[n]["wcxb"]["texts"]) for n in ok)
    speed = _speed({n: results[n]["wcxb"] for n in ok}, ok, len(pages))
    types = [t for t in wcxb.TYPES if t in scores[ok[0]]] + ["all"]
    counts = {t: scores[ok[0]][t].pages for t in types}
    f1_rows = [[f"{t} ({counts[t]})", *(f"{scores[n][t].f1:.3f}" for n in ok)] for t in types]
    pr_rows = [[t, *(f"{scores[n][t].precision:.3f} / {scores[n][t].recall:.3f}" for n in ok)] for t in types]
    speed_rows = [
        [
            DESCRIPTION.get(n, n),
            f"{speed[n][0]:.0f}",
            f"{speed[n][1]:.1f}",
            _ratio(speed, n, "trafilatura"),
            _ratio(speed, n, "trafilatura-default"),
            f"**{scores[n]['all'].f1:.3f}**",
        ]
        for n in ok
    ]
    short = {n: DESCRIPTION.get(n, n).split(" (")[0].replace("`", "").replace("**", "") for n in ok}
    out = [
        "",
        f"## WCXB dev split ({len(pages)} pages, {len(types) - 1} page types)",
        "",
        "WCXB's word-level F1 (benchmarks/wcxb.py: lower-cased `\\w+` tokens, bag-of-words overlap per page, "
        "averaged over the pages of a type), in the same run and child processes as the table above"
        + (
            f"; every page's score checked against the checkout's evaluate.py ({checked} page scores, identical)."
            if checked
            else "."
        ),
        "",
        "F1 per page type (pages):",
        "",
        markdown_table(["page type", *(short[n] for n in ok)], f1_rows),
        "",
        "Precision / recall per page type:",
        "",
        markdown_table(["page type", *(short[n] for n in ok)], pr_rows),
        "",
        "Speed on these pages (one core each, extraction calls only):",
        "",
        markdown_table(
            ["extractor", "docs/s", "docs/CPU-s", "vs trafilatura (per CPU-s)", "vs trafilatura default", "F1"],
            speed_rows,
        ),
    ]
    if "boilerplate" in ok:
        out += ["", *page_kind_section(pages)]
    return out


def page_kind_section(pages: list) -> list[str]:
    """Markdown: which kind the boilerplate extractor takes each WCXB page for, against WCXB's label (untimed)."""
    from benchmarks import wcxb
    from stages.extract import pagetype
    from stages.extract.boilerplate import BoilerplateExtractor

    ex = BoilerplateExtractor()
    seen = Counter()
    for p in pages:
        try:
            kind = ex.run(p.html, p.url or None).page_type
        except Exception:
            kind = "refused"
        seen[(p.page_type, kind)] += 1
    kinds = list(pagetype.PAGE_TYPES)  # WCXB's types, and "qa" (a forum to WCXB)
    agree = {(t, t) for t in wcxb.TYPES} | {("forum", pagetype.QA)}
    rows = []
    for t in wcxb.TYPES:
        n = sum(seen[(t, k)] for k in [*kinds, "refused"])
        if n:
            rows.append(
                [
                    t,
                    *(seen[(t, k)] or "" for k in kinds),
                    f"{sum(seen[(t, k)] for k in kinds if (t, k) in agree) / n:.0%}",
                ]
            )
    right = sum(seen[pair] for pair in agree)
    return [
        "Page kinds the boilerplate extractor chose "
        "(stages/extract/pagetype.py; qa: a forum to WCXB), rows: WCXB's label; "
        f"{right / max(len(pages), 1):.0%} agree:",
        "",
        markdown_table(["WCXB type \\ taken for", *kinds, "agree"], rows),
    ]


if __name__ == "__main__":
    main()
