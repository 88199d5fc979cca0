"""Run the per-part aggregates (pipeline.card.parts) over every part and add them up.

One task per part name reads that part's files of every phase.  A small run is
aggregated in the calling process (starting workers costs more than it
saves); a larger one on Ray (``map_units``: one task per part, as every
phase does) or, in ``curate report``, in a local process pool.  Results are
merged in part-name order, so the examples (the first rows of each reason)
are the same whatever the number of workers.
"""

from __future__ import annotations

import logging
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from typing import Callable, Iterable

import pyarrow.fs as pafs

from pipeline.card.parts import EXAMPLES_PER_REASON, PartStats, cap_examples, merge, open_worker
from pipeline.card.plan import CardPlan
from pipeline.phase import Unit
from pipeline.storage import Storage

log = logging.getLogger(__name__)

#: Up to this many parts and bytes, the aggregates are computed in the calling process.
LOCAL_MAX_PARTS = 16
LOCAL_MAX_BYTES = 256 << 20


def part_file(name: str) -> str:
    return f"part-{name}.parquet"


def tasks(plan: CardPlan, annotated: list[str], examples: int = EXAMPLES_PER_REASON) -> list[Unit]:
    """One unit per part name: the files of that part in every phase that ran.

    The text column (for document lengths) is read in the first and the last
    phase that wrote documents only.
    """
    ran = [p for p in plan.phases if p.status == "ran"]
    with_docs = [p.name for p in ran if p.writes_documents and p.parts]
    ends = {with_docs[0], with_docs[-1]} if with_docs else set()
    files: dict[str, list] = {}
    for p in ran:
        for part in p.parts:
            files.setdefault(part, []).append([p.name, "documents", part_file(part), p.name in ends])
        for f in p.rejected:
            key = f.removeprefix("part-").removesuffix(".parquet") if p.writes_documents else f"{p.name}:{f}"
            files.setdefault(key, []).append([p.name, "rejected", f, False])
    return [Unit(name, "", {"files": fs, "annotated": annotated, "examples": examples}) for name, fs in sorted(files.items())]


def total_bytes(storage: Storage, units: list[Unit]) -> int:
    paths = [storage.path(kind, phase, name) for u in units for phase, kind, name, _ in u.params["files"]]
    return sum(i.size or 0 for i in storage.fs.get_file_info(paths) if i.type == pafs.FileType.File)


def run_local(storage: Storage, units: list[Unit]) -> Iterable[dict]:
    worker = PartStats(storage)
    return (worker.process(u) for u in units)


def _pool_task(root: str, s3: dict, unit: Unit) -> dict:
    from pipeline.storage import S3Options

    return PartStats(Storage(root, S3Options(**s3))).process(unit)


def run_pool(storage: Storage, units: list[Unit], workers: int) -> Iterable[dict]:
    s3 = asdict(storage.s3) if storage.s3 else {}
    with ProcessPoolExecutor(workers) as pool:
        yield from pool.map(_pool_task, [storage.root_uri] * len(units), [s3] * len(units), units)


def run_ray(config, storage: Storage, units: list[Unit], workers: int) -> Iterable[dict]:
    from pipeline.distribute import map_units

    s3 = asdict(storage.s3) if storage.s3 else {}
    return map_units(config, units, open_worker, workers=workers, extra={"root": storage.root_uri, "s3": s3})


def combine(results: Iterable[dict], examples: int = EXAMPLES_PER_REASON) -> dict[str, dict]:
    """``{"<phase>/<kind>": aggregate}`` summed over every part (in part-name order)."""
    results = sorted(results, key=lambda r: r["unit"])
    failed = [f"{r['unit']}: {r['failed']}" for r in results if "failed" in r]
    if failed:
        raise RuntimeError(f"{len(failed)} parts could not be read for the card: {'; '.join(failed[:5])}")
    out: dict[str, dict] = {}
    for r in results:
        for key, agg in r["files"].items():
            out[key] = merge(out.get(key), agg)
    for agg in out.values():
        if "examples" in agg:
            agg["examples"] = cap_examples(agg["examples"], examples)
    return out


def aggregate(storage: Storage, units: list[Unit], *, config=None, workers: int | Callable[[], int] = 1,
              ray: bool = False) -> dict[str, dict]:
    """Aggregates of every part: here when the run is small, else on Ray (``ray``) or a process pool.

    ``workers`` may be a function (asked only when the run is not small: it may start Ray).
    """
    small = len(units) <= LOCAL_MAX_PARTS and total_bytes(storage, units) <= LOCAL_MAX_BYTES
    if not small and callable(workers):
        workers = workers()
    if small or workers <= 1:
        log.info("card: aggregating %d parts in this process", len(units))
        return combine(run_local(storage, units))
    if ray:
        log.info("card: aggregating %d parts on Ray (%d workers)", len(units), workers)
        return combine(run_ray(config, storage, units, workers))
    log.info("card: aggregating %d parts in %d processes", len(units), workers)
    return combine(run_pool(storage, units, workers))
