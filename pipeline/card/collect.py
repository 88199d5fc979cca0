"""Run the per-part aggregates (pipeline.card.parts) over every part and add them up.

One task per part name reads that part's files of every phase.  A small run is
aggregated in the calling process (starting workers costs more than it
saves); a larger one on Ray (``map_units``: one task per part, as every
phase does) or, in ``curate report``, in a local process pool.  Results are
merged in part-name order, so the examples (the first rows of each reason)
are the same whatever the number of workers.

A file that cannot be read (a corrupt or truncated Parquet file, a column of
the wrong type) costs only itself: its part is read again file by file, the
others are counted, and the file is returned as :class:`Unreadable` for the
card to name (stats.json ``unreadable``, a failed check).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import pyarrow.fs as pafs

from core.storage import S3Options, Storage
from pipeline.card.escape import one_line
from pipeline.card.parts import EXAMPLES_PER_REASON, PartStats, cap_examples, merge
from pipeline.card.plan import CardPlan
from pipeline.phase import Unit

log = logging.getLogger(__name__)

#: Up to this many parts and bytes, the aggregates are computed in the calling process.
LOCAL_MAX_PARTS = 16
LOCAL_MAX_BYTES = 256 << 20


def part_file(name: str) -> str:
    return f"part-{name}.parquet"


@dataclass(frozen=True)
class Unreadable:
    """A file the card could not read: it is left out of every count, and the card says so."""

    file: str  # relative to the output root, e.g. documents/final/part-x.parquet
    error: str  # one line: the exception type and message


def _error(e: BaseException) -> str:
    return one_line(f"{type(e).__name__}: {e}")[:300]


class SafePartStats:
    """PartStats that skips the files it cannot read instead of failing their whole part."""

    def __init__(self, storage: Storage):
        self.inner = PartStats(storage)

    def process(self, unit: Unit) -> dict:
        try:
            return self.inner.process(unit)
        except Exception:  # noqa: BLE001 - any error of a file's bytes or schema: find which file, keep the rest
            pass
        files: dict[str, dict] = {}
        unreadable = []
        for f in unit.params["files"]:
            phase, kind, name, _ = f
            try:
                files.update(
                    self.inner.process(Unit(unit.name, unit.fingerprint, {**unit.params, "files": [f]}))["files"]
                )
            except Exception as e:  # noqa: BLE001
                log.warning("card: %s/%s/%s cannot be read, left out: %s", kind, phase, name, _error(e))
                unreadable.append(asdict(Unreadable(f"{kind}/{phase}/{name}", _error(e))))
        return {"unit": unit.name, "files": files, "unreadable": unreadable}


def open_worker(config, root: str, s3: dict) -> SafePartStats:
    """For pipeline.distribute.map_units (built once per task)."""
    return SafePartStats(Storage(root, S3Options(**s3)))


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
    scores = plan.plan.scores()  # the score columns the plan declares (the card never guesses them from names)
    return [
        Unit(name, "", {"files": fs, "annotated": annotated, "examples": examples, "scores": scores})
        for name, fs in sorted(files.items())
    ]


def total_bytes(storage: Storage, units: list[Unit]) -> int:
    paths = [storage.path(kind, phase, name) for u in units for phase, kind, name, _ in u.params["files"]]
    return sum(i.size or 0 for i in storage.fs.get_file_info(paths) if i.type == pafs.FileType.File)


def run_local(storage: Storage, units: list[Unit]) -> Iterable[dict]:
    worker = SafePartStats(storage)
    return (worker.process(u) for u in units)


def _pool_task(root: str, s3: dict, unit: Unit) -> dict:
    return open_worker(None, root, s3).process(unit)


def run_pool(storage: Storage, units: list[Unit], workers: int) -> Iterable[dict]:
    s3 = asdict(storage.s3) if storage.s3 else {}
    with ProcessPoolExecutor(workers) as pool:
        yield from pool.map(_pool_task, [storage.root_uri] * len(units), [s3] * len(units), units)


def run_ray(config, storage: Storage, units: list[Unit], workers: int) -> Iterable[dict]:
    from pipeline.distribute import map_units

    s3 = asdict(storage.s3) if storage.s3 else {}
    return map_units(config, units, open_worker, workers=workers, extra={"root": storage.root_uri, "s3": s3})


def _unit_files(unit: Unit) -> list[str]:
    return [f"{kind}/{phase}/{name}" for phase, kind, name, _ in unit.params["files"]]


def combine(
    results: Iterable[dict],
    units: list[Unit] = (),
    examples: int = EXAMPLES_PER_REASON,
    kinds: dict[str, str] | None = None,
) -> tuple[dict[str, dict], list[Unreadable]]:
    """``{"<phase>/<kind>": aggregate}`` summed over every part (in part-name order), and the files left out;
    with ``kinds`` (part -> source kind), also ``out["by_kind"][kind]``: the same over each kind's parts.

    A unit that failed as a whole (its Ray worker died past the retries) leaves out all its files.  Each part's
    aggregate is added as it comes (in place, its examples capped), never all of them held at once: tens of
    thousands of parts (issue 39).
    """
    by_name = {u.name: u for u in units}
    out: dict[str, dict] = {}
    unreadable = []
    for r in _in_name_order(results, sorted(by_name)):
        if "failed" in r:
            files = _unit_files(by_name[r["unit"]]) if r["unit"] in by_name else [f"part {r['unit']}"]
            unreadable += [Unreadable(f, one_line(r["failed"])[:300]) for f in files]
            continue
        unreadable += [Unreadable(**u) for u in r.get("unreadable", [])]
        kind = (kinds or {}).get(r["unit"])
        for key, agg in r["files"].items():
            out[key] = _add(out.get(key), agg, examples)
            if kind is not None:
                by_kind = out.setdefault("by_kind", {}).setdefault(kind, {})
                by_kind[key] = _add(by_kind.get(key), agg, examples)
    return out, unreadable


def _in_name_order(results: Iterable[dict], names: list[str]) -> Iterable[dict]:
    """The results in the order of ``names`` (sorted), each as soon as every earlier one has come: a result that
    finished early waits, the rest are not held; results of other names (or all, without names) sorted at the end."""
    pending: dict[str, dict] = {}
    at = 0
    for r in results:
        pending[r["unit"]] = r
        while at < len(names) and names[at] in pending:
            yield pending.pop(names[at])
            at += 1
    yield from (pending[k] for k in sorted(pending))


def _add(total: dict | None, agg: dict, examples: int) -> dict:
    """``total`` + ``agg`` (pipeline.card.parts.merge, in place of ``total``: a copy of the first), examples capped:
    the first ``examples`` of each reason in part-name order, as capping once at the end gives."""
    total = copy.deepcopy(agg) if total is None else _merge_into(total, agg)
    if "examples" in total:
        total["examples"] = cap_examples(total["examples"], examples)
    return total


def _merge_into(a, b):
    """:func:`pipeline.card.parts.merge` that updates ``a`` (dicts, histograms, example lists) instead of copying it:
    a run's host counts are added once per part, not copied once per part."""
    if a is None:
        return copy.deepcopy(b)
    if b is None:
        return a
    if isinstance(a, dict):
        for k, v in b.items():
            a[k] = _merge_into(a.get(k), v)
        return a
    if isinstance(a, list) and not (a and isinstance(a[0], dict) or b and isinstance(b[0], dict)):
        if len(a) != len(b):
            raise ValueError(f"cannot add histograms of {len(a)} and {len(b)} bins")
        for i, y in enumerate(b):
            a[i] += y
        return a
    return merge(a, b)  # example lists (concatenated), numbers


def aggregate(
    storage: Storage,
    units: list[Unit],
    *,
    config=None,
    workers: int | Callable[[], int] = 1,
    ray: bool = False,
    kinds: dict[str, str] | None = None,
) -> tuple[dict[str, dict], list[Unreadable]]:
    """Aggregates of every part (and the files that could not be read): here when the run is small,
    else on Ray (``ray``) or a process pool.

    ``workers`` may be a function (asked only when the run is not small: it may start Ray).
    """
    small = len(units) <= LOCAL_MAX_PARTS and total_bytes(storage, units) <= LOCAL_MAX_BYTES
    if not small and callable(workers):
        workers = workers()
    if small or workers <= 1:
        log.info("card: aggregating %d parts in this process", len(units))
        return combine(run_local(storage, units), units, kinds=kinds)
    if ray:
        log.info("card: aggregating %d parts on Ray (%d workers)", len(units), workers)
        return combine(run_ray(config, storage, units, workers), units, kinds=kinds)
    log.info("card: aggregating %d parts in %d processes", len(units), workers)
    return combine(run_pool(storage, units, workers), units, kinds=kinds)
