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


def test_json_is_written_as_json_dumps_writes_it_without_its_whole_text(tmp_path):
    """run.json names every input (90,000 in a snapshot): written a batch at a time, the same bytes."""
    import json
    import tracemalloc

    data = {"inputs": [f"/data/cc/CC-MAIN-{i:08d}.warc.gz" for i in range(60_000)], "z": {"é": [1.5, None, True]}}
    s = Storage(str(tmp_path / "out"))
    tracemalloc.start()
    try:
        s.write_json(data, "run.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = (tmp_path / "out" / "run.json").read_bytes()
    assert text == json.dumps(data, indent=2, sort_keys=True, default=str).encode() and s.read_json("run.json") == data
    assert peak < len(text) / 4, (peak, len(text))  # json.dumps: the text, its bytes and the encoder's pieces
