"""Compute the card of an output and publish it: card/stats.json, the plots, README.md, then the marker.

The output root is a Hugging Face dataset repository as it stands: the card is ``README.md`` at the root,
where its ``configs`` paths (``documents/final/*.parquet``) and its links (``card/*.svg``,
``card/stats.json``) resolve; ``stats["publish"]["allow_patterns"]`` is what to upload of it.

Used by the ``card`` phase (pipeline/phases/card.py) and by ``curate report``
(pipeline/card/report.py).  Every file is written atomically; README.md (which
links the plots and stats) is written after them, the completion marker last,
and plots a previous card drew that this one does not are deleted (the PNGs of older cards too).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from core.storage import Storage
from pipeline.card import collect, hosts, names as N, sources
from pipeline.card.examples import examples, public_redactor
from pipeline.card.hub import FOLDER, README
from pipeline.card.manifest import read_manifest
from pipeline.card.plan import CardPlan
from pipeline.card.public_paths import publish_paths
from pipeline.card.redaction import redact_stats
from pipeline.card.render import render
from pipeline.card.stats import build_stats, pii_action
from pipeline.phase import ROLE_SHARDS

log = logging.getLogger(__name__)


def annotated_columns(config: dict) -> list[str]:
    """PII count columns of the entities the run only counts (action ``annotate``: the text keeps them)."""
    entities = (config.get("pii") or {}).get("entities") or {}
    return [f"{N.PII_PREFIX}{name.lower()}" for name in entities if pii_action(entities, name) == "annotate"]


def compute(
    plan: CardPlan, storage: Storage, *, config=None, workers: int | Callable[[], int] = 1, ray: bool = False
) -> dict:
    """stats.json of the output (the redacted examples included), every string from the data redacted."""
    gathered = gather(plan, storage, config=config, workers=workers, ray=ray)
    if ray:  # on a worker, which has presidio loaded from the final phase: ~135 MB the driver does not take on
        return _on_a_worker(_stats, workers, plan, *gathered)
    return _stats(plan, *gathered)


def compute_and_publish(plan: CardPlan, storage: Storage, *, config, workers: Callable[[], int]) -> dict:
    """:func:`compute` then :func:`publish` (what the card phase reports), the stats built, redacted and written
    by one Ray task: the driver holds the counts the parts add up to, never the card's rows (a row per input
    file: 90,000 in a snapshot, ~130 MB of dicts, JSON and Markdown for the driver, issue 39)."""
    gathered = gather(plan, storage, config=config, workers=workers, ray=True)
    return _on_a_worker(_stats_published, workers, plan, storage, *gathered)


def gather(plan: CardPlan, storage: Storage, *, config=None, workers=1, ray=False) -> tuple:
    """What the stats are built from: the parts' aggregates, the files left out, the shards manifest, the top
    hosts (pipeline/card/hosts.py), where the per-file counts are (pipeline/card/sources.py)."""
    for folder in (hosts.FOLDER, sources.FOLDER):  # an interrupted card's rows: never counted twice
        storage.delete_dir(*folder)
    run_config = plan.record.get("config", {})
    first = plan.phase(plan.inputs_phase())
    kinds = first.kinds if first is not None and len(set(first.kinds.values())) > 1 else None
    units = collect.tasks(plan, annotated_columns(run_config), kinds=kinds)
    aggs, unreadable = collect.aggregate(storage, units, config=config, workers=workers, ray=ray)
    shards = plan.phase(plan.with_role(ROLE_SHARDS))
    manifest = read_manifest(storage) if shards is not None and shards.status == "ran" else None
    top = hosts.top_hosts(storage, ray=ray and not collect.is_small(storage, units))
    return aggs, unreadable, manifest, top, sources.PerFile(storage)


def _on_a_worker(fn, workers, *args):
    from pipeline.distribute import on_a_worker

    if callable(workers):
        workers()  # starts Ray as the run says (`curate run --phases card` has not started it yet)
    return on_a_worker(fn, *args)


def _stats(
    plan: CardPlan, aggs: dict, unreadable: list, manifest: dict | None, top_hosts: dict, per_file: sources.PerFile
) -> dict:
    """stats.json from what :func:`gather` found, with the examples of the rejected rows, every string redacted."""
    run_config = plan.record.get("config", {})
    aggs = per_file.added_to(aggs)
    stats = publish_paths(build_stats(plan, aggs, manifest, unreadable, top_hosts), plan.record.get("working_dir"))
    rejected = {k: v for k, v in aggs.items() if k.endswith("/rejected")}  # where the examples are
    stats["examples"] = examples(rejected, [p.name for p in plan.phases], run_config.get("pii"))
    return redact_stats(stats, public_redactor(run_config.get("pii")))


def _stats_published(plan: CardPlan, storage: Storage, *gathered) -> dict:
    return publish(storage, _stats(plan, *gathered))


def publish(storage: Storage, stats: dict) -> dict:
    """Write card/*.svg, card/stats.json and README.md; returns what the card phase reports."""
    from pipeline.card import plots

    images, failed = plots.draw_all(stats)
    stats["plots"] = sorted(images)
    stats["plot_errors"] = failed
    readme = render(stats, stats["examples"])
    for name, data in images.items():
        with storage.atomic_output(FOLDER, name) as out:
            out.write(data)
    with storage.atomic_output(FOLDER, "stats.json") as out:  # in the card's order (phases in run order...)
        out.write(json.dumps(stats, indent=1, ensure_ascii=False, default=str).encode())
    with storage.atomic_output(README) as out:
        out.write(readme.encode())
    for stale in storage.list(FOLDER):  # .png too: the plots of cards written before they were SVG
        if "/" not in stale and stale.endswith((".svg", ".png")) and stale not in images:
            storage.fs.delete_file(storage.path(FOLDER, stale))
    if storage.exists(FOLDER, README):  # where cards before issue 20 were written: its links no longer resolve
        storage.fs.delete_file(storage.path(FOLDER, README))
    log.info("card written: %s", storage.uri(README))
    return {
        "card": storage.uri(README),
        "documents": stats["summary"]["documents"],
        "tokens": stats["summary"]["tokens"],
        "plots": len(images),
        "funnel_adds_up": stats["funnel_adds_up"],
        "checks_failed": sum(1 for c in stats["checks"] if not c["ok"]),
        "unreadable": [u["file"] for u in stats["unreadable"]],
        "plot_errors": sorted(failed),
    }
