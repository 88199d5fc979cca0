"""core/tables.py: part files read as one table or counted, and a folder's sizes from one listing."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.storage import Storage
from core.tables import count_rows, read_file, read_tables


def _parts(tmp_path, tables):
    storage = Storage(str(tmp_path))
    for i, t in enumerate(tables):
        storage.write_parquet(t, "docs", f"part-{i:03d}.parquet")
    return storage, [storage.path("docs", f"part-{i:03d}.parquet") for i in range(len(tables))]


def test_files_read_in_their_order_and_counted_from_their_footers(tmp_path):
    tables = [pa.table({"id": [f"{i}-{j}" for j in range(i + 1)], "n": list(range(i + 1))}) for i in range(40)]
    storage, files = _parts(tmp_path, tables)
    assert read_tables(storage, files).equals(pa.concat_tables(tables))
    assert read_tables(storage, files, columns=["n"]).column_names == ["n"]
    assert count_rows(storage, files) == sum(len(t) for t in tables) == 820


def test_a_column_a_file_lacks_is_an_error_unless_missing_ok_then_null_in_its_rows(tmp_path):
    storage, files = _parts(tmp_path, [pa.table({"id": ["a"], "lang": ["en"]}), pa.table({"id": ["b"]})])
    with pytest.raises(Exception, match="lang"):
        read_tables(storage, files, columns=["id", "lang"])
    assert read_file(storage, files[1], ["id", "lang"], missing_ok=True).column_names == ["id"]
    both = read_tables(storage, files, columns=["id", "lang"], missing_ok=True)
    assert both.to_pylist() == [{"id": "a", "lang": "en"}, {"id": "b", "lang": None}]


def test_a_folders_sizes_come_from_one_listing_as_list_names_them(tmp_path):
    storage, files = _parts(tmp_path, [pa.table({"x": list(range(k * 100))}) for k in range(1, 4)])
    (tmp_path / "docs" / ".hidden.parquet").write_bytes(b"x")
    (tmp_path / "docs" / "notes.txt").write_text("x")
    sizes = storage.sizes("docs", suffix=".parquet")
    assert list(sizes) == storage.list("docs", suffix=".parquet") == [f"part-{i:03d}.parquet" for i in range(3)]
    assert [sizes[n] for n in sizes] == [(tmp_path / "docs" / n).stat().st_size for n in sizes]
    assert storage.sizes("absent") == {} and pq.ParquetFile(files[0]).metadata.num_rows == 100
