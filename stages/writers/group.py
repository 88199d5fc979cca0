"""One shuffle group -> its sub-folder in every enabled format (what one worker does).

The shards phase gives each group's tokenized documents (any order: the
shuffle plan's keys fix it) to :func:`write_group`, which orders them, makes
samples in the configured layout and streams them into every enabled format's
writer (stages.writers.formats).  Same
documents and settings, same bytes, whichever worker runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from stages.pack import Packer, document_samples
from stages.shuffle_plan import group_order
from stages.writers.common import ShardFile, list_lengths
from stages.writers.formats import TokenInfo, enabled_formats
from stages.writers.trainers import cut_lengths


@dataclass
class GroupResult:
    """What a group wrote: per format, its index (for the merged one) and shard files (for the manifest)."""

    name: str
    samples: int = 0
    tokens: int = 0  #: token ids in samples, padding included
    documents: int = 0
    document_tokens: int = 0  #: token ids of the documents given (BOS/EOS included), before any layout
    padding_tokens: int = 0  #: pad ids in samples (packed layout, remainder pad)
    dropped_tokens: int = 0  #: packed layout, remainder drop
    dropped_documents: int = 0  #: ... documents none of whose tokens reached a sample
    #: per length L (str): samples longer than L and their tokens past L, what a loader that cuts samples at L loses
    cut: dict[str, dict[str, int]] = field(default_factory=dict)
    indexes: dict[str, dict] = field(default_factory=dict)
    files: dict[str, list[ShardFile]] = field(default_factory=dict)

    def totals(self) -> dict:
        """The group's additive counts, for its marker (a run's are their sum)."""
        return {
            "groups": 1,
            "documents": self.documents,
            "samples": self.samples,
            "tokens": self.tokens,
            "document_tokens": self.document_tokens,
            "padding_tokens": self.padding_tokens,
            "dropped_tokens": self.dropped_tokens,
            "dropped_documents": self.dropped_documents,
            "cut": self.cut,
            **{f"{fmt}_shards": len(files) for fmt, files in self.files.items()},
        }


def layout_samples(num_tokens: np.ndarray, layout) -> int:
    """How many samples the layout makes of documents of ``num_tokens`` tokens (writers that spread
    samples evenly need it before the first one)."""
    if layout.kind != "packed":
        return len(num_tokens)
    total = int(num_tokens.sum())
    return total // layout.seq_len + (1 if layout.remainder != "drop" and total % layout.seq_len else 0)


def write_group(
    name: str,
    docs: pa.Table,
    keys: np.ndarray,
    shards,
    token: TokenInfo,
    staging: str,
    sinks: dict,
    pad_id: int | None = None,
    batch_rows: int = 1024,
) -> GroupResult:
    """Write one group in every enabled format.  ``docs``: tokenized documents (``id``, ``tokens``, ...);
    ``keys``: their plan keys; ``shards``: the run's ShardsConfig; ``sinks``: a sink per format name.

    Sinks receive ``shard...`` and ``index.json`` names relative to the
    group's folder; each index is published after all of its shards.  A format
    that takes one sample per document (Megatron) gets the documents whatever
    the layout; the others the layout's samples.
    """
    layout = shards.layout
    lengths = list_lengths(docs.column("tokens"))
    result = GroupResult(name, documents=len(docs), document_tokens=int(lengths.sum()))
    result.cut = {str(n): {"samples": 0, "tokens": 0} for n in cut_lengths(layout.seq_len)}
    n_samples = layout_samples(lengths, layout)
    docs = docs.take(pa.array(group_order(keys, docs.column("id")), pa.int64()))
    packer = Packer(layout.seq_len, layout.remainder, pad_id, token.dtype) if layout.kind == "packed" else None
    if packer is not None:
        schema = packer.add(
            pa.array([], pa.list_(pa.from_numpy_dtype(np.dtype(token.dtype)))), pa.array([], pa.string())
        ).schema
    else:
        schema = document_samples(docs.slice(0, 0), layout).schema
    doc_schema = document_samples(docs.slice(0, 0), layout).schema
    writers = [
        (
            fmt,
            fmt.open(
                staging,
                shards,
                sinks[fmt.name],
                doc_schema if fmt.per_document else schema,
                token,
                name,
                len(docs) if fmt.per_document else n_samples,
            ),
        )
        for fmt in enabled_formats(shards)
    ]
    per_sample = [w for fmt, w in writers if not (fmt.per_document and packer is not None)]
    per_document = [w for fmt, w in writers if fmt.per_document and packer is not None]

    def emit(samples: pa.Table) -> None:
        if len(samples):
            stored = list_lengths(samples.column("tokens"))
            real = samples.column("num_tokens").to_numpy().astype(np.int64)
            result.samples += len(samples)
            result.tokens += int(stored.sum())
            result.padding_tokens += int((stored - real).sum())
            for n, c in result.cut.items():
                past = real - int(n)
                c["samples"] += int((past > 0).sum())
                c["tokens"] += int(past[past > 0].sum())
            for w in per_sample:
                w.write(samples)

    for start in range(0, len(docs), batch_rows):
        batch = docs.slice(start, batch_rows)
        if packer is None:
            emit(document_samples(batch, layout))
            continue
        emit(packer.add(batch.column("tokens"), batch.column("id")))
        if per_document:
            samples = document_samples(batch, layout)
            for w in per_document:
                w.write(samples)
    if packer is not None:
        emit(packer.finish())
        result.dropped_tokens, result.dropped_documents = packer.dropped_tokens, packer.dropped_documents
    for fmt, w in writers:
        result.indexes[fmt.name] = w.finish()
        result.files[fmt.name] = list(w.shards)
    return result
