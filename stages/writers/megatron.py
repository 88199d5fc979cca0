"""Megatron-LM / NeMo IndexedDataset shards: ``.bin``/``.idx`` pairs, written natively with numpy.

The format, as megatron-core 0.16 writes and reads it
(megatron/core/datasets/indexed_dataset.py: ``_IndexWriter``, ``_IndexReader``):

* ``<prefix>.bin``: every sequence's token ids back to back in the dataset's
  dtype, nothing else;
* ``<prefix>.idx``, little-endian: ``b"MMIDIDX\\x00\\x00"``, ``uint64`` version 1,
  ``uint8`` dtype code (megatron's ``DType``: uint16 = 8, int32 = 4), ``uint64``
  sequence count, ``uint64`` document-index count (documents + 1), then
  ``int32`` sequence lengths, ``int64`` sequence pointers (byte offsets into
  the .bin) and ``int64`` document indices (0, then the sequence that ends
  each document).

One sequence per document (what tools/preprocess_data.py writes without
``--split-sentences``), its tokens exactly as the tokenize stage made them
(EOS already appended when configured); Megatron's GPTDataset packs documents
into training sequences itself, so the writer takes document samples only.
The dtype follows ``DType.optimal_dtype(vocab_size)``: uint16 when the
vocabulary has fewer than 65,500 entries, else int32.  A pair closes before
its .bin + .idx would pass ``size_limit`` bytes; each pair is a dataset of its
own, and Megatron blends the prefixes it is given.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from stages.writers.common import ShardFile, list_lengths

INDEX_HEADER = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
#: megatron-core's DType codes (the ones a token dataset uses).
DTYPE_CODES = {"uint16": 8, "int32": 4}
#: DType.optimal_dtype: uint16 below this many vocabulary entries.
UINT16_CARDINALITY = 65_500
#: .idx bytes before the arrays: header, version, dtype code, the two counts.
IDX_FIXED_BYTES = len(INDEX_HEADER) + 8 + 1 + 8 + 8
#: .idx bytes per document: its length (int32), pointer (int64) and document index (int64).
IDX_BYTES_PER_DOC = 4 + 8 + 8
INDEX_KIND = "megatron-indexed-dataset-v1"


class MegatronConfig(BaseModel):
    """Megatron-LM / NeMo IndexedDataset output (``shards.megatron:``)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        False,
        description="write Megatron IndexedDataset .bin/.idx pairs (shards/megatron/), one sequence per document",
    )
    size_limit: int = Field(
        1 << 30, ge=1 << 10, le=1 << 40,
        description="a .bin/.idx pair closes before its two files would pass this "
            "many bytes (1 GiB); a larger document gets a pair of its own",
    )  # fmt: skip


def megatron_dtype(vocab_size: int) -> np.dtype:
    """The token dtype megatron-core picks for a vocabulary (``DType.optimal_dtype``)."""
    if not 1 <= vocab_size <= np.iinfo(np.int32).max:
        raise ValueError(
            f"Megatron output: vocab_size {vocab_size} must be between 1 and {np.iinfo(np.int32).max} (int32 ids)"
        )
    return np.dtype(np.uint16) if vocab_size < UINT16_CARDINALITY else np.dtype(np.int32)


def idx_bytes(lengths: np.ndarray, dtype: np.dtype) -> bytes:
    """The .idx file of one pair whose documents have ``lengths`` tokens of ``dtype``."""
    n = len(lengths)
    pointers = np.zeros(n, "<i8")
    np.cumsum(lengths[:-1] * dtype.itemsize, out=pointers[1:])
    return b"".join([
        INDEX_HEADER, struct.pack("<QBQQ", INDEX_VERSION, DTYPE_CODES[dtype.name], n, n + 1),
        lengths.astype("<i4").tobytes(), pointers.tobytes(), np.arange(n + 1, dtype="<i8").tobytes(),
    ])  # fmt: skip


def document_tokens(table: pa.Table, vocab_size: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The samples' tokens as (flat buffer in ``dtype``, per-document lengths), checked.

    Errors name what is wrong: packed samples (no ``id``), a missing or
    non-integer ``tokens`` column, null token lists, ids outside the vocabulary.
    """
    if "id" not in table.column_names:
        raise ValueError(
            "Megatron output stores one sequence per document: give it "
            f"document samples with an 'id' (columns: {table.column_names})"
        )
    if "tokens" not in table.column_names:
        raise KeyError(f"Megatron output: the samples have no 'tokens' column (columns: {table.column_names})")
    col = table.column("tokens").combine_chunks()
    if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) or not pa.types.is_integer(
        col.type.value_type
    ):
        raise TypeError(f"Megatron output: 'tokens' must be a list of integer ids, not {col.type}")
    if col.null_count:
        raise ValueError(f"Megatron output: {col.null_count} sample(s) have null tokens")
    lengths = list_lengths(col)
    flat = col.flatten().to_numpy(zero_copy_only=False)
    low, high = (int(flat.min()), int(flat.max())) if len(flat) else (0, 0)
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(f"Megatron output: token id {bad} is outside the vocabulary (vocab_size {vocab_size})")
    return flat.astype(dtype.newbyteorder("<"), copy=False), lengths


@dataclass(frozen=True)
class MegatronPair:
    """One published pair: ``<prefix>.bin`` and ``<prefix>.idx``, an IndexedDataset of its own."""

    prefix: str  #: relative to the index's folder, e.g. ``shard-00000`` or ``00003/shard-00000``
    documents: int
    tokens: int


@dataclass
class MegatronIndex:
    """What a Megatron folder holds (its ``index.json``): the prefixes to give Megatron-LM / NeMo."""

    dtype: str  #: ``uint16`` or ``int32``
    vocab_size: int
    pairs: list[MegatronPair] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "__kind__": INDEX_KIND, "dtype": self.dtype,
            "dtype_code": DTYPE_CODES[self.dtype], "vocab_size": self.vocab_size,
            "documents": sum(p.documents for p in self.pairs), "tokens": sum(p.tokens for p in self.pairs),
            "pairs": [asdict(p) for p in self.pairs],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict) -> MegatronIndex:
        if d.get("__kind__") != INDEX_KIND:
            raise ValueError(f"not a Megatron shard index (__kind__ {d.get('__kind__')!r}, expected {INDEX_KIND!r})")
        return cls(d["dtype"], d["vocab_size"], [MegatronPair(**p) for p in d["pairs"]])


class MegatronWriter:
    """Writes one Megatron folder: pairs to ``staging`` then ``sink``; ``finish()`` writes index.json last.

    ``vocab_size``: the tokenizer's vocabulary size (added tokens included),
    which fixes the dtype as megatron-core would.
    """

    format = "megatron"

    def __init__(self, staging: str, config: MegatronConfig, sink, vocab_size: int):
        self.staging, self.config, self.sink, self.vocab_size = staging, config, sink, vocab_size
        self.dtype = megatron_dtype(vocab_size)
        os.makedirs(staging, exist_ok=True)
        self.shards: list[ShardFile] = []  #: both files of every pair; the .idx counts no samples or tokens
        self.pairs: list[MegatronPair] = []
        self._bin = None

    def write(self, table: pa.Table) -> None:
        """Append document samples (rows with ``id`` and a ``tokens`` list column); closes pairs as they fill."""
        if not len(table):
            return
        flat, lengths = document_tokens(table, self.vocab_size, self.dtype)
        ends = np.cumsum(lengths)
        cum = np.cumsum(lengths * self.dtype.itemsize + IDX_BYTES_PER_DOC)
        i, n = 0, len(lengths)
        while i < n:
            if self._bin is None:
                self._open()
            base = cum[i - 1] if i else 0
            fits = int(np.searchsorted(cum[i:] - base, self.config.size_limit - self._size, side="right"))
            if fits == 0:
                if self._lengths:
                    self._close()
                    continue
                fits = 1  # a document larger than size_limit: a pair of its own
            j = i + fits
            self._append(flat[ends[i] - lengths[i] : ends[j - 1]], lengths[i:j], int(cum[j - 1] - base))
            i = j
            if i < n:
                self._close()

    def _open(self) -> None:
        self._prefix = f"shard-{len(self.pairs):05d}"
        self._bin_path = os.path.join(self.staging, f"{self._prefix}.bin")
        self._bin = open(self._bin_path, "wb")
        self._sha = hashlib.sha256()
        self._lengths: list[np.ndarray] = []
        self._size = IDX_FIXED_BYTES + 8  # the first document index (0)

    def _append(self, tokens: np.ndarray, lengths: np.ndarray, size: int) -> None:
        data = memoryview(np.ascontiguousarray(tokens)).cast("B")
        self._bin.write(data)
        self._sha.update(data)
        self._lengths.append(lengths)
        self._size += size

    def _close(self) -> None:
        """Publish the open pair: the .bin first, so a reader that finds the .idx finds both."""
        self._bin.close()
        self._bin = None
        lengths = np.concatenate(self._lengths)
        tokens, documents = int(lengths.sum()), len(lengths)
        bin_name = f"{self._prefix}.bin"
        self.shards.append(ShardFile(bin_name, tokens * self.dtype.itemsize, self._sha.hexdigest(), documents, tokens))
        self.sink.put(self._bin_path, bin_name)
        idx = idx_bytes(lengths, self.dtype)
        idx_name = f"{self._prefix}.idx"
        path = os.path.join(self.staging, idx_name)
        with open(path, "wb") as f:
            f.write(idx)
        self.shards.append(ShardFile(idx_name, len(idx), hashlib.sha256(idx).hexdigest(), 0, 0))
        self.sink.put(path, idx_name)
        self.pairs.append(MegatronPair(self._prefix, documents, tokens))

    def finish(self) -> MegatronIndex:
        """Close the last pair and publish index.json (after every pair); returns the index."""
        if self._bin is not None:  # write() opens a pair only to put a document in it
            self._close()
        index = MegatronIndex(self.dtype.name, self.vocab_size, list(self.pairs))
        path = os.path.join(self.staging, "index.json")
        with open(path, "w") as f:
            json.dump(index.to_dict(), f, sort_keys=True)
        self.sink.put(path, "index.json")
        return index


def merge_megatron_indexes(indexes: dict[str, MegatronIndex]) -> MegatronIndex:
    """One index over sub-folders (``{folder: its index}``), prefixes relative to the parent."""
    if not indexes:
        raise ValueError("merge_megatron_indexes: no index to merge")
    kinds = {(i.dtype, i.vocab_size) for i in indexes.values()}
    if len(kinds) > 1:
        raise ValueError(f"Megatron indexes disagree on dtype / vocab_size: {sorted(kinds)}")
    dtype, vocab_size = kinds.pop()
    pairs = [
        MegatronPair(f"{folder}/{p.prefix}", p.documents, p.tokens)
        for folder in sorted(indexes)
        for p in indexes[folder].pairs
    ]
    return MegatronIndex(dtype, vocab_size, pairs)
