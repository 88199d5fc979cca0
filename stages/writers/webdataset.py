"""WebDataset shards: reproducible POSIX tar files of ``<key>.json`` + ``<key>.tokens.npy``.

* ``tokens.npy``: the token ids as a NumPy ``.npy`` file (dtype ``<u2`` or
  ``<u4``, 1-D), which ``webdataset.WebDataset(urls).decode()`` turns into a
  numpy array with its built-in ``npy`` handler; ``json``: every other column
  of the sample (id, url, num_tokens, ...), which ``.decode()`` parses.
* Keys are ``<prefix>_<n>`` (n = the sample's number in this folder, 9
  digits): no dots, so no reader mistakes part of a key for an extension.
* Evenly filled: a folder (one shuffle group) is cut into ``tars`` tars of
  ``samples / tars`` samples, give or take one (``ceil(min_tars / groups)``
  per group, so a run has at least ``min_tars`` tars for the ranks x workers
  of a training job, never one holding most samples); more only where
  ``maxcount`` or ``maxsize`` needs them, fewer only when the folder has fewer
  samples.  Tars are named ``shard-NNNNNN.tar`` from 0 in each folder, so the
  groups' tars have one brace pattern (:func:`brace_pattern`) when every
  group has as many.
* Reproducible: members are written as webdataset's own ``TarWriter`` writes
  them (``_TarWriter``: the same tarfile calls, members in key then extension
  order; importing webdataset would import torch, ~480 MB and ~7 s in every
  process that writes shards) with a fixed mtime (0), uid/gid 0, empty
  user/group names and mode 0444, so the same samples give
  byte-identical tars.  No compression: tarfile's gzip stream stamps the
  current time into its header.
* A shard closes before it would hold more than ``maxcount`` samples or pass
  ``maxsize`` bytes (the exact tar size is known before writing: 512-byte
  headers and blocks, 1 KiB end marker, 10 KiB records).
* ``index.json`` (written last) lists the shards in webdataset's ``wids``
  shard-index form: ``{"__kind__": "wids-shard-index-v1", "shardlist":
  [{"url", "nsamples", "filesize", "sha256"}, ...]}``, URLs relative to it.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import io
import json
import os
import re
import tarfile

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from stages.writers.common import ShardFile, list_lengths

BLOCK, RECORD = 512, 10240  # tar block and record sizes (tarfile's defaults)
INDEX_KIND = "wids-shard-index-v1"


class WebDatasetConfig(BaseModel):
    """WebDataset output (``shards.webdataset:``)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="write WebDataset tar shards (shards/webdataset/)")
    maxcount: int = Field(100_000, ge=1, le=10_000_000, description="most samples in one tar shard")
    maxsize: int = Field(
        1 << 28,
        ge=1 << 16,
        le=1 << 34,
        description="a shard closes before its tar file would pass this many bytes (256 MiB)",
    )
    min_tars: int = Field(
        512,
        ge=1,
        le=10_000_000,
        description="at least this many tars in all (ceil(min_tars / shuffle.groups) per group, evenly "
        "filled; fewer only where a group has fewer samples): a "
        "loader splits tars over ranks x workers, so fewer tars leave "
        "some idle and uneven; 512 = 64 ranks x 8 workers",
    )

    def tars_per_group(self, groups: int) -> int:
        """The tars each shuffle group is cut into (before maxcount and maxsize ask for more)."""
        return -(-self.min_tars // groups)


@functools.lru_cache(maxsize=1 << 16)
def npy_header(dtype_str: str, length: int) -> bytes:
    """The .npy (format 1.0) header of a 1-D array, exactly as numpy.save writes it."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype_str, "fortran_order": False, "shape": (length,)})
    return buf.getvalue()


def _member_bytes(size: int) -> int:
    return BLOCK + -(-size // BLOCK) * BLOCK


def tar_size(members_bytes: int) -> int:
    """Size of a finished tar whose members take ``members_bytes`` (end marker + record padding)."""
    return -(-(members_bytes + 2 * BLOCK) // RECORD) * RECORD


def _json_default(v):
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    raise TypeError(f"cannot store {type(v).__name__} in a sample's .json")


class _TarWriter:
    """``webdataset.TarWriter(f, user="", group="", mode=0o444, encoder=False, mtime=0)``, byte for byte
    (tests/pipeline/test_fixed_costs.py compares them), without importing webdataset."""

    def __init__(self, fileobj):
        self.tarstream = tarfile.open(fileobj=fileobj, mode="w|")

    def write(self, sample: dict[str, bytes]) -> None:
        key = sample["__key__"]
        for ext in sorted(k for k in sample if not k.startswith("_")):
            info = tarfile.TarInfo(f"{key}.{ext}")
            info.size, info.mtime, info.mode, info.uname, info.gname = len(sample[ext]), 0, 0o444, "", ""
            self.tarstream.addfile(info, io.BytesIO(sample[ext]))

    def close(self) -> None:
        self.tarstream.close()


class WebDatasetWriter:
    """Writes one WebDataset folder: tars to ``staging`` then ``sink``; ``finish()`` writes index.json last."""

    def __init__(
        self, staging: str, config: WebDatasetConfig, sink, key_prefix: str, samples: int | None = None, tars: int = 1
    ):
        """``samples``: how many samples this folder will get (None: unknown, tars close by maxcount and
        maxsize only); ``tars``: how many tars to spread them over evenly."""
        if not re.fullmatch(r"[A-Za-z0-9_-]+", key_prefix):
            raise ValueError(f"key prefix {key_prefix!r}: use letters, digits, _ and - only (no dots)")
        self.staging, self.config, self.sink, self.prefix = staging, config, sink, key_prefix
        self.expected, self.planned = samples, max(1, tars)
        os.makedirs(staging, exist_ok=True)
        self.shards: list[ShardFile] = []
        self.samples = 0
        self._tar = None
        self._quota = config.maxcount

    def _open(self) -> None:
        self._name = f"shard-{len(self.shards):06d}.tar"
        self._path = os.path.join(self.staging, self._name)
        self._file = open(self._path, "wb")
        self._tar = _TarWriter(self._file)
        self._count = self._members = self._tokens = 0
        self._quota = min(self.config.maxcount, self._even_share())

    def _even_share(self) -> int:
        """Samples for the tar being opened: the rest spread over the tars left (at least one more)."""
        if self.expected is None:
            return self.config.maxcount
        left = max(1, self.expected - self.samples)
        return -(-left // max(1, self.planned - len(self.shards)))

    def write(self, table: pa.Table) -> None:
        """Append samples (rows with a ``tokens`` list column); closes shards as they fill."""
        if not len(table):
            return
        tokens = table.column("tokens").combine_chunks()
        lengths = list_lengths(tokens)
        flat = tokens.flatten().to_numpy(zero_copy_only=False)
        ends = np.cumsum(lengths)
        dstr = flat.dtype.newbyteorder("<").str
        meta = table.drop_columns(["tokens"]).to_pylist()
        for i, row in enumerate(meta):
            n = int(lengths[i])
            npy = npy_header(dstr, n) + flat[ends[i] - n : ends[i]].tobytes()
            js = json.dumps(
                row, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=_json_default
            ).encode()
            size = _member_bytes(len(npy)) + _member_bytes(len(js))
            if self._tar is not None and (
                self._count >= self._quota or tar_size(self._members + size) > self.config.maxsize
            ):
                self._close()
            if self._tar is None:
                self._open()
            self._tar.write({"__key__": f"{self.prefix}_{self.samples:09d}", "json": js, "tokens.npy": npy})
            self._count += 1
            self._members += size
            self._tokens += n
            self.samples += 1

    def _close(self) -> None:
        self._tar.close()
        self._file.close()
        self._tar = None
        with open(self._path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        size = os.path.getsize(self._path)
        assert size == tar_size(self._members), (size, self._members)  # the size rule relies on it
        self.sink.put(self._path, self._name)
        self.shards.append(ShardFile(self._name, size, digest, self._count, self._tokens))

    def finish(self) -> dict:
        """Close the last shard and publish index.json (after every shard); returns the index."""
        if self._tar is not None:
            self._close()
        index = shard_index(
            [{"url": s.name, "nsamples": s.samples, "filesize": s.bytes, "sha256": s.sha256} for s in self.shards]
        )
        path = os.path.join(self.staging, "index.json")
        with open(path, "w") as f:
            json.dump(index, f, sort_keys=True)
        self.sink.put(path, "index.json")
        return index


def shard_index(shardlist: list[dict]) -> dict:
    return {"__kind__": INDEX_KIND, "wids_version": 1, "shardlist": shardlist}


def merge_wds_indexes(indexes: dict[str, dict]) -> dict:
    """One index over sub-folders (``{folder: its index}``), URLs relative to the parent."""
    return shard_index(
        [{**s, "url": f"{folder}/{s['url']}"} for folder in sorted(indexes) for s in indexes[folder]["shardlist"]]
    )


def _numbered(names: list[str]) -> str | None:
    """``names`` as one brace range (``shard-{000000..000003}.tar``) when they are a prefix, consecutive
    numbers of one width and a suffix, in order; else None."""
    match = [re.fullmatch(r"(.*?)(\d+)(\D*)", n) for n in names]
    if not names or not all(match):
        return None
    head, first, tail = match[0].groups()
    width = len(first)
    expected = [f"{head}{i:0{width}d}{tail}" for i in range(int(first), int(first) + len(names))]
    if names != expected:
        return None
    last = f"{int(first) + len(names) - 1:0{width}d}"
    return f"{head}{first}{tail}" if len(names) == 1 else f"{head}{{{first}..{last}}}{tail}"


def brace_pattern(urls: list[str]) -> str | None:
    """One brace pattern (webdataset's ``{a..b}`` notation, one range per path level) that lists exactly
    ``urls`` (``folder/shard-NNNNNN.tar``, in index order), or None when none does (folders with
    different numbers of tars, a missing folder)."""
    if not urls:
        return None
    folders: dict[str, list[str]] = {}
    for u in urls:
        folder, _, name = u.rpartition("/")
        folders.setdefault(folder, []).append(name)
    names = list(folders.values())
    if any(n != names[0] for n in names):
        return None
    inner = _numbered(names[0])
    if inner is None:
        return None
    if list(folders) == [""]:
        return inner
    outer = _numbered(list(folders))
    return None if outer is None else f"{outer}/{inner}"
