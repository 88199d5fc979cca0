"""stats.json: every number of the card, from the per-part aggregates, the manifest and run.json.

The card (render.py) and the plots (plots.py) are drawn from this dict only,
so what the card says is exactly what stats.json holds, and a reviewer can
recompute any of it from the Parquet (tests/pipeline/card/test_card_expected.py does).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict

from pipeline.card import hosts, hub, names as N
from pipeline.card.funnel import adds_up, funnel, reader_counts, share
from pipeline.card.languages import hub_languages
from pipeline.card.parts import LENGTH_EDGES, QUALITY_BINS
from pipeline.card.plan import CardPlan
from pipeline.card.tokens import headline_tokens as _headline_tokens, tokens_stats
from pipeline.exports import PREFIX as EXPORT_PREFIX
from pipeline.paths import public_path
from pipeline.phase import ROLE_EXPORT, ROLE_SHARDS
from stages.pii.config import URL_ORIGINAL_COLUMN
from stages.pii.names import public_name

SCHEMA = 1
#: Hosts listed (and plotted) among the kept and among the removed documents.
_SNAPSHOT = re.compile(r"CC-MAIN-\d{4}-\d{2}")


def build_stats(
    plan: CardPlan, aggs: dict[str, dict], manifest: dict | None, unreadable: list = (), top_hosts: dict | None = None
) -> dict:
    """Every number of the card; ``unreadable``: the files left out (pipeline.card.collect.Unreadable);
    ``top_hosts``: pipeline.card.hosts.top_hosts."""
    config = plan.record.get("config", {})
    rows = funnel(plan, aggs, manifest)
    kinds = sorted(set(plan.phase(plan.inputs_phase()).kinds.values())) if plan.phase(plan.inputs_phase()) else []
    docs = [p.name for p in plan.phases if p.status == "ran" and p.writes_documents]
    dataset = docs[-1] if docs else None
    responses = rows[0]["out"]
    for r in rows:
        r["removed_share"] = share(r["removed"], r["in"])
        r["out_share"] = share(r["out"], responses)
    written = rows[-1]["out"]  # the shards' samples, or the last phase's documents without shards
    documents = manifest["documents"] if manifest is not None else written  # distinct (a mix repeats some as samples)
    return {
        "schema": SCHEMA,
        "summary": {
            "records": rows[0]["in"],
            "responses": responses,
            "documents": documents,
            "documents_share": share(documents, responses),
            "samples": written,
            "repeats": written - documents,
            "dataset_phase": dataset,
            "dataset_documents": aggs.get(f"{dataset}/documents", {}).get("rows", 0) if dataset else 0,
            "tokens": _headline_tokens(manifest),
            "languages": len(
                [k for k in (aggs.get(f"{dataset}/documents", {}).get("languages") or {}) if k != "unknown"]
            ),
        },
        "run": _run(plan),
        "plan": plan.plan.to_json(),
        "phases": _phases(plan, aggs, manifest),
        "funnel": rows,
        "funnel_adds_up": adds_up(rows),
        "funnel_by_source": _by_source(plan, aggs, kinds),
        "sources": _sources(plan, aggs),
        "languages": {p: _sorted(aggs.get(f"{p}/documents", {}).get("languages", {})) for p in docs},
        "hub_languages": hub_languages(_sorted(aggs.get(f"{dataset}/documents", {}).get("languages", {})))
        if dataset
        else {},
        "length": _length(docs, aggs),
        "classifiers": _classifiers(plan, docs, aggs, config),
        "exports": _exports(plan),
        "dedup": _dedup(plan, aggs),
        "pii": _pii(docs, aggs, config),
        "decontam": _decontam(plan, config),
        "mix": _mix(manifest),
        "tokens": tokens_stats(manifest, config),
        "hosts": _hosts(dataset, top_hosts),
        "checks": _checks(plan, aggs, rows, manifest, unreadable),
        "unreadable": [asdict(u) for u in unreadable],
        "publish": _publish(plan, config, dataset, manifest),
    }


def _sorted(counts: dict) -> dict:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _run(plan: CardPlan) -> dict:
    r = plan.record
    return {
        "name": r.get("name"),
        "status": r.get("status"),
        "started": r.get("started"),
        "finished": r.get("finished"),
        "command": r.get("command"),
        "phases_run": r.get("phases_run"),
        "config": r.get("config", {}),
        "versions": r.get("versions", {}),
        "inputs": len(r.get("inputs", [])),
        "parts_by": "markers (the recorded config could not be rebuilt: " + plan.fallback + ")"
        if plan.fallback
        else "fingerprints",
    }


def _phases(plan: CardPlan, aggs: dict, manifest: dict | None) -> dict:
    """Each phase's status and units: the parts of a phase that writes documents, the shuffle groups of the shards."""
    out = {}
    for p in plan.phases:
        row = {"status": p.status, "parts": len(p.parts)}
        if p.role == ROLE_SHARDS:
            row.update(parts=(manifest or {}).get("groups") or 0, unit="group")
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
    for source, (kind, n) in plan.reader.files.items():
        records[source] = n
        if kind:
            kinds[source] = kind
    first = plan.inputs_phase()
    responses = Counter(aggs.get(f"{first}/documents", {}).get("sources", {}))
    responses.update(aggs.get(f"{first}/rejected", {}).get("sources", {}))
    kept = {
        p.name: aggs.get(f"{p.name}/documents", {}).get("sources", {})
        for p in plan.phases
        if p.status == "ran" and p.writes_documents
    }
    # a file as the run's columns name it (pipeline.engine.units.published_input; an earlier version's: as given),
    # then as published (the PII stage writes that name into the source column: stages/pii/names.py)
    shown = {f: public_path(f, plan.record.get("working_dir")) for f in inputs}
    named = {f: shown[f] if shown[f] in records else f for f in inputs}
    public = {f: public_name(named[f]) for f in inputs}
    files = [
        {
            "file": public[f],
            "kind": kinds.get(named[f]),
            "records": records.get(named[f]),
            "responses": responses.get(named[f], 0),
            "kept": {ph: k.get(named[f], k.get(public[f], 0)) for ph, k in kept.items()},
        }
        for f in inputs
    ]
    snapshots = Counter(m.group(0) for f in inputs if (m := _SNAPSHOT.search(f)))
    return {
        "files": len(inputs),
        "snapshots": dict(sorted(snapshots.items())),
        "reader": reader_counts(plan),
        "per_file": files,
    }


def _length(docs: list[str], aggs: dict) -> dict:
    out: dict = {"edges": LENGTH_EDGES}
    for key, phase in (("before", docs[0] if docs else None), ("after", docs[-1] if docs else None)):
        agg = aggs.get(f"{phase}/documents", {}) if phase else {}
        hist = agg.get("length", {}).get("hist", [0] * len(LENGTH_EDGES))
        chars = agg.get("length", {}).get("chars", 0)
        n = agg.get("rows", 0)
        out[key] = {
            "phase": phase,
            "documents": n,
            "chars": chars,
            "mean_chars": round(chars / n, 1) if n else None,
            "hist": hist,
        }
    return out


def _classifiers(plan: CardPlan, docs: list[str], aggs: dict, config: dict) -> dict:
    """Per classifier: its model (and whether it is a demonstration model), its score's distribution per phase and
    per language (where it was scored and where the documents
    were written), and what its filter removed, per language."""
    from classifiers.demonstration import identify

    entries = []
    for c in [*classifier_configs(config), *tagger_configs(plan, config)]:
        name = c.get("name")
        column = c.get("column") or f"{name}{N.SCORE_SUFFIX}"
        per_phase = {p: aggs.get(f"{p}/documents", {}).get("scores", {}).get(column) for p in docs}
        per_phase = {p: v for p, v in per_phase.items() if v is not None}
        stage = f"{name}_filter"
        where = plan.with_stage(stage)
        removed = aggs.get(f"{where}/rejected", {}).get("reasons", {}).get(stage, {}).get(name, 0) if where else 0
        by_lang = aggs.get(f"{where}/rejected", {}).get("languages", {}).get(stage, {}).get(name, {}) if where else {}
        flt = c.get("filter") or {}
        demo = identify(c.get("model"))
        entries.append(
            {
                "name": name,
                "column": column,
                "label": c.get("label"),
                "model": c.get("model"),
                "tagger": c.get("tagger"),
                "demonstration": demo.what if demo else None,
                "model_sha256": demo.sha256 if demo else None,
                "threshold": flt.get("threshold"),
                "remove": flt.get("remove", "below"),
                "top_fraction": flt.get("top_fraction"),
                "by_language_rule": flt.get("by_language") or {},
                "filter_phase": where,
                "removed": removed,
                "removed_by_language": _sorted(by_lang),
                "by_phase": {p: _score_totals(v.values()) for p, v in per_phase.items()},
                "by_language": {
                    p: {
                        lang: _score_totals([v]) for lang, v in sorted(per.items(), key=lambda kv: (-_n(kv[1]), kv[0]))
                    }
                    for p, per in per_phase.items()
                    if p in (next(iter(per_phase)), docs[-1])
                },
            }
        )
    return {
        "present": bool(entries),
        "bins": QUALITY_BINS,
        "edges": [round(i / QUALITY_BINS, 4) for i in range(QUALITY_BINS + 1)],
        "entries": entries,
    }


def _exports(plan: CardPlan) -> list[dict]:
    """Each export (a phase whose role is export: pipeline/exports.py): what it copies, where, in which format, what
    it wrote, and whether its text is PII-redacted (it copies the phase that redacts PII or one after it)."""
    order = [p.name for p in plan.plan.phases]
    pii = plan.with_stage(N.PII_STAGE)
    out = []
    for p in plan.plan.phases:
        if p.role != ROLE_EXPORT or not p.enabled:
            continue
        summary = (plan.record.get("phases") or {}).get(p.name) or {}
        sink = p.sinks[0] if p.sinks else None
        redacted = pii is not None and p.reads in order and order.index(p.reads) >= order.index(pii)
        out.append(
            {
                "name": p.name.removeprefix(EXPORT_PREFIX),
                "phase": p.reads,
                "path": sink.path if sink else None,
                "format": sink.label if sink else None,
                "files": summary.get("parts", 0),
                "documents": summary.get("exported", 0),
                "pii_redacted": redacted,
            }
        )
    return out


def tagger_configs(plan: CardPlan, config: dict) -> list[dict]:
    """The scores the run's own stages declare (``stages:`` entries: pipeline/plugins.py), shaped as classifiers
    are: the score column, the stage's label, its ``use``, and its entry's filter (reason: the column without
    ``_score``, stage ``<that>_filter``)."""
    entries = config.get("stages") or []
    out = []
    for phase in plan.plan.phases:
        for s in phase.stages:
            where = (s.section or "").split(".")
            if len(where) != 2 or where[0] != "stages" or not where[1].isdigit() or not s.scores:
                continue
            entry = entries[int(where[1])] if int(where[1]) < len(entries) else {}
            rule = entry.get("filter") or {}
            for column in s.scores:
                own = rule if (rule.get("score") or s.scores[0]) == column else {}
                out.append(
                    {
                        "name": column.removesuffix(N.SCORE_SUFFIX),
                        "column": column,
                        "label": s.label,
                        "model": entry.get("use"),
                        "filter": own,
                        "tagger": True,
                    }
                )
    return out


def classifier_configs(config: dict) -> list[dict]:
    """The run's classifiers as recorded (an earlier version's record: its enabled quality section, the one it had)."""
    if config.get("classifiers"):
        return list(config["classifiers"])
    q = config.get("quality") or {}
    if not q.get("enabled"):
        return []
    return [
        {"name": "quality", "model": q.get("model"), "label": q.get("positive_label"), "filter": q.get("filter") or {}}
    ]


def _n(agg: dict) -> int:
    return sum(agg["hist"]) + agg["missing"]


def _score_totals(aggs) -> dict:
    """Scored and missing counts, the mean and the histogram of one or more (language) aggregates."""
    aggs = list(aggs)
    hist = [sum(col) for col in zip(*(a["hist"] for a in aggs), strict=False)] if aggs else [0] * QUALITY_BINS
    scored = sum(hist)
    total = sum(a["sum"] for a in aggs)
    return {
        "scored": scored,
        "missing": sum(a["missing"] for a in aggs),
        "mean": round(total / scored, 4) if scored else None,
        "hist": hist,
    }


def _dedup(plan: CardPlan, aggs: dict) -> dict:
    name = plan.with_section(N.DEDUP_SECTION)
    phase = plan.phase(name)
    if phase is None or phase.status != "ran":
        return {"status": phase.status if phase else "absent"}
    reasons = aggs.get(f"{name}/rejected", {}).get("reasons", {})
    exact = sum(r.get(N.EXACT_DUPLICATE, 0) for r in reasons.values())
    near = sum(r.get(N.NEAR_DUPLICATE, 0) for r in reasons.values())
    earlier = sum(
        r.get(N.EARLIER_DUPLICATE, 0) for r in reasons.values()
    )  # dedup.against: copies of earlier runs' documents
    kept = aggs.get(f"{name}/documents", {}).get("rows", 0)
    removed = aggs.get(f"{name}/rejected", {}).get("rows", 0)
    sizes = {int(k): v for k, v in aggs.get(f"{name}/documents", {}).get("clusters", {}).items() if k != "unknown"}
    clusters = {str(s): n for s, n in sorted(sizes.items()) if s >= 2}
    return {
        "status": "ran",
        "in": kept + removed,
        "kept": kept,
        "removed": removed,
        "exact_duplicate": exact,
        "near_duplicate": near,
        "removed_share": share(removed, kept + removed),
        "clusters": clusters,
        "cluster_count": sum(clusters.values()),
        "documents_in_clusters": sum(int(s) * n for s, n in clusters.items()),
        "largest_cluster": max(sizes, default=0) if clusters else 1 if sizes else 0,
        "paragraphs": ((plan.record.get("phases") or {}).get(name) or {}).get("paragraphs"),
        **({"earlier_duplicate": earlier} if earlier else {}),
    }


def _pii(docs: list[str], aggs: dict, config: dict) -> dict:
    phase = next((p for p in reversed(docs) if "pii" in aggs.get(f"{p}/documents", {})), None)
    if phase is None:
        return {"present": False}
    agg = aggs[f"{phase}/documents"]
    entities = (config.get("pii") or {}).get("entities") or {}
    n = agg["rows"]
    out = {
        e: {**v, "share": share(v["documents"], n), "action": pii_action(entities, e)}
        for e, v in sorted(agg["pii"]["entities"].items())
    }
    return {
        "present": True,
        "phase": phase,
        "documents": n,
        "documents_with_pii": agg["pii"]["documents"],
        "redacted_documents": agg["pii"]["redacted_documents"],
        "redacted_share": share(agg["pii"]["redacted_documents"], n),
        "findings": sum(v["findings"] for v in out.values()),
        "entities": out,
    }


def pii_action(entities: dict, entity: str) -> str:
    """The action of an entity in the run's pii.entities (a section, or the shorthand string or boolean)."""
    v = entities.get(entity.lower())
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return v.get("action", "replace")
    return "replace"


def _hosts(dataset: str | None, top_hosts: dict | None) -> dict:
    found = top_hosts or hosts.merged(hosts.SCHEMA.empty_table())
    return {
        "top": hosts.TOP_HOSTS,
        "phase": dataset,
        **{k: found[k] for k in ("kept_distinct", "removed_distinct", "kept", "removed")},
    }


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
    after = docs[[p.name for p in docs].index(dataset) + 1 :] if dataset else docs
    missing = [p.name for p in after if p.status == "not_run"]
    pii_phase = plan.with_stage(N.PII_STAGE)
    final = plan.phase(pii_phase)
    withheld = None
    if _pii_enabled(config) and (final is None or final.status != "ran"):
        withheld = (
            f"the run redacts PII in phase {pii_phase}, which has "
            f"no finished parts (no markers in _done/{pii_phase}), "
            f"so {'documents/' + dataset if dataset else 'no folder'} holds text before PII redaction"
        )
    elif missing:
        withheld = (
            f"phase {', '.join(missing)} is enabled but has no finished parts (no markers), "
            f"so documents/{dataset} is not the run's output"
            if dataset
            else "no phase wrote documents"
        )
    elif dataset is None:
        withheld = "no phase wrote documents"
    formats = list(manifest["formats"]) if manifest is not None else None
    raw = _raw_url_folders(config, dataset, formats is not None)
    if withheld is None and raw and (formats is None or "shards" in raw):
        withheld = f"{' and '.join(raw)} {'hold' if len(raw) > 1 else 'holds'} {RAW_URLS}"
    if withheld is not None:
        return {"configs": [], "withheld": withheld, "allow_patterns": [], "ignore_patterns": [], "excluded": {}}
    if raw:  # the documents keep their original URLs: the shards alone are offered
        return {
            "configs": [],
            "withheld": None,
            "allow_patterns": hub.allow_patterns(None, formats),
            "ignore_patterns": hub.IGNORE_PATTERNS,
            "excluded": {f: RAW_URLS for f in raw},
        }
    return {
        "configs": hub.configs(dataset),
        "withheld": None,
        "allow_patterns": hub.allow_patterns(dataset, formats),
        "ignore_patterns": hub.IGNORE_PATTERNS,
        "excluded": {},
    }


#: Why a folder is not offered when the run kept the URLs as they were (pii.urls.keep_original).
RAW_URLS = (
    "the column url_original: every URL as it was crawled, before PII redaction "
    "(pii.urls.keep_original: true), for re-fetching pages, not for publishing"
)


def _raw_url_folders(config: dict, dataset: str | None, shards: bool) -> list[str]:
    """The folders that would be published and hold ``url_original`` (pii.urls.keep_original): the documents, and the
    shards when their layout stores that column."""
    pii = config.get("pii") if isinstance(config.get("pii"), dict) else {}
    urls = pii.get("urls")
    if not _pii_enabled(config) or not isinstance(urls, dict) or not urls.get("keep_original"):
        return []
    out = [f"documents/{dataset}"] if dataset else []
    layout = (config.get(N.SHARDS_SECTION) or {}).get("layout") or {}
    if shards and URL_ORIGINAL_COLUMN in (layout.get("metadata") or []):
        out.append("shards")
    return out


def _checks(plan: CardPlan, aggs: dict, rows: list[dict], manifest: dict | None, unreadable: list = ()) -> list[dict]:
    """Cross-checks of the data against the counters in run.json and the markers (shown in the card)."""
    out = [{"check": "the funnel adds up (each step's out is the next step's in)", "ok": adds_up(rows)}]
    if unreadable:
        out.append(
            {
                "check": f"every part file could be read ({len(unreadable)} could not: left out of every count)",
                "ok": False,
            }
        )
    lost = {
        n: s["lost_to_errors"]
        for n, s in (plan.record.get("phases") or {}).items()
        if isinstance(s, dict) and s.get("lost_to_errors")
    }
    for name, why in lost.items():  # shown only when it fails: a card of a sound run is unchanged
        out.append({"check": f"{name}: some document survives its errors ({why})", "ok": False})
    for p in plan.phases:  # markers that name files no longer there (a deleted shards/ or part): rerun to redo them
        if p.missing:
            named = ", ".join(p.missing[:3]) + (" ..." if len(p.missing) > 3 else "")
            out.append(
                {
                    "check": f"{p.name}: the files its markers name exist ({len(p.missing)} units' files are "
                    f"gone: {named}; rerun to redo them)",
                    "ok": False,
                }
            )
    reader = reader_counts(plan)
    responses = rows[0]["out"]
    first = plan.phase(plan.inputs_phase())
    if first and first.status == "ran":
        got = reader["rows"]
        out.append(
            {
                "check": f"rows counted by the readers ({got}) = rows kept + rejected by {first.name} ({responses})",
                "ok": got == responses,
            }
        )
    for p in plan.phases:
        summary = plan.record.get("phases", {}).get(p.name)
        if p.status != "ran" or not p.writes_documents or not summary:
            continue
        kept, rejected = (
            aggs.get(f"{p.name}/documents", {}).get("rows", 0),
            aggs.get(f"{p.name}/rejected", {}).get("rows", 0),
        )
        ok = summary.get("kept") == kept and summary.get("rejected") == rejected
        out.append(
            {
                "check": f"{p.name}: rows kept {kept} and rejected {rejected} = run.json's counts "
                f"({summary.get('kept')} and {summary.get('rejected')})",
                "ok": ok,
            }
        )
    if manifest is not None:
        out.append(_shards_check([r for r in rows if r["phase"] == plan.with_role(ROLE_SHARDS)], manifest))
    return out


def _shards_check(rows: list[dict], manifest: dict) -> dict:
    """The manifest's samples against the documents that entered the shards phase, every term shown, and ``ok`` only
    when the numbers are equal (a training mix: the documents it did not draw, the repeats it added)."""
    entering = rows[0]["in"] if rows else 0
    rejected = sum(r["removed"] for r in rows if r["stage"] not in ("", "mix"))  # its stages' rows (no_tokens...)
    dropped = (manifest.get("dropped") or {}).get("documents") or 0
    samples, documents, mix = manifest["samples"], manifest["documents"], manifest.get("mix")
    if mix:
        not_drawn, repeats = entering - rejected - mix["documents_drawn"], mix["samples"] - mix["documents_drawn"]
        expected = entering - rejected - not_drawn + repeats - dropped
        ok = samples == expected and not_drawn >= 0 and repeats >= 0 and documents == mix["documents_drawn"]
        return {
            "check": f"samples in the shards manifest ({samples}) = documents entering the shards phase "
            f"({entering}) - its rejected rows ({rejected}) - documents the mix did not draw "
            f"({not_drawn}) + repeats it added ({repeats}) - samples packing dropped whole ({dropped}) "
            f"= {expected}; "
            f"of {documents} distinct documents (the mix drew {mix['documents_drawn']})",
            "ok": ok,
        }
    expected = entering - rejected - dropped
    return {
        "check": f"documents in the shards manifest ({samples}) = documents entering the shards phase "
        f"({entering}) - its rejected rows ({rejected}) - documents packing dropped whole ({dropped}) "
        f"= {expected}",
        "ok": samples == expected and documents == samples,
    }


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
    sets = [
        {
            "name": r.name,
            "items": items.get(r.name, {}).get("items"),
            "skipped": items.get(r.name, {}).get("items_skipped"),
            "items_found": r.items_found,
            "documents": r.documents,
        }
        for r in summarize(counters, names, prefix="decontam.")
    ]
    return {
        "present": True,
        "phase": phase,
        "action": section.get("action"),
        "ngram": section.get("ngram"),
        "index": section.get("index"),
        "documents": counters.get("decontam.documents", 0),
        "sets": sets,
        "candidates": counters.get("decontam.candidates", 0),
        "false_hits": counters.get("decontam.false_hits", 0),
        "documents_in": summary.get("in"),
        "seconds": seconds.get(DecontamStage.name),
        "phase_seconds": round(sum(seconds.values()), 2),
    }


def _mix(manifest: dict | None) -> dict:
    """The training mix the shards hold (the manifest's ``mix``: per source documents, tokens, shares, epochs), and
    the epochs past which a source's repeats are listed under Known limitations."""
    from stages.mix import REPEAT_WARNING_EPOCHS

    mix = (manifest or {}).get("mix")
    return {"present": True, **mix, "repeat_warning_epochs": REPEAT_WARNING_EPOCHS} if mix else {"present": False}
