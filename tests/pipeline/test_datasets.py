"""pipeline/datasets.py: part files as a Ray Dataset read by a bounded number of tasks (issue 39)."""

import pyarrow as pa

from core.storage import Storage
from pipeline.datasets import TASK_BYTES, blocks_for, read_files, split


def test_every_row_of_many_small_files_once_in_about_as_many_blocks_as_tasks_not_one_per_file(ray_local, tmp_path):
    storage = Storage(str(tmp_path))
    files = []
    for i in range(300):
        storage.write_parquet(pa.table({"part": [i] * 3, "row": [0, 1, 2]}), "docs", f"part-{i:04d}.parquet")
        files.append(storage.path("docs", f"part-{i:04d}.parquet"))
    ds = read_files(str(tmp_path), None, files, 4).materialize()
    rows = sorted((r["part"], r["row"]) for r in ds.iter_rows())
    assert rows == [(i, j) for i in range(300) for j in range(3)]
    # Ray Data's read_parquet makes a block per file: a sort shuffle after it tracks files x partitions objects
    assert ds.num_blocks() <= 4


def test_columns_and_a_column_some_files_lack(ray_local, tmp_path):
    storage = Storage(str(tmp_path))
    storage.write_parquet(pa.table({"id": ["a"], "lang": ["en"], "text": ["x"]}), "docs", "part-0.parquet")
    storage.write_parquet(pa.table({"id": ["b"], "text": ["y"]}), "docs", "part-1.parquet")
    files = [storage.path("docs", f"part-{i}.parquet") for i in range(2)]
    ds = read_files(str(tmp_path), None, files, 1, columns=["id", "lang"], missing_ok=True)
    assert sorted(ds.take_all(), key=lambda r: r["id"]) == [{"id": "a", "lang": "en"}, {"id": "b", "lang": None}]


def test_read_tasks_follow_the_bytes_beyond_the_parallelism_and_never_outnumber_the_files():
    assert blocks_for([100] * 1000, 8) == 8
    assert blocks_for([TASK_BYTES // 2] * 1000, 8) == 500
    assert blocks_for([TASK_BYTES * 4] * 3, 8) == 3
    assert blocks_for([], 8) == 1
    assert [len(c) for c in split(list(range(10)), 3)] == [3, 4, 3]
