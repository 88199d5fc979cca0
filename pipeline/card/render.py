"""README.md at the output root: a Hugging Face dataset card written from stats.json (and the redacted examples).

Every number printed here is read from the stats dict; nothing is counted
here.  The YAML front matter follows the Hub's dataset-card metadata
(``language``, ``license``, ``size_categories``, ``source_datasets``,
``task_categories``, ``pretty_name``, ``configs``); the ``configs`` paths are
relative to the output root, where the card sits, and name only what may be
published (``stats["publish"]``, pipeline/card/hub.py: the documents after PII
redaction, never ``rejected/`` nor a phase before redaction; the shards are
uploaded beside them, outside the configs); ``language`` holds Hub codes
(pipeline/card/languages.py).  Links go to ``card/`` (plots, stats.json).

Every string from the data or the run's record goes through pipeline.card.escape
(text, code span, HTML, fenced block, table cell) before it is written here.
"""

from __future__ import annotations

import shlex
from collections import defaultdict

import yaml

from pipeline.card.escape import cell, code, fence, html_text, one_line, text
from pipeline.card.examples import MASK, SHOW_CHARS
from pipeline.card.hub import FOLDER
from pipeline.card.languages import front_matter_codes

#: Rows of a long table shown before the rest goes into a collapsed section.
SHOWN_ROWS = 20
SIZE_CATEGORIES = [
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
    (10_000_000_000, "1B<n<10B"),
    (100_000_000_000, "10B<n<100B"),
    (1_000_000_000_000, "100B<n<1T"),
]
#: A language code the Hub's metadata accepts in shape (ISO 639 with
#: optional subtags); other labels stay out of the front matter.


def n(v) -> str:
    """A count as Markdown (a value that is not a number, from a hand-edited record, as escaped text)."""
    if v is None:
        return "–"
    return f"{v:,.1f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else text(v)


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def size_category(docs: int) -> str:
    return next((label for limit, label in SIZE_CATEGORIES if docs < limit), "n>1T")


def _table(header: list[str], rows: list[list], align: str | None = None) -> str:
    """A GFM table; header and cells are Markdown whose data strings the caller escaped (``|`` is escaped here)."""
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(cell(str(c)) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _long_table(header: list[str], rows: list[list], what: str, align: str | None = None) -> str:
    out = _table(header, rows[:SHOWN_ROWS], align)
    if len(rows) > SHOWN_ROWS:
        out += "\n\n" + _details(f"{len(rows) - SHOWN_ROWS} more {what}", _table(header, rows[SHOWN_ROWS:], align))
    return out


def _details(summary: str, body: str) -> str:
    """A collapsed section: ``summary`` is plain text (escaped here), ``body`` Markdown."""
    return f"<details><summary>{html_text(summary)}</summary>\n\n{body}\n\n</details>"


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _defaults() -> dict:
    from pipeline.config import RunConfig

    return _flatten(RunConfig.model_validate({"inputs": ["x"], "output": "x"}).model_dump(mode="json"))


def _value(v) -> str:
    return code(
        yaml.safe_dump(v, default_flow_style=True, width=10_000, allow_unicode=True)
        .strip()
        .removesuffix("...")
        .strip()
    )


def _image(stats: dict, name: str) -> str:
    """The plot's image link, or a line saying it could not be drawn (the card never links a missing file)."""
    drawn = stats.get("plots")
    if drawn is None or f"{name}.svg" in drawn:
        return f"![{name.replace('_', ' ')}]({FOLDER}/{name}.svg)"
    return f"*The plot {name}.svg could not be drawn: see Known limitations.*"


# ----------------------------------------------------------------------------- front matter


def front_matter(stats: dict) -> str:
    s = stats["summary"]
    phase = s["dataset_phase"]
    langs = front_matter_codes(stats.get("hub_languages") or {})
    meta = {
        "pretty_name": f"{one_line(stats['run']['name'])} (curated Common Crawl text)",
        "language": langs,
        "license": "other",
        "license_name": "common-crawl-terms-of-use",
        "license_link": "https://commoncrawl.org/terms-of-use",
        "size_categories": [size_category(s["dataset_documents"] if phase else s["documents"])],  # the config's rows
        "source_datasets": ["original"],
        "task_categories": ["text-generation"],
        "task_ids": ["language-modeling"],
    }
    if stats["publish"]["configs"]:
        meta["configs"] = stats["publish"]["configs"]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


# ----------------------------------------------------------------------------- sections


def summary(stats: dict) -> str:
    s, r = stats["summary"], stats["run"]
    src = stats["sources"]
    snap = f" of Common Crawl {', '.join(text(k) for k in src['snapshots'])}" if src["snapshots"] else ""
    tokens = f" and **{n(s['tokens'])} tokens**" if s["tokens"] is not None else ""
    where = code(f"documents/{s['dataset_phase']}/") if s["dataset_phase"] else "no documents folder"
    if s.get("repeats"):  # a training mix: documents, samples and repeats are three numbers
        where = (
            f"drawn from the {n(s.get('dataset_documents'))} documents of {where} into "
            f"**{n(s['samples'])} samples** in the shards ({n(s['repeats'])} of them repeats: the training mix)"
        )
    else:
        where = f"in {where}"
    lines = [
        f"**{n(s['documents'])} documents**{tokens} "
        f"({pct(s['documents_share'])} of the {n(s['responses'])} documents read) "
        f"in {n(s['languages'])} languages, from {n(src['files'])} input files ({_kinds(src)}){snap}, {where}. "
        f"Made by curate {code(r['versions'].get('curate-pipeline', '?'))}, "
        f"run {code(r['name'])} started {text(r['started'] or '–')}"
        + (f", finished {text(r['finished'])}." if r["finished"] else " (this card is its last phase)."),
        "",
        "Every number below is computed from the output itself (the kept and rejected Parquet files and the shards "
        f"manifest) and is in [`{FOLDER}/stats.json`]({FOLDER}/stats.json); "
        "`curate report OUTPUT_ROOT` rebuilds this card.",
        "",
        _table(
            ["check", "result"], [[text(c["check"]), "ok" if c["ok"] else "**FAILED**"] for c in stats["checks"]], "ll"
        ),
        "",
        _image(stats, "funnel"),
    ]
    return "\n".join(lines)


#: What a source kind's files are called in the card.
KIND_NAMES = {"warc": "WARC", "documents": "JSON lines / Parquet"}


def _kinds(src: dict) -> str:
    counts: dict[str, int] = {}
    for f in src["per_file"]:
        kind = KIND_NAMES.get(f.get("kind") or "", f.get("kind") or "unread")
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{n(v)} {text(k)}" for k, v in counts.items()) or "none"


def sources(stats: dict) -> str:
    src = stats["sources"]
    reader = src["reader"]
    phases = [p for p, v in stats["phases"].items() if v["status"] == "ran" and v.get("kept") is not None]
    rows = [
        [
            code(f["file"]),
            text(KIND_NAMES.get(f.get("kind") or "", f.get("kind") or "–")),
            n(f["records"]),
            n(f["responses"]),
            *[n(f["kept"].get(p, 0)) for p in phases],
        ]
        for f in src["per_file"]
    ]
    snap = (
        "; snapshots: " + ", ".join(f"{text(k)} ({n(v)} files)" for k, v in src["snapshots"].items())
        if src["snapshots"]
        else ""
    )
    types = ", ".join(f"{n(v)} {text(k)}" for k, v in reader["by_type"].items())
    return "\n".join(
        [
            f"{n(src['files'])} input files ({_kinds(src)}){snap}. The readers read {n(reader['records'])} records "
            f"({types or 'none'}), {n(reader['rows'])} of them documents, "
            f"and skipped {n(reader['malformed'])} malformed stretches.",
            "",
            _long_table(
                ["file", "kind", "records", "documents read", *[f"kept: {text(p)}" for p in phases]],
                rows,
                "files",
                "llrr" + "r" * len(phases),
            ),
        ]
    )


def processing(stats: dict) -> str:
    config = stats["run"]["config"]
    flat = _flatten(config)
    defaults = _defaults()
    out = []
    planned = {p["name"]: p for p in (stats.get("plan") or {}).get("phases", [])}
    for phase, info in stats["phases"].items():
        sections = planned.get(phase, {}).get("sections", ())
        head = f"### {text(phase)}: {text(info['status'].replace('_', ' '))}"
        if info["status"] == "ran":
            stages = ", ".join(code(s) for s in info.get("stages") or []) or "(its own steps)"
            head += f" ({n(info['parts'])} {text(info.get('unit', 'part'))}s); stages: {stages}"
        out.append(head)
        keys = [k for k in flat if any(k == s or k.startswith(s + ".") for s in sections)]
        changed = [
            [code(k), _value(flat[k]), _value(defaults[k]) if k in defaults else "–"]
            for k in keys
            if k not in defaults or defaults[k] != flat[k]
        ]
        if changed:
            out += [
                "",
                "Settings that differ from the defaults:",
                "",
                _table(["setting", "value", "default"], changed, "lll"),
            ]
        if keys:
            full = yaml.safe_dump({k: flat[k] for k in keys}, sort_keys=False, allow_unicode=True, width=120)
            out += ["", _details(f"all {len(keys)} settings", fence(full, "yaml"))]
        out.append("")
    versions = stats["run"]["versions"]
    out.append(
        _details(
            "package versions", _table(["package", "version"], [[text(k), code(v)] for k, v in versions.items()], "ll")
        )
    )
    return "\n".join(out)


def _reasons(by_reason: dict, limit: int = 4) -> str:
    items = [f"{text(k)} {n(v)}" for k, v in by_reason.items()]
    return ", ".join(items[:limit]) + (f", … ({len(items) - limit} more)" if len(items) > limit else "")


def funnel(stats: dict, examples: list[dict]) -> str:
    rows = _funnel_rows(stats["funnel"])
    body = [
        "Each step's *out* is the next step's *in*; *share* is the share of the documents read left after the step. "
        "The first step counts the records of the input files (a WARC's requests, metadata and warcinfo records are "
        "not documents; every record of a JSON lines or Parquet file is one).",
        "",
        _table(["step", "in", "removed", "out", "share", "removed by reason"], rows, "lrrrrl"),
        "",
        _image(stats, "funnel"),
        *_funnels_by_source(stats),
        "",
        "### Removed documents, by reason",
        "",
        _removed_by_reason(stats),
        "",
        "### Examples of removed documents",
        "",
        _examples(stats, examples),
    ]
    return "\n".join(body)


def _funnel_rows(funnel: list[dict]) -> list[list]:
    return [
        [
            text(r["label"]) if r["status"] == "ran" else f"*{text(r['label'])}*",
            n(r["in"]),
            n(r["removed"]),
            n(r["out"]),
            pct(r["out_share"]),
            _reasons(r["by_reason"]),
        ]
        for r in funnel
    ]


def _funnels_by_source(stats: dict) -> list[str]:
    """The funnel of each source kind's documents (inputs of several kinds), each adding up on its own."""
    out = []
    for kind, f in (stats.get("funnel_by_source") or {}).items():
        check = "adds up" if f["adds_up"] else "**does not add up**"
        out += [
            "",
            f"### {text(KIND_NAMES.get(kind, kind))} inputs ({check}; until the shards, which mix every source)",
            "",
            _table(
                ["step", "in", "removed", "out", "share", "removed by reason"], _funnel_rows(f["funnel"]), "lrrrrl"
            ),
        ]
    return out


def _removed_by_reason(stats: dict) -> str:
    rows = []
    for r in stats["funnel"]:
        for reason, count in r["by_reason"].items():
            rows.append(
                [
                    text(r["phase"]),
                    text(r["stage"] or "–"),
                    code(reason),
                    n(count),
                    pct(count / r["in"] if r["in"] else None),
                ]
            )
    if not rows:
        return "Nothing was removed."
    return _long_table(["phase", "stage", "reason", "removed", "of the step's in"], rows, "reasons", "lllrr")


def _example(e: dict) -> str:
    """One removed document as an HTML list item (inside a raw HTML block: every value HTML-escaped)."""
    parts = [f"<code>{html_text(e['url'] or '(no url)')}</code>"]
    if e["details"]:
        parts.append(f"details: <code>{html_text(e['details'][:200])}</code>")
    if e["text"] is not None:
        parts.append(f"<br><q>{html_text(e['text'])}{'…' if (e['text_chars'] or 0) > len(e['text']) else ''}</q>")
    return "<li>" + " ".join(parts) + "</li>"


def _examples(stats: dict, examples: list[dict]) -> str:
    counts = {(r["phase"], r["stage"], reason): c for r in stats["funnel"] for reason, c in r["by_reason"].items()}
    order = {key: i for i, key in enumerate(counts)}  # funnel order, then most removed first
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for e in sorted(examples, key=lambda e: order.get((e["phase"], e["stage"], e["reason"]), len(order))):
        groups[(e["phase"], e["stage"], e["reason"])].append(e)
    if not groups:
        return "No removed documents to show."
    texts = any(e["text"] is not None for e in examples)
    intro = (
        f"URL, details and the first {SHOW_CHARS} characters of the text"
        if texts
        else "URL and details (the text of removed documents is stored only with `output.rejected_text: true`)"
    )
    out = [
        f"The first documents removed for each reason: {intro}. PII is redacted (typed placeholders such as "
        f"`<EMAIL_ADDRESS>`; anything else that looks like PII is {code(MASK)}).",
        "",
    ]
    for key, rows in groups.items():
        phase, stage, reason = key
        summary = (
            f"<code>{html_text(phase)} · {html_text(reason)}</code>: {n(counts.get(key))} removed, {len(rows)} shown"
        )
        out.append(
            f"<details><summary>{summary}</summary>\n<ol>\n"
            + "\n".join(_example(e) for e in rows)
            + "\n</ol>\n</details>"
        )
    return "\n".join(out)


def languages(stats: dict) -> str:
    by_phase = stats["languages"]
    if not by_phase:
        return "No documents."
    phases = list(by_phase)
    last = phases[-1]
    total = sum(by_phase[last].values())
    langs = list(dict.fromkeys([*by_phase[last], *[k for p in phases for k in by_phase[p]]]))
    rows = [
        [
            code(lang),
            *[n(by_phase[p].get(lang, 0)) for p in phases],
            pct(by_phase[last].get(lang, 0) / total if total else None),
        ]
        for lang in langs
    ]
    return "\n".join(
        [
            "Documents per language after each phase (fastText "
            "lid.176 on the extracted text; `unknown`: no language). "
            f"*share*: of {code(last)}.",
            "",
            _long_table(["language", *[text(p) for p in phases], "share"], rows, "languages"),
            "",
            _image(stats, "languages"),
        ]
    )


def length(stats: dict) -> str:
    ln = stats["length"]
    rows = [
        [k, code(v["phase"]) if v["phase"] else "–", n(v["documents"]), n(v["chars"]), n(v["mean_chars"])]
        for k, v in (("before", ln["before"]), ("after", ln["after"]))
    ]
    return "\n".join(
        [
            "Text length in characters, of the documents the first phase kept (*before*) and of the documents "
            "written (*after*).",
            "",
            _table(["", "phase", "documents", "characters", "mean"], rows, "llrrr"),
            "",
            _image(stats, "length"),
        ]
    )


def classifiers(stats: dict) -> str:
    c = stats["classifiers"]
    if not c["present"]:
        return "No classifier or tagger scored this run (`classifiers: []`, no `stages:` entry declares a score)."
    out = []
    for e in c["entries"]:
        out += [
            f"### {text(e['name'])}",
            "",
            _classifier_intro(e),
            "",
            _table(
                ["phase", "scored", "no score", "mean"],
                [[code(p), n(v["scored"]), n(v["missing"]), _score(v["mean"])] for p, v in e["by_phase"].items()],
                "lrrr",
            ),
        ]
        for i, (phase, langs) in enumerate(e["by_language"].items()):
            removed = e["removed_by_language"] if i == 0 and e["filter_phase"] else None
            head = (
                f"Per language, in {code(phase)}"
                + (f" (*removed*: by the filter, in {code(e['filter_phase'])})" if removed is not None else "")
                + ": the share of documents in each fifth of the score range, and the mean."
            )
            table = _long_table(
                ["language", "scored", "mean", *FIFTHS, *(["removed"] if removed is not None else [])],
                [
                    [
                        code(lang),
                        n(v["scored"]),
                        _score(v["mean"]),
                        *_fifths(v["hist"]),
                        *([n(removed.get(lang, 0))] if removed is not None else []),
                    ]
                    for lang, v in langs.items()
                ],
                "languages",
                "lrr" + "r" * (len(FIFTHS) + (removed is not None)),
            )
            # where it was scored, shown; in the documents written, collapsed
            out += ["", head, "", table] if i == 0 else ["", _details(f"per language, in {phase}", table)]
        out.append("")
    return "\n".join([*out, _image(stats, "classifiers")])


#: The score range in fifths (the card's per-language table); the histogram has 20 bins, four to a fifth.
FIFTHS = ["0–0.2", "0.2–0.4", "0.4–0.6", "0.6–0.8", "0.8–1"]


def _fifths(hist: list[int]) -> list[str]:
    total = sum(hist)
    per = len(hist) // len(FIFTHS)
    return [pct(sum(hist[i * per : (i + 1) * per]) / total) if total else "–" for i in range(len(FIFTHS))]


def _score(v) -> str:
    return "–" if v is None else f"{v:.3f}"


def _setting(v) -> str:
    """A number of the recorded config as written (0.5, not an escaped 0\\.5), anything else as escaped text."""
    return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else text(v)


def _classifier_intro(e: dict) -> str:
    model = (
        f"the **demonstration** model {code(e['model'])} "
        f"({text(e['demonstration'])}; sha256 {code(e['model_sha256'][:12])}…)"
        if e["demonstration"]
        else f"the fastText model {code(e['model'])}"
    )
    rule = (
        f"remove {text(e['remove'])} {_setting(e['threshold'])}"
        if e["threshold"] is not None
        else f"keep the best {_setting(e['top_fraction'])} of each language"
        if e["top_fraction"] is not None
        else None
    )
    if rule and e["by_language_rule"]:
        rule += (
            " (per language: " + ", ".join(f"{code(k)} {_setting(v)}" for k, v in e["by_language_rule"].items()) + ")"
        )
    flt = (
        f"filter: {rule}, {n(e['removed'])} documents removed (reason {code(e['name'])})"
        if rule
        else "no filter (a tag only)"
    )
    if e.get("tagger"):  # a stage of the run's own module that declares the score (pipeline/plugins.py)
        own = f"a score the stage {code(e['model'] or '?')} declares ({text(e['label'] or '')})"
        return f"{code(e['column'])}: {own}; {flt}."
    return f"{code(e['column'])}: the probability of the label {code(e['label'] or '?')} under {model}; {flt}."


def dedup(stats: dict) -> str:
    d = stats["dedup"]
    if d["status"] != "ran":
        return f"Deduplication did not run ({text(d['status'].replace('_', ' '))})."
    cfg = stats["run"]["config"].get("dedup", {})
    mh = cfg.get("minhash", {})
    rows = [
        ["exact duplicates removed", n(d["exact_duplicate"])],
        ["near duplicates removed", n(d["near_duplicate"])],
        *(
            [["copies of earlier runs' documents removed (dedup.against)", n(d["earlier_duplicate"])]]
            if d.get("earlier_duplicate")
            else []
        ),
        ["removed in all", f"{n(d['removed'])} of {n(d['in'])} ({pct(d['removed_share'])})"],
        ["clusters of 2 or more", n(d["cluster_count"])],
        ["documents in them", n(d["documents_in_clusters"])],
        ["largest cluster", n(d["largest_cluster"])],
    ]
    method = (
        f"Exact: {'on' if cfg.get('exact', {}).get('enabled') else 'off'}; MinHash-LSH: "
        f"{'on' if mh.get('enabled') else 'off'} (threshold {text(mh.get('threshold'))}, {text(mh.get('ngram'))}-"
        f"{text(mh.get('shingle'))} shingles, {text(mh.get('num_perm'))} "
        "permutations). One document per cluster is kept."
    )
    return "\n".join(
        [
            method,
            "",
            _table(["", "documents"], rows),
            "",
            _image(stats, "dup_clusters"),
            *_paragraphs(d.get("paragraphs")),
        ]
    )


def _paragraphs(p: dict | None) -> list[str]:
    """Paragraph (or line) dedup: what it removed, and the most repeated pieces (their first characters, redacted)."""
    if not p:
        return []
    unit = "lines" if p.get("unit") == "line" else "paragraphs"
    mode = (
        "every copy after the first"
        if p.get("mode") == "keep_first"
        else "every copy of a piece repeated often enough"
    )
    out = [
        "",
        f"**Repeated {unit}** (`dedup.paragraphs`, after document dedup; removed: {mode}): {n(p.get('removed'))} of "
        f"{n(p.get('pieces'))} {unit} and {n(p.get('chars_removed'))} "
        f"characters removed from {n(p.get('documents_edited'))} "
        f"documents; {n(p.get('documents_rejected'))} documents left too short were rejected by the text rules.",
    ]
    top = p.get("top") or []
    if top:
        counted = "documents holding it" if p.get("mode") == "min_count" else "copies"  # min_count counts per document
        out += [
            "",
            _table(
                [counted, f"most repeated {unit} (first characters, PII redacted)"],
                [
                    [
                        n(r["count"]),
                        text(r["text"]) if r.get("text") is not None else "(not shown: redaction unavailable)",
                    ]
                    for r in top
                ],
                "rl",
            ),
        ]
    return out


def pii(stats: dict) -> str:
    p = stats["pii"]
    if not p["present"]:
        return "PII was not detected or redacted: no phase wrote PII counts (`pii_<entity>` columns)."
    rows = [
        [code(e), text(v["action"]), n(v["documents"]), pct(v["share"]), n(v["findings"])]
        for e, v in p["entities"].items()
    ]
    return "\n".join(
        [
            f"In {code(p['phase'])}: {n(p['redacted_documents'])} of {n(p['documents'])} documents "
            f"({pct(p['redacted_share'])}) had PII redacted; {n(p['documents_with_pii'])} had any finding, "
            f"{n(p['findings'])} findings in all.",
            "",
            _table(["entity", "action", "documents", "share", "findings"], rows, "llrrr"),
            "",
            _image(stats, "pii"),
        ]
    )


def tokens(stats: dict) -> str:
    t = stats["tokens"]
    if not t["present"]:
        return "No shards were written (no `shards/manifest.json`): the dataset is the Parquet files only."
    tok = t["tokenizer"] or {}
    sha = f" (sha256 {code(tok['sha256'][:12])}…)" if tok.get("sha256") else ""
    named = code(tok.get("path") or tok.get("name") or "?")
    what = text(t["demonstration"]) if t.get("demonstration") else f"the tokenizer {named}{sha}"
    if tok.get("file"):
        what += (
            f", copied into {code('shards/' + tok['file'])} "
            f"({text(tok.get('kind'))}, vocabulary {n(tok.get('vocab_size'))}, "
            f"ids stored as {text(tok.get('dtype'))})"
        )
    docs = (
        f"{n(t['samples'])} samples of {n(t['documents'])} distinct documents"
        if t.get("repeats")
        else f"{n(t['documents'])} documents"
    )
    each = "sample" if t.get("repeats") else "document"
    head = (
        f"{docs}, {n(t['tokens'])} tokens ({n(t['tokens_per_document'])} per {each})"
        f"{_specials(t)}; tokenizer: {what}"
        + (f"; config hash {code(t['config_hash'])}" if t["config_hash"] else "")
        + "."
    )
    extra = t.get("format_fields") or {}
    rows = [
        [
            code(f),
            text(extra.get(f, {}).get("layout", "–")),
            n(v["shards"]),
            n(extra.get(f, {}).get("documents")),
            n(v["samples"]),
            n(v["tokens"]),
            n(v["bytes"]),
        ]
        for f, v in t["formats"].items()
    ]
    out = [
        head,
        "",
        _table(["format", "layout", "shards", "documents", "samples", "tokens", "bytes"], rows, "llrrrrr"),
    ]
    pattern = extra.get("webdataset", {}).get("url_pattern")
    if pattern:
        out += ["", f"The WebDataset tars, as one brace pattern under `shards/webdataset/`: {code(pattern)}."]
    dropped = t.get("dropped") or {}
    if dropped.get("documents") or dropped.get("tokens"):
        out += [
            "",
            f"Packing dropped {n(dropped.get('tokens'))} tokens, "
            f"{n(dropped.get('documents'))} documents of them whole "
            f"({text(dropped.get('why') or 'layout.remainder: drop')}); the funnel counts those documents as removed.",
        ]
    return "\n".join(out + _trainers(t))


def _specials(t: dict) -> str:
    """What the token count includes besides the text: BOS/EOS per document, padding."""
    b, tok = t.get("breakdown"), t.get("tokenizer") or {}
    if not b:
        return " (BOS/EOS as configured included)"
    added = [
        f"one {kind.upper()} ({code(tok[kind]['token'])}, id {n(tok[kind]['id'])})"
        for kind in ("bos", "eos")
        if tok.get(kind)
    ]
    pad = f" and {n(b['padding'])} pad tokens" if b.get("padding") else ""
    if not added:
        return f", without BOS or EOS{pad}"
    return f", counting {' and '.join(added)} per document{pad}: {n(b['text'])} tokens of text"


def _trainers(t: dict) -> list[str]:
    """What each trainer does with this layout, and what a loader that cuts samples loses at each length."""
    cut = {r["length"]: r for r in t.get("truncation") or []}
    rows = []
    for tr in t.get("trainers") or []:
        does = text(tr["does"])
        if tr["cuts"] and cut:
            does += (
                " ("
                + ", ".join(
                    f"{pct(r['share'])} of the tokens lost at {n(length)}"
                    if i == 0
                    else f"{pct(r['share'])} at {n(length)}"
                    for i, (length, r) in enumerate(cut.items())
                )
                + ")"
            )
        reads = code(f"shards/{tr['format']}/") + ("" if tr["written"] else " (not written)")
        rows.append([text(tr["label"]) + (" (named: `shards.trainer`)" if tr["named"] else ""), reads, does])
    if not rows:
        return []
    out = [
        "",
        "What each trainer does with these shards (layout " + code((t.get("layout") or {}).get("kind", "?")) + "):",
        "",
        _table(["trainer", "reads", "with these shards"], rows, "lll"),
    ]
    if cut:
        out += [
            "",
            _details(
                "tokens a loader that cuts every sample at L tokens loses (LLM Foundry does, at max_seq_len)",
                _table(
                    ["L", "samples longer", "tokens lost", "share"],
                    [[n(length), n(r["samples"]), n(r["tokens"]), pct(r["share"])] for length, r in cut.items()],
                ),
            ),
        ]
    return out


def hosts(stats: dict) -> str:
    h = stats["hosts"]

    def host_cell(rows: list, i: int) -> str:
        return f"{code(rows[i][0])} ({n(rows[i][1])})" if i < len(rows) else ""

    rows = [
        [i + 1, host_cell(h["kept"], i), host_cell(h["removed"], i)]
        for i in range(max(len(h["kept"]), len(h["removed"])))
    ]
    return "\n".join(
        [
            f"Hosts (`www.` dropped, IP addresses grouped) of the documents kept ({n(h['kept_distinct'])} hosts) "
            f"and removed at any step ({n(h['removed_distinct'])} hosts).",
            "",
            _table(["#", "kept", "removed"], rows, "rll"),
            "",
            _image(stats, "hosts"),
        ]
    )


def limitations(stats: dict) -> str:
    items = []
    run = stats["run"]
    if run["status"] not in ("ok", "running"):
        items.append(f"The run ended with status {code(run['status'])}.")
    if run["parts_by"] != "fingerprints":
        items.append(f"Parts were found by {text(run['parts_by'])}: parts left from an earlier run may be counted.")
    items += [f"Check failed: {text(c['check'])}." for c in stats["checks"] if not c["ok"]]
    items += [
        f"{code(u['file'])} could not be read ({text(u['error'])}): the card is built without it."
        for u in stats.get("unreadable", [])
    ]
    if stats["publish"]["withheld"]:
        items.append(f"No dataset config is offered: {text(stats['publish']['withheld'])}.")
    items += [
        f"{code(folder)} is not offered for publishing: it holds {text(why)}."
        for folder, why in (stats["publish"].get("excluded") or {}).items()
    ]
    items += [
        f"The plot {code(name)} could not be drawn ({text(err)}): the card shows no image for it."
        for name, err in stats.get("plot_errors", {}).items()
    ]
    for r in stats["funnel"]:
        if r["status"] not in ("ran",):
            items.append(f"{text(r['label'][:1].upper() + r['label'][1:])}.")
        elif r["step"].endswith((":not_processed", ":unaccounted")):
            items.append(f"{n(r['removed'])} documents: {text(r['label'])}.")
    demos = [e for e in stats["classifiers"].get("entries", []) if e["demonstration"]]
    if demos:
        items.append(
            f"The scores {', '.join(code(e['column']) for e in demos)} come from demonstration models trained on the "
            "project's samples (told by their sha256), not production classifiers: they show the pipeline working, "
            "not what a real model would keep."
        )
    if not stats["pii"]["present"]:
        items.append(
            "PII was not detected or redacted: the documents may contain e-mail addresses, phone numbers and "
            "other personal data."
        )
    else:
        items.append(
            "PII is found by patterns (presidio recognizers with validation): names and places only with "
            "`pii.ner_models`; recall per entity is measured in benchmarks/results/pii_eval.md."
        )
        items += [
            f"{code(e)} is counted but not redacted (action `annotate`)."
            for e, v in stats["pii"]["entities"].items()
            if v["action"] == "annotate"
        ]
    m = stats.get("mix") or {}
    items += [
        f"Source {code(name)} is repeated {src['epochs']:.1f} epochs in the shards: past "
        f"{m.get('repeat_warning_epochs')} epochs repeated tokens are worth less and less (Muennighoff et al. "
        "2023, Scaling Data-Constrained Language Models); add documents to it or lower its weight."
        for name, src in (m.get("sources") or {}).items()
        if src.get("epochs") is not None and src["epochs"] > (m.get("repeat_warning_epochs") or float("inf"))
    ]
    if stats["tokens"].get("demonstration"):
        items.append(
            "The tokens come from a demonstration tokenizer trained on the project's samples (told by its sha256), "
            "not a production one: use the shards to try a trainer, not to train a model."
        )
    items += [f"{text(w)}." for w in stats["tokens"].get("trainer_warnings") or []]
    if not stats["run"]["config"].get("output", {}).get("rejected_text"):
        items.append(
            "The text of removed documents was not stored (`output.rejected_text: false`): examples show URLs only."
        )
    items += [
        "Language labels come from fastText lid.176 on the extracted "
        "text; short and mixed-language documents are the least reliable.",
        "Counts of WARC records other than responses come from "
        "the readers' per-file counts (the input phase's markers); "
        "every other count comes from the Parquet files and the shards manifest.",
        "Only what *Publishing* lists is meant to be published: "
        "`documents/extracted`, `documents/deduped`, `rejected/` "
        "and `dedup/` hold text before PII redaction.",
    ]
    return "\n".join(f"- {i}" for i in items)


def publishing(stats: dict) -> str:
    p = stats["publish"]
    if p["withheld"]:
        return f"Nothing of this output is to be published as it stands: {text(p['withheld'])}."
    langs = ", ".join(f"{code(k)} → {code(v)}" for k, v in (stats.get("hub_languages") or {}).items() if v and v != k)
    snippet = "\n".join(
        [
            "from huggingface_hub import HfApi",
            "",
            'HfApi().upload_large_folder(repo_id=REPO, repo_type="dataset", folder_path=OUTPUT_ROOT,',
            f"                            allow_patterns={p['allow_patterns']!r},",
            f"                            ignore_patterns={p['ignore_patterns']!r})",
        ]
    )
    excluded = p.get("excluded") or {}
    if excluded:
        many = len(excluded) > 1
        head = (
            " and ".join(code(f) for f in excluded) + f" {'are' if many else 'is'} not offered: "
            f"{'they hold' if many else 'it holds'} {text(next(iter(excluded.values())))}. This card offers no "
            "dataset config; the shards are published with it, and `rejected/`, the documents, `dedup/`, "
            "`_done/` and `run.json` are not. Upload exactly these files:"
        )
    else:
        head = (
            "This output's root is a Hugging Face dataset repository as it stands: this card is its `README.md`, "
            "and `datasets.load_dataset(OUTPUT_ROOT)` (or the repository's name) reads its `default` config, the "
            "documents after PII redaction. The shards are uploaded beside them, outside the configs; "
            "`rejected/`, the phases before PII redaction, `dedup/`, `_done/` and `run.json` are not. Upload "
            "exactly these files:"
        )
    return "\n".join(
        [
            head,
            "",
            fence(snippet, "python"),
            "",
            "(`upload_folder` takes the same patterns.) The card's "
            "`language` list gives Hub codes: ISO 639-1 where one "
            "exists, else ISO 639-3"
            + (f" ({langs}; the language-ID labels are in `card/stats.json`)" if langs else "")
            + ".",
        ]
    )


def reproduce(stats: dict) -> str:
    run = stats["run"]
    config = yaml.safe_dump(run["config"], sort_keys=False, allow_unicode=True, width=120)
    command = shlex.join(run["command"]) if run["command"] else "(not recorded)"
    return "\n".join(
        [
            "The run's configuration (as `run.json` records it, any "
            f"value that looks like PII redacted; {n(run['inputs'])} "
            "input files) and the package versions above. Save it as `config.yaml` and run:",
            "",
            "```bash\ncurate run config.yaml\n```",
            "",
            f"The command of the last invocation was {code(command)} (phases run: "
            f"{', '.join(text(p) for p in run['phases_run'] or []) or '–'}). "
            "`curate report OUTPUT_ROOT` rebuilds this card from the output without rerunning anything.",
            "",
            _details("config.yaml", fence(config, "yaml")),
        ]
    )


def render(stats: dict, examples: list[dict]) -> str:
    sections = [
        ("Summary", summary(stats)),
        ("Sources", sources(stats)),
        ("Processing", processing(stats)),
        ("Funnel", funnel(stats, examples)),
        ("Languages", languages(stats)),
        ("Document length", length(stats)),
        ("Classifiers", classifiers(stats)),
        ("Deduplication", dedup(stats)),
        ("PII", pii(stats)),
        ("Decontamination", decontam(stats)),
        ("Tokens", tokens(stats)),
        ("Training mix", mix(stats)),
        ("Top hosts", hosts(stats)),
        ("Known limitations", limitations(stats)),
        ("Publishing", publishing(stats)),
        *([("Exports", exports(stats))] if stats.get("exports") else []),
        ("How to reproduce", reproduce(stats)),
    ]
    title = f"# {text(stats['run']['name'])}: curated Common Crawl text\n"
    return front_matter(stats) + "\n" + title + "\n" + "\n\n".join(f"## {h}\n\n{body}" for h, body in sections) + "\n"


def exports(stats: dict) -> str:
    """The run's exports (pipeline/exports.py): copies of a phase's documents, none of them in the upload list."""
    rows = [
        [
            code(e["name"]),
            code(e["phase"]),
            code(e["path"] or ""),
            text(e["format"] or ""),
            n(e["files"]),
            n(e["documents"]),
            "yes" if e["pii_redacted"] else "**no: unpublished**",
        ]
        for e in stats["exports"]
    ]
    out = [
        "Copies of a phase's kept documents in another format, for readers outside this run (`exports:`). "
        "None is in the upload list above.",
        "",
        _table(["export", "of phase", "folder", "format", "files", "documents", "PII redacted"], rows, "lllllrrl"),
    ]
    raw = [e for e in stats["exports"] if not e["pii_redacted"]]
    if raw:
        out += [
            "",
            " and ".join(code(e["path"] or e["name"]) for e in raw) + " hold text before PII redaction: "
            "unpublished data, for this team's own use; never publish them.",
        ]
    return "\n".join(out)


def decontam(stats: dict) -> str:
    d = stats.get("decontam") or {"present": False}
    if not d["present"]:
        return "No decontamination against eval sets ran (`decontam.eval_sets` is empty)."
    verb = "removed" if d["action"] == "remove" else "tagged"
    rows = [
        [code(s["name"]), n(s["items"]), n(s["skipped"]), n(s["items_found"]), n(s["documents"])] for s in d["sets"]
    ]
    speed = ""
    if d.get("seconds"):
        speed = (
            f" The stage took {d['seconds']:,.1f} of the phase's {d['phase_seconds']:,.1f} stage-seconds "
            f"({n(round(d['documents_in'] / d['seconds']))} documents/s per core)."
        )
    return "\n".join(
        [
            f"Documents sharing a normalized {n(d['ngram'])}-word n-gram "
            f"with an eval item were {verb} in phase {code(d['phase'])} "
            f"(reason `contaminated`; the eval items in `details`): {n(d['documents'])} documents, found with an "
            f"{text(d['index'])} index ({n(d['false_hits'])} of its "
            f"{n(d['candidates'])} hits were not in an item's text).{speed} "
            "Items shorter than 8 words are common phrases and never matched (*skipped*).",
            "",
            _table(["eval set", "items", "skipped (short)", "items found", f"documents {verb}"], rows),
        ]
    )


def mix(stats: dict) -> str:
    m = stats.get("mix") or {"present": False}
    if not m["present"]:
        return "The shards hold every document of the last phase once (no `mix:` in the config)."
    rows = [
        [
            code(name),
            n(s["documents"]),
            n(s["tokens"]),
            pct(s["target_share"]),
            n(s["samples"]),
            n(s["tokens_drawn"]),
            pct(s["share"]),
            "–" if s["epochs"] is None else f"{s['epochs']:.2f}",
        ]
        for name, s in m["sources"].items()
    ]
    mode = {
        "weights": "target shares of the output tokens",
        "epochs": "epochs per source",
        "rehydrate": "rehydration only",
    }.get(m["mode"], text(m["mode"]))
    out = [
        f"Drawn to {mode} (seed {n(m['seed'])}): {n(m['samples'])} "
        f"samples of {n(m['documents_drawn'])} distinct documents, "
        f"{n(m['tokens'])} tokens; the largest miss of a target "
        f"share is {pct(m['share_error'])}. A repeated document is a "
        "new sample (id `<id>#<k>`), shuffled on its own; *epochs*: tokens drawn / the source's tokens.",
        "",
        _table(["source", "documents", "tokens", "target share", "samples", "tokens drawn", "share", "epochs"], rows),
        "",
        _image(stats, "mix"),
    ]
    r = m.get("rehydration")
    if r:
        weights = ", ".join(f"{k}+: {v}" for k, v in r["weights"].items())
        out += [
            "",
            f"Rehydration (FineWeb-2) by duplicate cluster size (weights: {text(weights)}): documents per weight.",
            "",
            _table(["weight (copies)", "documents"], [[code(k), n(v)] for k, v in r["documents_by_weight"].items()]),
        ]
    return "\n".join(out)
