"""Tokenization stage: ``text`` -> ``tokens`` (list<uint16|uint32>) and ``num_tokens``.

Any tokenizer of the family in stages/tokenizers works, told by the file's content: a Hugging
Face ``tokenizer.json`` (a Llama 3 or GPT-2 one in production, the demonstration BPE in
``samples/tokenizer/`` for the sample run) or a SentencePiece ``.model`` (Llama 2, Mistral, Gemma).
Texts are encoded without the tokenizer's own special tokens; BOS and EOS are added here, as
configured, so what a sample starts and ends with does not depend on the post-processor a
tokenizer file happens to carry.

The library encodes the whole batch; Python touches each document once (to take its id list) and
the flat token buffer, the BOS/EOS insertion and the Arrow list column are built with numpy from
the lengths.
"""

from __future__ import annotations

import logging
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from stages.base import note_error, reject_where, set_column
from stages.named_files import ConfigPath
from stages.tokenizers import ENCODE_CHUNK, FROM_MODEL, TokenIds, chunk_bounds, load

log = logging.getLogger(__name__)


def _refused(err: BaseException) -> bool:
    """Whether ``err`` is the tokenizer refusing a text: its own errors, or pyo3's PanicException (a
    BaseException) when its Rust code panics; never an interrupt or an exit."""
    return isinstance(err, Exception) or type(err).__name__ == "PanicException"


#: Where the demonstration tokenizer lives (trained by samples/tokenizer/train.py).
SAMPLE_TOKENIZER = "samples/tokenizer/tokenizer.json"


class TokenizeConfig(BaseModel):
    """Parameters of tokenization (the ``shards.tokenize:`` section)."""

    model_config = ConfigDict(extra="forbid")

    tokenizer: ConfigPath = Field(
        SAMPLE_TOKENIZER,
        description="path (local or s3://) to a Hugging Face tokenizer.json "
        "(Llama 3, GPT-2) or a SentencePiece .model (Llama 2, "
        "Mistral, Gemma), told by its content; the default is the small demonstration BPE trained on samples/",
    )
    bos: str | None = Field(
        None,
        description="token string put before every document (e.g. <|begin_of_text|>); must be in the "
        "vocabulary; auto = the tokenizer's own (a SentencePiece model's <s>); null = none",
    )
    eos: str | None = Field(
        FROM_MODEL,
        description="token string put after every document; auto (the default) = the tokenizer's own: "
        "a SentencePiece model's (</s>), a tokenizer.json's post-processor EOS, else the first of <|endoftext|> "
        "(GPT-2, the demonstration BPE), <|end_of_text|> (Llama 3), </s>, <eos> in its vocabulary (a tokenizer with "
        "none is a config error); a token string must be in the vocabulary; null = none",
    )
    max_chars: int = Field(
        1_000_000,
        ge=1,
        le=100_000_000,
        description="longer texts are cut to this many characters before encoding "
        "(counted as truncated): bounds one document's time and memory",
    )
    threads: int = Field(
        1,
        ge=1,
        le=256,
        description="threads the tokenizers library may use in each process (RAYON_NUM_THREADS), at most "
        "the CPUs of the machine it runs on; 1 for one-CPU Ray tasks, where more threads only compete for the core",
    )


def special_id(tokenizer, field: str, token: str | None) -> int | None:
    """The id of a configured special token (``auto``: the model's own), or a one-line error naming the
    field (``tokenize.eos``, ``layout.pad``...: relative to ``shards``)."""
    if token is None:
        return None
    if token == FROM_MODEL:
        own = getattr(tokenizer.defaults, field.rpartition(".")[2], None)
        return own.id if own is not None else None
    tid = tokenizer.token_to_id(token)
    if tid is None:
        raise ValueError(f"config error: shards.{field}: token {token!r} is not in the tokenizer's vocabulary")
    return tid


def add_specials(
    flat: np.ndarray, lengths: np.ndarray, bos: int | None, eos: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Put BOS/EOS around every document of a flat token buffer; returns (flat, lengths)."""
    extra = (bos is not None) + (eos is not None)
    if extra == 0:
        return flat, lengths
    out_lengths = lengths + extra
    ends = np.cumsum(out_lengths)
    starts = ends - out_lengths
    out = np.empty(int(ends[-1]) if len(ends) else 0, flat.dtype)
    content = np.ones(len(out), bool)
    if bos is not None:
        out[starts] = bos
        content[starts] = False
    if eos is not None:
        out[ends - 1] = eos
        content[ends - 1] = False
    out[content] = flat
    return out, out_lengths


def list_array(flat: np.ndarray, lengths: np.ndarray) -> pa.ListArray:
    """An Arrow list column from a flat buffer and per-row lengths (no copy of the values)."""
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat))


def list_lengths(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per-row lengths of a list column (no copy of the values)."""
    return np.asarray(pc.list_value_length(column).to_numpy(zero_copy_only=False), np.int64)


class TokenizeStage:
    """Adds ``tokens`` and ``num_tokens``; rejects documents with no tokens (``no_tokens``) and texts the
    tokenizer refuses (``tokenize_error``).

    ``tokenizer_bytes`` lets a caller read the file once (on the driver) and hand its bytes to every worker.
    """

    name = "tokenize"
    label = "tokenized"
    needs = ("text",)
    adds = ("tokens", "num_tokens")
    reasons = ("no_tokens", "tokenize_error")

    def __init__(self, config: TokenizeConfig | None = None, tokenizer_bytes: bytes | None = None):
        self.config = config or TokenizeConfig()
        source = tokenizer_bytes if tokenizer_bytes is not None else self.config.tokenizer
        self.tokenizer = load(source, name=self.config.tokenizer, threads=self.config.threads)
        self.tokenizer_sha256 = self.tokenizer.sha256
        self.vocab_size = self.tokenizer.vocab_size
        self.dtype = self.tokenizer.dtype
        self.bos_id = special_id(self.tokenizer, "tokenize.bos", self.config.bos)
        self.eos_id = special_id(self.tokenizer, "tokenize.eos", self.config.eos)
        self._counters: Counter = Counter()

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
        """Token ids of texts as (flat buffer, lengths), without BOS/EOS, and per text why the tokenizer
        refused it (None: encoded; a refused text has no ids).

        In chunks of at most ``ENCODE_CHUNK`` documents and ``ENCODE_CHUNK_CHARS`` characters: the libraries hand
        ids back as Python lists (~36 bytes a token), so a whole part at once would hold several GB of them."""
        flats, lengths, errors = [np.zeros(0, self.dtype)], [np.zeros(0, np.int64)], []
        for start, stop in chunk_bounds(texts, ENCODE_CHUNK):
            ids, errs = self._encode_chunk(texts[start:stop])
            errors += errs
            flats.append(ids.flat)
            lengths.append(ids.lengths)
        return np.concatenate(flats), np.concatenate(lengths), errors

    def _encode_chunk(self, texts: list[str]) -> tuple[TokenIds, list[str | None]]:
        """A chunk's ids; if the tokenizer refuses it (a word-level model without an unknown token meeting
        a new word, a panic inside the library...), the chunk again text by text: a text costs only itself."""
        try:
            return self.tokenizer.encode(texts), [None] * len(texts)
        except BaseException as e:
            if not _refused(e):
                raise
        ids: list[np.ndarray] = []
        errors: list[str | None] = []
        for text in texts:
            try:
                ids.append(self.tokenizer.encode([text]).flat)
                errors.append(None)
            except BaseException as e:
                if not _refused(e):
                    raise
                kind = note_error("tokenize, one document", e, log)
                ids.append(np.zeros(0, self.dtype))
                errors.append(f"{kind}: {e}"[:300])
        lengths = np.fromiter(map(len, ids), np.int64, count=len(ids))
        return TokenIds(np.concatenate([np.zeros(0, self.dtype), *ids]), lengths), errors

    def __call__(self, batch: pa.Table) -> pa.Table:
        if "text" not in batch.column_names:
            raise KeyError(f"tokenize: the batch has no 'text' column (columns: {batch.column_names})")
        text = pc.fill_null(batch.column("text"), "")
        too_long = pc.greater(pc.utf8_length(text), self.config.max_chars)
        n_long = pc.sum(too_long).as_py() or 0
        if n_long:
            text = pc.if_else(too_long, pc.utf8_slice_codeunits(text, 0, self.config.max_chars), text)
            self._counters["truncated"] += n_long
        flat, lengths, errors = self.encode(text.to_pylist())
        refused = np.array([e is not None for e in errors], bool)
        empty = (lengths == 0) & ~refused
        flat, lengths = add_specials(flat, lengths, self.bos_id, self.eos_id)
        batch = set_column(batch, "tokens", list_array(flat, lengths))
        batch = set_column(batch, "num_tokens", pa.array(lengths.astype(np.int32)))
        self._counters["tokens"] += int(lengths[~refused & ~empty].sum())
        if empty.any():
            self._counters["no_tokens"] += int(empty.sum())
        if refused.any():
            self._counters["tokenize_error"] += int(refused.sum())
            batch = reject_where(batch, refused, "tokenize_error", errors)
        return reject_where(batch, empty, "no_tokens")

    def drain_counters(self) -> dict:
        out, self._counters = dict(self._counters), Counter()
        return out


def train_bpe(texts, vocab_size: int, special_tokens: list[str], min_frequency: int = 2):
    """A byte-level BPE (GPT-2's pre-tokenizer and byte alphabet) trained on ``texts``.

    Byte level: every string encodes, with no unknown token, and decoding
    gives the text back.  Deterministic for the same texts in the same order.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts) if hasattr(texts, "__len__") else None)
    return tok
