"""Fixed costs and memory of a run: what a process loads, what a local Ray starts, where the shards of a
small input are written (issue 25)."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pyarrow as pa

from stages.writers import LocalSink, WebDatasetConfig, WebDatasetWriter
from stages.writers.webdataset import _TarWriter
from tests.conftest import REPO


def test_tar_writer_is_webdatasets_byte_for_byte():
    webdataset = __import__("webdataset")  # test-only: the writer must not need it
    samples = [{"__key__": f"00001_{i:09d}", "json": b'{"id":"d%d"}' % i, "tokens.npy": bytes(range(i % 256)) * 7}
               for i in range(40)]
    ours, theirs = io.BytesIO(), io.BytesIO()
    a, b = _TarWriter(ours), webdataset.TarWriter(theirs, user="", group="", mode=0o444, encoder=False, mtime=0)
    for s in samples:
        a.write(s)
        b.write(s)
    a.close()
    b.close()
    assert ours.getvalue() == theirs.getvalue()


def test_writing_shards_imports_neither_webdataset_nor_torch(tmp_path):
    """webdataset imports torch: ~480 MB and seconds in every process that writes a shard."""
    code = (
        "import sys, numpy as np, pyarrow as pa\n"
        "from stages.writers import LocalSink, WebDatasetConfig, WebDatasetWriter\n"
        f"w = WebDatasetWriter({str(tmp_path / 's')!r}, WebDatasetConfig(), LocalSink({str(tmp_path / 'o')!r}), key_prefix='g')\n"
        "w.write(pa.table({'id': ['a'], 'tokens': pa.array([np.arange(5, dtype=np.uint16)])}))\n"
        "w.finish()\n"
        "print(sorted({'webdataset', 'torch'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert (tmp_path / "o" / "shard-000000.tar").stat().st_size > 0


def test_webdataset_writer_reads_back_with_tarfile(tmp_path):
    w = WebDatasetWriter(str(tmp_path / "s"), WebDatasetConfig(), LocalSink(str(tmp_path / "o")), key_prefix="g")
    w.write(pa.table({"id": ["a", "b"], "tokens": pa.array([np.arange(3, dtype=np.uint16), np.arange(2, dtype=np.uint16)])}))
    w.finish()
    import tarfile

    with tarfile.open(tmp_path / "o" / "shard-000000.tar") as t:
        names = t.getnames()
        assert names == ["g_000000000.json", "g_000000000.tokens.npy", "g_000000001.json", "g_000000001.tokens.npy"]
        assert all(m.mtime == 0 and m.mode == 0o444 and m.uname == "" for m in t.getmembers())
        assert np.load(io.BytesIO(t.extractfile("g_000000001.tokens.npy").read())).tolist() == [0, 1]
