"""The tokenizer family (stages/tokenizers/): each kind's ids against its own library's
encode, the kind picked by content, BOS/EOS/pad defaults and overrides, and bad files and texts."""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import random
import shutil

import numpy as np
import pyarrow as pa
import pytest
import sentencepiece as spm
from hypothesis import given, settings, strategies as st
from tokenizers import Tokenizer as HFTokenizer, processors

import stages.tokenizers.base
from stages.tokenizers import (
    FROM_MODEL,
    HuggingFaceTokenizer,
    SentencePieceTokenizer,
    SpecialToken,
    TokenizerFileError,
    UnencodableText,
    chunk_bounds,
    load,
    resolve_specials,
)
from tests.conftest import REPO

HF_FILE = REPO / "samples" / "tokenizer" / "tokenizer.json"
SP_FILE = REPO / "samples" / "tokenizer_sp" / "tokenizer.model"

#: Texts that are hard for a tokenizer rather than typical: empty, NUL and control
#: characters, whitespace runs, combining marks, astral characters, a BOM, and large ones.
EDGE_TEXTS = [
    "",
    "\x00",
    "a\x00b\x00\x00c",
    "   ",
    "\n\n\t \r\n",
    "e\u0301 n\u0303 \u200b\u200d \ufeffBOM",
    "🙂🧪𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \U0010fffd",
    "x" * 200_000,  # one 200k-character word
    " ".join(
        random.Random(0).choice(["the", "Konfiguration", "日本語", "données", "проверка", "2026", "\x00"])
        for _ in range(100_000)
    ),
]


@pytest.fixture(scope="module")
def sample_texts() -> list[str]:
    """Every HTML response's text in samples/ (the sample run's reader, decoding and extraction), by id."""
    from stages.base import ChainStats, run_chain
    from stages.charset import CharsetConfig, DecodeStage
    from stages.extract import ExtractConfig, ExtractStage
    from stages.warc import ReadStats, WarcConfig, WarcReader

    reader, chain = WarcReader(WarcConfig()), [DecodeStage(CharsetConfig()), ExtractStage(ExtractConfig())]
    parts = []
    for path in sorted(glob.glob(str(REPO / "samples" / "*.warc.gz"))):
        with open(path, "rb") as raw:
            parts += [
                run_chain(chain, batch, ChainStats())[0].select(["id", "text"])
                for batch in reader.iter_batches(raw, path, ReadStats())
            ]
    table = pa.concat_tables(parts).sort_by("id")
    truth = {
        r["id"]: r["language"]
        for r in map(json.loads, (REPO / "samples" / "ground_truth.jsonl").read_text().splitlines())
    }
    assert {truth[i] for i in table.column("id").to_pylist()} == set(truth.values()) - {
        None
    }  # every language of the samples
    return table.column("text").to_pylist()


@functools.cache
def _sp() -> SentencePieceTokenizer:
    return load(str(SP_FILE))


@functools.cache
def _hf() -> HuggingFaceTokenizer:
    return load(str(HF_FILE))


@functools.cache
def _references() -> tuple[spm.SentencePieceProcessor, HFTokenizer]:
    """Each library loaded on its own, as its users call it."""
    return spm.SentencePieceProcessor(model_file=str(SP_FILE)), HFTokenizer.from_file(str(HF_FILE))


@pytest.fixture
def sp() -> SentencePieceTokenizer:
    return _sp()


@pytest.fixture
def hf() -> HuggingFaceTokenizer:
    return _hf()


def test_sentencepiece_ids_equal_the_library_encode(sp, sample_texts):
    reference = _references()[0]
    texts = sample_texts + EDGE_TEXTS
    got = sp.encode(texts)
    assert got.flat.dtype == np.uint16 and got.lengths.dtype == np.int64
    assert got.to_lists() == [reference.encode(t) for t in texts]
    assert sum(got.lengths) > 1_000_000


def test_huggingface_ids_equal_the_library_encode(hf, sample_texts):
    reference = _references()[1]
    texts = sample_texts + EDGE_TEXTS
    assert hf.encode(texts).to_lists() == [reference.encode(t, add_special_tokens=False).ids for t in texts]


@pytest.mark.parametrize("kind", ["sp", "hf"])
def test_ids_do_not_depend_on_the_encode_chunk(kind, request, sample_texts, monkeypatch):
    tok = request.getfixturevalue(kind)
    texts = [
        "",
        *sample_texts[:9],
        "",
        "\x00",
    ]  # several chunks, the last one short, empty texts inside and at a boundary
    whole = tok.encode(texts)
    monkeypatch.setattr(stages.tokenizers.base, "ENCODE_CHUNK", 3)
    chunked = tok.encode(texts)
    assert np.array_equal(chunked.flat, whole.flat) and np.array_equal(chunked.lengths, whole.lengths)
    assert tok.encode([]).to_lists() == []
    for variable in (
        "TOKENIZERS_PARALLELISM",
        "RAYON_NUM_THREADS",
    ):  # the HF kind's thread budget is process-wide: restored after
        monkeypatch.delenv(variable, raising=False)
    threaded = load(str(SP_FILE if kind == "sp" else HF_FILE), threads=2).encode(texts)
    assert np.array_equal(threaded.flat, whole.flat) and np.array_equal(threaded.lengths, whole.lengths)


def test_chunks_are_bounded_by_texts_and_by_characters():
    assert chunk_bounds([], 3, 10) == []
    assert chunk_bounds(["a"] * 7, 3, 100) == [(0, 3), (3, 6), (6, 7)]
    assert chunk_bounds(["aaaa", "bbbb", "cc", "dddddddddddd", "e"], 10, 10) == [
        (0, 3),
        (3, 4),
        (4, 5),
    ]  # a long text alone
    assert chunk_bounds(["", None, "abc"], 10, 2) == [
        (0, 2),
        (2, 3),
    ]  # what is not a str counts 0 (the library refuses it)


@pytest.mark.parametrize("kind", ["sp", "hf"])
def test_ids_do_not_depend_on_the_character_bound(kind, request, sample_texts, monkeypatch):
    tok = request.getfixturevalue(kind)
    whole = tok.encode(sample_texts)
    monkeypatch.setattr(stages.tokenizers.base, "ENCODE_CHUNK_CHARS", 50)  # about a chunk per text
    calls = []
    real = type(tok)._encode_chunk
    monkeypatch.setattr(type(tok), "_encode_chunk", lambda self, texts: calls.append(len(texts)) or real(self, texts))
    chunked = tok.encode(sample_texts)
    assert np.array_equal(chunked.flat, whole.flat) and np.array_equal(chunked.lengths, whole.lengths)
    assert len(calls) > len(sample_texts) // 2


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=6))
def test_any_unicode_batch_equals_the_libraries(texts):
    sp_reference, hf_reference = _references()
    assert _sp().encode(texts).to_lists() == [sp_reference.encode(t) for t in texts]
    assert _hf().encode(texts).to_lists() == [hf_reference.encode(t, add_special_tokens=False).ids for t in texts]


def test_sentencepiece_model_defaults_give_the_library_bos_and_eos(sp, sample_texts):
    reference = _references()[0]
    specials = resolve_specials(sp)
    assert (
        specials.bos == SpecialToken("<s>", 1)
        and specials.eos == SpecialToken("</s>", 2)
        and specials.pad == SpecialToken("<pad>", 3)
    )
    for text, ids in zip(sample_texts[:50], sp.encode(sample_texts[:50]).to_lists(), strict=False):
        assert [specials.bos.id, *ids, specials.eos.id] == reference.encode(text, add_bos=True, add_eos=True)


def test_configured_specials_override_the_model(sp, hf):
    chosen = resolve_specials(sp, bos=None, eos="<pad>", pad="</s>")
    assert (chosen.bos, chosen.eos, chosen.pad) == (None, SpecialToken("<pad>", 3), SpecialToken("</s>", 2))
    assert resolve_specials(hf, bos="<|begin_of_text|>", eos=None, pad="<|pad|>").bos == SpecialToken(
        "<|begin_of_text|>", 1
    )
    with pytest.raises(
        ValueError,
        match=r"^config error: shards\.tokenize\.eos: token '<\|endoftext\|>' is not in the tokenizer's vocabulary "
        r"\(SentencePiece \.model, 8000 ids; its own: bos '<s>', eos '</s>', pad '<pad>'; or set it to null\)$",
    ):
        resolve_specials(sp, eos="<|endoftext|>")
    with pytest.raises(
        ValueError,
        match=r"^config error: shards\.layout\.pad: token '<s>' is not in .*; its own: eos '<\|endoftext\|>'; or",
    ):
        resolve_specials(hf, pad="<s>")


def test_huggingface_defaults_follow_the_file(hf, tmp_path):
    # The sample file (GPT-2 style, ByteLevel post-processor): no BOS, <|endoftext|> by convention, no pad.
    assert FROM_MODEL == "auto" and resolve_specials(hf) == resolve_specials(hf, bos="auto", eos="auto", pad="auto")
    assert (hf.defaults.bos, hf.defaults.eos, hf.defaults.pad) == (None, SpecialToken("<|endoftext|>", 0), None)

    def defaults_with(edit) -> tuple:
        tok = HFTokenizer.from_file(str(HF_FILE))
        edit(tok)
        path = tmp_path / "edited.json"
        path.write_text(tok.to_str())
        d = load(str(path)).defaults
        return tuple(s and s.token for s in (d.bos, d.eos, d.pad))

    bos_eos = processors.TemplateProcessing(
        single="<|begin_of_text|> $A <|pad|>", special_tokens=[("<|begin_of_text|>", 1), ("<|pad|>", 2)]
    )
    assert defaults_with(lambda t: setattr(t, "post_processor", bos_eos)) == ("<|begin_of_text|>", "<|pad|>", None)
    llama3 = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=False),  # Llama 3's tokenizer.json: BOS only
            processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 1)]),
        ]
    )
    assert defaults_with(lambda t: setattr(t, "post_processor", llama3)) == (
        "<|begin_of_text|>",
        "<|endoftext|>",
        None,
    )
    assert defaults_with(lambda t: t.enable_padding(pad_id=2, pad_token="<|pad|>")) == (
        None,
        "<|endoftext|>",
        "<|pad|>",
    )


def test_token_to_id_says_none_for_a_token_not_in_the_vocabulary(sp, hf):
    # SentencePiece's own piece_to_id answers <unk>'s id (0) for anything it does not know.
    assert _references()[0].piece_to_id("no such piece") == 0
    assert sp.token_to_id("no such piece") is None and sp.token_to_id("<unk>") == 0 and sp.token_to_id("<0x00>") == 4
    assert hf.token_to_id("no such piece") is None and hf.token_to_id("<|pad|>") == 2


def test_describe_and_the_file_facts(sp, hf):
    info = sp.describe()
    assert (info.kind, info.vocab_size, info.max_id, info.dtype) == ("sentencepiece", 8000, 7999, "uint16")
    assert info.sha256 == hashlib.sha256(SP_FILE.read_bytes()).hexdigest() and info.defaults == sp.defaults
    info = hf.describe()
    assert (info.kind, info.vocab_size, info.max_id, info.dtype) == ("huggingface", 8192, 8191, "uint16")
    assert info.sha256 == hashlib.sha256(HF_FILE.read_bytes()).hexdigest()


def test_a_vocabulary_past_16_bits_gives_uint32(tmp_path):
    spec = json.loads(HF_FILE.read_text())
    base = len(spec["model"]["vocab"])
    spec["added_tokens"] += [
        {
            "id": base + i,
            "content": f"zzword{i}",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": False,
        }
        for i in range(57_500)
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(spec))
    tok = load(str(path))
    ids = tok.encode(["alpha zzword57499 beta"])
    assert tok.dtype == np.uint32 and ids.flat.dtype == np.uint32 and ids.flat.max() == base + 57_499


def test_the_kind_comes_from_the_content_not_the_name(tmp_path):
    swapped_sp, swapped_hf = tmp_path / "tokenizer.json", tmp_path / "tokenizer.model"
    shutil.copy(SP_FILE, swapped_sp)
    shutil.copy(HF_FILE, swapped_hf)
    assert load(str(swapped_sp)).kind == "sentencepiece" and load(str(swapped_hf)).kind == "huggingface"
    assert load(SP_FILE.read_bytes()).sha256 == load(str(SP_FILE)).sha256  # bytes handed to a worker
    assert (
        load(b"\xef\xbb\xbf \n" + HF_FILE.read_bytes()).kind == "huggingface"
    )  # a BOM and whitespace before the JSON


def test_a_file_of_neither_kind_is_a_one_line_error_naming_it(tmp_path):
    cases = {
        "notes.txt": (
            b"just some text\n",
            r"notes\.txt: neither a Hugging Face tokenizer\.json nor a "
            r"SentencePiece \.model \(it starts with b'just some te'\)$",
        ),
        "empty.model": (b"", r"empty\.model: neither .* \(it starts with b''\)$"),
        "tokenizer.model": (
            b"IQ== 0\nIg== 1\nIw== 2\n",
            r"tokenizer\.model: neither .*; a tiktoken file like Llama "
            r"3's original tokenizer\.model: use its tokenizer\.json$",
        ),
        "cut.model": (
            SP_FILE.read_bytes()[:5000],
            r"cut\.model: looks like a SentencePiece \.model but does not load: ",
        ),
        "broken.json": (
            b'{"version": "1.0", "model": ',
            r"broken\.json: looks like a Hugging Face tokenizer\.json but does not load: ",
        ),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(TokenizerFileError, match=f"^{tmp_path}/{message}") as e:
            load(str(tmp_path / name))
        assert "\n" not in str(e.value)
    with pytest.raises(TokenizerFileError, match=r"^shipped bytes: neither"):
        load(b"\x89PNG\r\n", name="shipped bytes")


def test_a_missing_file_or_a_folder_is_a_one_line_error(tmp_path):
    with pytest.raises(TokenizerFileError, match=f"^{tmp_path}/nope.model: no such tokenizer file$"):
        load(str(tmp_path / "nope.model"))
    with pytest.raises(TokenizerFileError, match=f"^{tmp_path}: cannot read the tokenizer file: "):
        load(str(tmp_path))


@pytest.mark.parametrize("kind", ["sp", "hf"])
def test_a_text_no_library_can_take_is_an_error_naming_it(kind, request, monkeypatch):
    tok = request.getfixturevalue(kind)
    monkeypatch.setattr(stages.tokenizers.base, "ENCODE_CHUNK", 2)  # the index is the batch's, not the chunk's
    with pytest.raises(
        UnencodableText, match=r"^text 3 of the batch is not valid Unicode: unpaired surrogate U\+D800 at character 2$"
    ):
        tok.encode(["ok", "fine", "also fine", "ab\ud800cd"])
    with pytest.raises(UnencodableText, match=r"^text 0 of the batch is NoneType, not str$"):
        tok.encode([None, "x"])


@pytest.mark.s3
def test_loads_from_s3(s3_server, monkeypatch):
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(
        endpoint_override=s3_server.removeprefix("http://"),
        scheme="http",
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
        allow_bucket_creation=True,
        force_virtual_addressing=False,
    )
    fs.create_dir("tokenizers")
    for path in (SP_FILE, HF_FILE):
        with fs.open_output_stream(f"tokenizers/{path.name}") as f:
            f.write(path.read_bytes())
    assert (
        load("s3://tokenizers/tokenizer.model", filesystem=fs).sha256
        == hashlib.sha256(SP_FILE.read_bytes()).hexdigest()
    )
    with pytest.raises(TokenizerFileError, match=r"^s3://tokenizers/missing\.model: no such tokenizer file$"):
        load("s3://tokenizers/missing.model", filesystem=fs)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)  # no filesystem given: the AWS_* variables, as a worker has them
    assert load("s3://tokenizers/tokenizer.json").kind == "huggingface"


# ---------------------------------------------------------------- the SentencePiece demonstration model (issue 42)


def test_every_demonstration_model_of_the_samples_is_registered():
    """The card tells a demonstration model by its sha256 (classifiers/demonstration.py): before, the SentencePiece
    one was not registered, and a run with it had a card that did not say its tokens were a demonstration's."""
    from classifiers.demonstration import identify, known
    from pipeline.card.tokens import tokens_stats

    files = [HF_FILE, SP_FILE, *sorted((REPO / "samples").glob("*/*.ftz"))]
    assert len(files) == 5 and all(identify(f) is not None for f in files), [f for f in files if identify(f) is None]
    assert "SentencePiece" in known(hashlib.sha256(SP_FILE.read_bytes()).hexdigest()).what
    digest = hashlib.sha256(SP_FILE.read_bytes()).hexdigest()
    manifest = {"documents": 1, "formats": {"mds": {"tokens": 3}}, "tokenizer": {"sha256": digest}}
    assert tokens_stats(manifest, {})["demonstration"].startswith("the demonstration SentencePiece model")


def test_the_default_eos_is_the_tokenizers_own(tmp_path):
    """Before, the default EOS was '<|endoftext|>', which a SentencePiece model does not have: every .model was refused
    until eos: auto.  Now auto is the default: </s> for the SentencePiece model, <|endoftext|> (id 0, as before) for
    the demonstration BPE; a tokenizer with no EOS of its own is told to name one."""
    from pipeline.config import parse_config
    from pipeline.preflight import check_named_files
    from stages.tokenize import TokenizeConfig, TokenizeStage

    assert TokenizeConfig().eos == FROM_MODEL
    for path, eos in ((SP_FILE, SpecialToken("</s>", 2)), (HF_FILE, SpecialToken("<|endoftext|>", 0))):
        config = parse_config(
            {"inputs": ["x"], "output": str(tmp_path / "out"), "shards": {"tokenize": {"tokenizer": str(path)}}}
        )
        assert check_named_files(config) == []
        stage = TokenizeStage(config.shards.tokenize)
        out = stage(pa.table({"text": ["a short text"]}))
        assert out.column("tokens").to_pylist()[0][-1] == eos.id
    spec = json.loads(HF_FILE.read_text())  # the demonstration BPE without its <|endoftext|>: no EOS of its own
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] != "<|endoftext|>"]
    del spec["model"]["vocab"]["<|endoftext|>"]
    (tmp_path / "no-eos.json").write_text(json.dumps(spec))
    config = parse_config(
        {
            "inputs": ["x"],
            "output": str(tmp_path / "out"),
            "shards": {"tokenize": {"tokenizer": str(tmp_path / "no-eos.json")}},
        }
    )
    assert check_named_files(config) == [
        f"config error: shards.tokenize.eos: auto: '{tmp_path / 'no-eos.json'}' names no EOS token of its own (it "
        "names no special tokens): give the token that ends a document, or null for none"
    ]
