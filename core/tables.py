"""Parquet files under an output root read as one Arrow table, or counted from their footers, by threads.

What dedup's steps, the card and the shards read: tens of thousands of small part files at a snapshot's
shape, where a file at a time would wait on each one (on S3 a request each).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from core.storage import Storage
from core.threads import map_bounded

#: Threads reading part files in one process: pyarrow reads and decodes without the GIL, and on S3 each file is
#: a request whose latency the threads overlap.
READ_THREADS = 8


def read_file(storage: Storage, path: str, columns: list[str] | None = None, missing_ok: bool = False) -> pa.Table:
    """One file (a path under ``storage``); ``missing_ok``: of ``columns``, those it has (the others are the
    caller's to fill), by the Parquet reader alone (pyarrow.dataset, which ``pq.read_table`` goes through, adds
    ~45 MB of libraries to a worker process for a few files)."""
    part = pq.ParquetFile(path, filesystem=storage.fs)
    if missing_ok and columns is not None:
        have = set(part.schema_arrow.names)
        columns = [c for c in columns if c in have]
    return part.read(columns=columns)


def read_tables(
    storage: Storage, files: list[str], columns: list[str] | None = None, missing_ok: bool = False
) -> pa.Table:
    """The files as one table, in their order, read by READ_THREADS threads (``missing_ok``: see
    :func:`read_file`; the tables' columns are then unified, a column a file lacks null in its rows)."""
    with ThreadPoolExecutor(READ_THREADS) as pool:
        tables = list(pool.map(lambda f: read_file(storage, f, columns, missing_ok), files))
    return pa.concat_tables(tables, promote_options="default" if missing_ok else "none")


def count_rows(storage: Storage, files: list[str]) -> int:
    """Rows of the files, from their footers (read by READ_THREADS threads)."""
    fs = storage.fs
    return sum(map_bounded(lambda f: pq.ParquetFile(f, filesystem=fs).metadata.num_rows, files, READ_THREADS))
