"""The tokenize stage against direct ``Tokenizer.encode`` calls, on the
committed demonstration tokenizer and on one whose ids need 32 bits."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
from tokenizers import Tokenizer

from stages.base import REASON
from stages.tokenize import SAMPLE_TOKENIZER, TokenizeConfig, TokenizeStage, add_specials, train_bpe
from tests.conftest import REPO

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Die Konfigurationsdatei liegt unter /etc/apache2/apache2.conf — bitte prüfen.",
    "Le serveur HTTP Apache est un logiciel libre.",
    "日本語のテキストも、バイトレベルなら未知語なしで符号化できる。",
    "Привет, мир! Это документация Debian.",
    "    def f(x):\n        return x ** 2\n\n\n",
    "🙂 emoji and \u200b zero-width and \x00 control",
    "a",
]


@pytest.fixture(scope="module")
def stage() -> TokenizeStage:
    return TokenizeStage(
        TokenizeConfig(tokenizer=str(REPO / SAMPLE_TOKENIZER), bos="<|begin_of_text|>", eos="<|endoftext|>")
    )


@pytest.fixture(scope="module")
def plain() -> Tokenizer:
    return Tokenizer.from_file(str(REPO / SAMPLE_TOKENIZER))


def expected(tok: Tokenizer, text: str, bos: str | None, eos: str | None) -> list[int]:
    ids = tok.encode(text, add_special_tokens=False).ids
    return ([tok.token_to_id(bos)] if bos else []) + ids + ([tok.token_to_id(eos)] if eos else [])


def test_tokens_equal_direct_encode_with_bos_and_eos(stage, plain):
    out = stage(pa.table({"id": [str(i) for i in range(len(TEXTS))], "text": TEXTS}))
    assert out.column_names == ["id", "text", "tokens", "num_tokens", REASON, "details"]
    assert out.schema.field("tokens").type == pa.list_(pa.uint16())
    for text, toks, n in zip(
        TEXTS, out.column("tokens").to_pylist(), out.column("num_tokens").to_pylist(), strict=False
    ):
        assert toks == expected(plain, text, "<|begin_of_text|>", "<|endoftext|>")
        assert n == len(toks)
        assert plain.decode(toks[1:-1]) == text  # byte level: no unknown token, text comes back


def test_a_batch_larger_than_an_encode_chunk_gives_the_same_tokens(stage, plain, monkeypatch):
    import stages.tokenize

    monkeypatch.setattr(stages.tokenize, "ENCODE_CHUNK", 3)  # several chunks, the last one short, an empty text inside
    texts = [*TEXTS, "", *TEXTS][:11]
    out = stage(pa.table({"id": [str(i) for i in range(len(texts))], "text": texts}))
    assert out.column("tokens").to_pylist() == [
        expected(plain, t, "<|begin_of_text|>", "<|endoftext|>") for t in texts
    ]


@pytest.mark.parametrize("bos,eos", [(None, None), (None, "<|endoftext|>"), ("<|begin_of_text|>", None)])
def test_bos_eos_settings(plain, bos, eos):
    s = TokenizeStage(TokenizeConfig(tokenizer=str(REPO / SAMPLE_TOKENIZER), bos=bos, eos=eos))
    out = s(pa.table({"text": TEXTS}))
    assert out.column("tokens").to_pylist() == [expected(plain, t, bos, eos) for t in TEXTS]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=300), min_size=1, max_size=12))
def test_any_unicode_batch_equals_direct_encode(stage, plain, texts):
    out = stage(pa.table({"text": pa.array(texts, pa.large_string())}))
    got = out.column("tokens").to_pylist()
    for text, toks, reason in zip(texts, got, out.column(REASON).to_pylist(), strict=False):
        direct = plain.encode(text, add_special_tokens=False).ids
        assert toks == expected(plain, text, "<|begin_of_text|>", "<|endoftext|>")
        assert (reason == "no_tokens") == (not direct)


def test_empty_and_null_texts_are_rejected_and_counted(stage):
    stage.drain_counters()
    out = stage(pa.table({"text": pa.array(["", None, "kept"], pa.string())}))
    assert out.column(REASON).to_pylist() == ["no_tokens", "no_tokens", None]
    assert stage.drain_counters()["no_tokens"] == 2


def test_max_chars_truncates_and_counts(plain):
    s = TokenizeStage(TokenizeConfig(tokenizer=str(REPO / SAMPLE_TOKENIZER), eos=None, max_chars=10))
    out = s(pa.table({"text": ["short", "ü" * 25]}))
    assert out.column("tokens").to_pylist() == [
        expected(plain, "short", None, None),
        expected(plain, "ü" * 10, None, None),
    ]
    assert s.drain_counters() == {"truncated": 1, "tokens": int(pc_sum(out))}


def pc_sum(out: pa.Table) -> int:
    return sum(out.column("num_tokens").to_pylist())


def test_uint32_when_the_vocabulary_exceeds_16_bits(tmp_path):
    # 57,500 added tokens (ids up to 65691 > 65535), written into the JSON: add_tokens() one by one is slow.
    spec = json.loads((REPO / SAMPLE_TOKENIZER).read_text())
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
    tok = Tokenizer.from_file(str(path))
    s = TokenizeStage(TokenizeConfig(tokenizer=str(path)))
    text = "alpha zzword57499 beta zzword3"
    out = s(pa.table({"text": [text]}))
    assert s.dtype == np.uint32 and out.schema.field("tokens").type == pa.list_(pa.uint32())
    toks = out.column("tokens").to_pylist()[0]
    assert toks == expected(tok, text, None, "<|endoftext|>")
    assert max(toks) > 0xFFFF


def test_unknown_special_token_is_a_one_line_error_naming_the_field():
    with pytest.raises(
        ValueError, match=r"^config error: shards\.tokenize\.eos: token '</s>' is not in the tokenizer's vocabulary$"
    ):
        TokenizeStage(TokenizeConfig(tokenizer=str(REPO / SAMPLE_TOKENIZER), eos="</s>"))


def test_config_forbids_unknown_fields():
    with pytest.raises(ValueError, match="extra"):
        TokenizeConfig(tokeniser="x")


def test_add_specials_places_bos_and_eos_around_each_document():
    flat = np.array([10, 11, 12, 20, 30, 31], np.uint16)
    out, lengths = add_specials(flat, np.array([3, 1, 2]), bos=1, eos=2)
    assert out.tolist() == [1, 10, 11, 12, 2, 1, 20, 2, 1, 30, 31, 2] and lengths.tolist() == [5, 3, 4]


def test_thread_budget_one_disables_the_rust_pool(monkeypatch):
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    TokenizeStage(TokenizeConfig(tokenizer=str(REPO / SAMPLE_TOKENIZER), threads=1))
    import os

    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"


def test_tokenizer_bytes_can_be_passed_in(plain):
    text = (REPO / SAMPLE_TOKENIZER).read_text()
    s = TokenizeStage(TokenizeConfig(tokenizer="/nonexistent/is/not/read.json"), tokenizer_bytes=text.encode())
    assert s(pa.table({"text": ["hello"]})).column("tokens").to_pylist() == [
        expected(plain, "hello", None, "<|endoftext|>")
    ]


def test_demonstration_tokenizer_is_committed_byte_level_8k(plain):
    assert plain.get_vocab_size() == 8192
    assert json.loads((REPO / SAMPLE_TOKENIZER).read_text())["pre_tokenizer"]["type"] == "ByteLevel"
    for t in ["<|endoftext|>", "<|begin_of_text|>", "<|pad|>"]:
        assert plain.token_to_id(t) is not None


def test_training_is_deterministic():
    texts = TEXTS * 20 + [f"document number {i} about apache and debian" for i in range(200)]
    a = train_bpe(texts, 400, ["<|endoftext|>"]).to_str()
    b = train_bpe(texts, 400, ["<|endoftext|>"]).to_str()
    assert a == b
    assert len(json.loads(a)["model"]["vocab"]) == 400


def test_a_text_the_tokenizer_refuses_costs_only_itself(tmp_path):
    from tokenizers import models, pre_tokenizers

    from stages.tokenize import ENCODE_CHUNK

    tok = Tokenizer(models.WordLevel(vocab={"red": 0, "green": 1, "<|endoftext|>": 2}, unk_token="[UNK]"))  # no [UNK]
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "words.json"))
    s = TokenizeStage(TokenizeConfig(tokenizer=str(tmp_path / "words.json")))
    texts = ["red green"] * (ENCODE_CHUNK + 3)
    texts[5] = "red blue"  # refused: in the first chunk, whose other texts must still be encoded
    out = s(pa.table({"id": [str(i) for i in range(len(texts))], "text": texts}))
    reasons = out.column(REASON).to_pylist()
    assert reasons[5] == "tokenize_error" and reasons.count(None) == len(texts) - 1
    assert "Missing [UNK] token" in out.column("details")[5].as_py()
    assert out.column("tokens")[0].as_py() == [0, 1, 2] and out.column("tokens")[ENCODE_CHUNK + 1].as_py() == [0, 1, 2]
    counters = s.drain_counters()
    assert counters["tokenize_error"] == 1 and counters["tokens"] == 3 * (len(texts) - 1)
