"""One shuffle group -> its MDS and WebDataset sub-folders (what one worker does).

The shards phase gives each group's tokenized documents (any order: the
shuffle plan's keys fix it) to :func:`write_group`, which orders them, makes
samples in the configured layout and streams them into both writers.  Same
documents and settings, same bytes, whichever worker runs it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from stages.pack import LayoutConfig, Packer, document_samples
from stages.shuffle_plan import group_order
from stages.writers.common import ShardFile, list_lengths
from stages.writers.mds import MDSConfig, MDSWriter, mds_columns
from stages.writers.webdataset import WebDatasetConfig, WebDatasetWriter


@dataclass
class GroupResult:
    """What a group wrote: indexes (for the merged ones) and shard files (for the manifest)."""

    name: str
    samples: int = 0
    tokens: int = 0  #: token ids in samples, padding included
    documents: int = 0
    dropped_tokens: int = 0  #: packed layout, remainder drop
    dropped_documents: int = 0  #: ... documents none of whose tokens reached a sample
    mds_index: dict | None = None
    wds_index: dict | None = None
    mds_shards: list[ShardFile] = field(default_factory=list)
    wds_shards: list[ShardFile] = field(default_factory=list)


def write_group(
    name: str,
    docs: pa.Table,
    keys: np.ndarray,
    layout: LayoutConfig,
    token_dtype,
    staging: str,
    mds: MDSConfig | None = None,
    mds_sink=None,
    wds: WebDatasetConfig | None = None,
    wds_sink=None,
    pad_id: int | None = None,
    batch_rows: int = 1024,
) -> GroupResult:
    """Write one group.  ``docs``: tokenized documents (``id``, ``tokens``, ...); ``keys``: their plan keys.

    Sinks receive ``shard...`` and ``index.json`` names relative to the
    group's folder; each index is published after all of its shards.
    """
    result = GroupResult(name, documents=len(docs))
    docs = docs.take(pa.array(group_order(keys, docs.column("id")), pa.int64()))
    packer = Packer(layout.seq_len, layout.remainder, pad_id, token_dtype) if layout.kind == "packed" else None
    if packer is not None:
        schema = packer.add(pa.array([], pa.list_(pa.from_numpy_dtype(np.dtype(token_dtype)))), pa.array([], pa.string())).schema
    else:
        schema = document_samples(docs.slice(0, 0), layout).schema
    writers = []
    if mds is not None and mds.enabled:
        writers.append(MDSWriter(os.path.join(staging, "mds"), mds_columns(schema, layout.fixed_len()), mds, mds_sink))
    if wds is not None and wds.enabled:
        writers.append(WebDatasetWriter(os.path.join(staging, "webdataset"), wds, wds_sink, key_prefix=name))

    def emit(samples: pa.Table) -> None:
        if len(samples):
            result.samples += len(samples)
            result.tokens += int(list_lengths(samples.column("tokens")).sum())
            for w in writers:
                w.write(samples)

    for start in range(0, len(docs), batch_rows):
        batch = docs.slice(start, batch_rows)
        emit(packer.add(batch.column("tokens"), batch.column("id")) if packer else document_samples(batch, layout))
    if packer is not None:
        emit(packer.finish())
        result.dropped_tokens, result.dropped_documents = packer.dropped_tokens, packer.dropped_documents
    for w in writers:
        index = w.finish()
        if isinstance(w, MDSWriter):
            result.mds_index, result.mds_shards = index, w.shards
        else:
            result.wds_index, result.wds_shards = index, w.shards
    return result
