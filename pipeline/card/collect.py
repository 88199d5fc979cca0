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
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import pyarrow.fs as pafs

from core.storage import S3Options, Storage
from pipeline.card import hosts, sources
from pipeline.card.escape import one_line
from pipeline.card.parts import EXAMPLES_PER_REASON, PartStats, cap_examples, merge
from pipeline.card.plan import CardPlan
from pipeline.phase import Unit

log = logging.getLogger(__name__)

#: Up to this many parts and bytes, the aggregates are computed in the calling process.
LOCAL_MAX_PARTS = 16
LOCAL_MAX_BYTES = 256 << 20
#: Parts one task aggregates, added up there in name order: a task per part made a 90,000-part card 90,000 tasks
#: (22 minutes on 2 cores) and as many results and units for the driver (issue 39).
PARTS_PER_TASK = 64


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


class ChunkStats:
    """The aggregates of a task's parts (:func:`tasks`), added up in name order, and of each source kind's."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self.part = SafePartStats(storage)

    def process(self, unit: Unit) -> dict:
        shared = {k: unit.params[k] for k in ("annotated", "examples", "scores")}
        out: dict = {"unit": unit.name, "files": {}, "by_kind": {}, "unreadable": []}
        for name, files, kind in part_files(unit.params):
            r = self.part.process(Unit(name, "", {**shared, "files": files}))
            out["unreadable"] += r.get("unreadable", [])
            _add_files(out["files"], r["files"], shared["examples"])
            if kind is not None:
                _add_files(out["by_kind"].setdefault(kind, {}), r["files"], shared["examples"])
        # the host and per-file counts leave the aggregates here: the driver never adds them up (issue 39)
        hosts.write(self.storage, unit.name, hosts.split_off(out["files"], unit.params.get("dataset")))
        sources.write(self.storage, unit.name, sources.split_off(out["files"]))
        for files in out["by_kind"].values():
            hosts.split_off(files, None)
            sources.drop(files)
        return out


def open_worker(config, root: str, s3: dict) -> ChunkStats:
    """For pipeline.distribute.map_units (built once per task)."""
    return ChunkStats(Storage(root, S3Options(**s3)))


def tasks(
    plan: CardPlan, annotated: list[str], examples: int = EXAMPLES_PER_REASON, kinds: dict[str, str] | None = None
) -> list[Unit]:
    """One unit per ``PARTS_PER_TASK`` part names, in name order: for each part, the files of that part in every
    phase that ran and its source kind (``kinds``: part -> kind, when the card splits by kind).

    The text column (for document lengths) is read in the first and the last
    phase that wrote documents only.
    """
    ran = [p for p in plan.phases if p.status == "ran"]
    with_docs = [p.name for p in ran if p.writes_documents and p.parts]
    ends = {with_docs[0], with_docs[-1]} if with_docs else set()
    # a part's files as bits over the slots (phase, kind): 90,000 parts' file lists were ~1 KB each (issue 39)
    slots = [[p.name, kind, p.name in ends and kind == "documents"] for p in ran for kind in ("documents", "rejected")]
    bits: dict[str, int] = {}
    other: dict[str, list] = {}  # the rejected files of a phase whose units are not parts (shards: groups)
    for i, p in enumerate(ran):
        for part in p.parts:
            bits[part] = bits.get(part, 0) | 1 << 2 * i
        for f in p.rejected:  # parts, or the files of a phase whose units are not parts
            if p.writes_documents:
                bits[f] = bits.get(f, 0) | 1 << 2 * i + 1
            else:
                other[f"{p.name}:{f}"] = [[p.name, "rejected", f, False]]
    scores = plan.plan.scores()  # the score columns the plan declares (the card never guesses them from names)
    names = sorted([*bits, *other])
    docs = [p.name for p in plan.phases if p.status == "ran" and p.writes_documents]
    dataset = docs[-1] if docs else None  # whose documents are the kept hosts (pipeline.card.hosts)
    shared = {"annotated": annotated, "examples": examples, "scores": scores, "slots": slots, "dataset": dataset}
    return [
        Unit(
            f"{i // PARTS_PER_TASK:06d}",
            "",
            {
                **shared,
                "parts": [[n, bits.get(n, 0), other.get(n), (kinds or {}).get(n)] for n in chunk],
            },
        )
        for i in range(0, len(names), PARTS_PER_TASK)
        for chunk in [names[i : i + PARTS_PER_TASK]]
    ]


def part_files(params: dict) -> Iterable[tuple[str, list, str | None]]:
    """A task's parts (:func:`tasks`), each as (name, its files ``[phase, kind, file, lengths]``, its kind)."""
    slots = params["slots"]
    for name, bits, other, kind in params["parts"]:
        files = [[*slot[:2], part_file(name), slot[2]] for i, slot in enumerate(slots) if bits >> i & 1]
        yield name, files + (other or []), kind


def is_small(storage: Storage, units: list[Unit]) -> bool:
    """Whether the parts are aggregated in the calling process (few and small: starting workers costs more)."""
    parts = sum(len(u.params["parts"]) for u in units)
    return parts <= LOCAL_MAX_PARTS and total_bytes(storage, units) <= LOCAL_MAX_BYTES


def total_bytes(storage: Storage, units: list[Unit]) -> int:
    paths = [storage.path(*f.split("/", 2)) for u in units for f in _unit_files(u)]
    return sum(i.size or 0 for i in storage.fs.get_file_info(paths) if i.type == pafs.FileType.File)


def run_local(storage: Storage, units: list[Unit]) -> Iterable[dict]:
    worker = ChunkStats(storage)
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
    """The files a unit reads: a part's (``files``), or each of a task's parts' (``parts``: :func:`tasks`)."""
    if "parts" in unit.params:
        files = [f for _, fs, _ in part_files(unit.params) for f in fs]
    else:
        files = unit.params.get("files", [])
    return [f"{kind}/{phase}/{name}" for phase, kind, name, _ in files]


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
        _add_files(out, r["files"], examples)
        kind = (kinds or {}).get(r["unit"])  # a result of one part; a task's results say their kinds (ChunkStats)
        for k, files in ({kind: r["files"]} if kind is not None else r.get("by_kind") or {}).items():
            _add_files(out.setdefault("by_kind", {}).setdefault(k, {}), files, examples)
    return out, unreadable


def _add_files(total: dict, files: dict, examples: int) -> None:
    """``total`` (``{"<phase>/<kind>": aggregate}``) + ``files``, in place."""
    for key, agg in files.items():
        total[key] = _add(total.get(key), agg, examples)


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
    total = _copy(agg) if total is None else _merge_into(total, agg)
    if "examples" in total:
        total["examples"] = cap_examples(total["examples"], examples)
    return total


def _merge_into(a, b):
    """:func:`pipeline.card.parts.merge` that updates ``a`` (dicts, histograms, example lists) instead of copying it:
    a run's host counts are added once per part, not copied once per part."""
    if a is None:
        return _copy(b)
    if b is None:
        return a
    if isinstance(a, dict):
        for k, v in b.items():
            a[k if k in a or not isinstance(k, str) else sys.intern(k)] = _merge_into(a.get(k), v)
        return a
    if isinstance(a, list) and not (a and isinstance(a[0], dict) or b and isinstance(b[0], dict)):
        if len(a) != len(b):
            raise ValueError(f"cannot add histograms of {len(a)} and {len(b)} bins")
        for i, y in enumerate(b):
            a[i] += y
        return a
    return merge(a, b)  # example lists (concatenated), numbers


def _copy(value):
    """A deep copy whose dicts' keys are interned: an input file's name is one string in every phase's counts of
    its documents (``sources``: 90,000 names in each of a snapshot's aggregates, issue 39)."""
    if type(value) is dict:
        return {sys.intern(k) if isinstance(k, str) else k: _copy(v) for k, v in value.items()}
    return copy.deepcopy(value)


def aggregate(
    storage: Storage,
    units: list[Unit],
    *,
    config=None,
    workers: int | Callable[[], int] = 1,
    ray: bool = False,
) -> tuple[dict[str, dict], list[Unreadable]]:
    """Aggregates of every part (and the files that could not be read): here when the run is small,
    else on Ray (``ray``) or a process pool.

    ``workers`` may be a function (asked only when the run is not small: it may start Ray).
    """
    parts = sum(len(u.params["parts"]) for u in units)
    small = is_small(storage, units)
    if not small and callable(workers):
        workers = workers()
    if small or workers <= 1:
        log.info("card: aggregating %d parts in this process", parts)
        return combine(run_local(storage, units), units)
    if ray:
        log.info("card: aggregating %d parts in %d tasks on Ray (%d workers)", parts, len(units), workers)
        return combine(run_ray(config, storage, units, workers), units)
    log.info("card: aggregating %d parts in %d tasks, %d processes", parts, len(units), workers)
    return combine(run_pool(storage, units, workers), units)
