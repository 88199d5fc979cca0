"""Shards read back by the trainers' own loaders: streaming.LocalDataset and
StreamingDataset for MDS, webdataset.WebDataset for the tars; every sample
equal to a direct tokenization.  Importing streaming (torch) takes 10-50 s, so
every read is in this module and the datasets are written once."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from tokenizers import Tokenizer

from core.storage import S3Options, Storage
from stages.shuffle_plan import group_order, plan
from stages.tokenize import SAMPLE_TOKENIZER
from stages.writers import (
    LocalSink,
    MDSConfig,
    MDSWriter,
    ShardsConfig,
    StorageSink,
    TokenInfo,
    mds_columns,
    merge_mds_indexes,
    merge_wds_indexes,
    write_group,
)
from tests.conftest import REPO
from tests.stages.writers.test_shards_writers import corpus, tokenized, write_dataset

DOCS = REPO / "docs" / "shards.md"

CONFIGS = {
    "doc-zstd": ShardsConfig(
        shuffle={"groups": 3, "seed": 1}, mds={"size_limit": 1 << 18}, webdataset={"maxcount": 64}
    ),
    "doc-raw-meta": ShardsConfig(
        layout={"text": True, "metadata": ["language"]},
        shuffle={"groups": 2},
        mds={"compression": None, "size_limit": 1 << 18, "hashes": ["sha1", "xxh3_64"]},
    ),
    "packed-drop": ShardsConfig(
        layout={"kind": "packed", "seq_len": 1024}, shuffle={"groups": 2}, mds={"size_limit": 1 << 16}
    ),
    "packed-keep-raw": ShardsConfig(
        layout={"kind": "packed", "seq_len": 700, "remainder": "keep"},
        shuffle={"groups": 3},
        mds={"compression": None},
    ),
    "packed-pad": ShardsConfig(
        layout={"kind": "packed", "seq_len": 999, "remainder": "pad", "pad": "<|pad|>"},
        shuffle={"groups": 2},
        mds={"compression": "zstd:9"},
    ),
}


@pytest.fixture(scope="module")
def streaming():
    import streaming

    return streaming


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, Path]:
    docs, stage = tokenized()
    out = {}
    for name, cfg in CONFIGS.items():
        root = tmp_path_factory.mktemp(name)
        write_dataset(str(root / "shards"), docs, stage, cfg, str(root / "staging"))
        out[name] = root / "shards"
    return out


@pytest.fixture(scope="module")
def direct() -> dict[str, list[int]]:
    """Every document's tokens by a direct Tokenizer.encode (+ EOS), by id."""
    tok = Tokenizer.from_file(str(REPO / SAMPLE_TOKENIZER))
    table = corpus()
    eos = tok.token_to_id("<|endoftext|>")
    return {
        i: tok.encode(t, add_special_tokens=False).ids + [eos]
        for i, t in zip(table.column("id").to_pylist(), table.column("text").to_pylist(), strict=False)
    }


def expected_samples(name: str, direct: dict[str, list[int]]) -> list[dict]:
    """The samples of a dataset in merged-index order, built from the direct tokenization."""
    cfg = CONFIGS[name]
    table = corpus()
    ids = table.column("id").to_pylist()
    groups, keys = plan(ids, cfg.shuffle.seed, cfg.shuffle.groups)
    tok = Tokenizer.from_file(str(REPO / SAMPLE_TOKENIZER))
    out = []
    for g in range(cfg.shuffle.groups):
        rows = np.flatnonzero(groups == g)
        order = [ids[i] for i in rows[group_order(keys[rows], [ids[i] for i in rows])]]
        if cfg.layout.kind == "document":
            row = {r["id"]: r for r in table.to_pylist()}
            for i in order:
                s = {"tokens": direct[i], "id": i, "url": row[i]["url"], "num_tokens": len(direct[i])}
                if cfg.layout.text:
                    s.update(text=row[i]["text"], language=row[i]["language"])
                out.append(s)
            continue
        stream = [(t, i, k) for i in order for k, t in enumerate(direct[i])]
        L = cfg.layout.seq_len
        for s in range(0, len(stream), L):
            piece = stream[s : s + L]
            toks = [t for t, _, _ in piece]
            if len(piece) < L:
                if cfg.layout.remainder == "drop":
                    break
                if cfg.layout.remainder == "pad":
                    toks += [tok.token_to_id("<|pad|>")] * (L - len(piece))
            out.append(
                {"tokens": toks, "num_tokens": len(piece), "first_id": piece[0][1], "first_offset": piece[0][2]}
            )
    return out


def as_plain(sample: dict) -> dict:
    return {
        k: (v.tolist() if isinstance(v, np.ndarray) else v.item() if isinstance(v, np.generic) else v)
        for k, v in sample.items()
    }


@pytest.mark.parametrize("name", list(CONFIGS))
def test_streaming_dataset_reads_every_sample(streaming, written, direct, tmp_path, name):
    root = written[name]
    expected = expected_samples(name, direct)
    index = json.loads((root / "mds" / "index.json").read_text())
    assert {s["raw_data"]["basename"].split("/")[0] for s in index["shards"]} == {
        f"{g:05d}" for g in range(CONFIGS[name].shuffle.groups)
    }
    # remote = the shard folder (a second local dir: files are copied and decompressed into the cache)
    ds = streaming.StreamingDataset(
        remote=str(root / "mds"), local=str(tmp_path / "cache"), shuffle=False, batch_size=1
    )
    got = [as_plain(ds[i]) for i in range(len(ds))]
    assert got == expected
    assert isinstance(ds[0]["tokens"], np.ndarray) and ds[0]["tokens"].dtype == np.uint16
    assert sorted(as_plain(s)["tokens"] == e["tokens"] for s, e in zip(ds, expected, strict=False)) == [True] * len(
        expected
    )  # iteration too
    if CONFIGS[name].mds.compression is None:
        local = streaming.LocalDataset(str(root / "mds"))
        assert [as_plain(local[i]) for i in range(len(local))] == expected
        ds2 = streaming.StreamingDataset(local=str(root / "mds"), remote=None, shuffle=False, batch_size=1)
        assert [as_plain(ds2[i]) for i in range(len(ds2))] == expected


@pytest.mark.parametrize("name", ["doc-zstd", "packed-keep-raw"])
def test_webdataset_reads_every_sample(written, direct, name):
    import webdataset as wds

    root = written[name] / "webdataset"
    index = json.loads((root / "index.json").read_text())
    urls = [str(root / s["url"]) for s in index["shardlist"]]
    got = []
    for s in wds.WebDataset(urls, shardshuffle=False).decode():
        assert s["tokens.npy"].dtype == np.uint16
        got.append({"tokens": s["tokens.npy"].tolist(), **s["json"]})
    assert got == expected_samples(name, direct)
    assert sum(s["nsamples"] for s in index["shardlist"]) == len(got)


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_native_mds_equals_streaming_mdswriter(streaming, tmp_path, compression):
    import zstandard

    docs, _ = tokenized()
    sel = docs.select(["tokens", "id", "url", "num_tokens"]).slice(0, 200)
    cols = mds_columns(sel.schema)
    cfg = MDSConfig(size_limit=1 << 17, compression=compression, hashes=["sha1"])
    ours = MDSWriter(str(tmp_path / "stage"), cols, cfg, LocalSink(str(tmp_path / "ours")))
    ours.write(sel)
    ours.finish()
    with streaming.MDSWriter(
        out=str(tmp_path / "theirs"), columns=cols, compression=compression, hashes=["sha1"], size_limit=1 << 17
    ) as w:
        for row in sel.to_pylist():
            w.write({**row, "tokens": np.array(row["tokens"], np.uint16)})
    a = json.loads((tmp_path / "ours" / "index.json").read_text())
    b = json.loads((tmp_path / "theirs" / "index.json").read_text())
    assert len(a["shards"]) == len(b["shards"]) > 1
    for sa, sb in zip(a["shards"], b["shards"], strict=False):
        assert sa["raw_data"] == sb["raw_data"]  # same raw bytes: same size and sha1

        def raw(root, s):
            if not compression:
                return (root / s["raw_data"]["basename"]).read_bytes()
            return zstandard.decompress((root / s["zip_data"]["basename"]).read_bytes())

        assert raw(tmp_path / "ours", sa) == raw(tmp_path / "theirs", sb)
        assert {k: v for k, v in sa.items() if k != "zip_data"} == {k: v for k, v in sb.items() if k != "zip_data"}
    if not compression:
        assert (tmp_path / "ours" / "index.json").read_bytes() == (tmp_path / "theirs" / "index.json").read_bytes()


def docs_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)


@pytest.mark.s3
def test_both_formats_on_s3_read_back_from_s3(streaming, s3_server, direct, tmp_path, monkeypatch):
    """Shards uploaded shard by shard to a real S3 API (moto); StreamingDataset and WebDataset read s3:// URLs."""
    import pyarrow.fs as pafs
    import webdataset as wds

    host = s3_server.split("//")[1]
    pafs.S3FileSystem(
        endpoint_override=host, scheme="http", region="us-east-1", allow_bucket_creation=True
    ).create_dir("trainbucket")
    storage = Storage("s3://trainbucket/run", S3Options(endpoint_url=s3_server))
    docs, stage = tokenized()
    cfg = CONFIGS["doc-zstd"]
    groups, keys = plan(docs.column("id"), cfg.shuffle.seed, cfg.shuffle.groups)
    results = {}
    for g in range(cfg.shuffle.groups):
        rows = np.flatnonzero(groups == g)
        name = f"{g:05d}"
        sinks = {f: StorageSink(storage, "shards", f, name) for f in ("mds", "webdataset")}
        results[name] = write_group(
            name,
            docs.take(pa.array(rows)),
            keys[rows],
            cfg,
            TokenInfo(stage.dtype, stage.vocab_size),
            str(tmp_path / name),
            sinks,
        )
    storage.write_json(
        merge_mds_indexes({k: r.indexes["mds"] for k, r in results.items()}), "shards", "mds", "index.json"
    )
    storage.write_json(
        merge_wds_indexes({k: r.indexes["webdataset"] for k, r in results.items()}),
        "shards",
        "webdataset",
        "index.json",
    )
    assert not any(os.scandir(tmp_path / "00000" / "mds"))  # staging emptied as shards were uploaded

    expected = expected_samples("doc-zstd", direct)
    monkeypatch.setenv("S3_ENDPOINT_URL", s3_server)
    ds = streaming.StreamingDataset(
        remote="s3://trainbucket/run/shards/mds", local=str(tmp_path / "cache"), shuffle=False, batch_size=1
    )
    assert [as_plain(ds[i]) for i in range(len(ds))] == expected

    code = docs_blocks()[2].replace("127.0.0.1:9000", host)
    saved = dict(wds.gopen_schemes)
    try:
        exec(compile(code, "docs/shards.md", "exec"), {})  # registers s3:// with webdataset
        index = storage.read_json("shards", "webdataset", "index.json")
        urls = [f"s3://trainbucket/run/shards/webdataset/{s['url']}" for s in index["shardlist"]]
        got = [
            {"tokens": s["tokens.npy"].tolist(), **s["json"]}
            for s in wds.WebDataset(urls, shardshuffle=False).decode()
        ]
    finally:
        wds.gopen_schemes.clear()
        wds.gopen_schemes.update(saved)
    assert got == expected
