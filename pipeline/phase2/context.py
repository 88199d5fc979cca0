"""What every step of phase 2 shares: the run's context, document numbers, file helpers."""

from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import RunConfig
from pipeline.storage import S3Options, Storage
from stages.dedup.config import DedupConfig

PHASE = "deduped"
SOURCE_PHASE = "extracted"
STAGE = "dedup"

# A document is numbered ``part number << 32 | row``: every step can find its
# part file and its row there without a lookup table.
ROW_BITS = 32
ROW_MASK = (1 << ROW_BITS) - 1


def part_of(doc: np.ndarray) -> np.ndarray:
    return doc >> ROW_BITS


def row_of(doc: np.ndarray) -> np.ndarray:
    return doc & ROW_MASK


def part_file(unit: str) -> str:
    return f"part-{unit}.parquet"


def s3_options(config: RunConfig) -> S3Options:
    s = config.storage
    return S3Options(s.endpoint_url, s.region, s.anonymous)


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
class Phase2Context:
    """The run as every driver-side step sees it."""

    config: RunConfig
    storage: Storage
    units: tuple[str, ...]  # complete phase-1 parts, sorted: part number = position
    workers: int
    progress: bool

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
        import ray

        return ray.data.read_parquet(files, filesystem=self.storage.fs)

    def read_local(self, files: list[str]) -> pa.Table:
        """The files as one table in this process (for the single-partition paths)."""
        return pa.concat_tables([pq.read_table(f, filesystem=self.storage.fs) for f in files])

    def per_part(self, task, items: list[dict]):
        """Run ``task`` on each item (one part) in its own Ray task; yields the stats dicts it returns.

        At most ``workers`` tasks run at once; each gets the run config as JSON
        and builds what it needs from it on the worker.
        """
        import ray

        ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            task, fn_kwargs={"config": self.config.model_dump(mode="json")}, batch_size=1, batch_format="pyarrow",
            compute=ray.data.TaskPoolStrategy(size=max(1, min(self.workers, len(items)))), num_cpus=1,
        )
        for row in ds.iter_rows():
            yield json.loads(row["stats"])


@contextlib.contextmanager
def timed(out: dict, name: str):
    """Record the seconds the block took as ``out[name]``."""
    t0 = time.perf_counter()
    yield
    out[name] = round(time.perf_counter() - t0, 2)
