"""Per-part aggregates: what the card needs from one part, from only the columns it needs.

One task reads the files of one part name across the phases
(``documents/<phase>/part-<name>.parquet`` and ``rejected/<phase>/...``), in
Arrow batches, and returns small JSON-able aggregates: counts by language,
source, stage and reason, fixed-bin histograms (document length, each
classifier's score per language), duplicate-cluster sizes, PII counts, host counts and the first few
removed documents of each reason.  Texts never leave the task (only the first
characters of the few example rows do), so a run of any number of parts is
summed on the driver from aggregates whose size does not grow with the
documents (hosts grow with the distinct hosts of a part).

:func:`merge` adds two aggregates; the same part always gives the same
aggregate, and the driver merges them in part-name order, so the card does
not depend on the number of workers.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.storage import S3Options, Storage
from pipeline.card import names as N
from pipeline.phase import Unit
from stages.pii.public import IP_HOST as PUBLIC_IP_HOST, NO_HOST as PUBLIC_NO_HOST
from stages.pii.urls import url_trigger

#: Document length bins, in characters: [edge_i, edge_i+1), the last one open ([1e6, inf)).
LENGTH_EDGES = [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000,
                100_000, 200_000, 500_000, 1_000_000]  # fmt: skip
#: Classifier-score bins: [i/20, (i+1)/20), a score of 1.0 in the last one.
QUALITY_BINS = 20
#: A classifier's details name the document's language (stages/classify.py): removals per language.
_DETAILS_LANGUAGE = r'"language": (?:"(?P<lang>[^"\\]*)"|null)'
#: Removed documents kept per (phase, stage, reason) as examples.
EXAMPLES_PER_REASON = 3
#: Characters of an example's text a task returns (redacted on the driver, then cut shorter).
EXAMPLE_READ_CHARS = 2000
#: Host labels: an IP address (PII: never printed), a URL without a host (stages/pii/public.py).
IP_HOST, NO_HOST = PUBLIC_IP_HOST, PUBLIC_NO_HOST

_HOST = r"^[A-Za-z][A-Za-z0-9+.\-]*://(?:[^/?#]*@)?(?P<host>\[[^\]/?#]*\]|[^:/?#]*)"
# WHATWG URL: a host whose last label is a number (decimal, 0x hex, 0 octal; one trailing dot) is an IPv4 address
_IP_LAST_LABEL = r"(^|\.)(0x[0-9a-f]*|[0-9]+)\.?$"
BATCH_ROWS = 8192


# ----------------------------------------------------------------------------- column aggregates


def hosts(urls: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The host of each URL as ``urllib.parse.urlsplit(url).hostname`` gives it, without a leading ``www.``,
    as it may be published: an IP address in any spelling becomes IP_HOST, a URL without a host NO_HOST,
    and a host whose labels hold PII has them replaced (PublicRedactor.hosts: ``<US_SSN>.example``)."""
    host = pc.struct_field(pc.extract_regex(urls, _HOST), "host")
    host = pc.utf8_lower(host)
    bracketed = pc.fill_null(pc.starts_with(host, "["), False)
    host = pc.if_else(bracketed, pc.utf8_trim(host, "[]"), host)
    host = pc.replace_substring_regex(host, "^www\\.", "")
    is_ip = pc.or_(bracketed, pc.fill_null(pc.match_substring_regex(host, _IP_LAST_LABEL), False))
    host = pc.if_else(is_ip, IP_HOST, host)
    host = pc.if_else(pc.fill_null(pc.equal(host, ""), True), NO_HOST, host)
    return _public_hosts(host, is_ip)


def _public_hosts(host: pa.Array, is_ip: pa.Array) -> pa.Array:
    """Hosts that may hold PII (non-ASCII, an escape, a PII shape: stages.pii.urls.url_trigger) redacted in Python
    by PublicRedactor.hosts; the rest keep their Arrow values."""
    if isinstance(host, pa.ChunkedArray):
        host, is_ip = host.combine_chunks(), is_ip.combine_chunks()
    suspect = pc.fill_null(pc.match_substring_regex(host, url_trigger(7)), False)  # non-ASCII, escapes, PII shapes
    suspect = pc.and_(suspect, pc.invert(is_ip))
    rows = pc.indices_nonzero(suspect)
    if not len(rows):
        return host
    public = _public_redactor().hosts(pc.take(host, rows).to_pylist())
    return pc.replace_with_mask(host, suspect, pa.array(public, host.type))


@functools.cache
def _public_redactor():
    from stages.pii.public import PublicRedactor

    return PublicRedactor()


def _counts(values) -> dict[str, int]:
    """value -> count (nulls as "unknown")."""
    out: dict[str, int] = {}
    for row in pc.value_counts(values).to_pylist():
        key = "unknown" if row["values"] is None else str(row["values"])
        out[key] = out.get(key, 0) + row["counts"]
    return out


def length_histogram(lengths: np.ndarray) -> list[int]:
    idx = np.searchsorted(np.asarray(LENGTH_EDGES), lengths, side="right") - 1
    return np.bincount(idx, minlength=len(LENGTH_EDGES)).tolist()


def quality_histogram(scores: np.ndarray) -> list[int]:
    idx = np.clip(np.floor(scores.astype(np.float64) * QUALITY_BINS), 0, QUALITY_BINS - 1).astype(np.int64)
    return np.bincount(idx, minlength=QUALITY_BINS).tolist()


def score_columns(schema: pa.Schema, declared: list[str]) -> list[str]:
    """The score columns the plan declares (a tagger's ``scores``: the classifiers' ``<name>_score``) that this
    part has, as numbers."""
    types = {f.name: f.type for f in schema}
    return [c for c in declared if c in types and (pa.types.is_floating(types[c]) or pa.types.is_integer(types[c]))]


def _scores_by_language(t: pa.Table, columns: list[str]) -> dict:
    """Per score column and language: the score histogram, their sum and the documents without a score."""
    lang = (
        pc.fill_null(t.column(N.LANGUAGE), "unknown").to_numpy(zero_copy_only=False)
        if N.LANGUAGE in t.column_names
        else np.full(t.num_rows, "unknown", dtype=object)
    )
    out: dict = {}
    for c in columns:
        values = pc.fill_null(t.column(c).cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)
        per: dict = {}
        for code in np.unique(lang):
            v = values[lang == code]
            ok = v[~np.isnan(v)]
            per[str(code)] = {"hist": quality_histogram(ok), "sum": float(ok.sum()), "missing": int(len(v) - len(ok))}
        out[c] = per
    return out


def pii_columns(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if f.name.startswith(N.PII_PREFIX) and pa.types.is_integer(f.type)]


# ----------------------------------------------------------------------------- one file


def documents_stats(file: pq.ParquetFile, lengths: bool, annotated: list[str] = (), scores: list[str] = ()) -> dict:
    """Aggregates of one documents part.

    ``lengths``: read the text column for the length histogram (only the first
    and the last phase need it).  ``annotated``: the PII count columns of
    entities that are counted but not redacted.  ``scores``: the score columns the plan declares.
    """
    schema = file.schema_arrow
    has = set(schema.names)
    pii = pii_columns(schema)
    scores = score_columns(schema, list(scores))
    wanted = [c for c in (N.LANGUAGE, N.SOURCE, N.URL, *scores, N.DUP_CLUSTER_SIZE, *pii) if c in has]
    if lengths and N.TEXT in has:
        wanted.append(N.TEXT)
    out: dict[str, Any] = {"rows": 0}
    if scores:
        out["scores"] = {c: {} for c in scores}
    if pii:
        out["pii"] = {
            "entities": {c.removeprefix(N.PII_PREFIX).upper(): {"documents": 0, "findings": 0} for c in pii},
            "documents": 0,
            "redacted_documents": 0,
        }
    for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
        out = merge(out, _documents_batch(pa.Table.from_batches([batch]), pii, annotated, scores))
    return out


def _documents_batch(t: pa.Table, pii: list[str], annotated: list[str], scores: list[str] = ()) -> dict:
    out: dict[str, Any] = {"rows": t.num_rows}
    if N.LANGUAGE in t.column_names:
        out["languages"] = _counts(t.column(N.LANGUAGE))
    if N.SOURCE in t.column_names:
        out["sources"] = _counts(t.column(N.SOURCE))
    if N.URL in t.column_names:
        out["hosts"] = _counts(hosts(t.column(N.URL)))
    if N.TEXT in t.column_names:
        n = pc.fill_null(pc.utf8_length(t.column(N.TEXT)), 0).to_numpy()
        out["length"] = {"hist": length_histogram(n), "chars": int(n.sum())}
    if scores:
        out["scores"] = _scores_by_language(t, scores)
    if N.DUP_CLUSTER_SIZE in t.column_names:
        out["clusters"] = _counts(t.column(N.DUP_CLUSTER_SIZE))
    if pii:
        found = {c: pc.fill_null(t.column(c), 0).to_numpy().astype(np.int64) for c in pii}
        redact = [c for c in pii if c not in annotated]
        out["pii"] = {
            "entities": {
                c.removeprefix(N.PII_PREFIX).upper(): {"documents": int((v > 0).sum()), "findings": int(v.sum())}
                for c, v in found.items()
            },
            "documents": int(np.logical_or.reduce([v > 0 for v in found.values()]).sum()),
            "redacted_documents": int(np.logical_or.reduce([found[c] > 0 for c in redact]).sum()) if redact else 0,
        }
    return out


def rejected_stats(file: pq.ParquetFile, examples: int = EXAMPLES_PER_REASON) -> dict:
    """Aggregates of one rejected part: counts by stage and reason, sources, hosts, the first examples."""
    has = set(file.schema_arrow.names)
    wanted = [c for c in ("id", N.URL, N.SOURCE, N.STAGE, N.REASON, N.DETAILS, N.TEXT) if c in has]
    out: dict[str, Any] = {"rows": 0}
    taken: Counter = Counter()
    for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
        t = pa.Table.from_batches([batch])
        stage = pc.fill_null(t.column(N.STAGE), "?") if N.STAGE in t.column_names else pa.array(["?"] * t.num_rows)
        reason = pc.fill_null(t.column(N.REASON), "?") if N.REASON in t.column_names else pa.array(["?"] * t.num_rows)
        keys = pa.table({"stage": stage, "reason": reason})
        reasons: dict[str, dict[str, int]] = {}
        for row in keys.group_by(["stage", "reason"], use_threads=False).aggregate([([], "count_all")]).to_pylist():
            reasons.setdefault(row["stage"], {})[row["reason"]] = row["count_all"]
        part = {"rows": t.num_rows, "reasons": reasons, "languages": _removed_by_language(t, keys)}
        if N.SOURCE in t.column_names:
            part["sources"] = _counts(t.column(N.SOURCE))
        if N.URL in t.column_names:
            part["hosts"] = _counts(hosts(t.column(N.URL)))
        part["examples"] = _examples(t, keys, taken, examples)
        out = merge(out, part)
    return out


def _removed_by_language(t: pa.Table, keys: pa.Table) -> dict:
    """{stage: {reason: {language: count}}} of the rows whose details name their language (classifier filters)."""
    if N.DETAILS not in t.column_names:
        return {}
    found = pc.extract_regex(pc.fill_null(t.column(N.DETAILS), ""), _DETAILS_LANGUAGE)
    has = pc.is_valid(found)
    if not pc.any(has).as_py():
        return {}
    lang = pc.fill_null(pc.struct_field(found, "lang"), "unknown")
    lang = pc.if_else(pc.equal(lang, ""), "unknown", lang)
    rows = pa.table({"stage": keys.column("stage"), "reason": keys.column("reason"), "lang": lang}).filter(has)
    out: dict = {}
    for r in rows.group_by(["stage", "reason", "lang"], use_threads=False).aggregate([([], "count_all")]).to_pylist():
        out.setdefault(r["stage"], {}).setdefault(r["reason"], {})[r["lang"]] = r["count_all"]
    return out


def _examples(t: pa.Table, keys: pa.Table, taken: Counter, cap: int) -> list[dict]:
    """The first rows of each (stage, reason) not yet taken ``cap`` times, text cut to EXAMPLE_READ_CHARS."""
    rows = []
    for i, (s, r) in enumerate(zip(keys.column("stage").to_pylist(), keys.column("reason").to_pylist(), strict=False)):
        if taken[(s, r)] < cap:
            taken[(s, r)] += 1
            rows.append(i)
    if not rows:
        return []
    picked = t.take(pa.array(rows, pa.int64()))
    text = picked.column(N.TEXT) if N.TEXT in picked.column_names else pa.nulls(len(rows), pa.string())
    head = pc.utf8_slice_codeunits(text, 0, EXAMPLE_READ_CHARS)
    full = pc.utf8_length(text)
    get = lambda c: picked.column(c).to_pylist() if c in picked.column_names else [None] * len(rows)  # noqa: E731
    out = []
    for i, (rid, url, det, h, n) in enumerate(
        zip(get("id"), get(N.URL), get(N.DETAILS), head.to_pylist(), full.to_pylist(), strict=False)
    ):
        out.append(
            {
                "stage": keys.column("stage")[rows[i]].as_py(),
                "reason": keys.column("reason")[rows[i]].as_py(),
                "id": rid,
                "url": url,
                "details": det,
                "text": h,
                "text_chars": n,
            }
        )
    return out


# ----------------------------------------------------------------------------- merging


def merge(a: Any, b: Any) -> Any:
    """Add two aggregates: numbers add, lists of numbers add element-wise, dicts merge by key,
    lists of dicts (examples) concatenate."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = merge(a.get(k), v)
        return out
    if isinstance(a, list):
        if a and isinstance(a[0], dict) or b and isinstance(b[0], dict):
            return a + b
        if len(a) != len(b):
            raise ValueError(f"cannot add histograms of {len(a)} and {len(b)} bins")
        return [x + y for x, y in zip(a, b, strict=False)]
    return a + b


def cap_examples(examples: list[dict], cap: int = EXAMPLES_PER_REASON) -> list[dict]:
    """The first ``cap`` examples of each (stage, reason), in the order given."""
    seen: Counter = Counter()
    out = []
    for e in examples:
        if seen[(e["stage"], e["reason"])] < cap:
            seen[(e["stage"], e["reason"])] += 1
            out.append(e)
    return out


# ----------------------------------------------------------------------------- the task


class PartStats:
    """Aggregates of every file of one part name (a Ray task, a pool process or the driver)."""

    def __init__(self, storage: Storage):
        self.storage = storage

    def process(self, unit: Unit) -> dict:
        files = {}
        for phase, kind, name, lengths in unit.params["files"]:
            f = pq.ParquetFile(self.storage.path(kind, phase, name), filesystem=self.storage.fs)
            if kind == "documents":
                agg = documents_stats(f, lengths, unit.params.get("annotated", []), unit.params.get("scores", []))
            else:
                agg = rejected_stats(f, unit.params.get("examples", EXAMPLES_PER_REASON))
            files[f"{phase}/{kind}"] = agg
        return {"unit": unit.name, "files": files}


def open_worker(config, root: str, s3: dict) -> PartStats:
    """For pipeline.distribute.map_units (built once per task)."""
    return PartStats(Storage(root, S3Options(**s3)))
