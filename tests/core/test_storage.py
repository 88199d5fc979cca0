"""core.storage's listings: a local folder walked one entry at a time, the same names and sizes as pyarrow's."""

import pyarrow.fs as pafs

from core import storage as storage_mod
from core.storage import Storage


class _NoSelectors(pafs.LocalFileSystem):
    """A local filesystem that refuses pyarrow's recursive listing (a FileInfo per file, issue 39)."""

    def get_file_info(self, paths_or_selector):
        assert not isinstance(paths_or_selector, pafs.FileSelector), "listed through pyarrow's FileInfo list"
        return super().get_file_info(paths_or_selector)


def _tree(root):
    files = {"a.json": 1, "b/c.json": 22, "b/d/e.json": 333, "b/.hidden.json": 4, "f.parquet": 5, ".g.json": 6}
    for name, size in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    return files


def _by_pyarrow(root, suffix=""):
    infos = pafs.LocalFileSystem().get_file_info(pafs.FileSelector(str(root), recursive=True))
    found = {
        i.path[len(str(root)) + 1 :]: i.size
        for i in infos
        if i.type == pafs.FileType.File and i.path.endswith(suffix) and not i.base_name.startswith(".")
    }
    return dict(sorted(found.items()))


def test_a_local_listing_gives_what_pyarrows_gives(tmp_path):
    _tree(tmp_path / "out")
    s = Storage(str(tmp_path / "out"))
    assert (
        s.sizes() == _by_pyarrow(tmp_path / "out") == {"a.json": 1, "b/c.json": 22, "b/d/e.json": 333, "f.parquet": 5}
    )
    assert (
        s.sizes("b", suffix=".json") == _by_pyarrow(tmp_path / "out" / "b", ".json") == {"c.json": 22, "d/e.json": 333}
    )
    assert list(s.sizes()) == sorted(s.sizes()) and s.list("b") == ["c.json", "d/e.json"]
    assert s.sizes("absent") == {}
    assert s.paths("b", suffix=".json") == [f"{tmp_path}/out/b/c.json", f"{tmp_path}/out/b/d/e.json"]
    assert s.paths("absent") == []


def test_a_local_listing_makes_no_fileinfo_per_file(tmp_path, monkeypatch):
    _tree(tmp_path / "out")
    s = Storage(str(tmp_path / "out"))
    s.fs = _NoSelectors()
    resolve = storage_mod.resolve
    monkeypatch.setattr(storage_mod, "resolve", lambda uri, s3=None: (_NoSelectors(), resolve(uri, s3)[1]))
    assert s.list("b", suffix=".json") == ["c.json", "d/e.json"]
    assert storage_mod.glob(str(tmp_path / "out" / "**" / "*.json")) == [
        str(tmp_path / "out" / n) for n in ("a.json", "b/c.json", "b/d/e.json")
    ]
