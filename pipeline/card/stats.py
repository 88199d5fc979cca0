"""stats.json: every number of the card, from the per-part aggregates, the manifest and run.json.

The card (render.py) and the plots (plots.py) are drawn from this dict only,
so what the card says is exactly what stats.json holds, and a reviewer can
recompute any of it from the Parquet (tests/pipeline/card/test_card_expected.py does).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict

from pipeline.card import hub, names as N
from pipeline.card.languages import hub_languages
from pipeline.card.tokens import headline_tokens as _headline_tokens, tokens_stats
from pipeline.card.funnel import adds_up, funnel, reader_counts, share
from pipeline.card.parts import LENGTH_EDGES, QUALITY_BINS
from pipeline.card.plan import CardPlan
from pipeline.phase import ROLE_SHARDS
from stages.pii.config import URL_ORIGINAL_COLUMN
from stages.pii.names import public_name

SCHEMA = 1
#: Hosts listed (and plotted) among the kept and among the removed documents.
TOP_HOSTS = 20
_SNAPSHOT = re.compile(r"CC-MAIN-\d{4}-\d{2}")


def build_stats(plan: CardPlan, aggs: dict[str, dict], manifest: dict | None, unreadable: list = ()) -> dict:
    """Every number of the card; ``unreadable``: the files left out (pipeline.card.collect.Unreadable)."""
    config = plan.record.get("config", {})
    rows = funnel(plan, aggs, manifest)
    kinds = sorted(set(plan.phase(plan.inputs_phase()).kinds.values())) if plan.phase(plan.inputs_phase()) else []
    docs = [p.name for p in plan.phases if p.status == "ran" and p.writes_documents]
    dataset = docs[-1] if docs else None
    responses = rows[0]["out"]
    for r in rows:
        r["removed_share"] = share(r["removed"], r["in"])
        r["out_share"] = share(r["out"], responses)
    written = rows[-1]["out"]
    return {
        "schema": SCHEMA,
        "summary": {
            "records": rows[0]["in"], "responses": responses, "documents": written, "documents_share": share(written, responses),
            "dataset_phase": dataset, "tokens": _headline_tokens(manifest),
            "languages": len([k for k in (aggs.get(f"{dataset}/documents", {}).get("languages") or {}) if k != "unknown"]),
        },
        "run": _run(plan),
        "plan": plan.plan.to_json(),
        "phases": _phases(plan, aggs),
        "funnel": rows,
        "funnel_adds_up": adds_up(rows),
        "funnel_by_source": _by_source(plan, aggs, kinds),
        "sources": _sources(plan, aggs),
        "languages": {p: _sorted(aggs.get(f"{p}/documents", {}).get("languages", {})) for p in docs},
        "hub_languages": hub_languages(_sorted(aggs.get(f"{dataset}/documents", {}).get("languages", {}))) if dataset else {},
        "length": _length(docs, aggs),
        "classifiers": _classifiers(plan, docs, aggs, config),
        "dedup": _dedup(plan, aggs),
        "pii": _pii(docs, aggs, config),
        "decontam": _decontam(plan, config),
        "mix": _mix(manifest),
        "tokens": tokens_stats(manifest, config),
        "hosts": _hosts(dataset, plan, aggs),
        "checks": _checks(plan, aggs, rows, manifest, unreadable),
        "unreadable": [asdict(u) for u in unreadable],
        "publish": _publish(plan, config, dataset, manifest),
    }


def _sorted(counts: dict) -> dict:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _run(plan: CardPlan) -> dict:
    r = plan.record
    return {"name": r.get("name"), "status": r.get("status"), "started": r.get("started"), "finished": r.get("finished"),
            "command": r.get("command"), "phases_run": r.get("phases_run"), "config": r.get("config", {}),
            "versions": r.get("versions", {}), "inputs": len(r.get("inputs", [])),
            "parts_by": "markers (the recorded config could not be rebuilt: " + plan.fallback + ")" if plan.fallback else "fingerprints"}


def _phases(plan: CardPlan, aggs: dict) -> dict:
    out = {}
    for p in plan.phases:
        row = {"status": p.status, "parts": len(p.parts)}
        if p.status == "ran":
            row["kept"] = aggs.get(f"{p.name}/documents", {}).get("rows", 0) if p.writes_documents else None
            row["rejected"] = aggs.get(f"{p.name}/rejected", {}).get("rows", 0)
            row["stages"] = p.stages
        out[p.name] = row
    return out


def _by_source(plan: CardPlan, aggs: dict, kinds: list[str]) -> dict:
    """The funnel of each source kind's parts (when the inputs are of more than one kind), each adding up."""
    if len(kinds) < 2:
        return {}
    out = {}
    for kind in kinds:
        rows = funnel(plan, aggs.get("by_kind", {}).get(kind, {}), None, kind)
        for r in rows:
            r["removed_share"] = share(r["removed"], r["in"])
            r["out_share"] = share(r["out"], rows[0]["out"])
        out[kind] = {"funnel": rows, "adds_up": adds_up(rows)}
    return out


def _sources(plan: CardPlan, aggs: dict) -> dict:
    inputs = plan.record.get("inputs", [])
    records: dict[str, int] = {}
    kinds: dict[str, str] = {}
    for m in plan.reader:
        source = m.outputs.get("source", m.unit)
        records[source] = sum(m.totals.get("records_by_type", {}).values())
        if m.outputs.get("kind"):
            kinds[source] = m.outputs["kind"]
    first = plan.inputs_phase()
    responses = Counter(aggs.get(f"{first}/documents", {}).get("sources", {}))
    responses.update(aggs.get(f"{first}/rejected", {}).get("sources", {}))
    kept = {p.name: aggs.get(f"{p.name}/documents", {}).get("sources", {}) for p in plan.phases if p.status == "ran" and p.writes_documents}
    # a file as it is published (the PII stage writes that name into the source column: stages/pii/names.py)
    public = {f: public_name(f) for f in inputs}
    files = [{"file": public[f], "kind": kinds.get(f), "records": records.get(f), "responses": responses.get(f, 0),
              "kept": {ph: k.get(f, k.get(public[f], 0)) for ph, k in kept.items()}} for f in inputs]
    snapshots = Counter(m.group(0) for f in inputs if (m := _SNAPSHOT.search(f)))
    return {"files": len(inputs), "snapshots": dict(sorted(snapshots.items())), "reader": reader_counts(plan), "per_file": files}


def _length(docs: list[str], aggs: dict) -> dict:
    out: dict = {"edges": LENGTH_EDGES}
    for key, phase in (("before", docs[0] if docs else None), ("after", docs[-1] if docs else None)):
        agg = aggs.get(f"{phase}/documents", {}) if phase else {}
        hist = agg.get("length", {}).get("hist", [0] * len(LENGTH_EDGES))
        chars = agg.get("length", {}).get("chars", 0)
        n = agg.get("rows", 0)
        out[key] = {"phase": phase, "documents": n, "chars": chars, "mean_chars": round(chars / n, 1) if n else None, "hist": hist}
    return out


def _classifiers(plan: CardPlan, docs: list[str], aggs: dict, config: dict) -> dict:
    """Per classifier: its model (and whether it is a demonstration model), its score's distribution per phase and
    per language (where it was scored and where the documents
    were written), and what its filter removed, per language."""
    from classifiers.demonstration import identify

    entries = []
    for c in classifier_configs(config):
        name = c.get("name")
        column = f"{name}{N.SCORE_SUFFIX}"
        per_phase = {p: aggs.get(f"{p}/documents", {}).get("scores", {}).get(column) for p in docs}
        per_phase = {p: v for p, v in per_phase.items() if v is not None}
        stage = f"{name}_filter"
        where = plan.with_stage(stage)
        removed = aggs.get(f"{where}/rejected", {}).get("reasons", {}).get(stage, {}).get(name, 0) if where else 0
        by_lang = aggs.get(f"{where}/rejected", {}).get("languages", {}).get(stage, {}).get(name, {}) if where else {}
        flt = c.get("filter") or {}
        demo = identify(c.get("model"))
        entries.append({
            "name": name, "column": column, "label": c.get("label"), "model": c.get("model"),
            "demonstration": demo.what if demo else None, "model_sha256": demo.sha256 if demo else None,
            "threshold": flt.get("threshold"), "remove": flt.get("remove", "below"), "top_fraction": flt.get("top_fraction"),
            "by_language_rule": flt.get("by_language") or {}, "filter_phase": where, "removed": removed,
            "removed_by_language": _sorted(by_lang),
            "by_phase": {p: _score_totals(v.values()) for p, v in per_phase.items()},
            "by_language": {p: {lang: _score_totals([v]) for lang, v in sorted(per.items(), key=lambda kv: (-_n(kv[1]), kv[0]))}
                            for p, per in per_phase.items() if p in (next(iter(per_phase)), docs[-1])},
        })
    return {"present": bool(entries), "bins": QUALITY_BINS, "edges": [round(i / QUALITY_BINS, 4) for i in range(QUALITY_BINS + 1)],
            "entries": entries}


def classifier_configs(config: dict) -> list[dict]:
    """The run's classifiers as recorded (an earlier version's record: its enabled quality section, the one it had)."""
    if config.get("classifiers"):
        return list(config["classifiers"])
    q = config.get("quality") or {}
    if not q.get("enabled"):
        return []
    return [{"name": "quality", "model": q.get("model"), "label": q.get("positive_label"), "filter": q.get("filter") or {}}]


def _n(agg: dict) -> int:
    return sum(agg["hist"]) + agg["missing"]


def _score_totals(aggs) -> dict:
    """Scored and missing counts, the mean and the histogram of one or more (language) aggregates."""
    aggs = list(aggs)
    hist = [sum(col) for col in zip(*(a["hist"] for a in aggs), strict=False)] if aggs else [0] * QUALITY_BINS
    scored = sum(hist)
    total = sum(a["sum"] for a in aggs)
    return {"scored": scored, "missing": sum(a["missing"] for a in aggs), "mean": round(total / scored, 4) if scored else None,
            "hist": hist}


def _dedup(plan: CardPlan, aggs: dict) -> dict:
    name = plan.with_section(N.DEDUP_SECTION)
    phase = plan.phase(name)
    if phase is None or phase.status != "ran":
        return {"status": phase.status if phase else "absent"}
    reasons = aggs.get(f"{name}/rejected", {}).get("reasons", {})
    exact = sum(r.get(N.EXACT_DUPLICATE, 0) for r in reasons.values())
    near = sum(r.get(N.NEAR_DUPLICATE, 0) for r in reasons.values())
    earlier = sum(r.get(N.EARLIER_DUPLICATE, 0) for r in reasons.values())  # dedup.against: copies of earlier runs' documents
    kept = aggs.get(f"{name}/documents", {}).get("rows", 0)
    removed = aggs.get(f"{name}/rejected", {}).get("rows", 0)
    sizes = {int(k): v for k, v in aggs.get(f"{name}/documents", {}).get("clusters", {}).items() if k != "unknown"}
    clusters = {str(s): n for s, n in sorted(sizes.items()) if s >= 2}
    return {"status": "ran", "in": kept + removed, "kept": kept, "removed": removed, "exact_duplicate": exact,
            "near_duplicate": near, "removed_share": share(removed, kept + removed), "clusters": clusters,
            "cluster_count": sum(clusters.values()), "documents_in_clusters": sum(int(s) * n for s, n in clusters.items()),
            "largest_cluster": max(sizes, default=0) if clusters else 1 if sizes else 0,
            "paragraphs": ((plan.record.get("phases") or {}).get(name) or {}).get("paragraphs"),
            **({"earlier_duplicate": earlier} if earlier else {})}


def _pii(docs: list[str], aggs: dict, config: dict) -> dict:
    phase = next((p for p in reversed(docs) if "pii" in aggs.get(f"{p}/documents", {})), None)
    if phase is None:
        return {"present": False}
    agg = aggs[f"{phase}/documents"]
    entities = (config.get("pii") or {}).get("entities") or {}
    n = agg["rows"]
    out = {e: {**v, "share": share(v["documents"], n), "action": pii_action(entities, e)}
           for e, v in sorted(agg["pii"]["entities"].items())}
    return {"present": True, "phase": phase, "documents": n, "documents_with_pii": agg["pii"]["documents"],
            "redacted_documents": agg["pii"]["redacted_documents"], "redacted_share": share(agg["pii"]["redacted_documents"], n),
            "findings": sum(v["findings"] for v in out.values()), "entities": out}


def pii_action(entities: dict, entity: str) -> str:
    """The action of an entity in the run's pii.entities (a section, or the shorthand string or boolean)."""
    v = entities.get(entity.lower())
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return v.get("action", "replace")
    return "replace"


def _hosts(dataset: str | None, plan: CardPlan, aggs: dict) -> dict:
    kept = Counter(aggs.get(f"{dataset}/documents", {}).get("hosts", {})) if dataset else Counter()
    removed: Counter = Counter()
    for p in plan.phases:
        removed.update(aggs.get(f"{p.name}/rejected", {}).get("hosts", {}))
    top = lambda c: [[h, n] for h, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_HOSTS]]  # noqa: E731
    return {"top": TOP_HOSTS, "phase": dataset, "kept_distinct": len(kept), "removed_distinct": len(removed),
            "kept": top(kept), "removed": top(removed)}


def _pii_enabled(config: dict) -> bool:
    """Whether the recorded run redacts PII (a record without a ``pii`` section predates PII: no)."""
    section = config.get("pii")
    if not isinstance(section, dict):
        return False
    return section.get("enabled", True) is not False  # the default is on (pipeline.config)


def _publish(plan: CardPlan, config: dict, dataset: str | None, manifest: dict | None) -> dict:
    """The Hub config the card offers (the documents the run meant to publish) and what to upload with them
    (pipeline/card/hub.py), or none and why.

    Never ``rejected/`` (removed documents, raw text), never a phase that a later enabled phase with
    missing markers would have changed, never a phase before PII redaction when the run redacts PII.
    """
    docs = [p for p in plan.phases if p.writes_documents]
    after = docs[[p.name for p in docs].index(dataset) + 1:] if dataset else docs
    missing = [p.name for p in after if p.status == "not_run"]
    pii_phase = plan.with_stage(N.PII_STAGE)
    final = plan.phase(pii_phase)
    withheld = None
    if _pii_enabled(config) and (final is None or final.status != "ran"):
        withheld = (f"the run redacts PII in phase {pii_phase}, which has "
            f"no finished parts (no markers in _done/{pii_phase}), "
                    f"so {'documents/' + dataset if dataset else 'no folder'} holds text before PII redaction")
    elif missing:
        withheld = (f"phase {', '.join(missing)} is enabled but has no finished parts (no markers), "
                    f"so documents/{dataset} is not the run's output" if dataset else "no phase wrote documents")
    elif dataset is None:
        withheld = "no phase wrote documents"
    formats = list(manifest["formats"]) if manifest is not None else None
    raw = _raw_url_folders(config, dataset, formats is not None)
    if withheld is None and raw and (formats is None or "shards" in raw):
        withheld = f"{' and '.join(raw)} {'hold' if len(raw) > 1 else 'holds'} {RAW_URLS}"
    if withheld is not None:
        return {"configs": [], "withheld": withheld, "allow_patterns": [], "ignore_patterns": [], "excluded": {}}
    if raw:  # the documents keep their original URLs: the shards alone are offered
        return {"configs": [], "withheld": None, "allow_patterns": hub.allow_patterns(None, formats),
                "ignore_patterns": hub.IGNORE_PATTERNS, "excluded": {f: RAW_URLS for f in raw}}
    return {"configs": hub.configs(dataset), "withheld": None, "allow_patterns": hub.allow_patterns(dataset, formats),
            "ignore_patterns": hub.IGNORE_PATTERNS, "excluded": {}}


#: Why a folder is not offered when the run kept the URLs as they were (pii.urls.keep_original).
RAW_URLS = ("the column url_original: every URL as it was crawled, before PII redaction "
            "(pii.urls.keep_original: true), for re-fetching pages, not for publishing")


def _raw_url_folders(config: dict, dataset: str | None, shards: bool) -> list[str]:
    """The folders that would be published and hold ``url_original`` (pii.urls.keep_original): the documents, and the
    shards when their layout stores that column."""
    pii = config.get("pii") if isinstance(config.get("pii"), dict) else {}
    urls = pii.get("urls")
    if not _pii_enabled(config) or not isinstance(urls, dict) or not urls.get("keep_original"):
        return []
    out = [f"documents/{dataset}"] if dataset else []
    layout = ((config.get(N.SHARDS_SECTION) or {}).get("layout") or {})
    if shards and URL_ORIGINAL_COLUMN in (layout.get("metadata") or []):
        out.append("shards")
    return out


def _checks(plan: CardPlan, aggs: dict, rows: list[dict], manifest: dict | None, unreadable: list = ()) -> list[dict]:
    """Cross-checks of the data against the counters in run.json and the markers (shown in the card)."""
    out = [{"check": "the funnel adds up (each step's out is the next step's in)", "ok": adds_up(rows)}]
    if unreadable:
        out.append({"check": f"every part file could be read ({len(unreadable)} could not: left out of every count)", "ok": False})
    reader = reader_counts(plan)
    responses = rows[0]["out"]
    first = plan.phase(plan.inputs_phase())
    if first and first.status == "ran":
        got = reader["rows"]
        out.append({"check": f"rows counted by the readers ({got}) = rows kept + rejected by {first.name} ({responses})",
                    "ok": got == responses})
    for p in plan.phases:
        summary = plan.record.get("phases", {}).get(p.name)
        if p.status != "ran" or not p.writes_documents or not summary:
            continue
        kept, rejected = aggs.get(f"{p.name}/documents", {}).get("rows", 0), aggs.get(f"{p.name}/rejected", {}).get("rows", 0)
        ok = summary.get("kept") == kept and summary.get("rejected") == rejected
        out.append({"check": f"{p.name}: rows kept {kept} and rejected {rejected} = run.json's counts "
                             f"({summary.get('kept')} and {summary.get('rejected')})", "ok": ok})
    if manifest is not None:
        last = [r for r in rows if r["phase"] == plan.with_role(ROLE_SHARDS)]
        before = last[0]["in"] if last else None
        out.append({"check": f"documents in the shards manifest ({manifest['documents']}) "
            "= documents entering the shards phase "
                             f"({before}) - its rejected rows - documents packing dropped whole",
                    "ok": not any(r["step"].endswith(":unaccounted") for r in last)})
    return out


def _decontam(plan: CardPlan, config: dict) -> dict:
    """Per eval set: its items, the items some document matched and the documents removed (or tagged), from the
    counters the decontam stage left in run.json's summary of its phase; the stage's share of the phase's time."""
    from stages.decontam import DecontamStage, summarize

    section = config.get("decontam") or {}
    phase = plan.with_stage(DecontamStage.name)
    summary = (plan.record.get("phases") or {}).get(phase) or {} if phase else {}
    if not section.get("enabled") or not summary:
        return {"present": False}
    counters = summary.get("stage_counters") or {}
    index = summary.get("decontam_index") or {}
    items = {s["name"]: s for s in index.get("eval_sets", [])}
    names = [s.get("name") for s in section.get("eval_sets", [])]
    seconds = summary.get("stage_seconds") or {}
    sets = [{"name": r.name, "items": items.get(r.name, {}).get("items"), "skipped": items.get(r.name, {}).get("items_skipped"),
             "items_found": r.items_found, "documents": r.documents} for r in summarize(counters, names, prefix="decontam.")]
    return {"present": True, "phase": phase, "action": section.get("action"), "ngram": section.get("ngram"),
            "index": section.get("index"), "documents": counters.get("decontam.documents", 0), "sets": sets,
            "candidates": counters.get("decontam.candidates", 0), "false_hits": counters.get("decontam.false_hits", 0),
            "documents_in": summary.get("in"), "seconds": seconds.get(DecontamStage.name), "phase_seconds": round(sum(seconds.values()), 2)}


def _mix(manifest: dict | None) -> dict:
    """The training mix the shards hold (the manifest's ``mix``: per source documents, tokens, shares, epochs)."""
    mix = (manifest or {}).get("mix")
    return {"present": True, **mix} if mix else {"present": False}
