"""The strings of stats.json that come from the data or the run's record, redacted before anything is published.

Hosts are redacted where they are counted (pipeline/card/parts.py ``hosts``)
and the examples' URL, details and text where they are picked
(pipeline/card/examples.py).  Everything else the card, the plots and
stats.json print goes through here, with the same PublicRedactor
(stages/pii/public.py): input file names, language labels, stage and reason
names, the run's name, its config (keys and values), its command, the
tokenizer and quality-model paths, the error messages the card quotes, the most
repeated paragraphs of paragraph dedup.  A URL-shaped string is redacted as a
URL (userinfo dropped, PII values replaced), any other as text.  Two labels that
redact to the same string have their counts added, so the funnel still adds up.

File names, paths, the command, the config and the tokenizer's fields are read as
*names* (PublicRedactor.names): Common Crawl's file names and hex digests (the
tokenizer's sha256) stay readable, anything else that looks like PII is redacted
as anywhere.  A repeated paragraph that an earlier version cut before redacting
it loses its last, perhaps partial, word first (:func:`uncut`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

#: Where versions before issue 38 cut a repeated paragraph, before redacting it (pipeline/dedup/paragraphs.py).
OLD_SNIPPET_CHARS = 100
# whitespace-separated groups of digits and number punctuation at the end of a text (the start of a phone number)
_NUMBER_TAIL = re.compile(r"(?:\s+[\d()+\-./]+)+\s*$")
#: ``scheme://``: redacted as a URL (the userinfo removed, an IP host replaced), not as text.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def _strings(value) -> Iterator[str]:
    """Every dict key and string leaf of a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _deep(value, f: Callable[[str], str]):
    """A JSON value with its keys and string leaves mapped by ``f``."""
    if isinstance(value, str):
        return f(value)
    if isinstance(value, dict):
        return {f(k): _deep(v, f) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v, f) for v in value]
    return value


def _keys(counts: dict, f: Callable[[str], str]) -> dict:
    """``counts`` with its keys mapped by ``f``; keys that map to the same string have their counts added."""
    out: dict = {}
    for k, v in counts.items():
        out[f(k)] = out.get(f(k), 0) + v
    return out


def _published(stats: dict) -> Iterator[str]:
    """The strings of ``stats`` that come from the data (hosts and examples' bodies aside): read as text."""
    run = stats["run"]
    yield from (run["name"] or "", run["parts_by"])
    for e in stats.get("classifiers", {}).get("entries", []):
        yield from (
            e["name"],
            e["column"],
            e["label"],
            *e["removed_by_language"],
            *e["by_language_rule"],
            *(lang for per in e["by_language"].values() for lang in per),
        )
    yield from (lang for counts in stats["languages"].values() for lang in counts)
    yield from stats.get("hub_languages") or {}
    for r in stats["funnel"]:
        yield from (r["stage"], r["label"], *r["by_reason"])
    yield from (s for p in stats["phases"].values() for s in p.get("stages") or [])
    yield from (u["error"] for u in stats.get("unreadable", []))
    yield from (s for e in stats.get("examples", []) for s in (e["stage"], e["reason"]))
    yield from (r["text"] for r in _repeated(stats) if isinstance(r.get("text"), str))


def _names(stats: dict) -> Iterator[str]:
    """The strings of ``stats`` that name files or come from the run's record: paths, the command, the config, the
    tokenizer and models (read as names: Common Crawl's file names and hex digests stay readable)."""
    run = stats["run"]
    yield from (*(run["command"] or []), *_strings(run["config"]))
    for e in stats.get("classifiers", {}).get("entries", []):
        yield from _strings(e["model"])
    yield from _strings(stats["tokens"].get("tokenizer"))
    yield from (f["file"] for f in stats["sources"]["per_file"])
    yield from (u["file"] for u in stats.get("unreadable", []))


def _repeated(stats: dict) -> list[dict]:
    """The most repeated paragraphs (or lines) of paragraph dedup, as the run recorded them."""
    return ((stats.get("dedup") or {}).get("paragraphs") or {}).get("top") or []


def _public(strings: set[str], texts, urls) -> dict[str, str]:
    todo = sorted(s for s in strings if isinstance(s, str) and s)
    as_urls = [s for s in todo if _URL.match(s)]
    as_texts = [s for s in todo if not _URL.match(s)]
    return {**dict(zip(as_urls, urls(as_urls), strict=False)), **dict(zip(as_texts, texts(as_texts), strict=False))}


def redact_stats(stats: dict, redactor) -> dict:
    """``stats`` (changed in place and returned) with its data
    strings as ``redactor`` (a PublicRedactor) publishes them."""
    for r in _repeated(stats):  # cut before redaction by an earlier version: no partial value may be left at the cut
        if isinstance(r.get("text"), str) and not r.get("cut_after_redaction"):
            r["text"] = uncut(r["text"])
    public = _public(set(_published(stats)), redactor.texts, redactor.urls)
    named = _public(set(_names(stats)), lambda v: redactor.names(v), lambda v: redactor.names(v, urls=True))

    def f(s):
        return public.get(s, s) if isinstance(s, str) else s

    def g(s):
        return named.get(s, s) if isinstance(s, str) else s

    run = stats["run"]
    run.update(
        name=f(run["name"]),
        parts_by=f(run["parts_by"]),
        config=_deep(run["config"], g),
        command=[g(c) for c in run["command"]] if run["command"] else run["command"],
    )
    for e in stats.get("classifiers", {}).get("entries", []):
        e.update(
            name=f(e["name"]),
            column=f(e["column"]),
            label=f(e["label"]),
            model=_deep(e["model"], g),
            removed_by_language=_keys(e["removed_by_language"], f),
            by_language_rule={f(k): v for k, v in e["by_language_rule"].items()},
            by_language={p: {f(k): v for k, v in per.items()} for p, per in e["by_language"].items()},
        )
    if stats["tokens"].get("tokenizer") is not None:
        stats["tokens"]["tokenizer"] = _deep(stats["tokens"]["tokenizer"], g)
    for file in stats["sources"]["per_file"]:
        file["file"] = g(file["file"])
    stats["languages"] = {p: _keys(counts, f) for p, counts in stats["languages"].items()}
    stats["hub_languages"] = {
        f(k): v for k, v in (stats.get("hub_languages") or {}).items()
    }  # codes are [a-z]{2,3}: never PII
    for r in stats["funnel"]:
        step = f"{r['phase']}:{f(r['stage'])}" if r.get("step") == f"{r['phase']}:{r['stage']}" else r.get("step")
        r.update(step=step, stage=f(r["stage"]), label=f(r["label"]), by_reason=_keys(r["by_reason"], f))
    for p in stats["phases"].values():
        if p.get("stages"):
            p["stages"] = [f(s) for s in p["stages"]]
    for u in stats.get("unreadable", []):
        u.update(error=f(u["error"]), file=g(u["file"]))
    for e in stats.get("examples", []):
        e.update(stage=f(e["stage"]), reason=f(e["reason"]))
    for r in _repeated(stats):
        if isinstance(r.get("text"), str):
            r["text"] = f(r["text"])
    return stats


def uncut(text: str) -> str:
    """A snippet an earlier version cut at OLD_SNIPPET_CHARS before redacting it: its last, perhaps partial, word
    dropped (``maria.kowalski@gma``), with the groups of a number before it (``(415) 867-``)."""
    if len(text) < OLD_SNIPPET_CHARS:
        return text  # shorter than the cut: whole
    cut = max(text.rfind(c) for c in " \t\n")
    head = text[:cut] if cut > 0 else ""
    return _NUMBER_TAIL.sub("", head).rstrip() + "…"  # and the groups of a number before it ("(415) 867-5309")
