"""MosaicML MDS shards, written natively (no mosaicml-streaming import).

The format, as streaming 0.13 writes and reads it (streaming/base/format/mds/
writer.py, encodings.py, base/writer.py, util.py ``merge_index``):

* shard file: ``uint32 num_samples``, ``uint32 offsets[num_samples + 1]``
  (byte offsets from the file start), the writer's config as sorted-key JSON,
  then the samples back to back;
* sample: ``uint32`` sizes of the variable-size columns, then every column's
  bytes, columns in name order; ``str`` is UTF-8, scalars are little-endian,
  ``ndarray:<dtype>`` is ``[ndim<<2 | shape dtype code][shape][values]`` and
  ``ndarray:<dtype>:<len>`` (fixed shape) the values alone;
* a shard closes before it would pass ``size_limit`` bytes counting 4 bytes
  per sample and ``8 + len(config)`` per shard, exactly streaming's rule, so
  our raw shards are byte-identical to ``streaming.MDSWriter``'s for the same
  samples (tests/stages/writers/test_shards_streaming.py checks it); unlike it, a sample
  larger than ``size_limit`` gets a shard of its own instead of an empty one
  before it;
* ``index.json``: ``{"version": 2, "shards": [...]}``; a merged index lists
  the shards of sub-folders with ``<folder>/`` before each basename.

Samples are encoded a whole Arrow batch at a time: each column becomes one
binary array of per-row encodings (headers built with numpy) and Arrow joins
them row-wise.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash
from pydantic import BaseModel, ConfigDict, Field, field_validator

from stages.writers.common import ShardFile, list_lengths

#: Hashes streaming can check (hashlib's guaranteed ones and xxhash's).
SUPPORTED_HASHES = sorted(
    (set(hashlib.algorithms_guaranteed) - {"shake_128", "shake_256"}) | set(xxhash.algorithms_available)
)
_SCALARS = {
    pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64",
    pa.uint8(): "uint8", pa.uint16(): "uint16", pa.uint32(): "uint32", pa.uint64(): "uint64",
    pa.float16(): "float16", pa.float32(): "float32", pa.float64(): "float64",
}  # fmt: skip
_VARIABLE = ("str", "bytes")


class MDSConfig(BaseModel):
    """MosaicML MDS output (``shards.mds:``)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="write MDS shards (shards/mds/)")
    size_limit: int = Field(
        1 << 26,
        ge=1 << 10,
        lt=1 << 32,
        description="a shard closes before its uncompressed size would "
        "pass this many bytes (streaming's default, 64 MiB)",
    )
    compression: str | None = Field(
        "zstd",
        description="null, zstd or zstd:<level 1-22> (streaming's "
        "default level 3); shards become shard.NNNNN.mds.zstd",
    )
    hashes: list[str] = Field(
        default_factory=lambda: ["xxh64"],
        description="hashes of each shard file in index.json, which StreamingDataset(validate_hash=...) can check",
    )

    @field_validator("compression")
    @classmethod
    def _compression(cls, v: str | None) -> str | None:
        if v is None or v == "zstd":
            return v
        m = re.fullmatch(r"zstd:(\d+)", v)
        if not m or not 1 <= int(m.group(1)) <= 22:
            raise ValueError("must be null, zstd or zstd:<level 1-22>")
        return v

    @field_validator("hashes")
    @classmethod
    def _hashes(cls, v: list[str]) -> list[str]:
        bad = [h for h in v if h not in SUPPORTED_HASHES]
        if bad:
            raise ValueError(f"unknown hash {bad[0]!r}; one of {', '.join(SUPPORTED_HASHES)}")
        return sorted(set(v))  # streaming requires them sorted and unique


def mds_columns(schema: pa.Schema, fixed_len: int | None = None) -> dict[str, str]:
    """MDS encodings for the columns of a sample table.

    ``tokens`` (a list of uint16/uint32) becomes ``ndarray:<dtype>``, with a
    fixed shape when every sample has ``fixed_len`` tokens, so
    StreamingDataset returns numpy arrays; strings ``str``; numbers their own
    scalar encoding.  Other types are an error naming the column.
    """
    out = {}
    for f in schema:
        t = f.type
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            if t.value_type not in (pa.uint16(), pa.uint32()):
                raise TypeError(f"MDS column {f.name!r}: list of {t.value_type} (only uint16/uint32 token lists)")
            out[f.name] = f"ndarray:{t.value_type}" + (f":{fixed_len}" if fixed_len else "")
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            out[f.name] = "str"
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
            out[f.name] = "bytes"
        elif t in _SCALARS:
            out[f.name] = _SCALARS[t]
        else:
            raise TypeError(
                f"MDS column {f.name!r}: type {t} has no MDS encoding here (cast it to string or a number)"
            )
    return out


def encoded_size(encoding: str) -> int | None:
    """Bytes of every value of a fixed-size encoding; None when the size varies (streaming's column_sizes)."""
    if encoding in _VARIABLE:
        return None
    if encoding.startswith("ndarray:"):
        parts = encoding.split(":")
        return int(parts[2]) * np.dtype(parts[1]).itemsize if len(parts) == 3 else None
    return np.dtype(encoding).itemsize


def _offsets(arr: pa.Array) -> np.ndarray:
    """The int64 offsets of a large_binary array (this pyarrow has no ``.offsets`` for it)."""
    return np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + len(arr) + 1]


def _as_binary(flat: np.ndarray, row_bytes: np.ndarray) -> pa.Array:
    """A large_binary array over a flat byte buffer cut into rows of ``row_bytes`` bytes."""
    offsets = np.zeros(len(row_bytes) + 1, np.int64)
    np.cumsum(row_bytes, out=offsets[1:])
    return pa.Array.from_buffers(pa.large_binary(), len(row_bytes), [None, pa.py_buffer(offsets), pa.py_buffer(flat)])


def _ndarray_shape_headers(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """streaming's dynamic-shape header of 1-D arrays: [1<<2 | code][length as uint8/16/32]."""
    code = np.where(lengths < 1 << 8, 0, np.where(lengths < 1 << 16, 1, 2)).astype(np.uint8)
    head = np.zeros((len(lengths), 5), np.uint8)
    head[:, 0] = (1 << 2) | code
    head[:, 1:] = lengths.astype("<u4").view(np.uint8).reshape(-1, 4)
    head_len = 1 + (1 << code.astype(np.int64))
    return head[np.arange(5) < head_len[:, None]], head_len


def _encode_column(col: pa.ChunkedArray, encoding: str, name: str) -> tuple[pa.Array, np.ndarray | None]:
    """One column as per-row encodings, and the row sizes when the size is variable."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if col.null_count:
        raise ValueError(f"MDS column {name!r} has {col.null_count} null value(s); MDS cannot store nulls")
    n = len(col)
    if encoding in _VARIABLE:
        arr = col.cast(pa.large_binary())
        sizes = np.diff(_offsets(arr))
        return arr, sizes
    if encoding.startswith("ndarray:"):
        lengths = list_lengths(col)
        if n and lengths.min() == 0:
            raise ValueError(f"MDS column {name!r}: an empty token array (streaming cannot encode 0-element arrays)")
        values = col.flatten().to_numpy(zero_copy_only=False)
        body = _as_binary(values.view(np.uint8), lengths * values.itemsize)
        parts = encoding.split(":")
        if len(parts) == 3:  # fixed shape: values only
            if n and (lengths != int(parts[2])).any():
                raise ValueError(f"MDS column {name!r}: every array must have {parts[2]} values")
            return body, None
        head, head_len = _ndarray_shape_headers(lengths)
        arr = pc.binary_join_element_wise(_as_binary(head, head_len), body, pa.scalar(b"", pa.large_binary()))
        return arr, head_len + lengths * values.itemsize
    values = np.ascontiguousarray(col.to_numpy(zero_copy_only=False).astype(np.dtype(encoding).newbyteorder("<")))
    return _as_binary(values.view(np.uint8), np.full(n, values.itemsize, np.int64)), None


def encode_samples(table: pa.Table, columns: dict[str, str]) -> tuple[pa.Array, np.ndarray]:
    """Every row of ``table`` as an MDS sample; returns (large_binary array, sizes)."""
    names = sorted(columns)
    encoded, sizes = [], []
    for name in names:
        arr, var = _encode_column(table.column(name), columns[name], name)
        encoded.append(arr)
        if var is not None:
            sizes.append(var)
    n = len(table)
    if sizes:  # the sample head: uint32 sizes of the variable-size columns
        head = np.stack(sizes, axis=1).astype("<u4")
        encoded.insert(0, _as_binary(head.view(np.uint8).reshape(-1), np.full(n, 4 * len(sizes), np.int64)))
    joined = (
        encoded[0] if len(encoded) == 1 else pc.binary_join_element_wise(*encoded, pa.scalar(b"", pa.large_binary()))
    )
    return joined, np.diff(_offsets(joined))


def compress(compression: str, data: bytes) -> bytes:
    import zstandard

    level = int(compression.split(":")[1]) if ":" in compression else 3
    return zstandard.ZstdCompressor(level=level).compress(data)


def _hashes(algos: list[str], data: bytes) -> dict[str, str]:
    out = {}
    for algo in algos:
        h = getattr(xxhash, algo)(data) if algo in xxhash.algorithms_available else hashlib.new(algo, data)
        out[algo] = h.hexdigest()
    return out


class MDSWriter:
    """Writes one MDS folder: shards to ``staging`` then ``sink``; ``finish()`` writes index.json last.

    ``columns`` maps column names to MDS encodings (see :func:`mds_columns`).
    """

    format = "mds"

    def __init__(self, staging: str, columns: dict[str, str], config: MDSConfig, sink):
        self.staging, self.config, self.sink = staging, config, sink
        os.makedirs(staging, exist_ok=True)
        self.columns = dict(columns)
        self.names = sorted(columns)
        shard_config = {
            "version": 2,
            "format": self.format,
            "compression": config.compression,
            "hashes": config.hashes,
            "size_limit": config.size_limit,
            "column_names": self.names,
            "column_encodings": [self.columns[c] for c in self.names],
            "column_sizes": [encoded_size(self.columns[c]) for c in self.names],
        }
        self.shard_config = shard_config
        self.config_data = json.dumps(shard_config, sort_keys=True).encode("utf-8")
        self.shards: list[ShardFile] = []
        self.index_entries: list[dict] = []
        self._reset()

    def _reset(self) -> None:
        self._segments: list[memoryview] = []
        self._sizes: list[np.ndarray] = []
        self._tokens = 0
        self._count = 0
        self._size = 4 + 4 + len(self.config_data)  # num_samples, offsets[0], config

    def write(self, table: pa.Table) -> None:
        """Append samples (rows); closes shards as they fill."""
        if not len(table):
            return
        samples, sizes = encode_samples(table, self.columns)
        tokens = (
            list_lengths(table.column("tokens")) if "tokens" in table.column_names else np.zeros(len(table), np.int64)
        )
        data = memoryview(samples.buffers()[2]).cast("B")
        offsets = _offsets(samples)
        cum = np.cumsum(sizes + 4)  # 4: each sample's offset entry
        i, n = 0, len(table)
        while i < n:
            room = self.config.size_limit - self._size
            fits = int(np.searchsorted(cum[i:] - (cum[i - 1] if i else 0), room, side="right"))
            if fits == 0:
                if self._count:
                    self._flush()
                    continue
                fits = 1  # a sample larger than size_limit: a shard of its own
            j = i + fits
            self._segments.append(data[offsets[i] : offsets[j]])
            self._sizes.append(sizes[i:j])
            self._tokens += int(tokens[i:j].sum())
            self._count += fits
            self._size += int(cum[j - 1] - (cum[i - 1] if i else 0))
            i = j
            if i < n:
                self._flush()

    def _flush(self) -> None:
        if not self._count:
            return
        sizes = np.concatenate(self._sizes)
        head = 4 + 4 * (len(sizes) + 1) + len(self.config_data)
        offsets = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        offsets += head
        raw = b"".join(
            [np.uint32(len(sizes)).tobytes(), offsets.astype("<u4").tobytes(), self.config_data, *self._segments]
        )
        number = len(self.index_entries)
        raw_name = f"shard.{number:05d}.mds"
        entry = {
            "samples": len(sizes),
            "raw_data": {"basename": raw_name, "bytes": len(raw), "hashes": _hashes(self.config.hashes, raw)},
            "zip_data": None,
        }
        data, name = raw, raw_name
        if self.config.compression:
            data = compress(self.config.compression, raw)
            name = f"{raw_name}.zstd"
            entry["zip_data"] = {"basename": name, "bytes": len(data), "hashes": _hashes(self.config.hashes, data)}
        entry.update({k: v for k, v in self.shard_config.items()})
        path = os.path.join(self.staging, name)
        with open(path, "wb") as f:
            f.write(data)
        self.sink.put(path, name)
        self.index_entries.append(entry)
        self.shards.append(ShardFile(name, len(data), hashlib.sha256(data).hexdigest(), len(sizes), self._tokens))
        self._reset()

    def finish(self) -> dict:
        """Close the last shard and publish index.json (after every shard); returns the index."""
        self._flush()
        index = {"version": 2, "shards": self.index_entries}
        path = os.path.join(self.staging, "index.json")
        with open(path, "w") as f:
            json.dump(index, f, sort_keys=True)
        self.sink.put(path, "index.json")
        return index


def merge_mds_indexes(indexes: dict[str, dict]) -> dict:
    """One index over sub-folders (``{folder: its index}``), as streaming's merge_index makes it."""
    shards = []
    for folder in sorted(indexes):
        for shard in indexes[folder]["shards"]:
            shard = dict(shard)
            for key in ("raw_data", "zip_data", "raw_meta", "zip_meta"):
                if shard.get(key):
                    shard[key] = {**shard[key], "basename": f"{folder}/{shard[key]['basename']}"}
            shards.append(shard)
    return {"version": 2, "shards": shards}


def index_bytes(index: dict) -> bytes:
    """index.json as streaming writes it (sorted keys)."""
    return json.dumps(index, sort_keys=True).encode("utf-8")
