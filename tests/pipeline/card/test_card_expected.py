"""An independent recomputation of the card's stats.json from an output folder (plain pandas/pyarrow).

Nothing here imports pipeline.card: the folders are read with pyarrow into
pandas and every number is counted again the obvious way.  The structure of
stats.json (which steps the funnel has, the status of each phase) is taken
from the card; every number in it is recomputed here, and
:func:`numbers` flattens both sides so a test can require that the card holds
no number this module did not recompute.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

LENGTH_EDGES = [
    0,
    1,
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1000,
    2000,
    5000,
    10000,
    20000,
    50000,
    100000,
    200000,
    500000,
    1000000,
]
TOP = 20
REJECTED_COLUMNS = ["id", "url", "source", "stage", "reason", "details", "text"]


def numbers(obj, prefix: str = "") -> dict[str, float]:
    """Every numeric leaf (not booleans) by its path."""
    out: dict[str, float] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(numbers(v, f"{prefix}{k}."))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(numbers(v, f"{prefix}{i}."))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out[prefix.rstrip(".")] = obj
    return out


def share(a, b):
    return round(a / b, 4) if b else None


def _read(folder: Path, columns=None) -> pd.DataFrame:
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if not files:
        return pd.DataFrame(columns=columns or [])
    frames = []
    for f in files:
        names = pq.ParquetFile(f).schema_arrow.names
        frames.append(pq.read_table(f, columns=[c for c in (columns or names) if c in names]).to_pandas())
    return pd.concat(frames, ignore_index=True)


def host(url) -> str:
    if url is None or (isinstance(url, float) and math.isnan(url)):
        return "(no host)"
    try:
        h = urlsplit(url).hostname
    except ValueError:
        return "(no host)"
    if not h:
        return "(no host)"
    h = h.removeprefix("www.")
    try:
        ipaddress.ip_address(h)
        return "(IP address)"
    except ValueError:
        return h


def _counts(series: pd.Series) -> dict:
    return {("unknown" if pd.isna(k) else str(k)): int(v) for k, v in series.value_counts(dropna=False).items()}


def _top(counts: dict) -> list:
    return [[h, n] for h, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]]


def expected(out: Path, card: dict) -> dict:
    """stats.json as it should be, recomputed from ``out`` (the card gives the structure only)."""
    record = json.loads((out / "run.json").read_text())
    config = record["config"]
    markers = [_reader_counts(json.loads(p.read_text())) for p in sorted((out / "_done" / "extracted").glob("*.json"))]
    order = list(dict.fromkeys(r["phase"] for r in card["funnel"]))  # run order (the funnel is a list)
    ran = [p for p in order if card["phases"][p]["status"] == "ran"]
    doc_phases = [p for p in ran if p != "shards"]  # every phase but shards writes documents (maybe none)
    docs = {p: _read(out / "documents" / p) for p in doc_phases}
    rej = {p: _read(out / "rejected" / p, REJECTED_COLUMNS) for p in ran}
    manifest = (
        json.loads((out / "shards" / "manifest.json").read_text())
        if "shards" in ran and (out / "shards" / "manifest.json").exists()
        else None
    )

    by_type: dict[str, int] = {}
    for m in markers:
        for t, n in m["records_by_type"].items():
            by_type[t] = by_type.get(t, 0) + n
    records = sum(by_type.values())
    responses = len(docs.get("extracted", [])) + len(rej.get("extracted", []))

    # the funnel: the card's steps, every count from the folders
    rows = []
    n_in = records
    for step in card["funnel"]:
        phase, stage = step["phase"], step["stage"]
        if step["step"] == "records":
            by_reason = {f"{t} record": n for t, n in by_type.items() if t != "response"}
        elif step["step"].endswith(":not_processed"):
            by_reason = {next(iter(step["by_reason"])): n_in - (len(docs[phase]) + len(rej[phase]))}
        elif step["step"].endswith(":unaccounted"):
            by_reason = {next(iter(step["by_reason"])): n_in - _samples(manifest)}
        elif step["step"].endswith(":dropped"):  # documents packing dropped whole (the manifest's count)
            by_reason = {next(iter(step["by_reason"])): manifest["dropped"]["documents"]}
        elif step["status"] != "ran":
            by_reason = {}
        else:
            r = rej[phase]
            by_reason = {k: int(v) for k, v in r[r["stage"] == stage]["reason"].value_counts().items()}
        removed = sum(by_reason.values())
        out_ = responses if step["step"] == "records" else n_in - removed
        rows.append(
            {
                "in": n_in,
                "removed": n_in - out_,
                "by_reason": by_reason,
                "out": out_,
                "removed_share": share(n_in - out_, n_in),
                "out_share": share(out_, responses),
            }
        )
        n_in = out_
    dataset = doc_phases[-1] if doc_phases else None
    written = _samples(manifest) if manifest else len(docs[dataset]) if dataset else 0
    assert rows[-1]["out"] == written, "the funnel does not end with the samples written"
    documents = manifest["documents"] if manifest else written  # distinct (a training mix repeats some)

    def tokens_of(m):
        if not m or not m["formats"]:
            return None
        first = sorted(m["formats"])[0]
        return sum(s["tokens"] for s in m["formats"][first]["shards"])

    langs = {p: _counts(d["language"]) if "language" in d else {} for p, d in docs.items()}
    exp = {
        "schema": 1,
        "summary": {
            "records": records,
            "responses": responses,
            "documents": documents,
            "documents_share": share(documents, responses),
            "samples": written,
            "repeats": written - documents,
            "dataset_documents": len(docs[dataset]) if dataset else 0,
            "tokens": tokens_of(manifest),
            "languages": int(docs[dataset]["language"].nunique()) if dataset and "language" in docs[dataset] else 0,
        },
        "run": {"config": config, "inputs": len(record["inputs"])},
        "phases": {p: _phase(out, p, v, docs, rej, manifest) for p, v in card["phases"].items()},
        "funnel": rows,
        "sources": _sources(record, markers, docs, rej),
        "languages": langs,
        "length": _length(docs, doc_phases),
        "classifiers": _classifiers(docs, doc_phases, rej, config),
        "dedup": _dedup(docs, rej, "deduped" in ran),
        "pii": _pii(docs, doc_phases, config),
        "tokens": _tokens(manifest, out, config),
        "hosts": _hosts(docs, rej, dataset),
        "examples": [_example(rej, e) for e in card["examples"]],
    }
    return exp


def _samples(manifest: dict) -> int:
    """The samples of the shards (a manifest before issue 38 has no ``samples``: its ``documents`` were them)."""
    return manifest.get("samples", manifest["documents"])


def _groups(manifest: dict | None) -> int | None:
    groups = (manifest or {}).get("groups")
    return len(groups) if isinstance(groups, list) else None


def _reader_counts(marker: dict) -> dict:
    """What the input phase's marker (pipeline.result.UnitResult) says a file held."""
    return {"source": marker["outputs"]["source"], **marker["totals"]}


def _phase(out, p, v, docs, rej, manifest) -> dict:
    row = {"parts": len(list((out / "documents" / p).glob("*.parquet"))) if v["status"] == "ran" else 0}
    if p == "shards":  # its units: the groups it wrote (a folder each, or an empty group: in the manifest's list)
        row["parts"] = _groups(manifest) or 0
    if v["status"] == "ran":
        if p in docs:
            row["kept"] = len(docs[p])
        row["rejected"] = len(rej[p])
    return row


def _sources(record, markers, docs, rej) -> dict:
    from pipeline.paths import public_path

    inputs = record["inputs"]
    shown = {f: public_path(f, record.get("working_dir")) for f in inputs}  # as the source column names an input
    per_source = {m["source"]: sum(m["records_by_type"].values()) for m in markers}
    ext = [f["source"] for f in (docs.get("extracted"), rej.get("extracted")) if f is not None and "source" in f]
    resp = pd.concat(ext).value_counts().to_dict() if ext else {}
    snaps: dict[str, int] = {}
    for f in inputs:
        m = re.search(r"CC-MAIN-\d{4}-\d{2}", f)
        if m:
            snaps[m.group(0)] = snaps.get(m.group(0), 0) + 1
    return {
        "files": len(inputs),
        "snapshots": snaps,
        "reader": {
            "by_type": _by_type(markers),
            "records": sum(_by_type(markers).values()),
            "rows": sum(m.get("rows", 0) for m in markers),
            "malformed": sum(m.get("malformed_records", 0) for m in markers),
        },
        "per_file": [
            {
                "records": per_source.get(shown[f]),
                "responses": int(resp.get(shown[f], 0)),
                "kept": {p: int((d["source"] == shown[f]).sum()) if "source" in d else 0 for p, d in docs.items()},
            }
            for f in inputs
        ],
    }


def _by_type(markers) -> dict:
    out: dict[str, int] = {}
    for m in markers:
        for t, n in m["records_by_type"].items():
            out[t] = out.get(t, 0) + n
    return out


def _length(docs, doc_phases) -> dict:
    out = {"edges": LENGTH_EDGES}
    for key, p in (
        ("before", doc_phases[0] if doc_phases else None),
        ("after", doc_phases[-1] if doc_phases else None),
    ):
        d = docs.get(p)
        n = 0 if d is None else len(d)
        lengths = np.array([], dtype=np.int64) if d is None or not n else d["text"].fillna("").str.len().to_numpy()
        hist = [
            int(((lengths >= lo) & (lengths < hi)).sum())
            for lo, hi in zip(LENGTH_EDGES, LENGTH_EDGES[1:] + [math.inf], strict=False)
        ]
        chars = int(lengths.sum())
        out[key] = {"documents": n, "chars": chars, "mean_chars": round(chars / n, 1) if n else None, "hist": hist}
    return out


def _score_totals(s: pd.Series) -> dict:
    s = s.astype("float64")
    ok = s[s.notna()].to_numpy()
    hist = [int(v) for v in np.bincount(np.clip(np.floor(ok * 20), 0, 19).astype(int), minlength=20)]
    return {
        "scored": len(ok),
        "missing": int(s.isna().sum()),
        "mean": round(float(ok.sum()) / len(ok), 4) if len(ok) else None,
        "hist": hist,
    }


def _classifiers(docs, doc_phases, rej, config) -> dict:
    entries = []
    for c in config.get("classifiers") or []:
        name, flt = c["name"], c["filter"]
        column = f"{name}_score"
        scored = [p for p in doc_phases if column in docs[p]]
        final = rej.get("final")
        mine = (
            final[(final["stage"] == f"{name}_filter") & (final["reason"] == name)]
            if final is not None and len(final)
            else None
        )
        details = [json.loads(d) for d in mine["details"]] if mine is not None else []
        removed_by_language: dict[str, int] = {}
        for d in details:
            if "language" in d:  # the classifier filter names the document's language
                key = d["language"] or "unknown"
                removed_by_language[key] = removed_by_language.get(key, 0) + 1
        by_language = {}
        for p in dict.fromkeys([*scored[:1], doc_phases[-1]]):
            if p in scored:
                d = docs[p].assign(language=docs[p]["language"].fillna("unknown"))
                by_language[p] = {lang: _score_totals(g[column]) for lang, g in d.groupby("language")}
        entries.append(
            {
                "threshold": flt["threshold"],
                "top_fraction": flt["top_fraction"],
                "by_language_rule": flt["by_language"],
                "removed": len(mine) if mine is not None else 0,
                "removed_by_language": removed_by_language,
                "by_phase": {p: _score_totals(docs[p][column]) for p in scored},
                "by_language": by_language,
            }
        )
    return {"bins": 20, "edges": [round(i / 20, 4) for i in range(21)], "entries": entries}


def _dedup(docs, rej, ran) -> dict:
    if not ran:
        return {}
    kept, r = docs["deduped"], rej["deduped"]
    sizes = kept["dup_cluster_size"].value_counts().to_dict() if len(kept) else {}
    clusters = {str(int(s)): int(n) for s, n in sorted(sizes.items()) if s >= 2}
    return {
        "in": len(kept) + len(r),
        "kept": len(kept),
        "removed": len(r),
        "exact_duplicate": int((r["reason"] == "exact_duplicate").sum()),
        "near_duplicate": int((r["reason"] == "duplicate").sum()),
        "removed_share": share(len(r), len(kept) + len(r)),
        "clusters": clusters,
        "cluster_count": sum(clusters.values()),
        "documents_in_clusters": sum(int(s) * n for s, n in clusters.items()),
        "largest_cluster": int(kept["dup_cluster_size"].max()) if len(kept) else 0,
        **({"earlier_duplicate": int(e)} if (e := (r["reason"] == "duplicate_earlier").sum()) else {}),
    }


def _pii(docs, doc_phases, config) -> dict:
    phase = next((p for p in reversed(doc_phases) if any(c.startswith("pii_") for c in docs[p].columns)), None)
    if phase is None:
        return {}
    d = docs[phase]
    cols = sorted(c for c in d.columns if c.startswith("pii_"))
    entities = (config.get("pii") or {}).get("entities") or {}

    def action(c):
        v = entities.get(c.removeprefix("pii_"))
        return (
            v
            if isinstance(v, str)
            else (v or {}).get("action", "replace")
            if isinstance(v, (dict, type(None)))
            else "replace"
        )

    n = len(d)
    any_pii = (d[cols] > 0).any(axis=1) if cols else pd.Series(dtype=bool)
    red = [c for c in cols if action(c) != "annotate"] if entities else cols
    redacted = int((d[red] > 0).any(axis=1).sum()) if red else 0
    ents = {
        c.removeprefix("pii_").upper(): {
            "documents": int((d[c] > 0).sum()),
            "findings": int(d[c].sum()),
            "share": share(int((d[c] > 0).sum()), n),
        }
        for c in cols
    }
    return {
        "documents": n,
        "documents_with_pii": int(any_pii.sum()),
        "redacted_documents": redacted,
        "redacted_share": share(redacted, n),
        "findings": sum(v["findings"] for v in ents.values()),
        "entities": ents,
    }


def _tokens(manifest, out: Path, config: dict) -> dict:
    if manifest is None:
        return {}
    formats = {
        f: {"shards": len(v["shards"]), **{k: sum(s[k] for s in v["shards"]) for k in ("samples", "tokens", "bytes")}}
        for f, v in manifest["formats"].items()
    }
    tokens = formats[sorted(formats)[0]]["tokens"] if formats else None
    samples = _samples(manifest)
    exp = {
        "documents": manifest["documents"],
        "samples": samples,
        "repeats": samples - manifest["documents"],
        "groups": _groups(manifest),
        "formats": formats,
        "tokens": tokens,
        "tokens_per_document": round(tokens / samples, 1) if samples and tokens is not None else None,
    }
    if "tokens" in manifest:  # a manifest since issue 20: what it says for trainers
        exp.update(_trainer_numbers(manifest, out, config))
    return exp


def _trainer_numbers(manifest: dict, out: Path, config: dict) -> dict:
    """The tokenizer's numbers from the copied file, the samples' tokens, padding and lengths past 1024/2048/4096 from
    the WebDataset tars (read with tarfile and numpy); the
    counts of documents and dropped tokens as the manifest says."""
    from tokenizers import Tokenizer

    shards = out / "shards"
    tok = Tokenizer.from_file(str(shards / "tokenizer" / "tokenizer.json"))

    def token(k: str) -> str | None:  # auto: the tokenizer's own, the one the manifest names (test_tokenizers.py)
        v = config["shards"]["tokenize"][k]
        return (manifest["tokenizer"].get(k) or {}).get("token") if v == "auto" else v

    specials = {k: tok.token_to_id(v) for k, v in (("bos", token("bos")), ("eos", token("eos"))) if v}
    pad = config["shards"]["layout"]["pad"]
    tokenizer = {
        "vocab_size": tok.get_vocab_size(),
        "max_id": max(tok.get_vocab().values()),
        **{k: {"id": i} for k, i in specials.items()},
        "pad": {"id": tok.token_to_id(pad) if pad else specials.get("eos")},
    }
    stored, real = _tar_samples(shards / "webdataset")
    given = manifest["documents_tokenized"]
    with_specials = manifest["tokens"]["documents"]
    breakdown = {
        "documents": with_specials,
        "text": with_specials - len(specials) * given,
        "bos": given if "bos" in specials else 0,
        "eos": given if "eos" in specials else 0,
        "dropped": manifest["dropped"]["tokens"],
        "padding": int((stored - real).sum()),
        "in_samples": int(stored.sum()),
    }
    lengths = sorted({1024, 2048, 4096, config["shards"]["layout"]["seq_len"]})
    truncation = [
        {
            "length": n,
            "samples": int((real > n).sum()),
            "tokens": int((real - n)[real > n].sum()),
            "share": share(int((real - n)[real > n].sum()), int(real.sum())),
        }
        for n in lengths
    ]
    fields = {f: {"documents": given if f == "megatron" else _samples(manifest)} for f in manifest["formats"]}
    return {
        "tokenizer": tokenizer,
        "breakdown": breakdown,
        "truncation": truncation,
        "documents_tokenized": given,
        "dropped": {"documents": manifest["dropped"]["documents"], "tokens": manifest["dropped"]["tokens"]},
        "layout": {"seq_len": config["shards"]["layout"]["seq_len"]},
        "format_fields": fields,
    }


def _tar_samples(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """Per sample of every tar: the token ids stored and the tokens that are not padding (its json's num_tokens)."""
    import io
    import tarfile

    stored, real = [], []
    for path in sorted(folder.glob("*/*.tar")):
        with tarfile.open(path) as tf:
            for m in tf:
                data = tf.extractfile(m).read()
                if m.name.endswith(".tokens.npy"):
                    stored.append(len(np.load(io.BytesIO(data))))
                elif m.name.endswith(".json"):
                    real.append(json.loads(data)["num_tokens"])
    return np.array(stored, np.int64), np.array(real, np.int64)


def _hosts(docs, rej, dataset) -> dict:
    kept = docs[dataset]["url"].map(host).value_counts().to_dict() if dataset and "url" in docs[dataset] else {}
    removed: dict[str, int] = {}
    for r in rej.values():
        for h, n in r["url"].map(host).value_counts().to_dict().items():
            removed[h] = removed.get(h, 0) + n
    return {
        "top": TOP,
        "kept_distinct": len(kept),
        "removed_distinct": len(removed),
        "kept": _top(kept),
        "removed": _top(removed),
    }


def _example(rej, e) -> dict:
    r = rej[e["phase"]]
    row = r[r["id"] == e["id"]].iloc[0]
    text = row["text"]
    return {"text_chars": None if text is None or (isinstance(text, float) and math.isnan(text)) else len(text)}
