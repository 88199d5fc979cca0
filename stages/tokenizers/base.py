"""What every tokenizer kind is: the base class, its results and its errors.

A kind wraps one tokenizer library behind the same small surface: encode a
batch of texts to token ids *without* special tokens (BOS/EOS are the
pipeline's choice, added by the tokenize stage), look a token up, and say what
it is (kind, vocabulary size, the ids its model names as BOS/EOS/pad, the
file's sha256) for the shards manifest.
"""

from __future__ import annotations

import hashlib
import itertools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

#: Texts per library call: bounds the per-call lists of ids (a Python int list costs
#: ~36 bytes a token, so a whole part at once held several GB); the ids do not depend on it.
ENCODE_CHUNK = 256
#: ... and characters per call: the library's per-text encodings (ids, offsets, token strings: ~90 bytes a
#: token) and the id lists of 256 long pages came to ~60 MB a call, most of which the allocator then kept.
ENCODE_CHUNK_CHARS = 1 << 19


def chunk_bounds(
    texts: Sequence[str], max_texts: int | None = None, max_chars: int | None = None
) -> list[tuple[int, int]]:
    """(start, stop) of consecutive chunks of ``texts``: at most ``max_texts`` texts (ENCODE_CHUNK), and at most
    ``max_chars`` characters (ENCODE_CHUNK_CHARS) unless one text alone has more."""
    max_texts, max_chars = max_texts or ENCODE_CHUNK, max_chars or ENCODE_CHUNK_CHARS
    bounds, start, chars = [], 0, 0
    for i, text in enumerate(texts):
        n = len(text) if isinstance(text, str) else 0
        if i > start and (i - start >= max_texts or chars + n > max_chars):
            bounds.append((start, i))
            start, chars = i, 0
        chars += n
    if start < len(texts):
        bounds.append((start, len(texts)))
    return bounds


class TokenizerFileError(ValueError):
    """A tokenizer file that is missing, unreadable, or of no known kind (one line, naming it)."""


class UnencodableText(ValueError):
    """A text no tokenizer can take (not a str, or not valid Unicode); names the text."""


@dataclass(frozen=True)
class SpecialToken:
    token: str
    id: int


@dataclass(frozen=True)
class Specials:
    """BOS, EOS and pad tokens; ``None`` = none."""

    bos: SpecialToken | None = None
    eos: SpecialToken | None = None
    pad: SpecialToken | None = None


@dataclass(frozen=True)
class TokenIds:
    """Token ids of a batch of texts: one flat buffer and a length per text."""

    flat: np.ndarray
    lengths: np.ndarray  # int64, one per text

    @classmethod
    def from_lists(cls, ids: list[list[int]], dtype: np.dtype) -> TokenIds:
        """From the per-text id lists a library returns (Python touches each list once)."""
        lengths = np.fromiter(map(len, ids), np.int64, count=len(ids))
        return cls(np.fromiter(itertools.chain.from_iterable(ids), dtype, count=int(lengths.sum())), lengths)

    def to_lists(self) -> list[list[int]]:
        ends = np.cumsum(self.lengths)
        return [self.flat[e - n : e].tolist() for e, n in zip(ends, self.lengths, strict=False)]


@dataclass(frozen=True)
class TokenizerInfo:
    """What the manifest records about the tokenizer a run used."""

    kind: str
    sha256: str
    vocab_size: int
    max_id: int
    dtype: str
    defaults: Specials


def token_dtype(max_id: int) -> np.dtype:
    """uint16 when every id fits in 16 bits (half the bytes), else uint32."""
    return np.dtype(np.uint16) if max_id <= 0xFFFF else np.dtype(np.uint32)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def unencodable(texts: Sequence[str], first: int = 0) -> UnencodableText | None:
    """The first text a UTF-8 library cannot take, as an error naming it; None if all are fine.

    Only called after a library call failed: both libraries reject such a
    batch with a message that names neither the text nor the cause."""
    for i, text in enumerate(texts, first):
        if not isinstance(text, str):
            return UnencodableText(f"text {i} of the batch is {type(text).__name__}, not str")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            return UnencodableText(
                f"text {i} of the batch is not valid Unicode: unpaired "
                f"surrogate U+{ord(text[e.start]):04X} at character {e.start}"
            )
    return None


class Tokenizer(ABC):
    """One tokenizer file loaded by its kind's library (the protocol every kind meets).

    A kind sets ``kind``/``label``, implements ``sniff`` (does this file look
    like mine?), ``_encode_chunk`` and ``token_to_id``, and its ``__init__``
    fills ``sha256``, ``vocab_size``, ``max_id`` and ``defaults``.
    """

    kind: ClassVar[str]
    label: ClassVar[str]  # e.g. "Hugging Face tokenizer.json", for messages

    sha256: str
    vocab_size: int
    max_id: int
    defaults: Specials  # what the model itself names as BOS / EOS / pad

    @classmethod
    @abstractmethod
    def sniff(cls, data: bytes) -> bool:
        """Whether ``data`` looks like this kind's file (cheap; ``from_bytes`` does the real check)."""

    @abstractmethod
    def __init__(self, data: bytes, threads: int = 1):
        """The tokenizer in ``data`` (``threads``: the library's threads per batch call);
        ValueError (one line) when the library refuses the file."""

    @abstractmethod
    def _encode_chunk(self, texts: list[str]) -> TokenIds:
        """Ids of at most ``ENCODE_CHUNK`` texts, without special tokens, as ``self.dtype``."""

    @abstractmethod
    def token_to_id(self, token: str) -> int | None:
        """The id of a token string, or None when it is not in the vocabulary."""

    @property
    def dtype(self) -> np.dtype:
        return token_dtype(self.max_id)

    def encode(self, texts: Sequence[str]) -> TokenIds:
        """Ids of every text, without special tokens (the library's own batch call, in chunks)."""
        flats, lengths = [np.zeros(0, self.dtype)], [np.zeros(0, np.int64)]
        for start, stop in chunk_bounds(texts, ENCODE_CHUNK):
            chunk = list(texts[start:stop])
            try:
                ids = self._encode_chunk(chunk)
            except (TypeError, RuntimeError, UnicodeError) as e:
                bad = unencodable(chunk, start)
                if bad is None:
                    raise
                raise bad from e
            flats.append(ids.flat)
            lengths.append(ids.lengths)
        return TokenIds(np.concatenate(flats), np.concatenate(lengths))

    def describe(self) -> TokenizerInfo:
        return TokenizerInfo(self.kind, self.sha256, self.vocab_size, self.max_id, self.dtype.name, self.defaults)
