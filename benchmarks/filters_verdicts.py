"""Verdict equality for the heuristic filters: this tree against an earlier revision, document by document.

    python benchmarks/filters_verdicts.py                 # against d5994fe (before the speed-up);
                                                          # writes benchmarks/results/filters_verdicts.md
    python benchmarks/filters_verdicts.py --ref HEAD~2    # against any revision; prints only
    python benchmarks/filters_verdicts.py --record F.json # this tree's verdicts to a file ...
    python benchmarks/filters_verdicts.py --check F.json  # ... and a later tree against it

A speed-up of the filters must not change what they decide.  For every
document this collects what each filter says when it runs alone on the whole
corpus (``reason``, ``details``, ``filter_skipped``; for C4 also the rewritten
text's SHA-1 and its removal counts, in both C4 settings; FineWeb on the raw
and on the C4-cleaned text), each rule's measurement (a "probe" per rule:
only that rule on, with a threshold every document fails, so ``details``
holds the value), and the verdict of the default chain; then it compares
the two sides field by field.  Exit status 1 on any difference but the
deliberate changes (``CHANGES``).  C4's line-end rule changed after the
reference revision (issue 42.9: C4's reference removes ``(see above.)``,
tests/stages/filters/test_filters_c4.py); this tree runs with ``end_mark_brackets: true``,
the rule the revision had, so that every field still measures the speed-up.

The corpus: the shared extraction dev set and ``samples/`` (texts extracted as
in ``benchmarks/filters.py``, or ``--texts`` Parquet files with ``id``,
``text``, ``language``, e.g. ``documents/extracted/*.parquet`` of a run with
the filters disabled), plus 1,000 generated documents made of the inputs
where a fast path could disagree with the per-line definition: every kind of
whitespace Python knows, line separators other than ``\\n``, combining marks,
scripts without spaces, citation markers, case tricks (``İ``, ``ſ``),
terminal punctuation of many scripts, long tokens, repeated lines and n-grams.
Each side runs in its own process; the revision's ``stages/`` comes from
``git archive``.
"""

from __future__ import annotations

import argparse
import collections
import glob
import hashlib
import json
import random
import re
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from filters_stages import BEFORE, archive  # noqa: E402

from _common import child_report, machine_info, markdown_table, pick_cpu, run_child  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "filters_verdicts.md"
BATCH = 256


# ---------------------------------------------------------------- corpus
def real_texts(paths: list[str]) -> pa.Table:
    """The dev set and samples, as phase 1 hands them to the filters."""
    import pyarrow.parquet as pq

    if paths:
        files = sorted(f for p in paths for f in glob.glob(p))
        t = pa.concat_tables(pq.read_table(f, columns=["id", "text", "language"]) for f in files)
        cols = t.to_pydict()
        return table(cols["id"], cols["text"], cols["language"], "texts")
    from filters import DEVSET, SAMPLES, extract_texts

    docs = []
    if DEVSET.is_file():
        docs += extract_texts([DEVSET], "devset", None, None)
    docs += extract_texts(sorted(Path(p) for p in glob.glob(str(SAMPLES / "*.warc.gz"))), "samples", None, None)
    return table([d["id"] for d in docs], [d["text"] for d in docs], [d["language"] for d in docs],
                 [d["corpus"] for d in docs])  # fmt: skip


def table(ids, texts, languages, corpus) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "text": pa.array(texts, pa.large_string()),
            "language": pa.array(languages, pa.string()),
            "corpus": pa.array(corpus if isinstance(corpus, list) else [corpus] * len(ids), pa.string()),
        }
    )


# Pieces a fast path could get wrong (see the module docstring).
SPACES = [" ", "\t", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u1680", "\u2000",
          "\u2007", "\u200a", "\u2028", "\u2029", "\u202f",
          "\u205f", "\u3000", "\u200b", "\ufeff", "\r\n"]  # fmt: skip
WORDS = ["the", "of", "and", "to", "that", "have", "with", "be", "is", "a", "in", "for", "on", "was", "Der", "und",
         "die", "le", "la", "word", "words", "alpha", "beta", "gamma", "delta", "quality", "filter", "document",
         "sentence", "river", "valley", "mayor", "said", "Monday", "school", "engineers", "inspect"]  # fmt: skip
ODD_WORDS = ["l'homme", "that's", "it’s", "naïve", "café", "3.5", "U.S.", "e.g.", "_under_", "__", "x_y", "ῼ", "Ⅻ",
             "①", "²", "में", "\u0301abc", "abc\u0301", "abc\u0301\u0301-", "-\u0301", "İstanbul", "javaſcript",
             "JavaScript", "javascrİpt", "JAVASCRIPT", "lorem", "ipsum", "Lorem Ipsum", "LOREM\u00a0IPSUM",
             "ΣΊΣΥΦΟΣ", "σοφός", "terms of use", "Terms Of Use", "uses cookies", "use", "cookies", "policy",
             "privacy", "👍", "a\u200db", "x" * 1001, "y" * 999, "文書の", "東京大学", "中华人民共和国。",
             "我们在北京的公园里散步了。", "ภาษาไทย", "문서의", "한국어",
             "・", "ー", "〇", "#tag", "$", "%"]  # fmt: skip
PUNCT = [".", "!", "?", "...", "…", "。", "！", "？", "｡", "।", "؟", "\u061d", "\U00011047", ".\"", ".”", "!»",
         "?」", "。」", ".)", "\"", "”", "'", ",", ";", ":", "-", "—", "#", "|", "•", "{", "}", "[1]", "[12]",
         "[]", "[edit]", "[EDIT]", "[Citation Needed]",
         "[cİtation needed]", "[ſ]", "(", ")", "..", "...."]  # fmt: skip
STARTS = ["", "", "", "", "", "- ", "• ", "-", "•", "# ", "  ", "\t", "\u3000"]
ENDS = ["", ".", ".", ".", "!", "?", "...", "…", " ", "\t", "。", ".”", "[1]", " [edit]"]


def fuzz_docs(n: int = 1000, seed: int = 20261129) -> pa.Table:
    """Generated documents: mostly plain sentences, with odd words, punctuation and whitespace, and repeats."""
    rng = random.Random(seed)
    langs = ["en", "en", "en", "de", "fr", "ja", "zh", "ko", "th", "ru", "xx", None]
    ids, texts, languages = [], [], []
    for i in range(n):
        odd = rng.choice([0.0, 0.02, 0.05, 0.1, 0.3])  # how odd this document is
        lines: list[str] = []
        for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 12, 20, 40])):
            if lines and rng.random() < 0.1:  # a repeated line
                lines.append(rng.choice(lines))
                continue
            tokens = []
            for _ in range(rng.choice([1, 2, 3, 4, 6, 9, 14, 25])):
                tokens.append(rng.choice(ODD_WORDS) if rng.random() < odd else rng.choice(WORDS))
                tokens.append(rng.choice(PUNCT) if rng.random() < odd else "")
                tokens.append(rng.choice(SPACES) if rng.random() < odd else " ")
            start = rng.choice(STARTS) if rng.random() < 2 * odd else ""
            lines.append(start + "".join(tokens).rstrip(" ") + rng.choice(ENDS))
        seps = ["\n"] * 8 + ["\n\n", "\n\n\n", "\r\n", "\r", "\u2028", "\x85", "\n \n", "\x0c"]
        text = "".join(line + (rng.choice(seps) if rng.random() < odd * 3 else "\n") for line in lines)
        if rng.random() < 0.2:  # repeated n-grams inside a line
            text += " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))) * rng.randint(2, 5)
        if rng.random() < odd:
            text = rng.choice(SPACES) + text
        ids.append(f"fuzz-{i}")
        texts.append(None if i % 97 == 0 else text)
        languages.append(rng.choice(langs))
    return table(ids, texts, languages, "generated")


# ---------------------------------------------------------------- verdicts
def run_alone(stage, t: pa.Table) -> pa.Table:
    return pa.concat_tables(stage(t.slice(i, BATCH)) for i in range(0, len(t), BATCH))


def digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def probes() -> list[tuple[str, object]]:
    """One stage per rule, with only that rule on and a threshold every document fails.

    ``details`` then holds the rule's measurement for every document (4
    significant digits), so a change in any statistic shows, not only a
    changed verdict.
    """
    from stages.filters import C4Filter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter
    from stages.filters.c4 import C4Config
    from stages.filters.fineweb import FineWebQualityConfig
    from stages.filters.gopher_quality import GopherQualityConfig
    from stages.filters.gopher_repetition import GopherRepetitionConfig

    big, out = 10**12, []
    gq_off = dict.fromkeys(
        ["min_doc_words", "max_doc_words", "min_avg_word_length", "max_avg_word_length", "max_symbol_word_ratio",
         "max_bullet_lines_ratio", "max_ellipsis_lines_ratio", "min_alpha_words_ratio", "min_stop_words"]
    )  # fmt: skip
    for field, value in [("min_doc_words", big), ("max_doc_words", -1), ("min_avg_word_length", big),
                         ("max_avg_word_length", -1), ("max_symbol_word_ratio", -1), ("max_bullet_lines_ratio", -1),
                         ("max_ellipsis_lines_ratio", -1), ("min_alpha_words_ratio", big),
                         ("min_stop_words", big)]:  # fmt: skip
        cfg = GopherQualityConfig.model_construct(**{**gq_off, field: value})
        out.append((f"probe:gopher_quality:{field}", GopherQualityFilter(cfg)))
    gr_off = dict.fromkeys(["dup_line_frac", "dup_para_frac", "dup_line_char_frac", "dup_para_char_frac"])
    gr_off.update(top_n_grams={}, dup_n_grams={})
    for field in ["dup_line_frac", "dup_para_frac", "dup_line_char_frac", "dup_para_char_frac"]:
        out.append((f"probe:gopher_repetition:{field}", GopherRepetitionFilter(
            GopherRepetitionConfig.model_construct(**{**gr_off, field: -1}))))  # fmt: skip
    for field, ns in [("top_n_grams", range(2, 5)), ("dup_n_grams", range(5, 11))]:
        for n in ns:
            cfg = GopherRepetitionConfig.model_construct(**{**gr_off, field: {n: -1}})
            out.append((f"probe:gopher_repetition:{field}:{n}", GopherRepetitionFilter(cfg)))
    for punct in (True, False):
        cfg = C4Config.model_construct(min_num_sentences=big, filter_no_terminal_punct=punct, **reference_c4())
        out.append((f"probe:c4:sentences:punct={punct}", C4Filter(cfg)))
    out.append(("probe:c4:no_document_rules", C4Filter(C4Config.model_construct(
        filter_lorem_ipsum=False, filter_curly_bracket=False, min_num_sentences=None, **reference_c4()))))  # fmt: skip
    fw_off = dict.fromkeys(["line_punct_thr", "short_line_thr", "char_duplicates_ratio", "new_line_ratio"])
    for field, value in [("line_punct_thr", big), ("short_line_thr", -1), ("char_duplicates_ratio", -1),
                         ("new_line_ratio", -1)]:  # fmt: skip
        cfg = FineWebQualityConfig.model_construct(**{**fw_off, field: value})
        out.append((f"probe:fineweb:{field}", FineWebQualityFilter(cfg)))
    return out


def reference_c4() -> dict:
    """The C4 settings that give the reference revision's line-end rule (closing brackets after the end mark; a
    revision without the setting has that rule)."""
    from stages.filters.c4 import C4Config

    return {"end_mark_brackets": True} if "end_mark_brackets" in C4Config.model_fields else {}


def verdicts(t: pa.Table, with_probes: bool = True) -> dict[str, dict]:
    """Per document id: what each filter says alone (and each probe), and the chain's verdict."""
    from stages.base import ChainStats, run_chain
    from stages.filters import (
        C4Filter,
        FiltersConfig,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        build_filters,
    )
    from stages.filters.c4 import C4Config

    out: dict[str, dict] = {i: {} for i in t.column("id").to_pylist()}

    def note(key: str, result: pa.Table, columns: list[str]) -> None:
        rows = result.select(["id", *[c for c in columns if c in result.column_names]]).to_pylist()
        for r in rows:
            if "text" in r:
                r["text"] = digest(r["text"])
            if "c4_lines_removed_by" in r:
                r["c4_lines_removed_by"] = removed_by(r["c4_lines_removed_by"])
            out[r.pop("id")][key] = r

    verdict = ["reason", "details", "filter_skipped"]
    c4_cols = [*verdict, "text", "c4_lines_removed", "c4_chars_removed", "c4_lines_removed_by"]
    note("gopher_quality", run_alone(GopherQualityFilter(), t), verdict)
    note("gopher_repetition", run_alone(GopherRepetitionFilter(), t), verdict)
    cleaned = run_alone(C4Filter(C4Config(**reference_c4())), t)
    note("c4", cleaned, c4_cols)
    fineweb_setting = C4Config(filter_no_terminal_punct=False, **reference_c4())
    note("c4_fineweb_setting", run_alone(C4Filter(fineweb_setting), t), c4_cols)
    note("fineweb", run_alone(FineWebQualityFilter(), t), verdict)
    cleaned = cleaned.drop_columns(["reason", "details"])
    note("fineweb_after_c4", run_alone(FineWebQualityFilter(), cleaned), verdict)
    if with_probes:
        for key, stage in probes():
            note(key, run_alone(stage, cleaned if key.startswith("probe:fineweb") else t), c4_cols)

    stages = build_filters(FiltersConfig.model_validate({"c4": reference_c4()}))
    for i in range(0, len(t), BATCH):
        kept, rejected = run_chain(stages, t.slice(i, BATCH), ChainStats())
        for doc_id in kept.column("id").to_pylist():
            out[doc_id]["chain"] = None
        for r in rejected:
            for doc_id, reason, details in zip(
                *(r.column(c).to_pylist() for c in ("id", "reason", "details")), strict=False
            ):
                out[doc_id]["chain"] = [reason, details]
    return out


def removed_by(value: list | None) -> list | None:
    """``c4_lines_removed_by`` as sorted ``[rule, lines]`` pairs, whichever way the revision stored it: a list of
    ``{rule, lines}`` structs (since 2e2a06d), or an Arrow map before (``to_pylist`` gives ``(rule, lines)``
    tuples)."""
    if value is None:
        return None
    return sorted([c["rule"], c["lines"]] if isinstance(c, dict) else list(c) for c in value)


def compare(before: dict, after: dict) -> list[tuple[str, str, object, object]]:
    """(document, field, before, after) for every difference in what ``after`` measured."""
    diffs = []
    for doc_id in sorted(set(before) | set(after)):
        b, a = before.get(doc_id), after.get(doc_id)
        if b is None or a is None:
            diffs.append((doc_id, "(document)", b is not None, a is not None))
            continue
        diffs += [(doc_id, key, b.get(key), a.get(key)) for key in sorted(a) if b.get(key) != a.get(key)]
    return diffs


# The deliberate changes since BEFORE, each: what it is, the documents it can touch, the fields it can change.
# 1. (docs/filters.md, "Changes in the speed-up") FineWeb's word count splits words at a vertical tab, as
#    split_words always did.
VERTICAL_TAB_FIELDS = ("fineweb", "fineweb_after_c4", "probe:fineweb:new_line_ratio", "chain")
# 2. (issue 42.9, docs/filters.md) C4: an ellipsis inside closing brackets ("(and so on...)") is no end, with
#    end_mark_brackets too; it changes C4's text and what runs on it.
C4_TEXT_FIELDS = (
    "c4",
    "fineweb_after_c4",
    "chain",
    "probe:c4:sentences:punct=True",
    "probe:c4:no_document_rules",
    *(f"probe:fineweb:{k}" for k in ("line_punct_thr", "short_line_thr", "char_duplicates_ratio", "new_line_ratio")),
)
_BRACKETED_ELLIPSIS = re.compile(r"\.\.\.[)\]）]+\s*$")
CHANGES = (
    (
        "the vertical-tab fix (a document with U+000B, a FineWeb field: FineWeb's word count now splits words at a "
        "vertical tab, as `split_words` always did; see docs/filters.md)",
        lambda t: "\x0b" in t,
        VERTICAL_TAB_FIELDS,
    ),
    (
        "C4's ellipsis in brackets (a document with a line ending in `...)`, `...]` or `...）`, a field of C4 or of "
        "what runs on its text: no end mark, as in C4's reference; see docs/filters.md)",
        lambda t: any(_BRACKETED_ELLIPSIS.search(line) for line in t.splitlines()),
        C4_TEXT_FIELDS,
    ),
)


def explained(corpus: pa.Table, diffs: list) -> list[int]:
    """How many of ``diffs`` each deliberate change (CHANGES) explains, a difference counted under its first."""
    texts = dict(zip(corpus.column("id").to_pylist(), corpus.column("text").to_pylist(), strict=True))
    counts = [0] * len(CHANGES)
    for doc_id, key, *_ in diffs:
        text = texts.get(doc_id) or ""
        i = next((i for i, (_, touches, fields) in enumerate(CHANGES) if key in fields and touches(text)), None)
        if i is not None:
            counts[i] += 1
    return counts


def unexplained(corpus: pa.Table, diffs: list) -> list:
    """The differences no deliberate change (CHANGES) explains."""
    texts = dict(zip(corpus.column("id").to_pylist(), corpus.column("text").to_pylist(), strict=True))
    return [
        d
        for d in diffs
        if not any(d[1] in fields and touches(texts.get(d[0]) or "") for _, touches, fields in CHANGES)
    ]


def changed(b, a):
    """Only the sub-fields that differ, for the report."""
    if isinstance(b, dict) and isinstance(a, dict):
        keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        return {k: b.get(k) for k in keys}, {k: a.get(k) for k in keys}
    return b, a


def summary(corpus: pa.Table, after: dict, diffs: list, ref: str) -> str:
    info = machine_info()
    corpus_of = dict(zip(corpus.column("id").to_pylist(), corpus.column("corpus").to_pylist(), strict=False))
    fields = sorted({k for v in after.values() for k in v})
    differing = collections.defaultdict(set)
    for doc_id, *_ in diffs:
        differing[corpus_of.get(doc_id, "?")].add(doc_id)
    rows = []
    for name, n in collections.Counter(corpus_of.values()).items():
        ids = [i for i, c in corpus_of.items() if c == name]
        rejected = sum(1 for i in ids if after[i].get("chain"))
        rows.append([name, n, rejected, len(differing[name])])
    by_field = collections.Counter(key for _, key, *_ in diffs)
    parts = [
        "# Heuristic filters: same verdicts before and after",
        f"{info['date']} · Python {info['python']}",
        (
            f"Every document filtered by revision `{ref}` (**before**) and by this tree (**after**): "
            f"{len(fields)} fields per document (each filter alone, one probe per rule holding its measurement, "
            "the default chain's verdict). Re-run: `python benchmarks/filters_verdicts.py`."
        ),
        markdown_table(["corpus", "documents", "rejected by the chain", "documents with a difference"], rows),
    ]
    if diffs:
        odd = unexplained(corpus, diffs)
        counts = zip(explained(corpus, diffs), CHANGES, strict=True)
        why = "; ".join(f"{n} are {what}" for n, (what, *_) in counts if n)
        parts += [
            "### Differences by field",
            markdown_table(["field", "documents"], [[k, n] for k, n in by_field.most_common()]),
            f"Of the {len(diffs)} differences, {why or 'none is a deliberate change'}; {len(odd)} are unexplained.",
            "### First differences",
            "\n".join(
                f"- `{d}` {k}: before `{changed(b, a)[0]}`, after `{changed(b, a)[1]}`" for d, k, b, a in diffs[:20]
            ),
        ]
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------- children (one revision each)
def child_main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    if spec["root"]:
        sys.path.insert(0, spec["root"])
    import pyarrow.parquet as pq

    corpus = pq.read_table(spec["corpus"]).drop_columns(["corpus"])
    child_report({"verdicts": verdicts(corpus, with_probes=spec["probes"])})


def run_side(corpus_path: Path, root: str, probes: bool, tmp: Path, name: str) -> dict:
    spec = tmp / f"{name}.spec.json"
    spec.write_text(json.dumps({"corpus": str(corpus_path), "root": root, "probes": probes}))
    print(f"filtering with {name} ...", file=sys.stderr)
    out = run_child([str(Path(__file__).resolve()), "--child", str(spec)], pick_cpu(), tmp / f"{name}.log", 3600,
                    cwd=ROOT)  # fmt: skip
    if "failed" in out:
        raise SystemExit(f"{name}: {out['failed']}")
    return out["verdicts"]


def against(corpus: pa.Table, ref: str, probes: bool, tmp: Path) -> tuple[dict, dict]:
    """(verdicts of revision ``ref``, of this tree) on ``corpus``, each side in its own process."""
    corpus_path = Path(tmp, "corpus.parquet")
    pq.write_table(corpus, corpus_path)
    after = run_side(corpus_path, "", probes, Path(tmp), "this tree")
    archive(ref, Path(tmp, "ref"))
    return run_side(corpus_path, str(Path(tmp, "ref")), probes, Path(tmp), ref), after


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default=BEFORE, help=f"the revision to compare with (default {BEFORE})")
    ap.add_argument("--record", metavar="JSON", help="write this tree's verdicts to a file instead")
    ap.add_argument("--check", metavar="JSON", help="compare this tree with a file written by --record instead")
    ap.add_argument("--texts", action="append", default=[], help="Parquet file(s)/glob(s) of documents to filter")
    ap.add_argument("--no-probes", action="store_true", help="verdicts only, not every rule's measurement")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args.child)
        return 0

    corpus = pa.concat_tables([real_texts(args.texts), fuzz_docs()])
    probes = not args.no_probes
    with tempfile.TemporaryDirectory(prefix="filters-verdicts-") as tmp:
        if args.record or args.check:
            corpus_path = Path(tmp, "corpus.parquet")
            pq.write_table(corpus, corpus_path)
            after = run_side(corpus_path, "", probes, Path(tmp), "this tree")
        if args.record:
            Path(args.record).write_text(json.dumps(after, ensure_ascii=False, sort_keys=True))
            print(f"recorded the verdicts of {len(after)} documents to {args.record}")
            return 0
        if args.check:
            before, ref = json.loads(Path(args.check).read_text()), args.check
        else:
            (before, after), ref = against(corpus, args.ref, probes, Path(tmp)), args.ref
    diffs = compare(before, after)
    text = summary(corpus, after, diffs, ref)
    print(text)
    if not args.check and args.ref == BEFORE and probes and not args.texts:
        RESULTS.write_text(text)
        print(f"written to {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 1 if unexplained(corpus, diffs) else 0


if __name__ == "__main__":
    sys.exit(main())
