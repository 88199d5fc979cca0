"""The top hosts of the kept and of the removed documents, and how many distinct hosts each side has, added up
outside the driver.

A crawl has about one host for every ten pages: the parts' host counts added up in the driver were per-host
data, tens of millions of entries for a snapshot (issue 39).  Each card task writes its parts' counts instead
(``card/_hosts/<task>.parquet``: side, host, documents), and the sums by host are added up elsewhere: in one
Ray task (or in this process, without Ray) while they fit a partition, else by a Ray Data aggregation by host.
Each block of sums gives its top hosts and its number of hosts: a host's sum is in one block only, so the top of
the blocks' tops is the top, and the numbers of hosts add up.  The driver holds the tops.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc

from core.shuffle import grouped
from core.storage import Storage
from core.tables import count_rows, read_tables

FOLDER = ("card", "_hosts")
KEPT, REMOVED = "kept", "removed"
SCHEMA = pa.schema([("side", pa.string()), ("host", pa.string()), ("n", pa.int64())])
#: Hosts shown per side.
TOP_HOSTS = 20
#: Rows (side, host) one task adds up at most (~100 bytes each).
PARTITION_ROWS = 1 << 22
#: Blocks the rows are read in for the aggregation (Ray Data's sort shuffle tracks their square).
READ_BLOCKS = 64


def split_off(files: dict, dataset: str | None) -> pa.Table:
    """The host rows of a task's aggregates (``{"<phase>/<kind>": aggregate}``), each summed once per side,
    and ``hosts`` removed from the aggregates (in place): the dataset phase's documents are the kept side, every
    phase's rejected rows the removed one."""
    tables = []
    for key, agg in files.items():
        counts = agg.pop("hosts", None) or {}
        side = KEPT if key == f"{dataset}/documents" else REMOVED if key.endswith("/rejected") else None
        if counts and side:
            tables.append(pa.table([[side] * len(counts), list(counts), list(counts.values())], schema=SCHEMA))
    return _sums(pa.concat_tables(tables)) if tables else SCHEMA.empty_table()


def _sums(rows: pa.Table) -> pa.Table:
    summed = rows.group_by(["side", "host"], use_threads=False).aggregate([("n", "sum")])
    return summed.select(["side", "host", "n_sum"]).rename_columns(SCHEMA.names).cast(SCHEMA)


def write(storage: Storage, task: str, rows: pa.Table) -> None:
    if rows.num_rows:
        storage.write_parquet(rows, *FOLDER, f"{task}.parquet")


def tops(rows: pa.Table, n: int = TOP_HOSTS) -> pa.Table:
    """Rows summed by (side, host) (each pair once): each side's top ``n`` hosts, and a row without a host giving
    its number of hosts."""
    out = []
    for side in (KEPT, REMOVED):
        mine = rows.filter(pc.equal(rows.column("side"), side))
        if mine.num_rows:
            top = mine.sort_by([("n", "descending"), ("host", "ascending")]).slice(0, n)
            out += [top, pa.table([[side], pa.nulls(1, pa.string()), [mine.num_rows]], schema=SCHEMA)]
    return pa.concat_tables(out) if out else SCHEMA.empty_table()


def top_hosts(storage: Storage, ray: bool = False, n: int = TOP_HOSTS) -> dict:
    """Each side's top ``n`` hosts and number of hosts, from the rows the tasks wrote (then deleted)."""
    files = storage.paths(*FOLDER, suffix=".parquet")
    rows = count_rows(storage, files) if ray else 0  # the footers are read only to size a shuffle
    if not files:
        found = SCHEMA.empty_table()
    elif not ray:
        found = _tops_here(storage, files, n)
    elif rows <= PARTITION_ROWS:
        import ray as ray_

        found = ray_.get(ray_.remote(_tops_here).remote(storage, files, n))
    else:
        found = _tops_shuffled(storage, files, math.ceil(rows / PARTITION_ROWS), n)
    storage.delete_dir(*FOLDER)
    return merged(found, n)


def _tops_here(storage: Storage, files: list[str], n: int) -> pa.Table:
    return tops(_sums(read_tables(storage, files)), n)


def _tops_shuffled(storage: Storage, files: list[str], partitions: int, n: int) -> pa.Table:
    """The sums by host in ``partitions`` blocks (a Ray Data aggregation), each block's tops."""
    from pipeline.datasets import read_files

    read = read_files(storage.root_uri, storage.s3, files, max(partitions, READ_BLOCKS))
    summed = grouped(read, ["side", "host"], partitions).sum("n")
    found = summed.map_batches(_block_tops, fn_kwargs={"n": n}, batch_size=None, batch_format="pyarrow").take_all()
    return pa.Table.from_pylist(found, SCHEMA)


def _block_tops(block: pa.Table, n: int) -> pa.Table:
    return tops(block.select(["side", "host", "sum(n)"]).rename_columns(SCHEMA.names).cast(SCHEMA), n)


def merged(found: pa.Table, n: int = TOP_HOSTS) -> dict:
    """The blocks' tops as the card shows them: each side's top ``n`` ``[host, documents]`` (most documents
    first, then by name) and its number of hosts."""
    out = {}
    for side in (KEPT, REMOVED):
        rows = found.filter(pc.equal(found.column("side"), side)).to_pylist()
        out[f"{side}_distinct"] = sum(r["n"] for r in rows if r["host"] is None)
        hosts = sorted(((r["host"], r["n"]) for r in rows if r["host"] is not None), key=lambda h: (-h[1], h[0]))
        out[side] = [list(h) for h in hosts[:n]]
    return out
