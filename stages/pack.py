"""Sample layouts: one sample per document, or packed fixed-length sequences.

``document``: each document is a sample: its ``tokens`` (BOS/EOS as the
tokenize stage added them), ``num_tokens``, ``id``, ``url``, and optionally
its ``text`` and other metadata columns.

``packed``: documents (each already ending in EOS) are concatenated in their
shuffled order and cut every ``seq_len`` tokens, so a document can span two
sequences.  Each sequence records ``first_id`` (the document its first token
belongs to) and ``first_offset`` (that token's position in the document), and
``num_tokens`` (tokens that are not padding).  What happens to the last,
shorter piece of a packing stream (one per shuffle group) is ``remainder``:

* ``drop``: discarded (counted as dropped tokens): every sequence is full;
* ``pad``: filled up to ``seq_len`` with the pad token; ``num_tokens`` says
  where the padding starts;
* ``keep``: stored short (MDS then stores the array's length with it).

Packing works on the flat token buffer with numpy: sequence boundaries,
their first documents (a searchsorted over document ends) and the carried
remainder, never per token in Python.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from stages.tokenize import list_array, list_lengths


class LayoutConfig(BaseModel):
    """How documents become samples (``shards.layout:``)."""

    model_config = ConfigDict(extra="forbid")
    #: a check of the run, not of what it writes: out of the fingerprints (pipeline/engine/settings.py)
    run_only: ClassVar[tuple[str, ...]] = ("max_dropped_share",)

    kind: Literal["document", "packed"] = Field(
        "document",
        description="document: one sample per document; packed: fixed-length sequences of documents joined with EOS",
    )
    seq_len: int = Field(2048, ge=2, le=1 << 20, description="tokens per packed sequence")
    remainder: Literal["drop", "pad", "keep"] = Field(
        "drop",
        description="the last partial sequence of each shuffle group: drop it, pad it to seq_len, or keep it short",
    )
    pad: str | None = Field(None, description="pad token string for remainder: pad; null = the EOS token")
    max_dropped_share: float = Field(
        0.01,
        ge=0,
        le=1,
        description="packed layout, remainder drop: the shards phase fails (no manifest) when it drops more "
        "than this share of the tokens (a seq_len longer than a "
        "group's tokens drops them all); the dropped documents and "
        "tokens are counted in the shards' stats and manifest",
    )
    text: bool = Field(False, description="document layout: also store each document's text")
    metadata: list[str] = Field(
        default_factory=list,
        description="document layout: more columns of documents/final to "
        "store with each sample (e.g. language, language_score)",
    )

    def fixed_len(self) -> int | None:
        """The length every sample has, when there is one (MDS then stores a fixed shape)."""
        return self.seq_len if self.kind == "packed" and self.remainder != "keep" else None


def document_samples(batch: pa.Table, layout: LayoutConfig) -> pa.Table:
    """The document layout's sample table from a tokenized batch."""
    names = ["tokens", "num_tokens", "id", "url"] + (["text"] if layout.text else []) + list(layout.metadata)
    missing = [n for n in names if n not in batch.column_names]
    if missing:
        raise KeyError(f"document samples: the batch has no column {missing[0]!r} (columns: {batch.column_names})")
    cols = {}
    for name in names:
        col = batch.column(name)
        if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
            col = pc.cast(col, pa.string())  # ISO 8601; MDS has no timestamp encoding
        elif pa.types.is_boolean(col.type):
            col = pc.cast(col, pa.uint8())
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = pc.fill_null(col, "")  # MDS strings cannot be null
        cols[name] = col
    return pa.table(cols)


class Packer:
    """Cuts a stream of tokenized documents into sequences of ``seq_len`` tokens.

    Feed batches in order with :meth:`add`; :meth:`finish` applies the
    remainder policy.  Memory: the batch plus fewer than ``seq_len`` carried tokens.
    """

    def __init__(self, seq_len: int, remainder: str, pad_id: int | None, dtype):
        if remainder == "pad" and pad_id is None:
            raise ValueError("packing with remainder 'pad' needs a pad token id")
        self.seq_len, self.remainder, self.pad_id = seq_len, remainder, pad_id
        self.dtype = np.dtype(dtype)
        self._flat = np.empty(0, self.dtype)
        self._lengths = np.empty(0, np.int64)
        self._ids = pa.array([], pa.string())
        self._head = 0  # tokens of the first carried document already in earlier sequences
        self.dropped_tokens = 0
        self.dropped_documents = 0  #: documents none of whose tokens reached a sequence (remainder drop)
        self.sequences = 0

    def add(self, tokens: pa.Array | pa.ChunkedArray, ids: pa.Array | pa.ChunkedArray) -> pa.Table:
        """Documents in order (their token lists and ids); returns the full sequences they complete."""
        tokens = tokens.combine_chunks() if isinstance(tokens, pa.ChunkedArray) else tokens
        ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        flat = np.concatenate(
            [self._flat, tokens.flatten().to_numpy(zero_copy_only=False).astype(self.dtype, copy=False)]
        )
        lengths = np.concatenate([self._lengths, list_lengths(tokens)])
        all_ids = pa.concat_arrays([self._ids, ids.cast(pa.string())])
        n_full = len(flat) // self.seq_len
        out = self._sequences(flat[: n_full * self.seq_len], lengths, all_ids, self.seq_len)
        self._carry(flat, lengths, all_ids, n_full * self.seq_len)
        return out

    def _sequences(self, flat: np.ndarray, lengths: np.ndarray, ids: pa.Array, seq_len: int) -> pa.Table:
        n = len(flat) // seq_len if seq_len else 0
        ends = np.cumsum(lengths)
        starts_at = np.arange(n, dtype=np.int64) * seq_len
        doc = np.searchsorted(ends, starts_at, side="right")
        offset = starts_at - (ends[doc] - lengths[doc]) if n else np.empty(0, np.int64)
        offset = offset + np.where(doc == 0, self._head, 0)
        self.sequences += n
        return pa.table(
            {
                "tokens": list_array(flat[: n * seq_len], np.full(n, seq_len, np.int64)),
                "num_tokens": pa.array(np.full(n, seq_len, np.int32)),
                "first_id": ids.take(pa.array(doc, pa.int64())),
                "first_offset": pa.array(offset.astype(np.int64)),
            }
        )

    def _carry(self, flat: np.ndarray, lengths: np.ndarray, ids: pa.Array, cut: int) -> None:
        """Keep the tokens after ``cut`` (fewer than seq_len) and the documents they belong to."""
        ends = np.cumsum(lengths)
        d = int(np.searchsorted(ends, cut, side="right"))
        if d >= len(lengths):  # nothing left over
            self._flat, self._lengths, self._ids, self._head = flat[:0].copy(), lengths[:0], ids.slice(0, 0), 0
            return
        start = ends[d] - lengths[d]
        self._head = (self._head if d == 0 else 0) + int(cut - start)
        self._flat = flat[cut:].copy()
        self._lengths = np.concatenate([[ends[d] - cut], lengths[d + 1 :]])
        self._ids = ids.slice(d)

    def finish(self) -> pa.Table:
        """The remainder, per the policy (an empty table for drop or when nothing is left)."""
        n = len(self._flat)
        if n == 0 or self.remainder == "drop":
            self.dropped_tokens += n
            self.dropped_documents += len(self._lengths) - (
                1 if n and self._head else 0
            )  # the first may have started earlier
            out = self._sequences(self._flat[:0], self._lengths[:0], self._ids.slice(0, 0), self.seq_len)
        else:
            flat = self._flat
            if self.remainder == "pad":
                flat = np.concatenate([flat, np.full(self.seq_len - n, self.pad_id, self.dtype)])
            out = self._sequences(flat, self._lengths, self._ids, len(flat))
            out = out.set_column(1, "num_tokens", pa.array([n], pa.int32()))
        self._flat, self._lengths, self._ids, self._head = self._flat[:0], self._lengths[:0], self._ids.slice(0, 0), 0
        return out
