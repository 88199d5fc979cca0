"""Every training-shard format, in one explicit tuple: adding one is a module with its writer and a
format class, an entry here and its config section in ShardsConfig.

A format describes itself (``name``: its folder ``shards/<name>/`` and its key in the manifest;
``label``; ``per_document``: whether it takes one sample per document whatever the layout, as
Megatron's IndexedDataset does, packing sequences itself), opens its writer for one shuffle group
(told how many samples the group will give it), merges the groups' indexes into
``shards/<name>/index.json`` and says what the manifest should add about the merged index
(``describe``: the WebDataset tars' brace pattern).  The shards phase, the manifest
and the card iterate this tuple; none of them names a format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from stages.writers.mds import MDSWriter, mds_columns, merge_mds_indexes
from stages.writers.megatron import (
    INDEX_KIND as MEGATRON_INDEX_KIND,
    MegatronIndex,
    MegatronWriter,
    merge_megatron_indexes,
)
from stages.writers.webdataset import WebDatasetWriter, brace_pattern, merge_wds_indexes


@dataclass(frozen=True)
class TokenInfo:
    """What a writer needs to know of the tokenizer."""

    dtype: object  #: numpy dtype of the token ids
    vocab_size: int


class ShardWriter(Protocol):
    shards: list

    def write(self, samples: pa.Table) -> None: ...

    def finish(self) -> dict: ...


class Format(Protocol):
    name: str
    label: str
    per_document: bool
    #: its shard files, as upload patterns relative to its folder (``fnmatch``: ``*`` crosses group folders)
    files: tuple[str, ...]

    @staticmethod
    def config(shards) -> object: ...

    @staticmethod
    def open(
        staging: str, shards, sink, schema: pa.Schema, token: TokenInfo, group: str, samples: int
    ) -> ShardWriter: ...

    @staticmethod
    def merge(indexes: dict[str, dict]) -> dict: ...

    @staticmethod
    def describe(merged: dict) -> dict: ...


def _nothing(merged: dict) -> dict:
    return {}


class MdsFormat:
    name = "mds"
    label = "MosaicML MDS (streaming.StreamingDataset)"
    per_document = False
    files = ("*.mds", "*.mds.zstd")

    @staticmethod
    def config(shards):
        return shards.mds

    @staticmethod
    def open(staging, shards, sink, schema, token, group, samples):
        return MDSWriter(
            os.path.join(staging, "mds"), mds_columns(schema, shards.layout.fixed_len()), shards.mds, sink
        )

    merge = staticmethod(merge_mds_indexes)
    describe = staticmethod(_nothing)


class WebDatasetFormat:
    name = "webdataset"
    label = "WebDataset tar shards"
    per_document = False
    files = ("*.tar",)

    @staticmethod
    def config(shards):
        return shards.webdataset

    @staticmethod
    def open(staging, shards, sink, schema, token, group, samples):
        return WebDatasetWriter(
            os.path.join(staging, "webdataset"),
            shards.webdataset,
            sink,
            key_prefix=group,
            samples=samples,
            tars=shards.webdataset.tars_per_group(shards.shuffle.groups),
        )

    merge = staticmethod(merge_wds_indexes)

    @staticmethod
    def describe(merged: dict) -> dict:
        """The brace pattern of every tar (relative to shards/webdataset/),
        or null when the groups' tars differ in number."""
        return {"url_pattern": brace_pattern([s["url"] for s in merged["shardlist"]])}


class _DictIndex:
    """A Megatron writer whose index is JSON-able, as the group's marker holds it."""

    def __init__(self, writer: MegatronWriter):
        self.writer = writer
        self.shards = writer.shards

    def write(self, samples: pa.Table) -> None:
        self.writer.write(samples)

    def finish(self) -> dict:
        return self.writer.finish().to_dict()


class MegatronFormat:
    name = "megatron"
    label = "Megatron-LM / NeMo IndexedDataset (.bin/.idx pairs, one sequence per document)"
    per_document = True
    files = ("*.bin", "*.idx")

    @staticmethod
    def config(shards):
        return shards.megatron

    @staticmethod
    def open(staging, shards, sink, schema, token, group, samples):
        return _DictIndex(MegatronWriter(os.path.join(staging, "megatron"), shards.megatron, sink, token.vocab_size))

    @staticmethod
    def describe(merged: dict) -> dict:
        """Megatron's own dtype (uint16 or int32, from the vocabulary
        size), which may differ from the other formats'."""
        return {"dtype": merged["dtype"]}

    @staticmethod
    def merge(indexes: dict[str, dict]) -> dict:
        if not indexes:  # no group had a document: an index of no pair
            return {
                "__kind__": MEGATRON_INDEX_KIND,
                "dtype": None,
                "vocab_size": None,
                "documents": 0,
                "tokens": 0,
                "pairs": [],
            }
        return merge_megatron_indexes({k: MegatronIndex.from_dict(v) for k, v in indexes.items()}).to_dict()


FORMATS = (MdsFormat, WebDatasetFormat, MegatronFormat)


def enabled_formats(shards) -> list:
    """The formats a run's ``shards`` section turns on, in FORMATS order."""
    return [f for f in FORMATS if f.config(shards).enabled]
