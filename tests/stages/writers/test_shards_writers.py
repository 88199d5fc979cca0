"""MDS and WebDataset writers without the streaming library: determinism,
shard size rules, index-last publication, sinks and their retries.  Reading
back with the trainers' loaders is in test_shards_streaming.py."""

from __future__ import annotations

import io
import json
import os
import tarfile

import numpy as np
import pyarrow as pa
import pytest

from core.storage import Storage
from stages.pack import LayoutConfig
from stages.shuffle_plan import plan
from stages.tokenize import SAMPLE_TOKENIZER, TokenizeConfig, TokenizeStage
from stages.writers import (
    LocalSink,
    MDSConfig,
    MDSWriter,
    ShardsConfig,
    StorageSink,
    TokenInfo,
    WebDatasetConfig,
    WebDatasetWriter,
    enabled_formats,
    mds_columns,
    merge_mds_indexes,
    write_group,
)
from stages.writers.mds import encode_samples
from stages.writers.sink import is_transient
from stages.writers.webdataset import npy_header, tar_size
from tests.conftest import REPO

WORDS = (
    "the server module configuration request response directive virtual host "
    "Konfiguration Datei Verzeichnis serveur fichier répertoire сервер файл каталог "
    "設定 ファイル 模块 配置 한국어 설정 güvenlik yapılandırma"
).split()


def corpus(n: int = 300, seed: int = 0) -> pa.Table:
    """Documents of varied length (a few words to ~6,000) in several scripts, one very long."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 1500, n)
    lengths[7] = 50_000  # ~73k tokens: more than 65,535, so MDS writes a uint32 shape header
    texts = [" ".join(rng.choice(WORDS, k)) for k in lengths]
    ids = [f"urn:uuid:{seed:02d}-{i:06d}" for i in range(n)]
    return pa.table({"id": ids, "url": [f"https://example.org/{i}.html" for i in range(n)], "text": texts,
                     "language": rng.choice(["en", "de", "ja"], n).tolist()})  # fmt: skip


_STAGE = {}


def tokenized(n: int = 300, seed: int = 0, bos: str | None = None) -> tuple[pa.Table, TokenizeStage]:
    key = (n, seed, bos)
    if key not in _STAGE:
        stage = TokenizeStage(TokenizeConfig(tokenizer=str(REPO / SAMPLE_TOKENIZER), bos=bos))
        out = stage(corpus(n, seed)).drop_columns(["reason", "details"])
        _STAGE[key] = (out, stage)
    return _STAGE[key]


def write_dataset(root: str, docs: pa.Table, stage: TokenizeStage, config: ShardsConfig, staging: str) -> dict:
    """What the shards phase does, in one process: plan, one write_group per group, merged indexes."""
    groups, keys = plan(docs.column("id"), config.shuffle.seed, config.shuffle.groups)
    pad = stage.tokenizer.token_to_id(config.layout.pad or config.tokenize.eos) if config.tokenize.eos else None
    results = {}
    for g in range(config.shuffle.groups):
        rows = np.flatnonzero(groups == g)
        name = f"{g:05d}"
        sinks = {f.name: LocalSink(os.path.join(root, f.name, name)) for f in enabled_formats(config)}
        results[name] = write_group(
            name,
            docs.take(pa.array(rows)),
            keys[rows],
            config,
            TokenInfo(stage.dtype, stage.vocab_size),
            os.path.join(staging, name),
            sinks,
            pad_id=pad,
        )
    for fmt in enabled_formats(config):
        Storage(root).write_json(
            fmt.merge({k: r.indexes[fmt.name] for k, r in results.items()}), fmt.name, "index.json"
        )
    return results


def files(root: str) -> dict[str, bytes]:
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


# -- MDS ------------------------------------------------------------------------


def test_tokens_dtype_and_long_document():
    docs, stage = tokenized()
    assert stage.dtype == np.uint16
    assert docs.column("num_tokens")[7].as_py() > 65_535  # exercises the uint32 shape header


@pytest.mark.parametrize("compression", [None, "zstd:5"])
def test_mds_is_byte_identical_for_any_batching(tmp_path, compression):
    docs, _ = tokenized()
    cols = mds_columns(docs.select(["tokens", "id", "url", "num_tokens"]).schema)
    cfg = MDSConfig(size_limit=1 << 18, compression=compression, hashes=["sha1", "xxh3_64"])
    for name, batch_rows in (("a", 1000), ("b", 7), ("c", 64)):
        w = MDSWriter(str(tmp_path / f"stage-{name}"), cols, cfg, LocalSink(str(tmp_path / name)))
        sel = docs.select(["tokens", "id", "url", "num_tokens"])
        for start in range(0, len(sel), batch_rows):
            w.write(sel.slice(start, batch_rows))
        w.finish()
    assert files(str(tmp_path / "a")) == files(str(tmp_path / "b")) == files(str(tmp_path / "c"))
    index = json.loads((tmp_path / "a" / "index.json").read_text())
    assert sum(s["samples"] for s in index["shards"]) == len(docs)
    ext = ".mds.zstd" if compression else ".mds"
    assert sorted(os.listdir(tmp_path / "a")) == ["index.json"] + [
        f"shard.{i:05d}{ext}" for i in range(len(index["shards"]))
    ]


def test_mds_shards_respect_size_limit_like_streaming(tmp_path):
    docs, _ = tokenized()
    sel = docs.select(["tokens", "id", "num_tokens"])
    cols = mds_columns(sel.schema)
    limit = 1 << 16
    w = MDSWriter(
        str(tmp_path / "s"), cols, MDSConfig(size_limit=limit, compression=None), LocalSink(str(tmp_path / "o"))
    )
    w.write(sel)
    index = w.finish()
    _, sizes = encode_samples(sel, cols)
    big = sizes + 4 + 8 + len(w.config_data) > limit  # samples too large for any shard
    for shard in index["shards"]:
        data = (tmp_path / "o" / shard["raw_data"]["basename"]).read_bytes()
        assert len(data) == shard["raw_data"]["bytes"]
        n = int(np.frombuffer(data[:4], "<u4")[0])
        offsets = np.frombuffer(data[4 : 8 + 4 * n], "<u4")
        assert n == shard["samples"] and offsets[-1] == len(data)
        assert len(data) <= limit or n == 1  # only a lone oversized sample passes the limit
    assert sum(s["samples"] == 1 and s["raw_data"]["bytes"] > limit for s in index["shards"]) == int(big.sum())
    # streaming's rule: a shard closes only when the next sample would not fit
    first = np.cumsum([0] + [s["samples"] for s in index["shards"]])
    for shard, nxt in zip(index["shards"][:-1], first[1:-1], strict=False):
        assert shard["raw_data"]["bytes"] + sizes[nxt] + 4 > limit


def test_mds_index_is_published_after_every_shard(tmp_path):
    published = []

    class Recorder(LocalSink):
        def put(self, path, name):
            published.append(name)
            super().put(path, name)

    docs, _ = tokenized()
    sel = docs.select(["tokens", "id"])
    w = MDSWriter(
        str(tmp_path / "s"), mds_columns(sel.schema), MDSConfig(size_limit=1 << 16), Recorder(str(tmp_path / "o"))
    )
    w.write(sel)
    w.finish()
    assert published[-1] == "index.json" and len(published) > 3
    assert all(n.endswith(".mds.zstd") for n in published[:-1])
    assert os.listdir(tmp_path / "s") == []  # the staging folder is emptied shard by shard


def test_mds_refuses_nulls_and_empty_arrays(tmp_path):
    w = MDSWriter(
        str(tmp_path / "s"), {"id": "str", "tokens": "ndarray:uint16"}, MDSConfig(), LocalSink(str(tmp_path))
    )
    tokens = pa.array([[1, 2]], pa.list_(pa.uint16()))
    with pytest.raises(ValueError, match="'id' has 1 null"):
        w.write(pa.table({"id": pa.array([None], pa.string()), "tokens": tokens}))
    with pytest.raises(ValueError, match="empty token array"):
        w.write(pa.table({"id": ["a"], "tokens": pa.array([[]], pa.list_(pa.uint16()))}))


def test_mds_config_errors_name_the_problem():
    with pytest.raises(ValueError, match="zstd:<level 1-22>"):
        MDSConfig(compression="gzip")
    with pytest.raises(ValueError, match="unknown hash 'crc'"):
        MDSConfig(hashes=["crc"])
    assert MDSConfig(hashes=["xxh64", "sha1", "sha1"]).hashes == ["sha1", "xxh64"]
    with pytest.raises(TypeError, match="'score': list of float"):
        mds_columns(pa.schema([("score", pa.list_(pa.float32()))]))
    with pytest.raises(TypeError, match="'when': type timestamp"):
        mds_columns(pa.schema([("when", pa.timestamp("s"))]))


def test_merged_index_prefixes_sub_folders():
    a = {"version": 2, "shards": [{"raw_data": {"basename": "shard.00000.mds"}, "zip_data": None, "samples": 3}]}
    b = {
        "version": 2,
        "shards": [
            {
                "raw_data": {"basename": "shard.00000.mds"},
                "zip_data": {"basename": "shard.00000.mds.zstd"},
                "samples": 2,
            }
        ],
    }
    m = merge_mds_indexes({"00001": b, "00000": a})
    assert [s["raw_data"]["basename"] for s in m["shards"]] == ["00000/shard.00000.mds", "00001/shard.00000.mds"]
    assert m["shards"][1]["zip_data"]["basename"] == "00001/shard.00000.mds.zstd"
    assert a["shards"][0]["raw_data"]["basename"] == "shard.00000.mds"  # inputs untouched


# -- WebDataset -----------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 255, 256, 70_000])
def test_npy_header_is_what_numpy_save_writes(n):
    for dtype in (np.uint16, np.uint32):
        buf = io.BytesIO()
        np.save(buf, np.zeros(n, dtype))
        assert buf.getvalue()[: len(npy_header(np.dtype(dtype).str, n))] == npy_header(np.dtype(dtype).str, n)


def test_webdataset_tars_are_reproducible_and_bounded(tmp_path):
    docs, _ = tokenized()
    sel = docs.select(["tokens", "id", "url", "num_tokens"])
    cfg = WebDatasetConfig(maxcount=50, maxsize=1 << 17)
    for name, rows in (("a", 1000), ("b", 13)):
        w = WebDatasetWriter(str(tmp_path / f"s{name}"), cfg, LocalSink(str(tmp_path / name)), key_prefix="00003")
        for start in range(0, len(sel), rows):
            w.write(sel.slice(start, rows))
        w.finish()
    a, b = files(str(tmp_path / "a")), files(str(tmp_path / "b"))
    assert a == b
    index = json.loads(a["index.json"])
    assert index["__kind__"] == "wids-shard-index-v1"
    assert sum(s["nsamples"] for s in index["shardlist"]) == len(sel)
    keys = []
    for s in index["shardlist"]:
        data = a[s["url"]]
        assert len(data) == s["filesize"] and s["nsamples"] <= 50 and (len(data) <= 1 << 17 or s["nsamples"] == 1)
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            members = tf.getmembers()
        assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) for m in members} == {(0, 0, 0, "", "", 0o444)}
        assert [m.name.split(".", 1)[1] for m in members] == ["json", "tokens.npy"] * s["nsamples"]
        keys += [m.name.split(".", 1)[0] for m in members[::2]]
    assert keys == [f"00003_{i:09d}" for i in range(len(sel))] and all("." not in k for k in keys)


def test_tar_size_formula():
    assert tar_size(0) == 10240 and tar_size(512 * 18) == 10240 and tar_size(512 * 19) == 20480


def test_key_prefix_without_dots():
    with pytest.raises(ValueError, match="no dots"):
        WebDatasetWriter("/tmp/x", WebDatasetConfig(), None, key_prefix="a.b")


# -- whole groups: determinism whatever the batching -------------------------------------


@pytest.mark.parametrize("layout", [LayoutConfig(), LayoutConfig(kind="packed", seq_len=512, remainder="pad")])
def test_dataset_bytes_do_not_depend_on_input_order(tmp_path, layout):
    docs, stage = tokenized()
    cfg = ShardsConfig(
        layout=layout, shuffle={"groups": 3, "seed": 5}, mds={"size_limit": 1 << 17}, webdataset={"maxcount": 40}
    )
    write_dataset(str(tmp_path / "a"), docs, stage, cfg, str(tmp_path / "sa"))
    perm = np.random.default_rng(0).permutation(len(docs))
    results = write_dataset(str(tmp_path / "b"), docs.take(pa.array(perm)), stage, cfg, str(tmp_path / "sb"))
    assert files(str(tmp_path / "a")) == files(str(tmp_path / "b"))
    assert sum(r.documents for r in results.values()) == len(docs)
    assert all(r.samples > 0 for r in results.values())


# -- sinks ----------------------------------------------------------------------


def test_local_sink_moves_files_in(tmp_path):
    src = tmp_path / "staged.bin"
    src.write_bytes(b"x" * 10)
    LocalSink(str(tmp_path / "out")).put(str(src), "sub/shard.bin")
    assert (tmp_path / "out" / "sub" / "shard.bin").read_bytes() == b"x" * 10 and not src.exists()


class FlakyStorage(Storage):
    """A real local Storage whose first ``failures`` uploads fail like a dropped S3 connection."""

    def __init__(self, root, failures, error=None):
        super().__init__(root)
        self.failures, self.calls = failures, 0
        self.error = error or OSError(
            "AWS Error NETWORK_CONNECTION during PutObject operation: curlCode: 7, Couldn't connect to server"
        )

    def atomic_output(self, *parts):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return super().atomic_output(*parts)


def test_storage_sink_retries_transient_errors_with_backoff(tmp_path):
    waits = []
    storage = FlakyStorage(str(tmp_path / "root"), failures=3)
    sink = StorageSink(storage, "shards", "mds", "00001", attempts=5, backoff_s=0.5, sleep=waits.append)
    src = tmp_path / "s.mds"
    src.write_bytes(os.urandom(3 << 20))
    data = src.read_bytes()
    sink.put(str(src), "shard.00000.mds")
    assert (tmp_path / "root" / "shards" / "mds" / "00001" / "shard.00000.mds").read_bytes() == data
    assert storage.calls == 4 and sink.retries == 3 and not src.exists()
    assert [round(w / b, 2) <= 1.25 and w >= b for w, b in zip(waits, [0.5, 1.0, 2.0], strict=False)] == [True] * 3


def test_storage_sink_gives_up_with_a_clear_error(tmp_path):
    src = tmp_path / "s.mds"
    src.write_bytes(b"abc")
    sink = StorageSink(FlakyStorage(str(tmp_path / "r"), failures=9), "p", attempts=3, sleep=lambda s: None)
    with pytest.raises(OSError, match=r"upload of .*p/x\.mds failed after 3 attempt\(s\)"):
        sink.put(str(src), "x.mds")
    assert src.exists()  # kept for a retry of the group
    denied = FlakyStorage(str(tmp_path / "r"), failures=1, error=OSError("AWS Error ACCESS_DENIED during PutObject"))
    with pytest.raises(OSError, match="after 1 attempt"):
        StorageSink(denied, "p", sleep=lambda s: None).put(str(src), "x.mds")
    assert not is_transient(FileNotFoundError("staged file gone"))


@pytest.mark.s3
def test_storage_sink_survives_an_s3_server_outage(tmp_path):
    """A real S3 server (moto) is down for 5 s: longer than pyarrow's own retries cover when the
    storage allows it 2 attempts (the default 10 would ride the outage out below the sink)."""
    import threading

    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    from core.storage import S3Options

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    port = server._server.server_port
    endpoint = f"http://127.0.0.1:{port}"
    try:
        storage = Storage("s3://outage/run", S3Options(endpoint_url=endpoint, max_attempts=2))
        pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", region="us-east-1",
                          allow_bucket_creation=True, force_virtual_addressing=False).create_dir("outage")  # fmt: skip
        server.stop()
        src = tmp_path / "shard.bin"
        src.write_bytes(os.urandom(1 << 20))
        data = src.read_bytes()
        restart = threading.Timer(5.0, lambda: (setattr(server, "_port", port), server.start()))
        restart.start()
        sink = StorageSink(storage, "shards", attempts=8, backoff_s=0.3, max_backoff_s=1.0)
        sink.put(str(src), "shard.00000.mds")
        restart.join()
        assert sink.retries >= 1
        with storage.fs.open_input_stream(storage.path("shards", "shard.00000.mds")) as f:
            assert f.read() == data
        names = [
            i.path
            for i in storage.fs.get_file_info(pafs.FileSelector("outage", recursive=True))
            if i.type == pafs.FileType.File
        ]
        assert names == ["outage/run/shards/shard.00000.mds"]  # no temporary object left behind
    finally:
        server.stop()


def test_shards_config_checks_consistency():
    with pytest.raises(ValueError, match="set tokenize.eos"):
        ShardsConfig(layout={"kind": "packed"}, tokenize={"eos": None})
    with pytest.raises(ValueError, match="at least one of mds, webdataset, megatron"):
        ShardsConfig(mds={"enabled": False}, webdataset={"enabled": False})
    with pytest.raises(ValueError, match="extra"):
        ShardsConfig(layout={"seqlen": 10})


@pytest.mark.parametrize("kind", ["document", "packed"])
def test_an_empty_group_writes_empty_indexes(tmp_path, kind):
    docs, stage = tokenized()
    config = ShardsConfig(layout=LayoutConfig(kind=kind))
    sinks = {"mds": LocalSink(str(tmp_path / "mds")), "webdataset": LocalSink(str(tmp_path / "wds"))}
    r = write_group(
        "00009",
        docs.slice(0, 0),
        np.empty(0, np.uint64),
        config,
        TokenInfo(stage.dtype, stage.vocab_size),
        str(tmp_path / "s"),
        sinks,
    )
    assert (
        r.samples == 0
        and r.indexes["mds"] == {"version": 2, "shards": []}
        and r.indexes["webdataset"]["shardlist"] == []
    )
    assert os.listdir(tmp_path / "mds") == ["index.json"] and os.listdir(tmp_path / "wds") == ["index.json"]
