"""Tokenizers as a family: one protocol, one module per kind, picked by the file's content.

    tok = load("samples/tokenizer_sp/tokenizer.model")  # or a tokenizer.json, or s3://...
    ids = tok.encode(["text", ...])                      # TokenIds: flat buffer + lengths, no BOS/EOS
    specials = resolve_specials(tok, eos=None)           # BOS the model's own ("auto"), no EOS

Adding a kind is one module with a :class:`Tokenizer` subclass plus one entry in :data:`KINDS`.
"""

from __future__ import annotations

import os
import re

import pyarrow.fs as pafs

from stages.tokenizers.base import (
    ENCODE_CHUNK,
    Specials,
    SpecialToken,
    TokenIds,
    Tokenizer,
    TokenizerFileError,
    TokenizerInfo,
    UnencodableText,
    chunk_bounds,
    token_dtype,
)
from stages.tokenizers.huggingface import HuggingFaceTokenizer
from stages.tokenizers.sentencepiece import SentencePieceTokenizer
from stages.tokenizers.source import read_bytes

#: Every tokenizer kind, tried in this order on a file's first bytes.
KINDS: tuple[type[Tokenizer], ...] = (HuggingFaceTokenizer, SentencePieceTokenizer)

#: A tiktoken BPE file's first line: a base64 token, a space, its rank.
TIKTOKEN_LINE = re.compile(rb"[A-Za-z0-9+/]+=* \d+\n")


#: "The tokenizer's own choice" for :func:`resolve_specials`, as a config writes it
#: (None means: no such token); a string, so a config's dump and fingerprint tell it from null.
FROM_MODEL = "auto"

#: Where a run's config sets each special token (named by resolve_specials' errors).
CONFIG_FIELDS = {"bos": "shards.tokenize.bos", "eos": "shards.tokenize.eos", "pad": "shards.layout.pad"}


def load(
    source: str | bytes, *, name: str | None = None, threads: int = 1, filesystem: pafs.FileSystem | None = None
) -> Tokenizer:
    """The tokenizer in a file (local path or ``s3://``) or in its bytes, of whichever kind it is.

    ``name`` is what errors call bytes passed in (a driver reads the file once
    and hands the bytes to every worker); ``threads`` bounds the library's
    threads per batch call.  A file of no known kind, or one its library
    refuses, is a one-line :class:`TokenizerFileError` naming it.
    """
    threads = max(1, min(threads, os.cpu_count() or 1))  # more threads than cores only compete
    data = read_bytes(source, filesystem) if isinstance(source, str) else bytes(source)
    name = source if isinstance(source, str) else name or "tokenizer bytes"
    for kind in KINDS:
        if kind.sniff(data):
            try:
                return kind(data, threads)
            except ValueError as e:
                raise TokenizerFileError(f"{name}: looks like a {kind.label} but does not load: {e}") from None
    kinds = " nor a ".join(k.label for k in KINDS)
    hint = (
        "; a tiktoken file like Llama 3's original tokenizer.model: use its tokenizer.json"
        if TIKTOKEN_LINE.match(data[:200])
        else ""
    )
    raise TokenizerFileError(f"{name}: neither a {kinds} (it starts with {data[:12]!r}){hint}")


def resolve_specials(
    tok: Tokenizer,
    bos: str | None = FROM_MODEL,
    eos: str | None = FROM_MODEL,
    pad: str | None = FROM_MODEL,
    fields: dict[str, str] = CONFIG_FIELDS,
) -> Specials:
    """The BOS/EOS/pad a run uses: each the model's own (``"auto"``), none (``None``) or a token string.

    A configured token must be in the vocabulary: else a config error naming its field (``fields``).
    """
    chosen = {}
    for field, value, default in (
        ("bos", bos, tok.defaults.bos),
        ("eos", eos, tok.defaults.eos),
        ("pad", pad, tok.defaults.pad),
    ):
        if value == FROM_MODEL or value is None:
            chosen[field] = default if value == FROM_MODEL else None
            continue
        tid = tok.token_to_id(value)
        if tid is None:
            raise ValueError(
                f"config error: {fields[field]}: token {value!r} is not in the tokenizer's vocabulary "
                f"({tok.label}, {tok.vocab_size} ids; {own_specials(tok)}; or set it to null)"
            )
        chosen[field] = SpecialToken(value, tid)
    return Specials(**chosen)


def own_specials(tok: Tokenizer) -> str:
    """The model's own BOS/EOS/pad, for a message: "its own: bos '<s>', eos '</s>'"."""
    own = [f"{field} {s.token!r}" for field, s in vars(tok.defaults).items() if s is not None]
    return f"its own: {', '.join(own)}" if own else "it names no BOS, EOS or pad"


__all__ = [
    "CONFIG_FIELDS",
    "ENCODE_CHUNK",
    "FROM_MODEL",
    "KINDS",
    "HuggingFaceTokenizer",
    "SentencePieceTokenizer",
    "SpecialToken",
    "Specials",
    "TokenIds",
    "Tokenizer",
    "TokenizerFileError",
    "TokenizerInfo",
    "UnencodableText",
    "chunk_bounds",
    "load",
    "read_bytes",
    "resolve_specials",
    "token_dtype",
]
