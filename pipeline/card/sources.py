"""Each phase's documents per input file (the card's table of files), added up outside the driver.

The parts' aggregates counted every phase's documents per input file (``sources``): six dicts of 90,000 file names
in a snapshot's driver, pickled again to the task that builds the stats (~50 MB at the card's end, issue 39).  Each
card task writes its parts' counts instead (``card/_sources/<task>.parquet``: aggregate, file, documents), and
the process that builds the stats (a Ray worker in a run) reads them back, summed by file, into the aggregates
it is given.  The driver never holds them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from core.storage import Storage
from core.tables import read_tables

FOLDER = ("card", "_sources")
SCHEMA = pa.schema([("aggregate", pa.string()), ("file", pa.string()), ("n", pa.int64())])


def split_off(files: dict) -> pa.Table:
    """The per-file rows of a task's aggregates (``{"<phase>/<kind>": aggregate}``), and ``sources`` removed from
    the aggregates (in place)."""
    keys, names, counts = [], [], []
    for key, agg in files.items():
        found = agg.pop("sources", None) or {}
        keys += [key] * len(found)
        names += list(found)
        counts += list(found.values())
    return pa.table([keys, names, counts], schema=SCHEMA)


def drop(files: dict) -> None:
    """``sources`` removed from aggregates that are not the card's table of files (each source kind's)."""
    for agg in files.values():
        agg.pop("sources", None)


def write(storage: Storage, task: str, rows: pa.Table) -> None:
    if rows.num_rows:
        storage.write_parquet(rows, *FOLDER, f"{task}.parquet")


@dataclass(frozen=True)
class PerFile:
    """Where the tasks wrote their per-file rows: small, handed to the process that builds the stats."""

    storage: Storage

    def added_to(self, aggs: dict) -> dict:
        """``aggs`` with each aggregate's ``sources`` (file -> documents) summed from the rows (then deleted)."""
        files = self.storage.paths(*FOLDER, suffix=".parquet")
        rows = read_tables(self.storage, files) if files else SCHEMA.empty_table()
        summed = rows.group_by(["aggregate", "file"], use_threads=False).aggregate([("n", "sum")])
        for key, name, n in zip(*(summed.column(c).to_pylist() for c in ("aggregate", "file", "n_sum")), strict=True):
            aggs.setdefault(key, {}).setdefault("sources", {})[name] = n
        self.storage.delete_dir(*FOLDER)
        return aggs
