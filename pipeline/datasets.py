"""Part files as a Ray Dataset read in a bounded number of tasks: what every shuffle over parts starts from.

Ray Data's ``read_parquet`` over tens of thousands of small files (a snapshot's parts) costs the driver a
fragment and its metadata per file, starts half-CPU tasks to fetch footers (the raylet then warns of 17x the
workers it expects on 2 CPUs), and makes a block per file: a sort shuffle tracks (input blocks) x (partitions)
objects in the driver, and 8,000 parts took it to 12 GB (issue 39).  Here the driver lists the files in
``blocks`` chunks; each chunk is a task that reads its files (core/tables.py) and yields them a file at a time,
which Ray Data gathers into blocks of its target size: a task holds one file and the output it is gathering,
whatever the number of files.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from core.storage import S3Options, Storage
from core.tables import read_file

#: Bytes of Parquet a read task takes when the files' sizes are known (:func:`blocks_for`): enough for one task
#: to be worth its start, few enough for the tasks to spread over a cluster.
TASK_BYTES = 256 << 20


def read_files(
    root: str,
    s3: S3Options | None,
    files: list[str],
    blocks: int,
    *,
    columns: list[str] | None = None,
    missing_ok: bool = False,
):
    """The files (paths under ``root``) as a Ray Dataset read by ``blocks`` tasks (at most one per file), in
    their order within a task; ``columns``/``missing_ok`` as core.tables.read_file takes them."""
    from pipeline.distribute import ray_data

    chunks = [{"files": c} for c in split(files, max(1, min(len(files), blocks)))]
    where = {"root": root, "s3": s3, "columns": columns, "missing_ok": missing_ok}
    return (
        ray_data()
        .from_items(chunks, override_num_blocks=len(chunks))
        .map_batches(_read_chunk, fn_kwargs=where, batch_size=None, batch_format="pyarrow")
    )


def blocks_for(sizes: list[int], at_least: int) -> int:
    """Read tasks for files of these sizes: ``at_least`` (the parallelism wanted), more for big inputs (one per
    TASK_BYTES), never more than the files."""
    return max(1, min(len(sizes), max(at_least, math.ceil(sum(sizes) / TASK_BYTES))))


def split(items: list, n: int) -> list[list]:
    """``items`` in ``n`` contiguous chunks of nearly equal length (none empty when n <= len(items))."""
    bounds = np.linspace(0, len(items), n + 1).round().astype(int)
    return [items[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _read_chunk(batch: pa.Table, root: str, s3: S3Options | None, columns: list[str] | None, missing_ok: bool):
    """One read task: the files its rows list, a table each (Ray Data makes blocks of them)."""
    storage = Storage(root, s3)
    for listed in batch.column("files").to_pylist():
        for f in listed:
            yield read_file(storage, f, columns, missing_ok)
