"""PII detection quality: ours vs presidio's default AnalyzerEngine, on the same texts.

    python benchmarks/pii_eval.py            # samples + look-alike set; writes benchmarks/results/pii_eval.md
    python benchmarks/pii_eval.py --quick    # look-alike and obfuscated sets only; prints, writes nothing

Documents:

- **samples**: every response of ``samples/*.warc.gz`` that has text, as our
  extractor produces it (phase 1's decode, extraction and language ID; the text
  filters off so that every page with PII counts), with the ground truth of
  ``samples/ground_truth.jsonl`` (``pii`` and ``not_pii``).  A value the
  extractor did not keep (it sat in markup) is left out and counted.
- **look-alikes**: ``tests/fixtures/pii/cases.jsonl``, short en/de/fr/es
  paragraphs of look-alikes, some with one PII value (made by its make_cases.py).
- **obfuscated forms**: ``tests/fixtures/pii/obfuscated.jsonl``, 26 hand-written
  en/de/fr/es sentences, each with one PII value written to dodge a scraper
  (full-width ``＠`` and digits, ``(at)``/``(dot)``, ``[at]``/``[dot]``, dotted
  card numbers, lower-case IBANs) and a look-alike of the same trick beside it
  (``meet me (at) noon``, ``firmware 2023.1104.0711.2232``, ``ab12 cdef ghij``,
  full-width dates and prices).

Systems: **ours** = ``PiiStage`` with the default ``PiiConfig``;
**presidio default** = ``AnalyzerEngine()`` with all its default recognizers on
the same blank spaCy pipeline (``spacy.blank("en")``; it has recognizers for
English only, so every document is analyzed as English) and its default score
threshold; what it returns is what its AnonymizerEngine would replace.

Scores, per entity type, on spans (every occurrence of a listed value):
**recall** = ground-truth spans overlapped by a finding of that type;
**precision** = findings of that type that overlap a ground-truth span of that
type (a finding elsewhere, also on a real page whose labels are regex-made,
counts against it); **look-alikes kept** = look-alike spans that no finding of
any type touches (presidio's other recognizers, DATE_TIME, URL, UUID, ..., count).
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from collections import Counter
from html import unescape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a module in benchmarks/ named like a standard one would shadow it: never import from it as a top-level folder
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from benchmarks._common import machine_info, markdown_table  # noqa: E402

SAMPLES = ROOT / "samples"
CASES = ROOT / "tests" / "fixtures" / "pii" / "cases.jsonl"
OBFUSCATED = ROOT / "tests" / "fixtures" / "pii" / "obfuscated.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "pii_eval.md"
TYPES = ("EMAIL_ADDRESS", "PHONE_NUMBER", "IP_ADDRESS", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "URL_CREDENTIALS")


# ---------------------------------------------------------------- documents


#: The columns of phase 1's documents kept here: the text and the string columns the PII stage also reads.
PHASE1_COLUMNS = (
    "id",
    "url",
    "language",
    "text",
    "source",
    "content_type",
    "http_charset",
    "charset",
    "charset_source",
)


def run_phase1(data: dict, files: list[str]) -> pa.Table:  # noqa: F821
    """PHASE1_COLUMNS of the documents phase 1 keeps from these files (WARC inputs), in this process.

    ``data`` is a run config as in a YAML file; phase 1's own chain of stages
    (decode, extraction, language ID, the filters it configures) runs over the
    reader's batches, as each phase-1 worker does, without writing anything.
    """
    import pyarrow as pa

    from core.storage import open_input
    from pipeline.config import parse_config, s3_options
    from pipeline.engine.worker import MapWorker
    from pipeline.phases.extracted import ExtractedPhase
    from stages.base import ChainStats, run_chain
    from stages.sources import check_input, sniff_stream

    config = parse_config({**data, "inputs": files, "output": {"root": "unused"}})
    worker = MapWorker(config, ExtractedPhase)  # a phase-1 worker's reader and stages (models loaded once)
    kept = []
    for f in files:
        with open_input(f, s3_options(config)) as raw:
            reader, stages = worker.chain(check_input(sniff_stream(raw, f), f), None)
            for batch in reader.read(raw, f, reader.new_stats()):
                rows, _rejected = run_chain(stages, batch, ChainStats())
                kept.append(rows.select([c for c in PHASE1_COLUMNS if c in rows.column_names]))
    return pa.concat_tables(kept)


def extract_samples(pattern: str = str(SAMPLES / "*.warc.gz")) -> list[dict]:
    """Every response of the samples with text: phase 1 with the text filters off and any language score."""
    import yaml

    from stages.filters import FiltersConfig

    data = yaml.safe_load((ROOT / "jobs" / "sample.yaml").read_text())
    data["langid"] = {"min_score": 0.0}
    data["filters"] = {
        name: {"enabled": False}
        for name, f in FiltersConfig.model_fields.items()
        if "enabled" in getattr(f.annotation, "model_fields", {})
    }
    return run_phase1(data, sorted(glob.glob(pattern))).to_pylist()


def sample_docs() -> tuple[list[dict], Counter]:
    """Extracted sample documents with their ground truth; and the listed values the text does not contain."""
    truth = {}
    for line in (SAMPLES / "ground_truth.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        truth[row["id"]] = row
    docs, missing = [], Counter()
    for d in extract_samples():
        t = truth.get(d["id"])
        if t is None or not d["text"]:
            continue
        keep = {}
        for key in ("pii", "not_pii"):
            keep[key] = []
            for item in t[key]:
                value = unescape(item["value"])
                if value in d["text"]:
                    keep[key].append({"type": item["type"], "value": value})
                else:
                    missing[f"{key}:{item['type']}"] += 1
        docs.append({"id": d["id"], "lang": d["language"], "text": d["text"], "kind": t["kind"], **keep})
    return docs, missing


def case_docs(path: Path = CASES) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# ---------------------------------------------------------------- systems


def ours(docs: list[dict], config=None) -> tuple[list[list[tuple]], float]:
    """Findings (start, end, type) per document, and the seconds it took (engines built outside)."""
    from stages.pii import PiiConfig, PiiStage

    stage = PiiStage(config or PiiConfig())
    t0 = time.perf_counter()
    found = stage.detect([d["text"] for d in docs], [d["lang"] for d in docs])
    seconds = time.perf_counter() - t0
    return [[(f.start, f.end, f.entity) for f in found.get(i, [])] for i in range(len(docs))], seconds


def presidio_default(docs: list[dict]) -> tuple[list[list[tuple]], float]:
    from stages.pii.recognizers import presidio_default_analyzer

    analyzer = presidio_default_analyzer()
    t0 = time.perf_counter()
    out = [[(r.start, r.end, r.entity_type) for r in analyzer.analyze(text=d["text"], language="en")] for d in docs]
    return out, time.perf_counter() - t0


# ---------------------------------------------------------------- scoring


def occurrences(text: str, value: str) -> list[tuple[int, int]]:
    out, i = [], text.find(value)
    while i >= 0:
        out.append((i, i + len(value)))
        i = text.find(value, i + len(value))
    return out


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score(docs: list[dict], preds: list[list[tuple]]) -> dict:
    """Per type: gt spans, found, findings, correct findings; per look-alike type: spans, kept; and the misses."""
    gt_n, gt_hit, pred_n, pred_ok = Counter(), Counter(), Counter(), Counter()
    look_n, look_kept = Counter(), Counter()
    misses, false_pos, destroyed = [], [], []
    for doc, found in zip(docs, preds, strict=False):
        text = doc["text"]
        gold = [(s, typ) for item in doc["pii"] for typ in [item["type"]] for s in occurrences(text, item["value"])]
        looks = [(s, item["type"]) for item in doc["not_pii"] for s in occurrences(text, item["value"])]
        for span, typ in gold:
            gt_n[typ] += 1
            if any(t == typ and _overlaps(span, (s, e)) for s, e, t in found):
                gt_hit[typ] += 1
            else:
                misses.append((typ, text[span[0] : span[1]], doc.get("id")))
        for s, e, t in found:
            if t not in TYPES:
                continue
            pred_n[t] += 1
            if any(typ == t and _overlaps(span, (s, e)) for span, typ in gold):
                pred_ok[t] += 1
            else:
                false_pos.append((t, text[s:e], doc.get("id")))
        for span, typ in looks:
            look_n[typ] += 1
            hit = [(s, e, t) for s, e, t in found if _overlaps(span, (s, e))]
            if hit:
                destroyed.append((typ, text[span[0] : span[1]], hit[0][2], doc.get("id")))
            else:
                look_kept[typ] += 1
    return {
        "gt_n": gt_n,
        "gt_hit": gt_hit,
        "pred_n": pred_n,
        "pred_ok": pred_ok,
        "look_n": look_n,
        "look_kept": look_kept,
        "misses": misses,
        "false_pos": false_pos,
        "destroyed": destroyed,
    }


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "–"


def type_table(results: dict[str, dict]) -> str:
    rows = []
    for typ in TYPES:
        row = [typ]
        for r in results.values():
            row += [
                r["gt_n"][typ],
                _ratio(r["gt_hit"][typ], r["gt_n"][typ]),
                r["pred_n"][typ],
                _ratio(r["pred_ok"][typ], r["pred_n"][typ]),
            ]
        rows.append(row)
    heads = ["entity"] + [f"{h} ({name})" for name in results for h in ("spans", "recall", "findings", "precision")]
    return markdown_table(heads, rows)


def lookalike_table(results: dict[str, dict]) -> str:
    first = next(iter(results.values()))
    rows = [
        [typ, first["look_n"][typ]] + [_ratio(r["look_kept"][typ], r["look_n"][typ]) for r in results.values()]
        for typ in sorted(first["look_n"])
    ]
    total = sum(first["look_n"].values())
    rows.append(["**all**", total] + [f"**{_ratio(sum(r['look_kept'].values()), total)}**" for r in results.values()])
    return markdown_table(["look-alike", "spans"] + [f"kept ({name})" for name in results], rows)


def examples(r: dict, key: str, k: int = 12) -> str:
    items = Counter(tuple(x[:3]) if key != "destroyed" else (x[0], x[1], x[2]) for x in r[key])
    return (
        "; ".join(
            f"{a} `{b}`" + (f" as {c}" if key == "destroyed" else "")
            for (a, b, *rest), _n in items.most_common(k)
            for c in [rest[0] if rest else ""]
        )
        or "none"
    )


def evaluate(sets: dict[str, list[dict]]) -> tuple[dict, dict]:
    """{set: {system: scores}} and {set: {system: seconds}}."""
    scores, seconds = {}, {}
    for name, docs in sets.items():
        scores[name], seconds[name] = {}, {}
        for system, fn in (("ours", ours), ("presidio default", presidio_default)):
            preds, secs = fn(docs)
            scores[name][system] = score(docs, preds)
            seconds[name][system] = secs
    return scores, seconds


def report(sets: dict[str, list[dict]], scores: dict, seconds: dict, missing: Counter, command: str) -> str:
    info = machine_info()
    out = [
        "# PII detection: ours vs presidio's default engine",
        "",
        f"- {info['date']} · {info['nproc']} CPUs ({info['cpu']}) · Python {info['python']}",
        f"- command: `{command}`",
        "- **ours**: `PiiStage(PiiConfig())` (defaults); **presidio "
        "default**: `AnalyzerEngine()` with all its default "
        'recognizers on `spacy.blank("en")`, default threshold, every document analyzed as English '
        "(its recognizers are English-only)",
        "- spans: every occurrence of a listed value; **recall**: spans overlapped by a finding of the same type; "
        "**precision**: findings that overlap a listed span of their "
        "type; **kept**: look-alike spans no finding (of any type) touches",
        "",
    ]
    for name, docs in sets.items():
        r = scores[name]
        out += [
            f"## {name}: {len(docs)} documents, {sum(len(d['text']) for d in docs):,} characters",
            "",
            type_table(r),
            "",
            lookalike_table(r),
            "",
        ]
        for system, res in r.items():
            out += [
                f"- {system}: {seconds[name][system]:.2f} s; missed: {examples(res, 'misses')}",
                f"  - false findings: {examples(res, 'false_pos')}",
                f"  - look-alikes touched: {examples(res, 'destroyed')}",
            ]
        out.append("")
    if missing:
        out += [f"Listed values the extracted text does not contain (left out): {dict(sorted(missing.items()))}", ""]
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="look-alike and obfuscated sets only; print, write nothing")
    args = ap.parse_args(argv)
    sets, missing = {"look-alike set": case_docs(), "obfuscated forms": case_docs(OBFUSCATED)}, Counter()
    if not args.quick:
        docs, missing = sample_docs()
        sets = {"samples": docs, **sets}
    scores, seconds = evaluate(sets)
    text = report(sets, scores, seconds, missing, "python benchmarks/pii_eval.py" + (" --quick" if args.quick else ""))
    print(text)
    if not args.quick:
        RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
