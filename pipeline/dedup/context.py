"""What every dedup step shares: the run's context, document numbers, file helpers."""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import RunConfig, s3_options
from pipeline.distribute import OpenWorker, Progress, map_units
from pipeline.phase import Unit
from core.storage import S3Options, Storage
from core.layout import part_file
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


def run_storage(config: RunConfig) -> Storage:
    """The output root as a Ray task opens it (an open Storage is not shipped to tasks)."""
    return Storage(config.output.root, s3_options(config))


@dataclass(frozen=True)
class Parts:
    """Where a Ray task finds the phase-2 files of every part: small and picklable."""

    root: str
    s3: S3Options
    units: tuple[str, ...]

    def storage(self) -> Storage:
        return Storage(self.root, self.s3)

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

    @property
    def dedup(self) -> DedupConfig:
        return self.config.dedup

    @property
    def parts(self) -> Parts:
        return Parts(self.config.output.root, s3_options(self.config), self.units)

    def partitions(self, rows: int) -> int:
        """Shuffle partitions for ``rows`` rows: bounds the memory of one task."""
        return max(1, math.ceil(rows / self.dedup.partition_rows))

    def files(self, *folder: str) -> list[str]:
        return [self.storage.path(*folder, n) for n in self.storage.list(*folder, suffix=".parquet")]

    def rows(self, files: list[str]) -> int:
        return sum(pq.ParquetFile(f, filesystem=self.storage.fs).metadata.num_rows for f in files)

    def read(self, files: list[str]):
        """The files as a Ray Dataset (for the shuffled paths)."""
        from pipeline.distribute import ray_data

        return ray_data().read_parquet(files, filesystem=self.storage.fs)

    def read_local(self, files: list[str]) -> pa.Table:
        """The files as one table in this process (for the single-partition paths)."""
        return pa.concat_tables([pq.read_table(f, filesystem=self.storage.fs) for f in files])

    def source_file(self, unit: str) -> str:
        """The path of an input part."""
        return self.storage.path("documents", self.source, part_file(unit))

    def per_part(self, step: str, open_worker: OpenWorker, units: list[Unit], typed: bool = False, **extra):
        """Run ``open_worker(config, **extra).process(unit)`` for each part in its own Ray task; yields the stats
        (``typed``: the parts are units of the phase, and each returns a UnitResult)."""
        progress = Progress(f"{PHASE}: {step}", len(units), "part", self.progress, counts=())
        try:
            yield from map_units(self.config, units, open_worker, workers=self.workers, extra=extra, progress=progress,
                                 typed=typed)
        finally:
            progress.close()


@contextlib.contextmanager
def timed(out: dict, name: str):
    """Record the seconds the block took as ``out[name]``."""
    t0 = time.perf_counter()
    yield
    out[name] = round(time.perf_counter() - t0, 2)
