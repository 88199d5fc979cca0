"""What every dedup step shares: the run's context, document numbers, file helpers."""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from core.layout import part_file
from core.memory import return_free_memory
from core.storage import S3Options, Storage, resolve
from core.tables import READ_THREADS, count_rows, read_tables
from pipeline.config import RunConfig, s3_options
from pipeline.datasets import read_files, split
from pipeline.distribute import OpenWorker, Progress, failure, map_units
from pipeline.phase import Unit
from pipeline.result import UnitResult
from stages.dedup.config import DedupConfig

PHASE = "deduped"
STAGE = "dedup"
#: The phase whose parts are deduplicated when nothing else is said.
SOURCE_PHASE = "extracted"

# A document is numbered ``part number << 32 | row``: every step can find its
# part file and its row there without a lookup table.
ROW_BITS = 32
ROW_MASK = (1 << ROW_BITS) - 1


def part_of(doc: np.ndarray) -> np.ndarray:
    return doc >> ROW_BITS


def row_of(doc: np.ndarray) -> np.ndarray:
    return doc & ROW_MASK


def part_groups(doc: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(part number, positions in ``doc`` of its documents, in their order) for every part ``doc`` names: one sort,
    not a scan of ``doc`` per part (parts x documents at a snapshot's 90,000 parts)."""
    part = part_of(np.asarray(doc))
    if not len(part):
        return []
    order = np.argsort(part, kind="stable")
    part = part[order]
    starts = np.flatnonzero(np.concatenate(([True], part[1:] != part[:-1])))
    ends = np.append(starts[1:], len(part))
    return [(int(part[a]), order[a:b]) for a, b in zip(starts, ends, strict=True)]


def each_part(doc: np.ndarray, fn) -> list:
    """``fn(part number, positions)`` for every part ``doc`` names, by READ_THREADS threads (each reads that part's
    files); returns what each returned, in part order."""
    with ThreadPoolExecutor(READ_THREADS) as pool:
        return list(pool.map(lambda g: fn(*g), part_groups(doc)))


def run_storage(config: RunConfig) -> Storage:
    """The output root as a Ray task opens it (an open Storage is not shipped to tasks)."""
    return Storage(config.output.root, s3_options(config))


#: Where the names of a dedup run's parts are stored for its tasks (``<key>.json``, key: a hash of the names).
NAMES_FOLDER = ("dedup", "part-names")
#: Part names this process has read (or, in the driver, written), by (root, key): a worker reads a list once.
_NAMES: dict[tuple[str, str], tuple[str, ...]] = {}


def names_key(units: tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(units).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Parts:
    """Where a Ray task finds the phase-2 files of every part: small and picklable.

    It carries a key to the list of part names, never the list: a Ray task's arguments are copied into
    each task (and kept for lineage), so a list of 90,000 names in each of 90,000 tasks made the driver
    grow with parts x parts (issue 39: 12 GB at 8,000 parts).  A process reads the list once
    (``dedup/part-names/<key>.json``, written by :meth:`DedupContext.parts`).
    """

    root: str
    s3: S3Options
    key: str
    count: int

    def storage(self) -> Storage:
        return Storage(self.root, self.s3)

    @property
    def units(self) -> tuple[str, ...]:
        """The part names, in part-number order."""
        names = _NAMES.get((self.root, self.key))
        if names is None:
            names = tuple(self.storage().read_json(*NAMES_FOLDER, f"{self.key}.json"))
            if len(names) != self.count or names_key(names) != self.key:
                raise RuntimeError(f"dedup: {'/'.join(NAMES_FOLDER)}/{self.key}.json does not hold this run's parts")
            _NAMES.clear()  # one run's list at a time in a worker process
            _NAMES[(self.root, self.key)] = names
        return names

    def file(self, part_no: int) -> str:
        """The file name of part ``part_no`` in any per-part folder."""
        return part_file(self.units[int(part_no)])


@dataclass(frozen=True)
class DedupContext:
    """The run as every driver-side step sees it."""

    config: RunConfig
    storage: Storage
    units: tuple[str, ...]  # the input parts, sorted: part number = position
    workers: int
    progress: bool
    source: str = SOURCE_PHASE  # the phase whose parts are deduplicated
    #: counts found once and asked for by several steps (:meth:`docs`)
    counts: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def dedup(self) -> DedupConfig:
        return self.config.dedup

    @cached_property
    def parts(self) -> Parts:
        """The parts as tasks see them; the first call stores their names for the tasks."""
        key = names_key(self.units)
        if not self.storage.exists(*NAMES_FOLDER, f"{key}.json"):
            self.storage.write_json(list(self.units), *NAMES_FOLDER, f"{key}.json")
        parts = Parts(self.config.output.root, s3_options(self.config), key, len(self.units))
        _NAMES.clear()
        _NAMES[(parts.root, key)] = self.units  # this process never reads them back
        return parts

    def __reduce__(self):
        """Shipped to a step's task (Step.in_task) and back with the job's memo as :class:`Parts` is: a key to the
        part names, not the names (90,000 of them, unpickled as new strings in the driver after every step); the
        driver finds its own list again, a worker reads the list once (the first shipping writes it)."""
        fields = (self.config, self.storage, self.workers, self.progress, self.source, self.counts)
        return _restored, (self.parts, *fields)

    def partitions(self, rows: int) -> int:
        """Shuffle partitions for ``rows`` rows: bounds the memory of one task."""
        return max(1, math.ceil(rows / self.dedup.partition_rows))

    def files(self, *folder: str) -> list[str]:
        return self.storage.paths(*folder, suffix=".parquet")

    def rows(self, files: list[str]) -> int:
        """Rows of the files, from their footers (tens of thousands of parts)."""
        return count_rows(self.storage, files)

    def docs(self) -> int:
        """Documents of the corpus (rows of step 1's ``meta/``), counted once per run."""
        if "docs" not in self.counts:
            self.counts["docs"] = self.rows(self.files("dedup", "meta"))
        return self.counts["docs"]

    def read(self, files: list[str], partitions: int = 1):
        """The files as a Ray Dataset for a shuffle into ``partitions``: as many read tasks, or a few more to read
        in parallel (pipeline/datasets.py).

        Ray Data's sort shuffle makes (input blocks)² objects whatever the partitions asked for: a task here
        reads ~1/partitions of the rows, at most MAX_READ_BLOCKS tasks beyond the partitions, so that a task's
        memory stays bounded by ``partition_rows`` and the shuffle's objects by the partitions.
        """
        n = max(partitions, min(2 * self.workers, MAX_READ_BLOCKS))
        ds = read_files(self.config.output.root, s3_options(self.config), files, n)
        # fewer files than partitions (one file of components): split their rows, else one task would hold them all
        return ds.repartition(partitions) if min(len(files), n) < partitions else ds

    def read_local(self, files: list[str]) -> pa.Table:
        """The files as one table in this process (for the single-partition paths, which run in one task)."""
        return read_tables(self.storage, files)

    def in_task(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` in one Ray task, on a worker process; returns what it returns (counts).

        A step's single-partition path reads and holds per-document data (up to ``partition_rows`` rows, or
        ``components.local_max_edges`` edges): it runs here, never in the driver, whose memory then depends
        on neither the documents nor the parts.
        """
        import ray

        from pipeline.distribute import init_ray

        if not ray.is_initialized():  # as map_units starts it: as the run says
            r = self.config.ray
            init_ray(r.num_cpus, r.address, r.shuffle, r.metrics)
        return ray.get(_remote_call().remote(fn, *args, **kwargs))

    def source_file(self, unit: str) -> str:
        """The path of an input part."""
        return self.storage.path("documents", self.source, part_file(unit))

    def number(self, name: str) -> int:
        """A part's number (its position in :attr:`units`, which are sorted: no table of 90,000 names in the
        driver)."""
        i = bisect.bisect_left(self.units, name)
        return i if i < len(self.units) and self.units[i] == name else self.units.index(name)

    def per_part(
        self,
        step: str,
        open_worker: OpenWorker,
        units: Sequence[Unit],
        typed: bool = False,
        numbered: bool = False,
        **extra,
    ):
        """Run ``open_worker(config, **extra).process(unit)`` for each part in a Ray task; yields each part's stats
        as parts finish (``typed``: the parts are units of the phase, and each returns a UnitResult; ``numbered``:
        each unit's params get ``part_no``, its part number).

        With many more parts than workers, a task does several parts in turn (:func:`batch_size`): a snapshot's
        tens of thousands of small parts cost one task's start each (measured: ~2/3 of step 1's time at 8,000
        parts of 7 documents), a part's own work and failure stay its own.  A task carries its parts as a few
        lists (names, fingerprints, numbers), not a unit each: 90,000 units made ~70 MB in the driver (issue 39).
        """
        progress = Progress(f"{PHASE}: {step}", len(units), "part", self.progress, counts=())
        size = batch_size(len(units), self.workers)
        numbers = self.number if numbered else None
        try:
            if size == 1:
                if numbers is not None:
                    units = [
                        Unit(u.name, u.fingerprint, {**u.params, "part_no": numbers(u.name)}, u.step) for u in units
                    ]
                yield from map_units(
                    self.config, units, open_worker, workers=self.workers, extra=extra, progress=progress, typed=typed
                )
                return
            tasks = _Batches(step, split(units, -(-len(units) // size)), numbers)
            inner = {"inner": open_worker, "inner_extra": extra, "typed": typed}
            for out in map_units(self.config, tasks, PartBatch, workers=self.workers, extra=inner):
                if "failed" in out:  # the batch's task failed (its worker died past the retries): each part fails
                    done = [{"unit": u.name, "failed": out["failed"]} for u in tasks.parts(out["unit"])]
                else:
                    done = out["parts"]
                for r in done:
                    r = UnitResult.from_json(r) if typed else r
                    progress.update(r)
                    yield r
        finally:
            progress.close()


def _restored(parts: Parts, config, storage, workers, progress, source, counts) -> DedupContext:
    ctx = DedupContext(config, storage, parts.units, workers, progress, source, counts)
    ctx.__dict__["parts"] = parts  # (its cached property: the names' key is not computed again)
    return ctx


class _Batches(Sequence[Unit]):
    """The tasks of a per-part step, a unit each made when its task starts (map_units reads them one at a time):
    the lists a task carries are never held for every part at once."""

    def __init__(self, step: str, chunks: list[Sequence[Unit]], numbers: Callable[[str], int] | None):
        self.step, self.chunks, self.numbers = step, chunks, numbers

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i: int) -> Unit:
        if not 0 <= i < len(self.chunks):
            raise IndexError(i)
        return Unit(f"{self.step}-{i}", "", _batch_params(self.chunks[i], self.numbers))

    def parts(self, task: str) -> Sequence[Unit]:
        """The parts of the task named ``task``."""
        return self.chunks[int(task.rsplit("-", 1)[1])]


def _batch_params(units: Sequence[Unit], numbers: Callable[[str], int] | None) -> dict:
    """A batch task's parts, as lists (:class:`PartBatch` makes their units again)."""
    return {
        "names": [u.name for u in units],
        "fingerprints": [u.fingerprint for u in units],
        "params": [u.params or None for u in units],
        "steps": [u.step for u in units],
        "numbers": [numbers(u.name) for u in units] if numbers is not None else None,
    }


#: Parts a task of a per-part step takes at most, and tasks per worker it leaves at least (load balance).
MAX_BATCH_PARTS = 64
TASKS_PER_WORKER = 8


def batch_size(parts: int, workers: int) -> int:
    """Parts per task of a per-part step: 1 unless the parts outnumber the workers many times over."""
    return max(1, min(MAX_BATCH_PARTS, parts // (TASKS_PER_WORKER * max(1, workers))))


class PartBatch:
    """A per-part step's worker over several parts in one task (:meth:`DedupContext.per_part`): each part is done
    and fails on its own, as in a task of its own."""

    def __init__(self, config: RunConfig, inner: OpenWorker, inner_extra: dict, typed: bool):
        self.config, self.typed = config, typed
        self.inner = inner(config, **inner_extra)
        self.output_path = resolve(config.output.root)[1]

    def process(self, unit: Unit) -> dict:
        out = []
        for u in _batch_units(unit.params):
            try:
                r = self.inner.process(u)
            except Exception as e:  # the part fails alone (no marker: a rerun retries it), as map_units does
                r = failure(u.name, e, self.output_path)
            if isinstance(r, UnitResult):
                r = (
                    r.to_json()
                    if self.typed or r.failed is None
                    else {
                        k: v for k, v in (("unit", r.unit), ("failed", r.failed), ("fatal", r.fatal)) if v is not None
                    }
                )
            out.append(r)
        return {"unit": unit.name, "parts": out}


def _batch_units(params: dict) -> list[Unit]:
    """The units of a batch task (:func:`_batch_params`)."""
    numbers = params["numbers"] or [None] * len(params["names"])
    return [
        Unit(name, fp, {**(p or {}), **({"part_no": no} if no is not None else {})}, step)
        for name, fp, p, step, no in zip(
            params["names"], params["fingerprints"], params["params"], params["steps"], numbers, strict=True
        )
    ]


#: Read tasks of a dataset beyond its partitions, for parallel reading (its square is what the sort shuffle's
#: driver tracks).
MAX_READ_BLOCKS = 64


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    finally:
        return_free_memory()  # the worker gives back what the step held before its next task


_REMOTE = None


def _remote_call():
    global _REMOTE
    if _REMOTE is None:
        import ray

        _REMOTE = ray.remote(num_cpus=1, max_retries=3)(_call)
    return _REMOTE


@contextlib.contextmanager
def timed(out: dict, name: str):
    """Record the seconds the block took as ``out[name]``."""
    t0 = time.perf_counter()
    yield
    out[name] = round(time.perf_counter() - t0, 2)
