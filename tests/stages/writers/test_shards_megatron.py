"""Megatron IndexedDataset pairs read back by megatron-core itself: IndexedDataset
(counts, dtype, document indices, every sequence = the tokenizer's ids + EOS),
byte-identical to its own IndexedDatasetBuilder, and GPTDataset blending the
prefixes.  megatron-core (a test-only dependency: it imports torch) is
imported only inside this module's fixtures."""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError
from tokenizers import Tokenizer

from stages.pack import LayoutConfig, document_samples
from stages.tokenize import SAMPLE_TOKENIZER, TokenizeConfig, TokenizeStage, list_array
from stages.writers.megatron import (
    IDX_BYTES_PER_DOC,
    IDX_FIXED_BYTES,
    MegatronConfig,
    MegatronIndex,
    MegatronWriter,
    megatron_dtype,
    merge_megatron_indexes,
)
from stages.writers.sink import LocalSink
from tests.conftest import REPO

WORDS = (
    "the server module configuration request response directive virtual host "
    "Konfiguration Datei Verzeichnis serveur fichier répertoire сервер файл каталог "
    "設定 ファイル 模块 配置 한국어 설정 güvenlik yapılandırma"
).split()


@pytest.fixture(scope="module")
def mc():
    """megatron.core.datasets' modules (the import warns that Apex / Transformer Engine are absent)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets import blended_megatron_dataset_builder, gpt_dataset, indexed_dataset, utils
    return type(
        "mc",
        (),
        {"indexed": indexed_dataset, "gpt": gpt_dataset, "builder": blended_megatron_dataset_builder, "utils": utils},
    )


def corpus(n: int, seed: int = 0) -> pa.Table:
    """Documents of a few to ~1,500 words in several scripts, one much longer."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 1500, n)
    lengths[n // 2] = 6000
    return pa.table({"id": [f"doc-{seed}-{i:05d}" for i in range(n)],
    "url": [f"https://example.org/{i}" for i in range(n)],
                     "text": [" ".join(rng.choice(WORDS, k)) for k in lengths]})  # fmt: skip


@pytest.fixture(scope="module")
def stage() -> TokenizeStage:
    return TokenizeStage(TokenizeConfig(tokenizer=str(REPO / SAMPLE_TOKENIZER)))


@pytest.fixture(scope="module")
def docs(stage) -> pa.Table:
    """Document samples (the shards phase's document layout) of 120 tokenized documents."""
    out = stage(corpus(120))
    assert out.column("reason").null_count == len(out)  # every document has tokens
    return document_samples(out, LayoutConfig())


@pytest.fixture(scope="module")
def direct() -> list[list[int]]:
    """Every document's tokens by a direct Tokenizer.encode, + EOS."""
    tok = Tokenizer.from_file(str(REPO / SAMPLE_TOKENIZER))
    eos = tok.token_to_id("<|endoftext|>")
    return [tok.encode(t, add_special_tokens=False).ids + [eos] for t in corpus(120).column("text").to_pylist()]


def write(
    root: Path, samples: pa.Table, vocab_size: int, batch: int = 32, folder: str = "megatron", **config
) -> tuple[MegatronIndex, MegatronWriter]:
    """Samples through a writer in batches of ``batch`` rows; its files end up in ``root/folder``."""
    writer = MegatronWriter(
        str(root / "staging" / folder),
        MegatronConfig(enabled=True, **config),
        LocalSink(str(root / folder)),
        vocab_size,
    )
    for start in range(0, len(samples), batch):
        writer.write(samples.slice(start, batch))
    return writer.finish(), writer


def read_all(mc, root: Path, index: MegatronIndex) -> list[np.ndarray]:
    """Every sequence of every pair, in index order, through megatron-core's IndexedDataset."""
    out = []
    for pair in index.pairs:
        ds = mc.indexed.IndexedDataset(str(root / pair.prefix))
        out.extend(ds[i].copy() for i in range(len(ds)))  # views into its mmap, which closes with ds
    return out


def test_one_pair_read_back_by_megatron(mc, tmp_path, stage, docs, direct):
    index, writer = write(tmp_path, docs, stage.vocab_size)
    assert [p.prefix for p in index.pairs] == ["shard-00000"] and index.dtype == "uint16"
    ds = mc.indexed.IndexedDataset(str(tmp_path / "megatron" / "shard-00000"))
    assert len(ds) == len(direct) == index.pairs[0].documents
    assert ds.index.dtype == np.uint16
    assert ds.document_indices.tolist() == list(range(len(direct) + 1))  # one sequence per document
    assert ds.sequence_lengths.tolist() == docs.column("num_tokens").to_pylist()
    for i, ids in enumerate(direct):
        seq = ds[i]
        assert seq.dtype == np.uint16 and seq.tolist() == ids
    assert ds[10:13][1].tolist() == direct[11]  # slices read through the pointers too
    assert index.pairs[0].tokens == sum(map(len, direct))
    assert not os.listdir(tmp_path / "staging" / "megatron")  # the sink took every file


def test_bytes_equal_megatrons_own_builder(mc, tmp_path, stage, docs, direct):
    """Same sequences through IndexedDatasetBuilder (as
    tools/preprocess_data.py uses it): the same .bin and .idx bytes."""
    write(tmp_path, docs, stage.vocab_size)
    dtype = mc.indexed.DType.optimal_dtype(stage.vocab_size)
    builder = mc.indexed.IndexedDatasetBuilder(str(tmp_path / "ref.bin"), dtype=dtype)
    for ids in direct:
        builder.add_document(np.array(ids), [len(ids)])
    builder.finalize(str(tmp_path / "ref.idx"))
    for ext in ("bin", "idx"):
        assert (tmp_path / "megatron" / f"shard-00000.{ext}").read_bytes() == (tmp_path / f"ref.{ext}").read_bytes(), (
            ext
        )


def test_shard_files_and_index_json(tmp_path, stage, docs):
    index, writer = write(tmp_path, docs, stage.vocab_size)
    folder = tmp_path / "megatron"
    for f in writer.shards:
        data = (folder / f.name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (f.bytes, f.sha256)
    by_name = {f.name: f for f in writer.shards}
    assert (by_name["shard-00000.bin"].samples, by_name["shard-00000.bin"].tokens) == (
        len(docs),
        index.pairs[0].tokens,
    )
    assert (by_name["shard-00000.idx"].samples, by_name["shard-00000.idx"].tokens) == (
        0,
        0,
    )  # sums over files count each document once
    saved = json.loads((folder / "index.json").read_text())
    assert MegatronIndex.from_dict(saved) == index
    assert (saved["dtype"], saved["dtype_code"], saved["documents"]) == ("uint16", 8, len(docs))


def test_size_limit_splits_into_valid_pairs(mc, tmp_path, stage, docs, direct):
    limit = 1 << 14
    index, writer = write(tmp_path, docs, stage.vocab_size, batch=7, size_limit=limit)
    assert len(index.pairs) > 5
    assert [p.prefix for p in index.pairs] == [f"shard-{i:05d}" for i in range(len(index.pairs))]
    assert [
        s.tolist() for s in read_all(mc, tmp_path / "megatron", index)
    ] == direct  # every pair a dataset, order kept
    sizes = [len(d) * 2 + IDX_BYTES_PER_DOC for d in direct]
    start = 0
    for pair in index.pairs:
        files = [(tmp_path / "megatron" / f"{pair.prefix}.{ext}").stat().st_size for ext in ("bin", "idx")]
        used = IDX_FIXED_BYTES + 8 + sum(sizes[start : start + pair.documents])
        assert sum(files) == used
        assert used <= limit or pair.documents == 1  # only a document larger than the limit passes it, alone
        if start + pair.documents < len(direct):
            assert used + sizes[start + pair.documents] > limit  # closed only when the next document would not fit
        start += pair.documents
    assert any(p.documents == 1 and len(direct[sum(q.documents for q in index.pairs[:k])]) * 2 > limit
               for k, p in enumerate(index.pairs))  # fmt: skip


@pytest.mark.parametrize("slack, pairs", [(0, 1), (-1, 2)])
def test_size_limit_is_exact(tmp_path, slack, pairs):
    """Ten documents of 100 uint16 tokens fill exactly 42 + 10 * (200
    + 20) bytes: that limit holds them, one byte less does not."""
    samples = pa.table(
        {"tokens": list_array(np.arange(1000, dtype=np.uint16), np.full(10, 100)), "id": [str(i) for i in range(10)]}
    )
    index, _ = write(
        tmp_path, samples, 8192, batch=3, size_limit=IDX_FIXED_BYTES + 8 + 10 * (200 + IDX_BYTES_PER_DOC) + slack
    )
    assert [p.documents for p in index.pairs] == ([10] if pairs == 1 else [9, 1])


def test_same_bytes_whatever_the_batches(tmp_path, stage, docs):
    a, _ = write(tmp_path / "a", docs, stage.vocab_size, batch=5, size_limit=1 << 14)
    b, _ = write(tmp_path / "b", docs, stage.vocab_size, batch=1000, size_limit=1 << 14)
    assert a == b
    for pair in a.pairs:
        for ext in ("bin", "idx"):
            name = f"{pair.prefix}.{ext}"
            assert (tmp_path / "a" / "megatron" / name).read_bytes() == (
                tmp_path / "b" / "megatron" / name
            ).read_bytes()


def test_empty_input_writes_an_empty_index(tmp_path, stage, docs):
    index, writer = write(tmp_path, docs.slice(0, 0), stage.vocab_size)
    assert index.pairs == [] and writer.shards == []
    assert sorted(os.listdir(tmp_path / "megatron")) == ["index.json"]
    assert json.loads((tmp_path / "megatron" / "index.json").read_text())["documents"] == 0


def big_vocab_stage(n: int = 70_000) -> TokenizeStage:
    """A word-level tokenizer with ``n`` words ``w0``...: ids over 65,535."""
    from tokenizers import models, pre_tokenizers

    vocab = {f"w{i}": i for i in range(n)} | {"[UNK]": n, "<|endoftext|>": n + 1}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return TokenizeStage(TokenizeConfig(), tokenizer_bytes=tok.to_str().encode())


def test_vocabulary_over_65500_writes_int32(mc, tmp_path):
    stage = big_vocab_stage()
    texts = ["w69999 w5 w65536", "w0", "w65535 w12345 w69998 w1"]
    samples = document_samples(
        stage(pa.table({"id": ["a", "b", "c"], "url": ["", "", ""], "text": texts})), LayoutConfig()
    )
    index, _ = write(tmp_path, samples, stage.vocab_size)
    ds = mc.indexed.IndexedDataset(str(tmp_path / "megatron" / "shard-00000"))
    assert index.dtype == "int32" and ds.index.dtype == np.int32
    eos = stage.eos_id
    assert [ds[i].tolist() for i in range(3)] == [[69999, 5, 65536, eos], [0, eos], [65535, 12345, 69998, 1, eos]]


@pytest.mark.parametrize("vocab_size", [1, 8192, 65_499, 65_500, 65_535, 65_536, 128_256, 2**31 - 1])
def test_dtype_rule_is_megatrons(mc, vocab_size):
    assert megatron_dtype(vocab_size).type is mc.indexed.DType.optimal_dtype(vocab_size)


def docs_example() -> str:
    """The Python block of docs/shards.md's Megatron section."""
    section = (REPO / "docs" / "shards.md").read_text().split("## Megatron", 1)[1]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def test_gpt_dataset_blends_the_docs_prefixes(mc, tmp_path, stage, docs, monkeypatch):
    """Two groups' pairs and their merged index.json; the docs' example makes the --data-args-path
    file, and Megatron's own GPTDataset blend reads every pair of it."""
    indexes = {}
    for g, part in enumerate((docs.slice(0, 50), docs.slice(50))):
        indexes[f"{g:05d}"], _ = write(
            tmp_path, part, stage.vocab_size, folder=f"megatron/{g:05d}", size_limit=1 << 15
        )
    merged = merge_megatron_indexes(indexes)
    assert merged.pairs[0].prefix == "00000/shard-00000" and sum(p.documents for p in merged.pairs) == len(docs)
    (tmp_path / "megatron" / "index.json").write_text(json.dumps(merged.to_dict()))
    monkeypatch.chdir(tmp_path)
    exec(
        compile(
            docs_example().replace("/data/run/shards/megatron", str(tmp_path / "megatron")), "docs/shards.md", "exec"
        ),
        {},
    )
    prefixes = (tmp_path / "data_args.txt").read_text().split()
    assert prefixes == [str(tmp_path / "megatron" / p.prefix) for p in merged.pairs]

    class Tok:  # what GPTDataset asks of a tokenizer
        eod, pad, vocab_size, unique_identifiers = stage.eos_id, -1, stage.vocab_size, {"class": "Tok"}

    seq = 64
    config = mc.gpt.GPTDatasetConfig(
        random_seed=1,
        sequence_length=seq,
        blend=mc.utils.get_blend_from_list(prefixes),
        split="100,0,0",
        tokenizer=Tok(),
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train, _, _ = mc.builder.BlendedMegatronDatasetBuilder(
            mc.gpt.GPTDataset, [None, None, None], lambda: True, config
        ).build()
    assert len(train) == sum((p.tokens - 1) // seq for p in merged.pairs)  # one epoch of every pair
    sample = train[len(train) - 1]
    assert sample["tokens"].shape == (seq,) and int(sample["tokens"].max()) < stage.vocab_size


def test_merge_refuses_mixed_dtypes():
    with pytest.raises(ValueError, match="disagree"):
        merge_megatron_indexes({"a": MegatronIndex("uint16", 8192), "b": MegatronIndex("int32", 70_000)})


def test_bad_samples_are_one_line_errors(tmp_path, stage, docs):
    writer = MegatronWriter(str(tmp_path / "s"), MegatronConfig(), LocalSink(str(tmp_path / "m")), stage.vocab_size)
    packed = pa.table({"tokens": docs.column("tokens"), "first_id": docs.column("id")})
    with pytest.raises(ValueError, match="one sequence per document"):
        writer.write(packed)
    over = pa.table({"tokens": list_array(np.array([1, stage.vocab_size], np.uint16), np.array([2])), "id": ["x"]})
    with pytest.raises(ValueError, match=f"token id {stage.vocab_size} is outside the vocabulary"):
        writer.write(over)
    nulls = pa.table({"tokens": pa.array([[1, 2], None], pa.list_(pa.uint16())), "id": ["x", "y"]})
    with pytest.raises(ValueError, match="null tokens"):
        writer.write(nulls)
    with pytest.raises(TypeError, match="list of integer ids"):
        writer.write(pa.table({"tokens": ["1 2"], "id": ["x"]}))
    with pytest.raises(ValueError, match="vocab_size 0"):
        MegatronWriter(str(tmp_path / "s"), MegatronConfig(), LocalSink(str(tmp_path / "m")), 0)


def test_config_defaults_and_bounds():
    assert MegatronConfig().enabled is False and MegatronConfig().size_limit == 1 << 30
    with pytest.raises(ValidationError, match="size_limit"):
        MegatronConfig(size_limit=100)
    with pytest.raises(ValidationError, match="sizelimit"):
        MegatronConfig(sizelimit=1 << 20)
